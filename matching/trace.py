"""Rendered traces: events, tool calls, the agent text and the final answer.

A trace is rendered one event per line, each starting with a role tag
(``[system]``, ``[user]``, ``[assistant]``, ``[tool]`` or ``[result]``, then a space);
every following line without a tag (a continuation, indented by two spaces, a blank
continuation being ``"  "``) belongs to the event above (ALGORITHMS.md §3.5). This is
the one reader of that layout: the matcher, the extractor, the invariant checks, the
perturbation generators and the judges all use it.

>>> text = "[user] Refund?\\n[assistant] Checking.\\n  \\n  Done.\\n[tool] lookup_order(id=7)\\n"
>>> [(e.role, text[e.start : e.end]) for e in events(text)]
... # doctest: +NORMALIZE_WHITESPACE
[('user', '[user] Refund?'), ('assistant', '[assistant] Checking.\\n  \\n  Done.'),
 ('tool', '[tool] lookup_order(id=7)')]
>>> tool_call('[tool] lookup_order(id=7)')
('lookup_order', 'id=7')
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

ROLES = ("system", "user", "assistant", "tool", "result")
AGENT_ROLES = frozenset({"assistant", "tool"})
EVENT = re.compile(r"^\[(system|user|assistant|tool|result)\] ")
# A tool call: a name (letters, digits, ``_``, ``.`` and ``-``, not starting with a
# digit) and its arguments in parentheses. Tool binding (ALGORITHMS.md §2) needs only
# ``name(`` at the start; this grammar decides what a free text *is* a call.
CALL = re.compile(r"^([A-Za-z_][\w.-]*)\((.*)\)\s*$", re.S)
_ANY_EVENT = re.compile(r"^\[(?:system|user|assistant|tool|result)\] ", re.M)


def tag(role: str) -> str:
    """The tag that opens an event of ``role``.

    Parameters
    ----------
    role : str
        One of :data:`ROLES`.

    Returns
    -------
    str

    Examples
    --------
    >>> tag("tool")
    '[tool] '
    """
    return f"[{role}] "


@dataclass(frozen=True)
class Event:
    """One event of a rendered trace.

    Attributes
    ----------
    role : str or None
        The tag's role; ``None`` for untagged text before the first tag.
    start, end : int
        Offsets of the event in the trace: from its tag to the end of its last
        non-blank line (trailing blank lines are not evidence of anything).
    lines : tuple of str
        Every line of the event: the tagged line, then each continuation line, blank
        ones included, up to the next tag.
    """

    role: str | None
    start: int
    end: int
    lines: tuple[str, ...]

    def text(self, *, keep_blank: bool = True) -> str:
        """The event's lines joined by newlines; empty lines always left out, blank
        continuation lines (``"  "``) kept unless ``keep_blank`` is false."""
        return "\n".join(x for x in self.lines if (x.strip() if not keep_blank else x))

    @property
    def tag_length(self) -> int:
        """Length of the leading role tag (0 for untagged text)."""
        return 0 if self.role is None else len(tag(self.role))


def events(text: str) -> Iterator[Event]:
    """The events of a rendered trace, in order.

    Parameters
    ----------
    text : str
        A rendered trace.

    Returns
    -------
    iterator of Event
        Untagged text before the first tag, when it has a non-blank line, comes first
        as an event with role ``None`` starting at that line.

    Examples
    --------
    >>> [(e.role, e.lines) for e in events("hello\\n[tool] f()\\n")]
    [(None, ('hello',)), ('tool', ('[tool] f()', ''))]
    """
    role: str | None = None
    start = end = pos = 0
    lines: list[str] = []
    opened = False
    for line in text.split("\n"):
        line_end = pos + len(line)
        m = EVENT.match(line)
        if m:
            if opened:
                yield Event(role, start, end, tuple(lines))
            role, start, end, lines, opened = m.group(1), pos, line_end, [line], True
        elif opened:
            lines.append(line)
            if line.strip():
                end = line_end
        elif line.strip():
            role, start, end, lines, opened = None, pos, line_end, [line], True
        pos = line_end + 1
    if opened:
        yield Event(role, start, end, tuple(lines))


def is_trace(text: str) -> bool:
    """Whether ``text`` has at least one tagged event line.

    Parameters
    ----------
    text : str

    Returns
    -------
    bool

    Examples
    --------
    >>> is_trace("Hello.\\n[assistant] Hi"), is_trace("Hello [assistant] Hi")
    (True, False)
    """
    return _ANY_EVENT.search(text) is not None


def strip_tag(quote: str) -> str:
    """``quote`` without its leading ``[role] `` tag, if it has one.

    Parameters
    ----------
    quote : str

    Returns
    -------
    str

    Examples
    --------
    >>> strip_tag("[tool] f(x=1)"), strip_tag("plain")
    ('f(x=1)', 'plain')
    """
    m = EVENT.match(quote)
    return quote[m.end() :] if m else quote


def tool_call(text: str) -> tuple[str, str] | None:
    """``(name, arguments)`` when ``text`` (after an optional ``[tool] `` tag) is a call.

    Parameters
    ----------
    text : str

    Returns
    -------
    (str, str) or None
        The tool name and the text between the parentheses; None when ``text`` is not
        written ``name(arguments)``.

    Examples
    --------
    >>> tool_call("get-order(7)"), tool_call("[tool] refund()"), tool_call("Refunded it.")
    (('get-order', '7'), ('refund', ''), None)
    """
    m = CALL.match(text.removeprefix(tag("tool")))
    return (m.group(1), m.group(2)) if m else None


def is_call(text: str) -> bool:
    """Whether ``text`` is written as a tool call ``name(arguments)``.

    Parameters
    ----------
    text : str

    Returns
    -------
    bool
    """
    return tool_call(text) is not None


def calls_tool(quotes: list[str], names: set[str]) -> bool:
    """Whether one of ``quotes`` starts with ``name(`` for a name of ``names``.

    A call of that tool, ALGORITHMS.md §2 tool binding, whatever characters the name
    has (the bound names come from the contract, not from :data:`CALL`).

    Parameters
    ----------
    quotes : list of str
        Evidence quotes without their ``[tool] `` tag.
    names : set of str
        Tool names bound to an expected node (``meta.tool``).

    Returns
    -------
    bool
    """
    return any(q.startswith(name + "(") for q in quotes for name in names)


def agent_events(text: str) -> Iterator[Event]:
    """The ``[assistant]`` and ``[tool]`` events of a trace.

    Parameters
    ----------
    text : str

    Returns
    -------
    iterator of Event
    """
    return (e for e in events(text) if e.role in AGENT_ROLES)


def agent_text(kind: str, text: str, output: str | None) -> str:
    """The text invariant checks search (ALGORITHMS.md §3.5).

    For a trace, its ``[assistant]`` and ``[tool]`` events, each whole (tag and
    continuation lines included, blank ones too), joined by newlines; for a response,
    the whole text; in both cases followed by a newline and ``output`` if present.

    Parameters
    ----------
    kind : {"trace", "response"}
    text : str
    output : str or None
        The execution's final output.

    Returns
    -------
    str

    Examples
    --------
    >>> agent_text("trace", "[user] hi\\n[assistant] Hello\\n  \\n  there\\n", "{}")
    '[assistant] Hello\\n  \\n  there\\n{}'
    """
    body = "\n".join(e.text() for e in agent_events(text)) if kind == "trace" else text
    return body if output is None else body + "\n" + output


def last_agent_message(text: str) -> str:
    """The last ``[assistant]`` event of a trace without its tag (non-blank lines only).

    Parameters
    ----------
    text : str

    Returns
    -------
    str
        Empty when the trace has no ``[assistant]`` event.

    Examples
    --------
    >>> last_agent_message("[assistant] Checking.\\n[tool] f()\\n[assistant] Done:\\n  ok.\\n")
    'Done:\\n  ok.'
    """
    last = ""
    for e in events(text):
        if e.role == "assistant":
            last = e.text(keep_blank=False)[e.tag_length :]
    return last
