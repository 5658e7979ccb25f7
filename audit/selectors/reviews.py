"""Reads after a review decision: which node to open next, and which parts of the
workspace the decision changed (so a response carries only those)."""

from __future__ import annotations

from collections.abc import Mapping

from ..models import Node, ReviewStatus
from .contracts import ContractRows
from .workspace import OutlineRow, Segment, segments


def next_to_review(order: list[OutlineRow], after: Node | None) -> Node | None:
    """The first *proposed* node after ``after`` in outline order (wrapping round), or
    ``after`` itself when nothing else is left to review."""
    nodes = [row.node for row in order]
    start = next((i for i, n in enumerate(nodes) if after and n.pk == after.pk), -1)
    for n in nodes[start + 1 :] + nodes[: start + 1]:
        if n.review_status == ReviewStatus.PROPOSED and (after is None or n.pk != after.pk):
            return n
    return after


def changed_segments(rows: ContractRows, previous: Mapping[int, str]) -> list[Segment]:
    """The highlighted pieces of the artifact whose look differs now that the nodes of
    ``previous`` (pk -> status before the change) have their current status.

    A review never moves a span, so the pieces are the same before and after; only
    their colour, underline and primary node can differ.
    """
    spans = [s for pk in previous for s in rows.spans.get(pk, [])]
    if not spans:
        return []
    window = (min(s.start for s in spans), max(s.end for s in spans))
    now = segments(rows, window)
    current = {pk: rows.by_pk[pk].review_status for pk in previous if pk in rows.by_pk}
    try:
        for pk, status in previous.items():
            if pk in rows.by_pk:
                rows.by_pk[pk].review_status = status
        before = {s.start: (s.css, s.primary) for s in segments(rows, window)}
    finally:
        for pk, status in current.items():
            rows.by_pk[pk].review_status = status
    return [s for s in now if before.get(s.start) != (s.css, s.primary)]
