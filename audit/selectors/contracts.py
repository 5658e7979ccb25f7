"""Reads of contracts: all rows of one contract in a fixed number of queries, its
exported document, snapshots for the audit history, and the project listings.

:func:`load_contract_rows` fetches a contract's rows whatever the number of nodes;
every function of :mod:`audit.selectors.workspace` works on what it returns.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, F, Max, Q, TextField
from django.db.models.functions import Cast

from ..models import Contract, Edge, Invariant, Node, Project, Query, ReviewStatus, Span
from .documents import export_base, rejected_ids


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
    # The contract's revision as read *before* the rows (see :func:`revision_stamp`);
    # empty for a partial read, which has no export. ``content_stamp`` is the same for
    # its content revision (what the export shows bar which nodes are rejected).
    stamp: str = ""
    content_stamp: str = ""
    by_pk: dict[int, Node] = field(init=False)

    def __post_init__(self) -> None:
        self.by_pk = {n.pk: n for n in self.nodes}


def revision_stamp(contract_pk: int) -> tuple[str, str]:
    """What identifies the content of a contract now: its pk, creation time (a reused pk
    is another contract) and ``revision``; and the same with its content revision. Read
    it before the rows it stands for, so that a derived value stored under it was
    computed from content at least that new."""
    revision, reviews, created = (
        Contract.objects.filter(pk=contract_pk)
        .values_list("revision", "review_revision", "created_at")
        .get()
    )
    return stamps(contract_pk, created, revision, reviews)


def stamps(contract_pk: int, created, revision: int, review_revision: int) -> tuple[str, str]:
    """The keys of :func:`revision_stamp` from the values read: the content revision is
    the count of changes that were not reviews (see ``Contract.review_revision``)."""
    at = f"{contract_pk}:{created.timestamp()}"
    return f"{at}:{revision}", f"{at}:c{revision - review_revision}"


def _applies_to(contract: Contract) -> dict[int, list[int]]:
    """The node pks each invariant of ``contract`` applies to, by invariant pk."""
    applies_to: dict[int, list[int]] = defaultdict(list)
    through = Invariant.applies_to.through
    for inv_pk, node_pk in through.objects.filter(invariant__contract=contract).values_list(
        "invariant_id", "node_id"
    ):
        applies_to[inv_pk].append(node_pk)
    return applies_to


def load_contract_rows(contract: Contract) -> ContractRows:
    """All rows of ``contract`` in seven queries (the first reads its revision)."""
    stamp, content_stamp = revision_stamp(contract.pk)
    nodes = list(Node.objects.filter(contract=contract).order_by("position", "pk"))
    spans: dict[int, list[Span]] = defaultdict(list)
    invariant_spans: dict[int, list[Span]] = defaultdict(list)
    for s in Span.objects.filter(
        Q(node__contract=contract) | Q(invariant__contract=contract)
    ).order_by("position", "pk"):
        if s.node_id is not None:
            spans[s.node_id].append(s)
        elif s.invariant_id is not None:
            invariant_spans[s.invariant_id].append(s)
    invariants = list(Invariant.objects.filter(contract=contract).order_by("position", "pk"))
    applies_to = _applies_to(contract)
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
        stamp=stamp,
        content_stamp=content_stamp,
    )


@dataclass(slots=True)
class _NodeRow:
    pk: int
    node_id: str
    type: str
    label: str
    description: str
    required: bool
    explicit: bool
    combine: str
    parent_id: int | None
    meta: Any
    review_status: str

    @property
    def is_rejected(self) -> bool:
        return self.review_status == ReviewStatus.REJECTED


@dataclass(slots=True)
class _SpanRow:
    start: int
    end: int


@dataclass(slots=True)
class _EdgeRow:
    source_id: int
    target_id: int
    kind: str


def _json(text: str | None) -> Any:
    return {} if text in (None, "{}") else json.loads(text)


def export_rows(contract: Contract) -> ContractRows:
    """The rows :func:`document_from_rows` reads, as plain records instead of model
    instances for the thousands of nodes, spans and edges: building model instances was
    most of the cost of exporting (and so auditing) a large contract. Only for the
    export: the records have no methods and cannot be saved."""
    stamp, content_stamp = revision_stamp(contract.pk)
    node_fields = ("pk", "node_id", "type", "label", "description", "required", "explicit")
    # meta read as text: most nodes have none, and Django's JSON field decodes each one
    nodes = [
        _NodeRow(*values[:-2], _json(values[-2]), values[-1])  # type: ignore[call-arg]
        for values in Node.objects.filter(contract=contract)
        .order_by("position", "pk")
        .annotate(meta_text=Cast("meta", TextField()))
        .values_list(*node_fields, "combine", "parent_id", "meta_text", "review_status")
    ]
    spans: dict[int, list[Span]] = defaultdict(list)
    invariant_spans: dict[int, list[Span]] = defaultdict(list)
    for node_pk, inv_pk, start, end in (
        Span.objects.filter(Q(node__contract=contract) | Q(invariant__contract=contract))
        .order_by("position", "pk")
        .values_list("node_id", "invariant_id", "start", "end")
    ):
        owner = spans[node_pk] if node_pk is not None else invariant_spans[inv_pk]
        owner.append(_SpanRow(start, end))  # type: ignore[arg-type]
    edges = [
        _EdgeRow(*values)
        for values in Edge.objects.filter(contract=contract)
        .order_by("position", "pk")
        .values_list("source_id", "target_id", "kind")
    ]
    applies_to = _applies_to(contract)
    return ContractRows(
        contract=contract,
        text=contract.artifact.text,
        nodes=nodes,  # type: ignore[arg-type]
        spans=spans,
        edges=edges,  # type: ignore[arg-type]
        invariants=list(Invariant.objects.filter(contract=contract).order_by("position", "pk")),
        invariant_spans=invariant_spans,
        applies_to=applies_to,
        queries=list(Query.objects.filter(contract=contract).order_by("position", "pk")),
        stamp=stamp,
        content_stamp=content_stamp,
    )


def document_from_rows(rows: ContractRows, *, include_rejected: bool = False) -> dict[str, Any]:
    """The ``contracteval.contract/v1`` document of the rows (see :func:`contract_document`)."""
    return export_base(rows).document(() if include_rejected else rejected_ids(rows))


def contract_document(contract: Contract, *, include_rejected: bool = False) -> dict[str, Any]:
    """The contract as exported: canonical form, every default written.

    Rejected nodes are left out: a node below a rejected node gets its nearest kept
    ancestor as parent, and edges and ``applies_to`` entries that name a rejected node
    are dropped. Proposed nodes are part of a draft and are exported.
    """
    return document_from_rows(export_rows(contract), include_rejected=include_rejected)


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
        "parent": node.parent.node_id if node.parent is not None else None,
        "meta": node.meta,
        "evidence": [[s.start, s.end] for s in node.spans.all()],
        "review_status": node.review_status,
        "version": node.version,
    }


def invariant_snapshot(inv: Invariant) -> dict[str, Any]:
    """An invariant's values as the audit history records them."""
    return {
        "id": inv.inv_id,
        "label": inv.label,
        "description": inv.description,
        "applies_to": [n.node_id for n in inv.applies_to.all()],
        "check": inv.machine_check,
        "evidence": [[s.start, s.end] for s in inv.spans.all()],
    }


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


