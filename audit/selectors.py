"""Reads: the contract document (export), and everything the workspace page shows.

:func:`load_contract_rows` fetches a contract's rows in a fixed number of queries
(whatever the number of nodes); every other function here works on what it returns.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Max, Q

from matching.conditioning import Expected, condition
from matching.errors import ContractEvalError
from matching.formats import contract_from_data
from matching.validate import Audit, audit_contract

from .models import (
    AuditRecord,
    Contract,
    ContractStatus,
    Edge,
    Invariant,
    Node,
    NodeType,
    Project,
    ProposalRun,
    Query,
    ReviewStatus,
    Span,
)

CONTRACT_FORMAT = "contracteval.contract/v1"
HISTORY_LIMIT = 100


@dataclass
class ContractRows:
    contract: Contract
    text: str
    nodes: list[Node]
    spans: dict[int, list[Span]]  # node pk -> spans
    edges: list[Edge]
    invariants: list[Invariant]
    invariant_spans: dict[int, list[Span]]
    applies_to: dict[int, list[int]]  # invariant pk -> node pks
    queries: list[Query]
    by_pk: dict[int, Node] = field(init=False)

    def __post_init__(self) -> None:
        self.by_pk = {n.pk: n for n in self.nodes}


def load_contract_rows(contract: Contract) -> ContractRows:
    """All rows of ``contract`` in six queries."""
    nodes = list(Node.objects.filter(contract=contract).order_by("position", "pk"))
    spans: dict[int, list[Span]] = defaultdict(list)
    invariant_spans: dict[int, list[Span]] = defaultdict(list)
    for s in Span.objects.filter(
        Q(node__contract=contract) | Q(invariant__contract=contract)
    ).order_by("position", "pk"):
        if s.node_id is not None:
            spans[s.node_id].append(s)
        else:
            invariant_spans[s.invariant_id].append(s)
    invariants = list(Invariant.objects.filter(contract=contract).order_by("position", "pk"))
    applies_to: dict[int, list[int]] = defaultdict(list)
    through = Invariant.applies_to.through
    for inv_pk, node_pk in through.objects.filter(invariant__contract=contract).values_list(
        "invariant_id", "node_id"
    ):
        applies_to[inv_pk].append(node_pk)
    return ContractRows(
        contract=contract,
        text=contract.artifact.text,
        nodes=nodes,
        spans=spans,
        edges=list(Edge.objects.filter(contract=contract).order_by("position", "pk")),
        invariants=invariants,
        invariant_spans=invariant_spans,
        applies_to=applies_to,
        queries=list(Query.objects.filter(contract=contract).order_by("position", "pk")),
    )


def _span_dict(text: str, s: Span) -> dict[str, Any]:
    return {"start": s.start, "end": s.end, "quote": text[s.start : s.end]}


def document_from_rows(rows: ContractRows, *, include_rejected: bool = False) -> dict[str, Any]:
    """The ``contracteval.contract/v1`` document of the rows (see :func:`contract_document`)."""
    c, text = rows.contract, rows.text
    kept = {n.pk for n in rows.nodes if include_rejected or not n.is_rejected}

    def exported_parent(node: Node) -> str | None:
        seen: set[int] = set()
        parent_pk = node.parent_id
        while parent_pk is not None and parent_pk not in kept and parent_pk not in seen:
            seen.add(parent_pk)
            parent_pk = rows.by_pk[parent_pk].parent_id
        return rows.by_pk[parent_pk].node_id if parent_pk in kept else None

    doc: dict[str, Any] = {"format": CONTRACT_FORMAT, "id": c.key}
    if c.title:
        doc["title"] = c.title
    if c.domain:
        doc["domain"] = c.domain
    artifact: dict[str, Any] = {"text": text}
    if c.artifact.media_type:
        artifact["media_type"] = c.artifact.media_type
    doc["artifact"] = artifact
    doc["nodes"] = [
        {
            "id": n.node_id,
            "type": n.type,
            "label": n.label,
            "description": n.description,
            "required": n.required,
            "explicit": n.explicit,
            "combine": n.combine,
            "parent": exported_parent(n),
            "evidence": [_span_dict(text, s) for s in rows.spans.get(n.pk, [])],
            "meta": n.meta,
        }
        for n in rows.nodes
        if n.pk in kept
    ]
    doc["edges"] = [
        {
            "source": rows.by_pk[e.source_id].node_id,
            "target": rows.by_pk[e.target_id].node_id,
            "kind": e.kind,
        }
        for e in rows.edges
        if e.source_id in kept and e.target_id in kept
    ]
    invariants = []
    for inv in rows.invariants:
        d: dict[str, Any] = {
            "id": inv.inv_id,
            "label": inv.label,
            "description": inv.description,
            "evidence": [_span_dict(text, s) for s in rows.invariant_spans.get(inv.pk, [])],
            "applies_to": [
                rows.by_pk[pk].node_id for pk in rows.applies_to.get(inv.pk, []) if pk in kept
            ],
        }
        if inv.machine_check is not None:
            d["check"] = inv.machine_check
        invariants.append(d)
    doc["invariants"] = invariants
    doc["queries"] = [
        {"id": q.query_id, "text": q.text, "intents": q.intents, "branches": q.branches}
        for q in rows.queries
    ]
    return doc


def contract_document(contract: Contract, *, include_rejected: bool = False) -> dict[str, Any]:
    """The contract as exported: canonical form, every default written.

    Rejected nodes are left out: a node below a rejected node gets its nearest kept
    ancestor as parent, and edges and ``applies_to`` entries that name a rejected node
    are dropped. Proposed nodes are part of a draft and are exported.
    """
    return document_from_rows(load_contract_rows(contract), include_rejected=include_rejected)


def node_snapshot(node: Node) -> dict[str, Any]:
    """A node's values as the audit history records them."""
    return {
        "id": node.node_id,
        "type": node.type,
        "label": node.label,
        "description": node.description,
        "required": node.required,
        "explicit": node.explicit,
        "combine": node.combine,
        "parent": node.parent.node_id if node.parent_id else None,
        "meta": node.meta,
        "evidence": [[s.start, s.end] for s in node.spans.all()],
        "review_status": node.review_status,
        "version": node.version,
    }


