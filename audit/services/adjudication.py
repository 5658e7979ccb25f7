"""Adjudication (curation) of a double-annotated contract, and the rules the rest of
the workspace follows around it.

Starting adjudication freezes the annotated version, computes the agreement
(:func:`matching.agreement.compare`), applies every node the annotators agree on, and
writes all annotators' decisions to the history. The curator then picks one
annotator's version (or writes an own edit) for each disagreement; the shared nodes
become the curated contract, which is marked audited as any other.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from matching.agreement import compare

from ..models import (
    AnnotatorDecision,
    Comment,
    Contract,
    CurationChoice,
    DecisionAction,
    DoubleAnnotation,
    Node,
    ReviewStatus,
    Span,
    TeamPhase,
)
from ..permissions import CURATE, annotated, assigned, require
from ..selectors.contracts import contract_document, node_snapshot
from .common import ServiceError, editable, record, touch
from .team import clean_fields, team_of


def decisions_by_user(contract: Contract) -> dict[str, dict[str, dict[str, Any]]]:
    """Username -> node id -> decision, for every annotator of ``contract``."""
    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    rows = AnnotatorDecision.objects.filter(contract=contract).select_related("user", "node")
    for d in rows:
        out[d.user.get_username()][d.node.node_id] = d.as_decision()
    return dict(out)


def _check_complete(team: DoubleAnnotation, decisions: Mapping[str, Mapping[str, Any]]) -> None:
    total = team.contract.nodes.count()
    if len(decisions) < team.annotators_needed:
        raise ServiceError(
            f"{len(decisions)} of {team.annotators_needed} annotators have started;"
            " adjudication needs every independent audit"
        )
    for name, mine in sorted(decisions.items()):
        if len(mine) < total:
            raise ServiceError(f"{name} has decided {len(mine)} of {total} nodes")


def _may_curate(contract: Contract, user) -> None:
    require(user, contract.project_id, CURATE)
    if annotated(user, contract) or assigned(user, contract):
        raise ServiceError("an annotator of this contract cannot adjudicate it")


def adjudication_start(*, contract: Contract, user) -> DoubleAnnotation:
    """Freeze the annotations, compute agreement, apply what everyone agreed on."""
    editable(contract)
    _may_curate(contract, user)
    with transaction.atomic():
        team = DoubleAnnotation.objects.select_for_update().filter(contract=contract).first()
        if team is None or team.phase != TeamPhase.ANNOTATING:
            raise ServiceError("there is no blind annotation of this contract to adjudicate")
        decisions = decisions_by_user(contract)
        _check_complete(team, decisions)
        base = contract_document(contract, include_rejected=True)
        agreement = compare(base, decisions)
        disputed = {d.node for d in agreement.disagreements}
        first = next(iter(decisions.values()))
        nodes = {n.node_id: n for n in contract.nodes.select_related("contract__artifact")}
        for node_id, node in nodes.items():
            if node_id not in disputed:
                _apply(node, first[node_id], nodes)
                CurationChoice.objects.create(
                    contract=contract,
                    node=node,
                    curator=user,
                    source="agreed",
                    result=first[node_id],
                )
        team.phase, team.curator = TeamPhase.ADJUDICATING, user
        team.base_document, team.agreement = base, agreement.to_dict()
        team.adjudication_started_at = timezone.now()
        team.save()
        after = {"agreement": agreement.figures(), "decisions": decisions}
        record(contract, user, "adjudication_start", "contract", contract.key, after=after)
        touch(contract)
    return team


def _apply(node: Node, decision: Mapping[str, Any], nodes: Mapping[str, Node]) -> None:
    """Make the shared ``node`` what ``decision`` says (confirm, reject or edit)."""
    action = decision["action"]
    if action == DecisionAction.CONFIRM:
        node.review_status = ReviewStatus.CONFIRMED
    elif action == DecisionAction.REJECT:
        node.review_status = ReviewStatus.REJECTED
    else:
        fields = dict(decision.get("fields") or {})
        if "parent" in fields:
            parent = fields.pop("parent")
            node.parent = nodes[parent] if parent is not None else None
        if "evidence" in fields:
            node.spans.all().delete()
            Span.objects.bulk_create(
                Span(node=node, start=s, end=e, position=i)
                for i, (s, e) in enumerate(fields.pop("evidence"))
            )
        for key, value in fields.items():
            setattr(node, key, value)
        node.review_status = ReviewStatus.EDITED
    node.version += 1
    node.save()


def curation_choose(
    *,
    node: Node,
    user,
    pick: str | None = None,
    action: str | None = None,
    fields: Mapping[str, Any] | None = None,
) -> CurationChoice:
    """The curator's choice on ``node``: annotator ``pick``'s version, or an own
    decision (``action`` with ``fields`` for an edit). Recorded with every
    annotator's version of the node."""
    contract = node.contract
    editable(contract)
    _may_curate(contract, user)
    team = team_of(contract)
    if team is None or team.phase != TeamPhase.ADJUDICATING:
        raise ServiceError("start the adjudication first")
    decisions = decisions_by_user(contract)
    if pick is not None:
        if node.node_id not in decisions.get(pick, {}):
            raise ServiceError(f"{pick!r} is not an annotator of this node")
        decision, source = decisions[pick][node.node_id], "pick"
    elif action in DecisionAction.values:
        decision, source = {"action": action}, "edit"
        if action == DecisionAction.EDIT:
            decision["fields"] = clean_fields(node, fields or {})
    else:
        raise ServiceError("pick an annotator's version or give confirm, reject or edit")
    with transaction.atomic():
        node = Node.objects.select_for_update(of=("self",)).get(pk=node.pk)
        before = node_snapshot(node)
        _apply(node, decision, {n.node_id: n for n in contract.nodes.all()})
        choice, _ = CurationChoice.objects.update_or_create(
            node=node,
            defaults={
                "contract": contract,
                "curator": user,
                "source": source,
                "result": decision,
                "picked": _user_named(contract, pick),
            },
        )
        after = {
            "node": node_snapshot(node),
            "source": source,
            "picked": pick,
            "annotators": {name: mine.get(node.node_id) for name, mine in decisions.items()},
        }
        record(contract, user, "curate", "node", node.node_id, before=before, after=after)
        touch(contract)
    return choice


