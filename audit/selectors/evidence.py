"""The source text around evidence spans, cut into pieces that know whose spans cover
them: the adjudication table shows each annotator's evidence of a node as highlighted
text of the artifact, not as offsets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..models import AnnotatorDecision, Contract, DecisionAction, Span
from .team import AdjudicationRow
from .workspace import cut_text

MARGIN = 60  # characters of context either side of the spans


@dataclass
class Piece:
    text: str
    owners: list[int] = field(default_factory=list)  # the versions whose spans cover it
    gap: bool = False  # text left out between two distant spans ("…")


def _windows(marks: Sequence[tuple[int, int]], size: int, margin: int) -> list[list[int]]:
    """The stretches of text shown: each span with ``margin`` around it, merged."""
    out: list[list[int]] = []
    for a, b in sorted(marks):
        lo, hi = max(0, a - margin), min(size, b + margin)
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def excerpt(
    text: str, versions: Sequence[Sequence[Sequence[int]]], margin: int = MARGIN
) -> list[Piece]:
    """``text`` around the spans of every version (``versions[i]``: the ``[start, end]``
    spans of version ``i``), each piece with the versions covering it; distant spans
    are joined by a gap piece. Empty without spans.

    >>> [(p.text, p.owners) for p in excerpt("one two three", [[[4, 7]], [[4, 13]]], 2)]
    [('e ', []), ('two', [0, 1]), (' three', [1])]
    """
    marks = [(int(s[0]), min(int(s[1]), len(text)), i) for i, v in enumerate(versions) for s in v]
    marks = [m for m in marks if m[0] < m[1]]
    if not marks:
        return []
    windows = _windows([(a, b) for a, b, _ in marks], len(text), margin)
    pieces: list[Piece] = []
    for lo, hi in windows:
        if pieces or lo > 0:
            pieces.append(Piece("…", gap=True))
        for a, b, active in cut_text(text, [(m[0], m[1]) for m in marks]):
            a, b = max(a, lo), min(b, hi)
            if a < b:
                pieces.append(Piece(text[a:b], sorted({marks[i][2] for i in active})))
    if windows[-1][1] < len(text):
        pieces.append(Piece("…", gap=True))
    return pieces


def _evidence(decision: AnnotatorDecision | None, proposed: list[list[int]]) -> list[list[int]]:
    """The evidence one annotator's copy gives a node (none when they rejected it)."""
    if decision is None or decision.action == DecisionAction.REJECT:
        return []
    return decision.evidence_or(proposed)


@dataclass
class SpanChoice:
    """One span some version gives a node, for the curator's own edit."""

    value: str  # "start-end"
    quote: str
    owners: list[int]  # the annotators whose version has it


@dataclass
class TableRow:
    row: AdjudicationRow
    decisions: dict[str, AnnotatorDecision]  # annotator name -> decision
    source: list[Piece]  # the artifact around every annotator's evidence of the node
    spans_differ: bool
    span_choices: list[SpanChoice] = field(default_factory=list)


def span_choices(text: str, versions: Sequence[Sequence[Sequence[int]]]) -> list[SpanChoice]:
    """Every distinct span of ``versions``, in text order, with who has it."""
    owners: dict[tuple[int, int], list[int]] = {}
    for i, version in enumerate(versions):
        for a, b in version:
            owners.setdefault((int(a), int(b)), []).append(i)
    return [
        SpanChoice(f"{a}-{b}", text[a:b], sorted(set(who)))
        for (a, b), who in sorted(owners.items())
    ]


def adjudication_table(
    contract: Contract,
    rows: Sequence[AdjudicationRow],
    decisions: Mapping[int, dict[str, Any]],
    names: Sequence[str],
) -> list[TableRow]:
    """The adjudication table: each row with the decisions shown and the source text
    around the evidence of each annotator in ``names`` (in that order)."""
    text = contract.artifact.text
    proposed: dict[int, list[list[int]]] = {}
    for s in Span.objects.filter(node__contract=contract).order_by("position", "pk"):
        proposed.setdefault(s.node_id or 0, []).append([s.start, s.end])
    out = []
    for r in rows:
        mine = decisions.get(r.node.pk, {})
        versions = [_evidence(mine.get(name), proposed.get(r.node.pk, [])) for name in names]
        kept = {tuple(map(tuple, v)) for v in versions if v}  # a rejection has none
        differ = len(kept) > 1
        choices = span_choices(text, [*versions, proposed.get(r.node.pk, [])])
        out.append(TableRow(r, mine, excerpt(text, versions), differ, choices))
    return out
