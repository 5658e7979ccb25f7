"""A model's quote → exact offsets of the source text, or a reason to discard it.

Models rarely copy character for character: they curl or straighten apostrophes, turn
dashes into hyphens, drop ``**bold**`` and backticks, change case or re-flow lines. The
search therefore runs on a normalised copy of the text (:class:`Index`) in which each
character remembers its source offset, and the hit is mapped back to exact offsets:
the stored span is always ``text[start:end]``.

A quote is refused (:class:`Miss`, with a reason a user can read) when

- it is not there (``not_found``);
- it is there more than once and nothing says which (``ambiguous``);
- it has fewer than ``min_words`` content words and is not the whole line or event it
  sits in (``too_short``: "the", "a" or "refund" anchor nothing). Trace steps are
  sentences or calls, so the extractor asks for :data:`MIN_CONTENT_WORDS` (3); an
  artifact's obligations are terse imperatives ("decline the refund"), so the proposer
  asks for :data:`MIN_ARTIFACT_WORDS` (2) and relies on uniqueness for the rest;
- for the extractor, it is not inside one ``[assistant]`` or ``[tool]`` event of a
  trace (``wrong_event``: the user's or a tool result's words are not the agent's
  behaviour).

>>> text = "1. **Verify** the customer’s e-mail — always.\\n2. Refund the order."
>>> idx = Index(text)
>>> s, e = idx.anchor("verify the customer's e-mail - always")
>>> text[s:e]
'Verify** the customer’s e-mail — always'
>>> idx.anchor("refund").reason
"too short: 'Refund' has 1 content words (at least 3 unless it is the whole line)"
>>> idx.anchor("the").kind
'ambiguous'
>>> idx.anchor("Cancel the subscription now").kind
'not_found'
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Collection
from dataclasses import dataclass, field

from ..trace import AGENT_ROLES, tag
from ..trace import events as trace_events

__all__ = [
    "AGENT_ROLES",
    "MIN_ARTIFACT_WORDS",
    "MIN_CONTENT_WORDS",
    "Index",
    "Miss",
    "QuoteReport",
    "normalise",
]

MIN_CONTENT_WORDS = 3
MIN_ARTIFACT_WORDS = 2

_FOLD = str.maketrans(
    {
        **dict.fromkeys("‘’‚‛′´", "'"),
        **dict.fromkeys("“”„‟″«»", '"'),
        **dict.fromkeys("‐‑‒–—―−", "-"),
        "\u00a0": " ",
    }
)
_DROP = frozenset("*`")  # emphasis and code markers: never evidence
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "to",
        "of",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "i",
        "you",
        "we",
        "he",
        "she",
        "they",
        "me",
        "us",
        "your",
        "my",
        "our",
        "their",
        "his",
        "her",
        "so",
        "if",
        "then",
        "than",
    ]
)


@dataclass(frozen=True)
class Miss:
    """Why a quote was not anchored: ``kind`` (a key) and ``reason`` (for people)."""

    kind: str
    reason: str


def content_words(text: str) -> int:
    """Words that carry meaning (not "the", "a", "to" ...).

    >>> content_words("Look up the order"), content_words("get_order(id=7)")
    (3, 4)
    """
    return sum(1 for w in re.findall(r"[^\W_]+", text.casefold()) if w not in _STOP)


def normalise(text: str) -> tuple[str, list[int]]:
    """``text`` folded for the search, and the source offset of each kept character.

    Case is folded, quotes and dashes are made plain, ``*``, backticks and emphasis
    underscores (not those inside a word, as in ``lookup_order``) are dropped, ``…`` is ``...`` and
    every run of white space is one space.

    >>> normalise("A  **B** _c_ d_e")
    ('a b c d_e', [0, 1, 5, 8, 10, 12, 13, 14, 15])
    """
    out: list[str] = []
    where: list[int] = []
    n = len(text)
    for i, ch in enumerate(text):
        if ch in _DROP:
            continue
        if ch == "_" and not (0 < i < n - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()):
            continue  # emphasis, not part of a name like lookup_order
        if ch.isspace():
            if out and out[-1] == " ":
                continue
            out.append(" ")
            where.append(i)
            continue
        folded = "..." if ch == "…" else ch.translate(_FOLD).casefold()
        for c in folded:
            out.append(c)
            where.append(i)
    return "".join(out), where


class Index:
    """A text prepared for many quote searches (one per chunk, not one per quote)."""

    def __init__(
        self, text: str, lo: int = 0, hi: int | None = None, *, min_words: int = MIN_CONTENT_WORDS
    ) -> None:
        self.text = text
        self.min_words = min_words
        self.lo = lo
        self.hi = len(text) if hi is None else hi
        norm, where = normalise(text[self.lo : self.hi])
        self.norm = norm
        self.where = [self.lo + w for w in where]
        self._events: list[tuple[int, str]] | None = None

    def find_all(self, quote: str) -> list[tuple[int, int]]:
        """Every exact-offset span the normalised quote matches, in text order."""
        q, _ = normalise(quote)
        q = q.strip()
        if not q:
            return []
        spans: list[tuple[int, int]] = []
        j = self.norm.find(q)
        while j >= 0:
            start = self.where[j]
            end = self.where[j + len(q) - 1] + 1
            spans.append(_trim(self.text, start, end))
            j = self.norm.find(q, j + 1)
        return list(dict.fromkeys(spans))

    def anchor(
        self, quote: str, *, after: int | None = None, roles: Collection[str] | None = None
    ) -> tuple[int, int] | Miss:
        """The one span ``quote`` stands for, or a :class:`Miss`.

        ``after``: the previous step's end; of several matches the first at or after it
        is taken (steps are listed in order), so only matches all before it are
        ambiguous. ``roles``: the trace events the span must lie in.
        """
        spans = self.find_all(quote)
        if not spans:
            return Miss("not_found", f"quote not found in the source text: {_clip(quote)!r}")
        if roles is not None:
            spans = [s for s in spans if self.event_role(*s) in roles]
            if not spans:
                tags = " or ".join(f"[{r}]" for r in sorted(roles))
                return Miss(
                    "wrong_event", f"quote is not inside one {tags} event: {_clip(quote)!r}"
                )
        if len(spans) > 1 and after is not None:
            later = [s for s in spans if s[0] >= after]
            spans = later[:1] if later else spans
        if len(spans) > 1:
            return Miss(
                "ambiguous",
                f"quote occurs {len(spans)} times, so it anchors nothing: {_clip(quote)!r}",
            )
        span = spans[0]
        short = self._too_short(*span, in_trace=roles is not None)
        return short or span

    def _too_short(self, start: int, end: int, *, in_trace: bool) -> Miss | None:
        words = content_words(self.text[start:end])
        if words >= self.min_words:
            return None
        unit_start, unit_end = self._unit(start, end, in_trace)
        if content_words(self.text[unit_start:unit_end]) <= words:
            return None  # the whole line or event is that short: nothing longer to quote
        unit = "event" if in_trace else "line"
        return Miss(
            "too_short",
            f"too short: {_clip(self.text[start:end])!r} has {words} content words"
            f" (at least {self.min_words} unless it is the whole {unit})",
        )

    def _unit(self, start: int, end: int, in_trace: bool) -> tuple[int, int]:
        if in_trace:
            events = self.events()
            i = bisect_right([e[0] for e in events], start) - 1
            if i >= 0:
                s = events[i][0]
                e = events[i + 1][0] if i + 1 < len(events) else len(self.text)
                return s + len(tag(events[i][1])), e
        s = self.text.rfind("\n", 0, start) + 1
        e = self.text.find("\n", end)
        line = self.text[s : len(self.text) if e < 0 else e]
        marker = re.match(r"\s*(?:[-*+]|\d+[.)]|#+)?\s*", line)
        return s + (marker.end() if marker else 0), (len(self.text) if e < 0 else e)

    def events(self) -> list[tuple[int, str]]:
        """``(start offset, role)`` of every event of a rendered trace."""
        if self._events is None:
            self._events = [(e.start, e.role) for e in trace_events(self.text) if e.role]
        return self._events

    def event_role(self, start: int, end: int) -> str | None:
        """The role of the one event holding ``text[start:end]``, or None (two events,
        or no event tag before it)."""
        events = self.events()
        starts = [e[0] for e in events]
        i = bisect_right(starts, start) - 1
        if i < 0:
            return None
        if i + 1 < len(events) and events[i + 1][0] < end:
            return None
        return events[i][1]


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink a span off leading/trailing white space and emphasis markers."""
    while start < end and (text[start].isspace() or text[start] in "*_"):
        start += 1
    while end > start and (text[end - 1].isspace() or text[end - 1] in "*_"):
        end -= 1
    return start, end


