"""The offline heuristic extractor (ALGORITHMS.md §7): text -> ``contracteval.observed/v1``.

Observed nodes are the agent's *behaviour*: each ``[tool]`` call, and each ``[assistant]``
sentence that does, checks, decides, asks for or refuses something. ``[user]``,
``[result]`` and ``[system]`` lines are context, never nodes; greetings, thanks and
filler are not behaviour either. A response (no tags) is read sentence by sentence.
Every node's evidence is an exact span of the text; the extractor never sees a contract.

>>> text = ('[user] Hi, I want a refund for order 1042.\\n'
...         '[assistant] Hello! Thanks for reaching out.\\n'
...         '[tool] lookup_order(order_id="1042")\\n'
...         '[result] {"placed": "10 days ago"}\\n'
...         '[assistant] The order is 10 days old, so it is inside the return window. '
...         'I have approved your refund.\\n')
>>> obs = extract_heuristic(text, kind="trace")
>>> [(n.id, n.type, text[n.evidence[0].start:n.evidence[0].end]) for n in obs.nodes]
... # doctest: +NORMALIZE_WHITESPACE
[('o1', 'action', '[tool] lookup_order(order_id="1042")'),
 ('o2', 'decision', 'The order is 10 days old, so it is inside the return window.'),
 ('o3', 'action', 'I have approved your refund.')]
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .model import Observed, observed_from_steps
from .trace import events, tool_call

# A sentence ends at . ! ? (optionally closed by a quote or bracket) before white space.
# A full stop between a lower-case word and a capital ("to you.Scheduled") also ends one:
# a missing space is a typo, not one sentence.
_SENTENCE = re.compile(
    r"[^\s].*?(?:[.!?]+[\"')\]]*(?=\s|$)|(?<=[a-z]{2}[.!?])(?=[A-Z][a-z])|$)", re.S
)
FILLER = re.compile(
    r"^(?:(?:hi|hello|hey|good (?:morning|afternoon|evening)|dear \w+)\b[^.!?]*[.!?]?"
    r"|(?:many )?thanks?\b.*|thank you\b.*|you'?re welcome\b.*|no problem\b.*"
    r"|(?:i'?m |i am )?(?:happy|glad) to help\b.*|have a (?:nice|great|good|lovely) \w+.*"
    r"|(?:is there )?anything else\b.*|let me know if\b.*|(?:kind |best )?regards\b.*"
    r"|(?:i'?m |i am |we'?re |we are )?(?:so |very |really )?sorry\b.*|(?:i |we )?apologi[sz]e\b.*"
    r"|(?:all set|done|got it|perfect|no worries|understood)[.!]?"
    r"|sure(?:\s+thing)?[.!]?|of course[.!]?|okay[.!]?|ok[.!]?|great[.!]?|certainly[.!]?)$",
    re.I | re.S,
)
_TYPES = (
    (
        "refusal",
        re.compile(
            r"\b(?:cannot|can't|can not|unable|decline|declined|refuse|not able|won't be able|not eligible|deny|denied)\b",
            re.I,
        ),
    ),
    (
        "validation",
        re.compile(
            r"\b(?:verif\w*|confirm\w*|check\w*|match(?:es|ed)?|validat\w*|authenticat\w*)\b", re.I
        ),
    ),
    (
        "decision",
        re.compile(
            r"\b(?:since|because|so|therefore|within|outside|eligible|qualif\w*|exceed\w*|older than|more than|less than)\b",
            re.I,
        ),
    ),
    ("output_requirement", re.compile(r"^\s*[{\[]")),
)
MIN_WORDS = 3


# A full stop after a title ("Dr. Haddad") never ends the sentence: the name follows.
# After a common abbreviation ("e.g. a refund", "etc.") it does when a capital follows,
# and after "no." unless a number follows ("no. 42"; "The answer is no. I ...").
_TITLE = re.compile(r"(?:^|[\s(])(?:dr|mr|mrs|ms|mx|prof|st|sr|jr|mt)\.$", re.I)
_ABBREVIATION = re.compile(r"(?:^|[\s(])(?:vs|approx|dept|e\.g|i\.e|etc)\.$", re.I)
_NUMBER_SIGN = re.compile(r"(?:^|[\s(])no\.$", re.I)


def _goes_on(sentence: str, after: str) -> bool:
    """Whether the full stop ending ``sentence`` is an abbreviation's, ``after`` being
    the text that follows it."""
    following = after.lstrip()[:1]
    if _TITLE.search(sentence):
        return True
    if _ABBREVIATION.search(sentence):
        return not following.isupper()
    return bool(_NUMBER_SIGN.search(sentence)) and following.isdigit()


def sentence_spans(text: str, base: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each sentence of ``text``, offset by ``base``.

    >>> t = "Please call Dr. Haddad today. He knows.It was sent."
    >>> [t[a:b] for a, b in sentence_spans(t, 0)]
    ['Please call Dr. Haddad today.', 'He knows.', 'It was sent.']
    >>> t = "The answer is no. I have cancelled it. Bring ID, a bill, etc. Then order no. 42."
    >>> [t[a:b] for a, b in sentence_spans(t, 0)]
    ['The answer is no.', 'I have cancelled it.', 'Bring ID, a bill, etc.', 'Then order no. 42.']
    """
    start = None
    for m in _SENTENCE.finditer(text):
        a, b = m.start(), m.end()
        while b > a and text[b - 1].isspace():
            b -= 1
        if b <= a:
            continue
        start = a if start is None else start
        if b < len(text.rstrip()) and _goes_on(text[a:b], text[b:]):
            continue  # the sentence goes on after the abbreviation
        yield base + start, base + b
        start = None