# ---------------------------------------------------------------------------- listing


def projects_for_user(user) -> list[Project]:
    return list(
        Project.objects.filter(memberships__user=user)
        .annotate(contract_count=Count("contracts", distinct=True))
        .order_by("name")
    )


def project_contracts(project: Project) -> list[Contract]:
    """The newest version of each contract of ``project``, with review counts."""
    latest = (
        Contract.objects.filter(project=project)
        .values("key")
        .annotate(v=Max("version"))
        .values_list("key", "v")
    )
    wanted = Q(pk__in=[])
    for key, version in latest:
        wanted |= Q(key=key, version=version)
    return list(
        Contract.objects.filter(Q(project=project) & wanted)
        .select_related("artifact")
        .annotate(
            node_count=Count("nodes", filter=~Q(nodes__review_status=ReviewStatus.REJECTED)),
            proposed_count=Count("nodes", filter=Q(nodes__review_status=ReviewStatus.PROPOSED)),
        )
        .order_by("key")
    )


# ---------------------------------------------------------------------------- workspace


@dataclass
class OutlineRow:
    node: Node
    depth: int
    children: int


def outline(rows: ContractRows) -> list[OutlineRow]:
    """Nodes in hierarchy order (depth-first, declaration order among siblings)."""
    kids: dict[int | None, list[Node]] = defaultdict(list)
    for n in rows.nodes:
        parent = n.parent_id if n.parent_id in rows.by_pk else None
        kids[parent].append(n)
    out: list[OutlineRow] = []
    seen: set[int] = set()
    stack: list[tuple[Node, int]] = [(n, 0) for n in reversed(kids[None])]
    while stack:
        node, depth = stack.pop()
        if node.pk in seen:
            continue
        seen.add(node.pk)
        out.append(OutlineRow(node, depth, len(kids[node.pk])))
        stack.extend((c, depth + 1) for c in reversed(kids[node.pk]))
    out.extend(OutlineRow(n, 0, len(kids[n.pk])) for n in rows.nodes if n.pk not in seen)
    return out


