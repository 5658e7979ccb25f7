"""Rewriting a text piece by piece, and carrying evidence spans over to the new text.

A rewrite is a list of :class:`Piece` covering the old text in order: copies (old text
kept), replacements (old text written anew), deletions (replaced by nothing) and
insertions (new text where the old had none). A span of the old text maps to the new
text through the pieces it overlaps: the copied part of a copy, the whole of a
replacement; deletions and insertions contribute nothing, so a span broken by an
insertion becomes several spans, each quoting the same words as before.

>>> old = "[assistant] A.\\n[assistant] B.\\n"
>>> b = Builder(old)
>>> b.delete(14, 27)   # the line break and the second tag ...
>>> b.insert(" ")      # ... become one space
>>> new, pieces = b.finish()
>>> new
'[assistant] A. B.\\n'
>>> [new[s:e] for s, e in map_span(pieces, 15, 29)]
['B.']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..model import Edge, Observed, ObservedNode, Span
from ..trace import strip_tag

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


@dataclass(frozen=True, slots=True)
class Piece:
    """One piece of a rewrite: ``old[old_start:old_end]`` became ``new``.

    ``copied`` is true when ``new`` is the old text itself, character for character.
    An insertion has ``old_start == old_end``; a deletion has ``new == ""``.
    """

    old_start: int
    old_end: int
    new: str
    copied: bool


class Builder:
    """Builds the pieces of a rewrite from left to right; untouched text is copied.

    Parameters
    ----------
    old : str
        The text being rewritten. Edits must come in text order and not overlap.
    """

    def __init__(self, old: str) -> None:
        self.old = old
        self.pieces: list[Piece] = []
        self.pos = 0

    def _copy_to(self, at: int) -> None:
        if at < self.pos:
            raise ValueError(f"edits out of order: {at} < {self.pos}")
        if at > self.pos:
            self.pieces.append(Piece(self.pos, at, self.old[self.pos : at], True))
            self.pos = at

    def replace(self, start: int, end: int, new: str) -> None:
        """Write ``new`` in place of ``old[start:end]`` (a copy when they are equal)."""
        self._copy_to(start)
        self.pieces.append(Piece(start, end, new, new == self.old[start:end]))
        self.pos = end

    def delete(self, start: int, end: int) -> None:
        """Leave ``old[start:end]`` out."""
        self.replace(start, end, "")

    def insert(self, new: str, at: int | None = None) -> None:
        """Write ``new`` at old position ``at`` (by default where the last edit ended)."""
        self._copy_to(self.pos if at is None else at)
        self.pieces.append(Piece(self.pos, self.pos, new, False))

    def finish(self) -> tuple[str, list[Piece]]:
        """The new text and the pieces (the rest of the old text copied)."""
        self._copy_to(len(self.old))
        return "".join(p.new for p in self.pieces), self.pieces


def map_span(pieces: Sequence[Piece], start: int, end: int) -> list[tuple[int, int]]:
    """Where the old span ``[start, end)`` lies in the new text.

    Parameters
    ----------
    pieces : sequence of Piece
        A rewrite's pieces, in order.
    start, end : int
        The old span.

    Returns
    -------
    list of (int, int)
        The new spans, in order; contiguous parts are joined. Empty when nothing of the
        span is left (it lay in deleted text).

    Examples
    --------
    >>> b = Builder("I have it.")
    >>> b.replace(0, 6, "I've")
    >>> new, pieces = b.finish()
    >>> [new[s:e] for s, e in map_span(pieces, 0, 10)]
    ["I've it."]
    """
    out: list[tuple[int, int]] = []
    at = 0
    for p in pieces:
        lo, hi = max(start, p.old_start), min(end, p.old_end)
        if lo < hi and p.new:
            if p.copied:
                s, e = at + lo - p.old_start, at + hi - p.old_start
            else:
                s, e = at, at + len(p.new)
            if out and out[-1][1] == s:
                out[-1] = (out[-1][0], e)
            else:
                out.append((s, e))
        at += len(p.new)
    return out


def words(quote: str) -> list[str]:
    """The words of an evidence quote, its role tags and punctuation left out.

    >>> words("[assistant] I've checked it.\\n[assistant] Done")
    ["I've", 'checked', 'it', 'Done']
    """
    return _WORD.findall(" ".join(strip_tag(line.strip()) for line in quote.split("\n")))


def remap(
    obs: Observed,
    text: str,
    pieces: Sequence[Piece],
    step_of: Callable[[ObservedNode], object] | None = None,
) -> tuple[Observed, list[str]]:
    """``obs`` over the rewritten ``text``: every span carried over, steps renumbered.

    Parameters
    ----------
    obs : Observed
        The observed graph of the old text.
    text : str
        The new text (the pieces joined).
    pieces : sequence of Piece
    step_of : callable, optional
        An old node's ordering key; nodes with equal keys get one step. By default the
        node's own step. New steps are ``0, 1, …`` in the order of the keys' first
        appearance when the nodes are read by old step.

    Returns
    -------
    observed : Observed
        Spans with their new quotes; nodes with no span left are dropped, with the
        edges that name them.
    dropped : list of str
        The ids of the dropped nodes.
    """
    kept: list[ObservedNode] = []
    dropped: list[str] = []
    for n in obs.nodes:
        spans = [
            Span(s, e, text[s:e])
            for sp in n.evidence
            for s, e in map_span(pieces, sp.start, sp.end)
        ]
        if spans:
            kept.append(replace(n, evidence=spans, index=len(kept)))
        else:
            dropped.append(n.id)
    key = step_of or (lambda n: ("step", n.step))
    keys = {n.id: key(n) for n in obs.nodes}  # asked of the old nodes, old offsets
    numbers: dict[object, int] = {}
    for n in sorted(kept, key=lambda n: (n.step, n.index)):
        numbers.setdefault(keys[n.id], len(numbers))
    kept = [replace(n, step=numbers[keys[n.id]]) for n in kept]
    gone = set(dropped)
    edges = [Edge(e.source, e.target, e.kind) for e in obs.edges if not {e.source, e.target} & gone]
    new = replace(obs, text=text, nodes=kept, edges=edges)
    new.invariants = dict(obs.invariants)
    new.has_steps = obs.has_steps or step_of is not None  # shared steps must be written
    return new, dropped