def _is_behaviour(sentence: str) -> bool:
    s = sentence.strip()
    # "Sorry, but I can't refund this" is a refusal, not filler
    if FILLER.match(s) and not _TYPES[0][1].search(s):
        return False
    return len(re.findall(r"[A-Za-z0-9]+", s)) >= MIN_WORDS


def _guess_type(sentence: str) -> str:
    for name, rx in _TYPES:
        if rx.search(sentence):
            return name
    return "action"


def node_label(sentence: str, limit: int = 120) -> str:
    s = " ".join(sentence.split())
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


def extract_heuristic(text: str, *, kind: str = "trace") -> Observed:
    """Build an observed graph from ``text`` alone (a rendered trace or a response).

    Parameters
    ----------
    text : str
    kind : {"trace", "response"}

    Returns
    -------
    Observed
        Nodes ``o1…`` with exact evidence spans, one step each, in text order.

    Raises
    ------
    ValueError
        For an unknown ``kind``.
    """
    if kind not in ("trace", "response"):
        raise ValueError(f"kind must be 'trace' or 'response', not {kind!r}")
    found: list[tuple[int, int, str, str, str | None]] = []  # start, end, label, desc, type
    if kind == "response":
        for a, b in sentence_spans(text, 0):
            s = text[a:b]
            if _is_behaviour(s):
                found.append((a, b, node_label(s), "", _guess_type(s)))
    else:
        for event in events(text):
            a, b = event.start, event.end
            body = text[a + event.tag_length : b]
            if event.role == "tool":
                call = tool_call(body)
                name = call[0] if call else body.split("(")[0].strip() or "tool"
                args = " ".join(call[1].split()) if call else ""
                found.append((a, b, f"Called {name}", args, "action"))
            elif event.role in ("assistant", None):  # untagged text reads as the agent's
                for sa, sb in sentence_spans(body, a + event.tag_length):
                    s = text[sa:sb]
                    if _is_behaviour(s):
                        found.append((sa, sb, node_label(s), "", _guess_type(s)))
    return observed_from_steps(text, kind, found)
