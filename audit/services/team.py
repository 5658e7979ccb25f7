"""Team work: assignments, the double-annotation setting, and each annotator's blind
decisions. Decisions are not written to the contract's history while annotation is
blind (the history is readable by every member); adjudication records them all."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction

from ..models import (
    AnnotatorDecision,
    Assignment,
    AssignmentRole,
    Combine,
    Contract,
    DecisionAction,
    DoubleAnnotation,
    Membership,
    Node,
    NodeType,
    Project,
    TeamPhase,
)
from ..permissions import ASSIGN, CURATE, EDIT, assigned, has_role, require
from .common import ServiceError, editable, record
from .concurrency import ConflictError

BOOL_FIELDS = ("required", "explicit")
TEXT_FIELDS = {"label": 500, "description": 10_000}


def team_of(contract: Contract) -> DoubleAnnotation | None:
    return DoubleAnnotation.objects.filter(contract=contract).first()


def assignment_create(
    *, project: Project, user, by, role: str, contract: Contract | None = None
) -> Assignment:
    """Give ``user`` a contract (or, without one, the whole project) as annotator or
    reviewer. ``by`` must be an admin; ``user`` a member whose role allows the work."""
    require(by, project.pk, ASSIGN)
    if role not in AssignmentRole.values:
        raise ServiceError(f"unknown assignment role {role!r} (annotator or reviewer)")
    if contract is not None and contract.project_id != project.pk:
        raise ServiceError("the contract is not part of this project")
    member = Membership.objects.filter(project=project, user=user).first()
    if member is None:
        raise ServiceError(f"{user.get_username()} is not a member of {project.name}")
    needed = EDIT if role == AssignmentRole.ANNOTATOR else CURATE
    if not has_role(member.role, needed):
        raise ServiceError(f"{user.get_username()} is a {member.role}: reviewing needs a reviewer")
    try:
        with transaction.atomic():
            assignment = Assignment.objects.create(
                project=project, contract=contract, user=user, role=role, created_by=by
            )
            if contract is not None:
                after = {"user": user.get_username(), "role": role}
                record(contract, by, "assign", "contract", contract.key, after=after)
    except IntegrityError:
        raise ServiceError(f"{user.get_username()} already has this assignment") from None
    return assignment


def assignment_delete(*, assignment: Assignment, by) -> None:
    require(by, assignment.project_id, ASSIGN)
    with transaction.atomic():
        if assignment.contract is not None:
            before = {"user": assignment.user.get_username(), "role": assignment.role}
            record(assignment.contract, by, "unassign", "contract", "", before=before)
        assignment.delete()


def double_annotation_set(
    *, contract: Contract, by, enabled: bool, annotators_needed: int = 2
) -> DoubleAnnotation | None:
    """Switch double annotation on (with how many independent audits) or off, before
    anyone has decided anything: afterwards the setting would change the rules midway."""
    require(by, contract.project_id, ASSIGN)
    editable(contract)
    if annotators_needed < 2:
        raise ServiceError("double annotation needs at least two annotators")
    with transaction.atomic():
        if AnnotatorDecision.objects.filter(contract=contract).exists():
            raise ServiceError("annotators have started: the setting can no longer change")
        team = team_of(contract)
        before = {"double": team is not None}
        if not enabled:
            if team is not None:
                team.delete()
            record(contract, by, "team", "contract", contract.key, before=before, after=None)
            return None
        team, _ = DoubleAnnotation.objects.update_or_create(
            contract=contract, defaults={"annotators_needed": annotators_needed, "created_by": by}
        )
        after = {"double": True, "annotators_needed": annotators_needed}
        record(contract, by, "team", "contract", contract.key, before=before, after=after)
    return team


def _clean_evidence(value: Any, text: str) -> list[list[int]]:
    if not isinstance(value, list) or not value:
        raise ServiceError("evidence: give at least one [start, end] span")
    out = []
    for s in value:
        start, end = (s.get("start"), s.get("end")) if isinstance(s, Mapping) else (s + [0, 0])[:2]
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
            raise ServiceError(f"evidence: [{start}, {end}) is outside the artifact")
        out.append([start, end])
    return out


def clean_fields(node: Node, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The edited fields of a decision, checked; a clear ServiceError otherwise."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "type" and value not in NodeType.values:
            raise ServiceError(f"type: {value!r} is not a node type")
        if key == "combine" and value not in Combine.values:
            raise ServiceError("combine: all or any")
        if key in BOOL_FIELDS and not isinstance(value, bool):
            raise ServiceError(f"{key}: true or false")
        if key in TEXT_FIELDS and (not isinstance(value, str) or len(value) > TEXT_FIELDS[key]):
            raise ServiceError(f"{key}: text of at most {TEXT_FIELDS[key]} characters")
        if key == "label" and not value.strip():
            raise ServiceError("label: may not be empty")
        if key == "parent" and value is not None:
            if value == node.node_id or not node.contract.nodes.filter(node_id=value).exists():
                raise ServiceError(f"parent: no other node {value!r} in this contract")
        if key == "evidence":
            value = _clean_evidence(value, node.contract.artifact.text)
        if key not in {"type", "combine", "parent", "evidence", *BOOL_FIELDS, *TEXT_FIELDS}:
            raise ServiceError(f"{key!r} is not a field an edit can change")
        out[key] = value
    if not out:
        raise ServiceError("an edit changes at least one field")
    return out


def may_annotate(contract: Contract, user) -> None:
    """Raise unless ``user`` may record blind decisions on ``contract`` now."""
    team = team_of(contract)
    if team is None:
        raise ServiceError("this contract is not double-annotated: review it in the workspace")
    if team.phase != TeamPhase.ANNOTATING:
        raise ServiceError("adjudication has started: the annotators' decisions are final")
    require(user, contract.project_id, EDIT)
    if assigned(user, contract, AssignmentRole.REVIEWER):
        raise ServiceError("you curate this contract: the annotators decide, you adjudicate")
    others = Assignment.objects.filter(role=AssignmentRole.ANNOTATOR, project=contract.project_id)
    if others.exists() and not assigned(user, contract):
        raise ServiceError("you are not assigned to annotate this contract")


def decision_record(
    *,
    node: Node,
    user,
    action: str,
    fields: Mapping[str, Any] | None = None,
    expected_version: int | None = None,
) -> AnnotatorDecision:
    """Record (or change) ``user``'s own blind decision on ``node``."""
    contract = node.contract
    editable(contract)
    may_annotate(contract, user)
    if action not in DecisionAction.values:
        raise ServiceError(f"unknown decision {action!r}: confirm, reject or edit")
    cleaned = clean_fields(node, fields or {}) if action == DecisionAction.EDIT else {}
    with transaction.atomic():
        mine = AnnotatorDecision.objects.select_for_update().filter(node=node, user=user).first()
        _check_copy_version(node, mine, expected_version)
        if mine is None:
            return AnnotatorDecision.objects.create(
                contract=contract, node=node, user=user, action=action, fields=cleaned
            )
        mine.action, mine.fields, mine.version = action, cleaned, mine.version + 1
        mine.save(update_fields=["action", "fields", "version", "updated_at"])
    return mine


