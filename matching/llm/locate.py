"""Quotes to exact spans, and long texts to overlapping chunks.

A model is asked to *quote* its evidence, never to count characters. The quote is then
found in the text: first verbatim, then after whitespace normalisation (runs of white
space compare equal to one space), mapped back to exact offsets. The stored span is
always ``text[start:end]``; a quote that cannot be found is rejected by the caller.

>>> text = "1. Look up the order\\n   using the number.\\n2. Verify the email."
>>> locate(text, "Verify the email.")
(45, 62)
>>> s, e = locate(text, "Look up the order using the number.")
>>> text[s:e]
'Look up the order\\n   using the number.'
>>> locate(text, "Refund everything.") is None
True
>>> [(c.start, c.end) for c in chunks("a\\nb\\nc\\nd\\n", size=4, overlap=2)]
[(0, 4), (2, 6), (4, 8)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WS = re.compile(r"\s+")


def _normalised(text: str) -> tuple[str, list[int]]:
    """``text`` with white space runs as one space, and each kept char's offset."""
    out: list[str] = []
    where: list[int] = []
    for m in re.finditer(r"\s+|\S+", text):
        if m.group().isspace():
            out.append(" ")
            where.append(m.start())
        else:
            out.append(m.group())
            where.extend(range(m.start(), m.end()))
    return "".join(out), where


def locate(text: str, quote: str, lo: int = 0, hi: int | None = None) -> tuple[int, int] | None:
    """Exact offsets of ``quote`` in ``text[lo:hi]`` (first occurrence), or None.

    Leading and trailing white space of the quote is ignored: a span never needs it.
    """
    hi = len(text) if hi is None else hi
    q = quote.strip()
    if not q:
        return None
    i = text.find(q, lo, hi)
    if i >= 0:
        return i, i + len(q)
    norm, where = _normalised(text[lo:hi])
    nq = _WS.sub(" ", q)
    j = norm.find(nq)
    if j < 0:
        return None
    start = lo + where[j]
    last = lo + where[j + len(nq) - 1]  # the quote's last char is never white space
    return start, last + 1


@dataclass(frozen=True)
class Chunk:
    start: int
    end: int


def chunks(text: str, *, size: int, overlap: int) -> list[Chunk]:
    """Cover ``text`` with pieces of at most ``size`` chars, consecutive pieces sharing
    about ``overlap`` chars; cuts fall after a newline where one is in reach, so a step
    is rarely split (and a split step is whole in the next piece, thanks to the overlap).
    """
    n = len(text)
    if n <= size:
        return [Chunk(0, n)]
    overlap = max(0, min(overlap, size // 2))
    out: list[Chunk] = []
    start = 0
    while True:
        end = min(start + size, n)
        if end < n:
            cut = text.rfind("\n", start + overlap + 1, end)
            if cut >= 0:
                end = cut + 1
        out.append(Chunk(start, end))
        if end >= n:
            return out
        nxt = end - overlap
        if overlap:
            # Begin the next piece at a line start inside the overlap, if there is one.
            line = text.find("\n", nxt, end)
            if 0 <= line < end - 1:
                nxt = line + 1
        start = max(nxt, start + 1)
