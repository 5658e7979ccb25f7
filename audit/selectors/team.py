"""Reads of team work: progress and queues, one annotator's blind copy, the
adjudication table, agreement reports, comments, and the export with provenance.

Whatever would reveal one annotator's decisions (their copy, agreement figures, the
disagreement list) goes through :func:`audit.permissions.decisions_visible` first.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import BooleanField, Count, ExpressionWrapper, Q, QuerySet
from django.http import Http404

from matching.agreement import compare

from ..models import (
    AnnotatorDecision,
    Assignment,
    AssignmentRole,
    Comment,
    Contract,
    CurationChoice,
    DecisionAction,
    DoubleAnnotation,
    Membership,
    Node,
    Project,
    ReviewStatus,
    Span,
    TeamPhase,
)
from ..permissions import decisions_visible
from .contracts import ContractRows, contract_document, project_contracts
from .teaching import with_taught


@dataclass
class Progress:
    """How far the review of one contract is, for one user (their own blind copy on a
    double-annotated contract) or for everyone (the shared nodes)."""

    reviewed: int
    total: int
    errors: int

    @property
    def percent(self) -> int:
        return int(100 * self.reviewed / self.total) if self.total else 100


def team_of(contract: Contract) -> DoubleAnnotation | None:
    return DoubleAnnotation.objects.filter(contract=contract).first()


def contract_progress(contract: Contract, user: Any = None) -> Progress:
    """% of proposals reviewed and open audit errors (the engine's audit)."""
    total = Node.objects.filter(contract=contract).count()
    team = team_of(contract)
    if team is not None and team.phase == TeamPhase.ANNOTATING and user is not None:
        reviewed = AnnotatorDecision.objects.filter(contract=contract, user=user).count()
    else:
        reviewed = (
            Node.objects.filter(contract=contract)
            .exclude(review_status=ReviewStatus.PROPOSED)
            .count()
        )
    from matching.validate import audit_contract  # networkx: loaded on use, not at start-up

    errors = len(audit_contract(contract_document(contract)).errors)
    return Progress(reviewed, total, errors)


@dataclass
class QueueItem:
    contract: Contract
    role: str
    progress: Progress
    phase: str | None  # the double annotation's phase, None for a single audit


def my_queue(user: Any, project: Project | None = None) -> list[QueueItem]:
    """The contracts assigned to ``user`` (a project assignment means the newest
    version of each of its contracts), unfinished first."""
    rows = Assignment.objects.filter(user=user).select_related("project", "contract")
    if project is not None:
        rows = rows.filter(project=project)
    seen: set[tuple[int, str]] = set()
    items = []
    for a in rows:
        contracts = [a.contract] if a.contract else project_contracts(a.project)
        for c in contracts:
            if (c.pk, a.role) in seen:
                continue
            seen.add((c.pk, a.role))
            team = team_of(c)
            mine = user if a.role == AssignmentRole.ANNOTATOR else None
            items.append(
                QueueItem(c, a.role, contract_progress(c, mine), team.phase if team else None)
            )
    items.sort(key=lambda i: (i.contract.status == "audited", i.contract.key))
    return items


def progress_by_contract(contracts: list[Contract]) -> dict[int, Progress]:
    """Shared-node progress of each contract of a project listing."""
    counts = {
        row["contract"]: row
        for row in Node.objects.filter(contract__in=contracts)
        .values("contract")
        .annotate(total=Count("pk"), open=Count("pk", filter=Q(review_status="proposed")))
    }
    from matching.validate import audit_contract  # networkx: loaded on use, not at start-up

    out = {}
    for c in contracts:
        row = counts.get(c.pk, {"total": 0, "open": 0})
        errors = len(audit_contract(contract_document(c)).errors)
        out[c.pk] = Progress(row["total"] - row["open"], row["total"], errors)
    return out


# ---------------------------------------------------------------------------- decisions


def own_decisions(contract: Contract, user: Any) -> dict[int, AnnotatorDecision]:
    """Node pk -> ``user``'s own decision (never anyone else's)."""
    rows = AnnotatorDecision.objects.filter(contract=contract, user=user)
    return {d.node_id: d for d in rows}


BLIND_STATUS: dict[str, str] = {
    DecisionAction.CONFIRM: ReviewStatus.CONFIRMED,
    DecisionAction.REJECT: ReviewStatus.REJECTED,
    DecisionAction.EDIT: ReviewStatus.EDITED,
}


def blind_rows(rows: ContractRows, mine: dict[int, AnnotatorDecision]) -> ContractRows:
    """The contract as one annotator's decisions ``mine`` make it, for the workspace's
    outline, highlights and node panel: each node's status is their decision
    (*proposed* while undecided), and an edit's fields and evidence replace the
    node's. The shared rows are not changed (the nodes are copies)."""
    pk_of = {n.node_id: n.pk for n in rows.nodes}
    nodes, spans = [], dict(rows.spans)
    for node in rows.nodes:
        d = mine.get(node.pk)
        own = copy.copy(node)
        own.review_status = BLIND_STATUS[d.action] if d else ReviewStatus.PROPOSED
        for key, value in (d.fields if d and d.action == DecisionAction.EDIT else {}).items():
            if key == "evidence":
                spans[node.pk] = [
                    Span(node_id=node.pk, start=a, end=b, position=i)
                    for i, (a, b) in enumerate(value)
                ]
            elif key == "parent":
                own.parent_id = pk_of.get(value) if value else None
            else:
                setattr(own, key, value)
        nodes.append(own)
    return replace(rows, nodes=nodes, spans=spans)


def may_decide(contract: Contract, user: Any) -> bool:
    """Does the blind annotation of ``contract`` ask ``user`` for decisions now?"""
    from ..services.common import ServiceError
    from ..services.team import may_annotate

    try:
        may_annotate(contract, user)
    except (ServiceError, PermissionDenied, Http404):
        return False
    return True


def curates(contract: Contract, user: Any, membership: Membership) -> bool:
    """Is ``user`` the curator of ``contract`` (assigned to review it, or adjudicating)?"""
    from ..permissions import CURATE, assigned, has_role

    team = team_of(contract)
    if not has_role(membership.role, CURATE):
        return False
    return assigned(user, contract, AssignmentRole.REVIEWER) or (
        team is not None and team.curator_id == user.pk
    )


def visible_decisions(
    contract: Contract, user: Any, membership: Membership
) -> list[AnnotatorDecision]:
    """Every decision on ``contract`` that ``user`` may read."""
    rows = AnnotatorDecision.objects.filter(contract=contract).select_related("user", "node")
    return [d for d in rows if decisions_visible(user, membership, contract, d.user_id)]


def annotator_names(contract: Contract) -> list[str]:
    """The usernames of whoever has decided on ``contract``, sorted."""
    rows = AnnotatorDecision.objects.filter(contract=contract).values_list("user__username")
    return sorted({name for (name,) in rows})


def may_see_all(contract: Contract, user: Any, membership: Membership) -> bool:
    """May ``user`` read every annotator's decisions (and so the agreement)?"""
    owners = set(
        AnnotatorDecision.objects.filter(contract=contract).values_list("user_id", flat=True)
    )
    return all(decisions_visible(user, membership, contract, o) for o in owners)


def agreement_of(contract: Contract) -> dict[str, Any] | None:
    """The agreement (frozen at adjudication, else computed from the decisions now)."""
    from ..services.adjudication import decisions_by_user

    team = team_of(contract)
    if team is None:
        return None
    if team.agreement is not None:
        return team.agreement
    decisions = decisions_by_user(contract)
    if len(decisions) < 2:
        return None
    return compare(contract_document(contract, include_rejected=True), decisions).to_dict()


@dataclass
class AdjudicationRow:
    node: Node
    disagreement: dict[str, Any] | None  # from the agreement; None: everyone agreed
    choice: CurationChoice | None
    # "path-changing", "disagreement", "agreed", or before adjudication "undecided" (an
    # annotator has not decided the node yet) and "not compared" (no two copies yet)
    state: str = "agreed"


def _row_state(disagreement: Any, decided: int, needed: int, compared: bool) -> str:
    if not compared:
        return "not compared"
    if decided < needed:
        return "undecided"
    if disagreement:
        return "path-changing" if disagreement.get("path_changing") else "disagreement"
    return "agreed"


def adjudication_rows(contract: Contract) -> list[AdjudicationRow]:
    """Every node, disagreements first (path-changing ones at the top). Before the
    adjudication the agreement is the one of the decisions so far, and a node some
    annotator has not decided is *undecided*, not a disagreement."""
    team = team_of(contract)
    agreement = agreement_of(contract)
    listed = (agreement or {}).get("disagreement_list", [])
    by_node = {d["node"]: d for d in listed}
    order = {d["node"]: i for i, d in enumerate(listed)}
    decided: dict[int, int] = {
        int(row["node"]): int(row["n"])
        for row in AnnotatorDecision.objects.filter(contract=contract)
        .values("node")
        .annotate(n=Count("pk"))
    }
    needed = team.annotators_needed if team else 2
    choices = {c.node_id: c for c in CurationChoice.objects.filter(contract=contract)}
    nodes = list(contract.nodes.order_by("position", "pk"))
    nodes.sort(key=lambda n: order.get(n.node_id, len(order)))
    out = []
    for n in nodes:
        found = by_node.get(n.node_id)
        state = _row_state(found, decided.get(n.pk, 0), needed, agreement is not None)
        out.append(AdjudicationRow(n, found, choices.get(n.pk), state))
    out.sort(key=lambda r: r.state == "undecided")
    return out


# ---------------------------------------------------------------------------- comments


def comments_of(contract: Contract, *, run: Any = None) -> list[Comment]:
    rows = Comment.objects.filter(contract=contract).select_related(
        "author", "resolved_by", "node", "edge__source", "edge__target", "invariant", "run"
    )
    if run is not None:
        rows = rows.filter(run=run)
    return list(rows.prefetch_related("mentions").order_by("resolved", "created_at", "pk"))


def open_comment_count(contract: Contract) -> int:
    return Comment.objects.filter(contract=contract, resolved=False).count()


# ---------------------------------------------------------------------------- export


def provenance(contract: Contract) -> dict[str, Any] | None:
    """Who audited ``contract`` and how well they agreed (an adjudicated double
    annotation only)."""
    team = team_of(contract)
    if team is None or team.phase != TeamPhase.ADJUDICATED:
        return None
    figures = {k: v for k, v in (team.agreement or {}).items() if not isinstance(v, list)}
    return {
        "annotators": (team.agreement or {}).get("annotators", []),
        "curator": team.curator.get_username() if team.curator else None,
        "agreement": figures,
        "adjudicated_at": team.adjudicated_at.isoformat() if team.adjudicated_at else None,
    }


def export_document(contract: Contract) -> dict[str, Any]:
    """The exported contract; an adjudicated one carries its audit provenance in the
    ``meta.audit`` of each root node (FORMAT.md allows free-form keys only in node
    ``meta``, so the document stays valid against the schema)."""
    doc = contract_document(contract)
    found = provenance(contract)
    if found is not None:
        for node in doc["nodes"]:
            if node["parent"] is None:
                node["meta"] = {**node["meta"], "audit": found}
    return with_taught(doc, contract)


AGREEMENT_FIELDS = [
    "contract",
    "version",
    "annotators",
    "nodes",
    "kappa",
    "alpha",
    "span_f1",
    "type_agreement",
    "edge_agreement",
    "disagreements",
    "path_changing",
]


def agreement_row(contract: Contract, agreement: dict[str, Any]) -> dict[str, Any]:
    row = {"contract": contract.key, "version": contract.version}
    row.update({k: agreement.get(k) for k in AGREEMENT_FIELDS[2:]})
    row["annotators"] = " ".join(agreement.get("annotators") or [])
    return row


def comment_target(contract: Contract, target: str, target_id: int | None) -> Any:
    """The object a new comment is about (None for the contract itself); 404 when it
    is not part of ``contract``."""
    from django.http import Http404

    from ..services.comments import TARGET_MODELS

    if target == "contract":
        return None
    model = TARGET_MODELS.get(target)
    obj = model.objects.filter(pk=target_id, contract=contract).first() if model else None
    if obj is None:
        raise Http404(f"no such {target} in this contract")
    return obj


def comment_options(contract: Contract) -> list[tuple[str, str]]:
    """What a comment on ``contract`` may be about: ``(value, label)`` pairs."""
    from ..models import Edge, Invariant, Run

    out = [(f"node:{n.pk}", f"node {n.node_id}") for n in contract.nodes.all()]
    out += [
        (f"edge:{e.pk}", f"edge {e.source.node_id} -{e.kind}-> {e.target.node_id}")
        for e in Edge.objects.filter(contract=contract).select_related("source", "target")
    ]
    out += [
        (f"invariant:{i.pk}", f"invariant {i.inv_id}")
        for i in Invariant.objects.filter(contract=contract)
    ]
    out += [
        (f"run:{r.pk}", f"run {r.pk} ({r.query_key})")
        for r in Run.objects.filter(contract=contract)[:50]
    ]
    return out


def project_agreement_rows(project: Project, user: Any, membership: Membership) -> list[dict]:
    """One row per double-annotated contract of ``project`` whose agreement ``user`` may
    read, then a ``(project)`` row: Krippendorff's α pooled over every node of those
    contracts (α allows different annotators per unit), the means of the other
    figures, and the total disagreements."""
    from matching.agreement import krippendorff_alpha

    from ..services.adjudication import decisions_by_user

    rows, units = [], []
    for c in project_contracts(project):
        if team_of(c) is None or not may_see_all(c, user, membership):
            continue
        agreement = agreement_of(c)
        if agreement is None:
            continue
        rows.append(agreement_row(c, agreement))
        decisions = decisions_by_user(c)
        node_ids = {k for mine in decisions.values() for k in mine}
        units += [
            [(mine.get(k) or {}).get("action") for mine in decisions.values()] for k in node_ids
        ]
    if not rows:
        return rows

    def mean(key: str) -> float | None:
        got = [r[key] for r in rows if r[key] is not None]
        return sum(got) / len(got) if got else None

    pooled: dict[str, Any] = {"contract": "(project)", "version": None, "annotators": ""}
    pooled |= {k: mean(k) for k in ("kappa", "span_f1", "type_agreement", "edge_agreement")}
    pooled["alpha"] = krippendorff_alpha(units)
    pooled |= {k: sum(r[k] for r in rows) for k in ("nodes", "disagreements", "path_changing")}
    return [*rows, pooled]


def my_notifications(user: Any, project: Project | None = None) -> list[Any]:
    """``user``'s unread notifications, newest first, of the projects they are still a
    member of (of ``project`` only, when given): the fifty the bell shows."""
    rows = notifications_of(user, unread_only=True)
    if project is not None:
        rows = rows.filter(comment__contract__project=project)
    return list(rows[:50])


def notifications_of(user: Any, unread_only: bool = False) -> QuerySet[Any]:
    """Every notification of ``user`` in the projects they are still a member of: the
    unread first, newest first within each (only the unread with ``unread_only``)."""
    from ..models import Notification

    rows = Notification.objects.filter(
        user=user, comment__contract__project__memberships__user=user
    )
    if unread_only:
        rows = rows.filter(read_at__isnull=True)
    unread = ExpressionWrapper(Q(read_at__isnull=True), output_field=BooleanField())
    return (
        rows.annotate(unread=unread)
        .select_related("comment__author", "comment__contract__project", "comment__run")
        .select_related("comment__node", "comment__invariant")
        .select_related("comment__edge__source", "comment__edge__target")
        .order_by("-unread", "-created_at", "-pk")
        .distinct()
    )