def _check_copy_version(
    node: Node, mine: AnnotatorDecision | None, expected_version: int | None
) -> None:
    """Refuse (409) a change of ``node``'s copy based on a version it is no longer at:
    another tab or window of the same annotator changed it first. Version 0 is the copy
    before any decision; ``None`` (a caller that sends no version) is not checked."""
    current = mine.version if mine is not None else 0
    if expected_version is None or expected_version == current:
        return
    raise ConflictError(
        f"your copy of {node.node_id} was changed meanwhile, in another tab or window (it"
        f" is at version {current}, your change was based on version {expected_version})."
        " Your change was not saved: reload it and apply your change again.",
        current_version=current,
    )


def _blind_evidence(node: Node, mine: AnnotatorDecision | None) -> list[list[int]]:
    """The evidence of ``node`` as an annotator's copy has it (their edit, else the node's)."""
    proposed = [[s.start, s.end] for s in node.spans.order_by("position", "pk")]
    return mine.evidence_or(proposed) if mine is not None else proposed


def decision_edit(
    *,
    node: Node,
    user,
    fields: Mapping[str, Any] | None = None,
    add_span: tuple[int, int] | None = None,
    drop_span: tuple[int, int] | None = None,
    expected_version: int | None = None,
) -> AnnotatorDecision:
    """Change ``user``'s blind copy of ``node`` step by step: ``fields`` on top of their
    earlier edit, and the span ``add_span`` added to (``drop_span`` taken from) the
    evidence their copy has. A field back at the node's proposed value is no longer an
    edit; an edit that changes nothing any more is recorded as a confirm."""
    with transaction.atomic():
        mine = AnnotatorDecision.objects.select_for_update().filter(node=node, user=user).first()
        merged = dict(mine.fields) if mine and mine.action == DecisionAction.EDIT else {}
        merged.update(fields or {})
        evidence = _blind_evidence(node, mine)
        if add_span is not None and list(add_span) not in evidence:
            evidence = sorted([*evidence, list(add_span)])
        if drop_span is not None:
            evidence = [s for s in evidence if s != list(drop_span)]
            if not evidence:
                raise ServiceError("evidence: a node keeps at least one span")
        if add_span is not None or drop_span is not None:
            merged["evidence"] = evidence
        proposed = {"evidence": _blind_evidence(node, None)}
        proposed |= {k: getattr(node, k) for k in ("type", "label", "required", "combine")}
        proposed |= {k: getattr(node, k) for k in ("description", "explicit")}
        changed = {k: v for k, v in merged.items() if k not in proposed or proposed[k] != v}
        action = DecisionAction.EDIT if changed else DecisionAction.CONFIRM
        return decision_record(
            node=node, user=user, action=action, fields=changed, expected_version=expected_version
        )
