"""A run's trace as its page shows it: cut into highlighted segments and, when long,
into parts that the page loads one after the other.

A part holds at most :data:`TRACE_PART_BYTES` of HTML (the trace's text escaped, with
the ``<mark>`` of each observed step), so that no response carries a whole long trace:
the run page inlines part 0 and the page's script loads the next ones from
``/r/<pk>/trace/<n>/``. A trace that fits one part is inlined whole, as before. Parts
end after a line feed where a line allows it (a part is a block: a line cut between
two parts would show as two lines); a step whose text crosses a cut is split there,
each piece keeping the step's mark.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..models import Run
from ..templatetags.audit_text import text_content
from .runs import trace_segments

# The HTML a part of the trace carries, and so the length past which a run page loads
# its trace in parts (docs/review.md, "Long traces").
TRACE_PART_BYTES = 64 * 1024
# A payload of the overlay (matching/overlay.py, without the trace text) longer than
# this is fetched by the page from /r/<pk>/overlay.json instead of being inlined.
OVERLAY_INLINE_BYTES = 128 * 1024
# What a mark costs beyond its text: the tag, its class and attributes, without the ids
# and status, counted apart (each twice: in data-o and in the title).
_MARK_BYTES = 60
# A line longer than this many characters is cut in pieces (a character escapes to at
# most 5 bytes): a part may then end inside a line.
_PIECE_CHARS = TRACE_PART_BYTES // 8


# What a part or the overlay's payload reads of a run (not its report, input or usage).
TRACE_FIELDS = ("overlay", "observed")


@dataclass
class TracePart:
    index: int
    count: int
    start: int
    end: int
    segments: list[dict[str, Any]]

    @property
    def next(self) -> int | None:
        return self.index + 1 if self.index + 1 < self.count else None


def run_trace(run: Run) -> tuple[str, list[dict[str, Any]]]:
    """The text a run's page shows and the observed steps highlighted in it."""
    if run.overlay is not None:
        return run.overlay.get("trace", {}).get("text", "") or "", run.overlay.get("observed", [])
    return (run.observed.get("source") or {}).get("text", "") or "", run.observed.get("nodes", [])


def _html_bytes(text: str) -> int:
    """The bytes ``text`` takes on the page, escaped as the page escapes it."""
    return len(text_content(text).encode())


def _mark_bytes(segment: Mapping[str, Any]) -> int:
    ids = segment["ids"]
    return _MARK_BYTES + 2 * len((ids + segment["status"]).encode()) if ids else 0


def _pieces(text: str) -> Iterator[str]:
    """``text`` in lines (each with its line feed), a long line in pieces."""
    for line in text.splitlines(keepends=True):
        for i in range(0, len(line), _PIECE_CHARS):
            yield line[i : i + _PIECE_CHARS]


def part_cuts(text: str, segments: list[dict[str, Any]], budget: int) -> list[int]:
    """The offsets where the parts of ``text`` start (``[0]``: one part)."""
    starts = [s["start"] for s in segments]
    marks = [_mark_bytes(s) for s in segments]
    cuts, size, pos = [0], 0, 0
    for piece in _pieces(text):
        end = pos + len(piece)
        first, last = bisect.bisect_left(starts, pos), bisect.bisect_left(starts, end)
        cost = _html_bytes(piece) + sum(marks[first:last])
        if size and size + cost > budget:
            cuts.append(pos)
            size = marks[bisect.bisect_right(starts, pos) - 1]  # the step reopened here
        size += cost
        pos = end
    return cuts


def trace_part(
    text: str, nodes: list[dict[str, Any]], index: int, budget: int = TRACE_PART_BYTES
) -> TracePart | None:
    """Part ``index`` of ``text`` with the spans of ``nodes`` highlighted, the parts
    holding at most ``budget`` bytes of HTML (but a piece of a line and the mark around
    it); None past the last part. The whole trace is segmented to find the cuts; only
    that part's segments are returned."""
    segments, pos = [], 0
    for s in trace_segments(text, nodes):
        segments.append({**s, "start": pos})
        pos += len(s["text"])
    cuts = part_cuts(text, segments, budget)
    if not 0 <= index < len(cuts):
        return None
    a, b = cuts[index], cuts[index + 1] if index + 1 < len(cuts) else len(text)
    starts = [s["start"] for s in segments]
    inside = []
    for s in segments[max(0, bisect.bisect_right(starts, a) - 1) :]:
        if s["start"] >= b:
            break
        lo, hi = max(a, s["start"]), min(b, s["start"] + len(s["text"]))
        if lo < hi:
            inside.append({**s, "text": text[lo:hi]})
    return TracePart(index, len(cuts), a, b, inside)


def overlay_inline(payload: Mapping[str, Any]) -> bool:
    """Whether the page embeds ``payload`` (else it fetches it: see OVERLAY_INLINE_BYTES)."""
    return len(json.dumps(payload, ensure_ascii=False).encode()) <= OVERLAY_INLINE_BYTES