def _clip(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class QuoteReport:
    """How many of a model's quotes were anchored, and why the others were not.

    >>> r = QuoteReport()
    >>> r.kept(); r.miss(Miss("not_found", "…")); r.miss(Miss("not_found", "…"))
    >>> (r.quotes, r.discarded, r.unreliable, r.summary())
    (3, 2, True, 'kept 1 of 3 quotes; discarded: 2 not found')
    """

    quotes: int = 0
    anchored: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def kept(self) -> None:
        self.quotes += 1
        self.anchored += 1

    def miss(self, miss: Miss) -> None:
        self.quotes += 1
        self.reasons[miss.kind] = self.reasons.get(miss.kind, 0) + 1

    @property
    def discarded(self) -> int:
        return self.quotes - self.anchored

    @property
    def unreliable(self) -> bool:
        """Most quotes were discarded: what is left is too little to judge by."""
        return self.discarded * 2 > self.quotes

    def summary(self) -> str:
        parts = ", ".join(f"{n} {MISS_WORDS.get(k, k)}" for k, n in sorted(self.reasons.items()))
        tail = f"; discarded: {parts}" if parts else ""
        return f"kept {self.anchored} of {self.quotes} quotes{tail}"

    def to_dict(self) -> dict[str, object]:
        return {
            "quotes": self.quotes,
            "kept": self.anchored,
            "discarded": self.discarded,
            "reasons": dict(self.reasons),
            "unreliable": self.unreliable,
        }


MISS_WORDS = {
    "not_found": "not found",
    "ambiguous": "ambiguous",
    "too_short": "too short",
    "wrong_event": "outside [assistant]/[tool] events",
}