def _user_named(contract: Contract, name: str | None) -> Any:
    if name is None:
        return None
    row = AnnotatorDecision.objects.filter(contract=contract, user__username=name).first()
    return row.user if row else None


# ---------------------------------------------------------------------------- hooks


def guard_shared_nodes(contract: Contract, user) -> None:
    """Raise when ``user`` may not change the shared nodes of ``contract`` now: while
    annotation is blind nobody may (each annotator decides in their own copy), and an
    annotator of the contract may not during adjudication."""
    team = team_of(contract)
    if team is None or team.phase == TeamPhase.ADJUDICATED:
        return
    if team.phase == TeamPhase.ANNOTATING:
        raise ServiceError(
            "this contract is double-annotated: decide in the blind annotation view;"
            " the shared nodes change when the curator adjudicates"
        )
    if annotated(user, contract):
        raise ServiceError("the curator adjudicates this contract; annotators may not change it")


def before_audited(contract: Contract) -> None:
    """The team's conditions for *audited*: no open comment, an adjudicated audit."""
    open_comments = Comment.objects.filter(contract=contract, resolved=False).count()
    if open_comments:
        raise ServiceError(f"{open_comments} comment(s) are open: resolve them first")
    team = team_of(contract)
    if team is not None and team.phase == TeamPhase.ANNOTATING:
        raise ServiceError("the double annotation has not been adjudicated yet")


def after_audited(contract: Contract) -> None:
    DoubleAnnotation.objects.filter(contract=contract).update(
        phase=TeamPhase.ADJUDICATED, adjudicated_at=timezone.now()
    )