def node_rows(contract: Contract, node_pk: int, parent_pk: int | None) -> ContractRows:
    """The rows the panel of node ``node_pk`` (whose parent is ``parent_pk``) shows: its
    spans, parent, children, edges and their other ends, the invariants that apply, in
    four queries whatever the contract's size. The node itself is among ``nodes``."""
    edges = list(
        Edge.objects.filter(Q(source=node_pk) | Q(target=node_pk), contract=contract).order_by(
            "position", "pk"
        )
    )
    near = {e.source_id for e in edges} | {e.target_id for e in edges} | {node_pk}
    if parent_pk:
        near.add(parent_pk)
    nodes = list(
        Node.objects.filter(Q(pk__in=near) | Q(parent=node_pk), contract=contract).order_by(
            "position", "pk"
        )
    )
    invariants = list(Invariant.objects.filter(contract=contract, applies_to=node_pk))
    return ContractRows(
        contract=contract,
        text=contract.artifact.text,
        nodes=nodes,
        spans={node_pk: list(Span.objects.filter(node=node_pk).order_by("position", "pk"))},
        edges=edges,
        invariants=invariants,
        invariant_spans={},
        applies_to={inv.pk: [node_pk] for inv in invariants},
        queries=[],
    )


ORDERING = ("requires", "enables", "branches_to")


def ordering_path(contract: Contract, start: Node, goal: Node) -> list[str] | None:
    """Node ids of a path of ordering edges from ``start`` to ``goal`` (both included),
    or None: adding ``goal -> start`` would close that path into a cycle."""
    succ: dict[int, list[int]] = defaultdict(list)
    for s, t in Edge.objects.filter(contract=contract, kind__in=ORDERING).values_list(
        "source_id", "target_id"
    ):
        succ[s].append(t)
    came: dict[int, int | None] = {start.pk: None}
    frontier = [start.pk]
    while frontier and goal.pk not in came:
        nxt = []
        for pk in frontier:
            for t in succ[pk]:
                if t not in came:
                    came[t] = pk
                    nxt.append(t)
        frontier = nxt
    if goal.pk not in came:
        return None
    path: list[int] = []
    at: int | None = goal.pk
    while at is not None:
        path.append(at)
        at = came[at]
    ids = dict(Node.objects.filter(pk__in=path).values_list("pk", "node_id"))
    return [ids[pk] for pk in reversed(path)]


def edge_problem(contract: Contract, source: Node, target: Node, kind: str) -> str:
    """Why ``source -kind-> target`` cannot be added ("" when it can): it exists, or an
    ordering edge would close a cycle (the message names the path that is there)."""
    if source.pk == target.pk:
        return "an edge needs two different nodes"
    if Edge.objects.filter(contract=contract, source=source, target=target, kind=kind).exists():
        return f"{source.node_id} {kind} {target.node_id} exists already"
    if kind in ORDERING:
        path = ordering_path(contract, target, source)
        if path:
            return (
                f"that makes a cycle: {' → '.join(path)} already puts {target.node_id}"
                f" before {source.node_id}"
            )
    return ""


def enclosing_node(contract: Contract, start: int, end: int) -> Node | None:
    """The node whose evidence holds ``[start, end)`` most tightly (a new node's likely
    parent), or None."""
    span = (
        Span.objects.filter(node__contract=contract, start__lte=start, end__gte=end)
        .exclude(node__review_status=ReviewStatus.REJECTED)
        .annotate(length=F("end") - F("start"))
        .order_by("length", "-pk")
        .select_related("node")
        .first()
    )
    return span.node if span else None