@dataclass
class Segment:
    start: int
    text: str
    css: str = ""
    nodes: str = ""
    primary: str = ""


def segments(rows: ContractRows) -> list[Segment]:
    """The artifact cut at every span boundary; each piece knows the nodes covering it.

    A piece takes its colour from the shortest non-rejected span over it (the most
    specific obligation), so nested evidence stays readable.
    """
    text = rows.text
    marks: list[tuple[int, int, str, str, bool]] = []  # start, end, owner, css, rejected
    for n in rows.nodes:
        css = f"hl t-{n.type} s-{n.review_status}"
        for s in rows.spans.get(n.pk, []):
            marks.append((s.start, min(s.end, len(text)), n.node_id, css, n.is_rejected))
    for inv in rows.invariants:
        for s in rows.invariant_spans.get(inv.pk, []):
            marks.append(
                (s.start, min(s.end, len(text)), f"inv:{inv.inv_id}", "hl t-invariant", False)
            )
    bounds = sorted({0, len(text), *(m[0] for m in marks), *(m[1] for m in marks)})
    starts: dict[int, list[int]] = defaultdict(list)
    for i, m in enumerate(marks):
        if m[0] < m[1]:
            starts[m[0]].append(i)
    active: set[int] = set()
    out: list[Segment] = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        active.update(starts.get(a, ()))
        active = {i for i in active if marks[i][1] > a}
        if a >= b:
            continue
        if not active:
            out.append(Segment(a, text[a:b]))
            continue
        covering = sorted(active, key=lambda i: (marks[i][4], marks[i][1] - marks[i][0], -i))
        best = marks[covering[0]]
        owners = " ".join(dict.fromkeys(marks[i][2] for i in covering))
        out.append(Segment(a, text[a:b], best[3], owners, best[2]))
    return out


@dataclass
class NodeDetail:
    node: Node
    spans: list[dict[str, Any]]
    parent: Node | None
    out_edges: list[tuple[Edge, Node]]
    in_edges: list[tuple[Edge, Node]]
    invariants: list[Invariant]
    children: list[Node]

    @property
    def meta_json(self) -> str:
        """The node's meta as JSON, as the edit form and the export write it."""
        return json.dumps(self.node.meta, ensure_ascii=False, sort_keys=True)


def node_detail(rows: ContractRows, node: Node) -> NodeDetail:
    text = rows.text
    return NodeDetail(
        node=node,
        spans=[
            {"pk": s.pk, "start": s.start, "end": s.end, "quote": text[s.start : s.end]}
            for s in rows.spans.get(node.pk, [])
        ],
        parent=rows.by_pk.get(node.parent_id) if node.parent_id else None,
        out_edges=[(e, rows.by_pk[e.target_id]) for e in rows.edges if e.source_id == node.pk],
        in_edges=[(e, rows.by_pk[e.source_id]) for e in rows.edges if e.target_id == node.pk],
        invariants=[inv for inv in rows.invariants if node.pk in rows.applies_to.get(inv.pk, [])],
        children=[n for n in rows.nodes if n.parent_id == node.pk],
    )


def find_node(rows: ContractRows, node_id: str | None) -> Node | None:
    if not node_id:
        return None
    return next((n for n in rows.nodes if n.node_id == node_id), None)


def audit_rows(rows: ContractRows) -> Audit:
    return audit_contract(document_from_rows(rows))


VERBS = {
    "confirm": "confirmed",
    "reject": "rejected",
    "edit": "edited",
    "create": "created",
    "delete": "deleted",
    "save": "saved",
    "import": "imported",
    "propose": "added proposals to",
    "request_proposals": "asked for proposals on",
    "add_evidence": "added evidence to",
    "remove_evidence": "removed evidence from",
    "status": "changed the status of",
    "new_version": "started a new version of",
}


