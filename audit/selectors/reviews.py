"""Reads after a review decision: which node to open next, and which parts of the
workspace the decision changed (so a response carries only those). None of them loads
every row of the contract: the outline order comes from one narrow query of the node
links, the highlights from the spans near the changed nodes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db.models import Max, Min, Q

from ..models import Contract, Invariant, Node, ReviewStatus, Span
from .audits import Link, contract_audit
from .contracts import ContractRows, node_rows
from .workspace import OutlineRow, Segment, outline_order, segments, status_counts

if TYPE_CHECKING:
    from matching.validate import Audit


@dataclass
class Skeleton:
    """The outline of a contract without its content: ``order`` is ``(pk, depth,
    children)`` in outline order; ``status`` and ``node_ids`` are per node."""

    order: list[tuple[int, int, int]]
    status: dict[int, str]
    node_pks: dict[str, int]
    place: dict[int, tuple[int, int]] = field(init=False)  # pk -> (depth, children)
    rank: dict[int, int] = field(init=False)  # pk -> place in the outline

    def __post_init__(self) -> None:
        self.place = {pk: (depth, kids) for pk, depth, kids in self.order}
        self.rank = {pk: i for i, (pk, _, _) in enumerate(self.order)}


def skeleton(links: Sequence[Link]) -> Skeleton:
    """The outline order, statuses and ids of the nodes of ``links``
    (:func:`audit.selectors.audits.contract_audit` reads them with the audit)."""
    return Skeleton(
        order=outline_order([(pk, parent) for pk, parent, _, _ in links]),
        status={pk: status for pk, _, status, _ in links},
        node_pks={node_id: pk for pk, _, _, node_id in links},
    )


def next_to_review(sk: Skeleton, after: int | None) -> int | None:
    """The pk of the first *proposed* node after node ``after`` in outline order
    (wrapping round), or ``after`` itself when nothing else is left to review."""
    pks = [pk for pk, _, _ in sk.order]
    start = -1 if after is None else sk.rank.get(after, -1)
    for pk in pks[start + 1 :] + pks[: start + 1]:
        if sk.status[pk] == ReviewStatus.PROPOSED and pk != after:
            return pk
    return after


def window_rows(contract: Contract, lo: int, hi: int) -> ContractRows:
    """The rows whose evidence reaches into ``[lo, hi)``: enough to cut the text there
    as :func:`audit.selectors.workspace.segments` cuts the whole of it (the nodes and
    spans keep their order, so the same span wins where several overlap)."""
    near = Q(start__lt=hi, end__gt=lo)
    spans: dict[int, list[Span]] = {}
    inv_spans: dict[int, list[Span]] = {}
    for s in Span.objects.filter(near, node__contract=contract).order_by("position", "pk"):
        spans.setdefault(s.node_id, []).append(s)  # type: ignore[arg-type]
    for s in Span.objects.filter(near, invariant__contract=contract).order_by("position", "pk"):
        inv_spans.setdefault(s.invariant_id, []).append(s)  # type: ignore[arg-type]
    return ContractRows(
        contract=contract,
        text=contract.artifact.text,
        nodes=list(Node.objects.filter(pk__in=spans).order_by("position", "pk")),
        spans=spans,
        edges=[],
        invariants=list(Invariant.objects.filter(pk__in=inv_spans).order_by("position", "pk")),
        invariant_spans=inv_spans,
        applies_to={},
        queries=[],
    )


def changed_segments(
    contract: Contract, changed: Sequence[Node], previous: Mapping[int, str]
) -> list[Segment]:
    """The highlighted pieces of the artifact whose look differs now that the nodes of
    ``previous`` (pk -> status before the change) have their current status.

    A review never moves a span, so the pieces are the same before and after; only
    their colour, underline and primary node can differ.
    """
    bounds = Span.objects.filter(node__in=[n.pk for n in changed]).aggregate(
        lo=Min("start"), hi=Max("end")
    )
    if bounds["lo"] is None:
        return []
    rows = window_rows(contract, bounds["lo"], bounds["hi"])
    window = (bounds["lo"], bounds["hi"])
    now = segments(rows, window)
    for pk, status in previous.items():  # the same rows as they looked before
        if pk in rows.by_pk:
            rows.by_pk[pk].review_status = status
    before = {s.start: (s.css, s.primary) for s in segments(rows, window)}
    return [s for s in now if before.get(s.start) != (s.css, s.primary)]


@dataclass
class ReviewAnswer:
    """What the answer to a review shows: the panel of ``selected`` (its ``rows``), the
    changed outline rows and highlights, and the header's counts and audit."""

    selected: Node | None
    rows: ContractRows | None
    changed_rows: list[OutlineRow]
    changed_segments: list[Segment]
    counts: dict[str, int]
    audit: Audit
    node_pks: dict[str, int]


def review_answer(
    contract: Contract,
    *,
    selected: int | None,
    changed: Sequence[tuple[Node, str]] = (),
    advance: bool = False,
) -> ReviewAnswer:
    """The answer after ``changed`` (``(node, status before)``), showing node
    ``selected`` or, with ``advance``, the next node to review after it."""
    read = contract_audit(contract)
    audit, sk = read.audit, skeleton(read.links)
    if advance and selected is not None:
        selected = next_to_review(sk, selected)
    rows = node = None
    if selected in sk.status:
        parent = next(p for pk, p, _, _ in read.links if pk == selected)
        rows = node_rows(contract, selected, parent)
        node = rows.by_pk[selected]
    nodes = [n for n, _ in changed]
    return ReviewAnswer(
        selected=node,
        rows=rows,
        changed_rows=[
            OutlineRow(n, *sk.place[n.pk]) for n in sorted(nodes, key=lambda n: sk.rank[n.pk])
        ],
        changed_segments=changed_segments(contract, nodes, {n.pk: b for n, b in changed}),
        counts=status_counts(sk.status.values()),
        audit=audit,
        node_pks=sk.node_pks,
    )