def _changes(before: Any, after: Any) -> list[tuple[str, Any, Any]]:
    """``(key, before, after)`` for every value that differs (whole values otherwise)."""
    if isinstance(before, dict) and isinstance(after, dict):
        keys = [*before, *(k for k in after if k not in before)]
        return [(k, before.get(k), after.get(k)) for k in keys if before.get(k) != after.get(k)]
    if isinstance(after, dict) and before is None:
        return [(k, None, v) for k, v in after.items()]
    if isinstance(before, dict) and after is None:
        return [(k, v, None) for k, v in before.items()]
    return [] if before == after else [("value", before, after)]


def history(contract: Contract, limit: int = HISTORY_LIMIT) -> list[AuditRecord]:
    """The contract's audit records, newest first, each with ``verb`` and ``changes``."""
    records = list(
        AuditRecord.objects.filter(contract=contract)
        .select_related("user")
        .order_by("-created_at", "-pk")[:limit]
    )
    for r in records:
        r.verb = VERBS.get(r.action, r.action.replace("_", " "))
        r.changes = _changes(r.before, r.after)
    return records


def latest_proposal_run(contract: Contract) -> ProposalRun | None:
    return ProposalRun.objects.filter(contract=contract).order_by("-created_at", "-pk").first()


def contract_versions(contract: Contract) -> list[Contract]:
    return list(
        Contract.objects.filter(project_id=contract.project_id, key=contract.key)
        .only("pk", "version", "status")
        .order_by("-version")
    )


def status_counts(rows: ContractRows) -> dict[str, int]:
    counts = {s.value: 0 for s in ReviewStatus}
    for n in rows.nodes:
        counts[n.review_status] += 1
    return counts


def can_mark_audited(contract: Contract, audit: Audit, counts: dict[str, int]) -> bool:
    return (
        contract.status != ContractStatus.AUDITED
        and audit.ok
        and counts[ReviewStatus.PROPOSED] == 0
        and sum(counts.values()) > counts[ReviewStatus.REJECTED]
    )


# ---------------------------------------------------------------------------- queries


@dataclass
class DecisionChoice:
    node: Node
    outcomes: list[Node]
    chosen: str
    needs_choice: bool


@dataclass
class QueryPreview:
    decisions: list[DecisionChoice]
    expected: Expected | None
    error: str
    branches: dict[str, str]  # the choices of the active decisions


def query_preview(
    rows: ContractRows, intents: Iterable[str], branches: dict[str, str]
) -> QueryPreview:
    """Which decisions a query activates, and its expected graph once they are chosen.

    The engine conditions the contract; an unresolved active decision is tried with its
    first outcome only to discover the decisions below it, and is shown as needing a choice.
    """
    doc = {**document_from_rows(rows), "queries": []}
    structure = audit_contract(doc)
    if structure.errors:
        return QueryPreview([], None, f"fix the {len(structure.errors)} audit error(s) first", {})
    parsed = contract_from_data(doc)
    by_id = {n.node_id: n for n in rows.nodes}
    trial = {k: v for k, v in branches.items() if v}
    needs: list[str] = []
    expected: Expected | None = None
    error = ""
    for _ in range(len(parsed.outcomes) + 1):
        try:
            expected = condition(
                parsed, {"id": "preview", "text": "", "intents": list(intents), "branches": trial}
            )
            break
        except ContractEvalError as exc:
            decision = exc.path.removeprefix("$.branches.")
            if exc.rule == "unresolved-decision" and decision in parsed.outcomes:
                needs.append(decision)
                trial[decision] = parsed.outcomes[decision][0]
                continue
            error = exc.message
            break
    if expected is None:
        return QueryPreview([], None, error, {})
    decisions = [
        DecisionChoice(
            node=by_id[d],
            outcomes=[by_id[o] for o in parsed.outcomes[d]],
            chosen="" if d in needs else pick,
            needs_choice=d in needs,
        )
        for d, pick in expected.decisions.items()
    ]
    chosen = {d.node.node_id: d.chosen for d in decisions if d.chosen}
    return QueryPreview(decisions, None if needs else expected, error, chosen)


def intent_choices(rows: ContractRows) -> list[Node]:
    return [n for n in rows.nodes if n.type == NodeType.INTENT and not n.is_rejected]
