"""Typed observations: what one observed step *is*, as fields, not words.

Semantic matching reads each kept observed node as a :class:`Step`: its speech act
(``call``, ``ask``, ``confirm``, ``refuse``, ``decide``, ``inform`` or ``close``), the
tool it calls and the call's arguments, who speaks, and its texts (the whole move, then
each sentence and lead clause). Everything is derived from the node's evidence in the
source text, so a step reads the same whether its node came from the behaviour
extractor, an LLM, a pasted observed document or a perturbation generator: the observed
format (FORMAT.md §4) has no place for these fields, and they never travel in a label.

``close`` is the last thing the agent tells (calls aside) when it informs or concludes:
a position, kept as an act of its own so the pair model can weigh it, never as words.

>>> from matching.formats import ObservedNode, Span
>>> text = '[assistant] Could you give me your user id?\\n[tool] get_user_details(user_id="mia_1")'
>>> a, b = ObservedNode("o1", "ask", [Span(12, 43)], 0), ObservedNode("o2", "c", [Span(44, 86)], 1)
>>> [(s.act, s.tool, s.args) for s in steps([a, b], text)]
[('ask', None, {}), ('call', 'get_user_details', {'user_id': 'mia_1'})]
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from .formats import ObservedNode
from .trace import strip_tag, tool_call

ACTS = ("call", "ask", "confirm", "refuse", "decide", "inform", "close")
_SAID = ("ask", "confirm", "refuse", "decide", "inform")
# ``key=value`` arguments of a rendered call: a quoted string, a list, an object or a bare word
ARG = re.compile(
    r"""([A-Za-z_]\w*)\s*=\s*("(?:[^"\\]|\\.)*"|'[^']*'|\[[^\]]*\]|\{[^}]*\}|[^,)]+)"""
)
_LEAD = re.compile(r"^(.{12,}?)[:;]\s")
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|$)")


@dataclass(frozen=True)
class Step:
    """One observed step as the pair model reads it."""

    act: str
    tool: str | None
    args: dict[str, str] = field(default_factory=dict)
    speaker: str = "assistant"
    whole: str = ""
    parts: tuple[str, ...] = ()  # sentences and lead clauses, when there are several
    # what the whole is said as, one after another: its evidence quotes when it has
    # several, else its sentences (the pair features read the whole through them)
    pieces: tuple[str, ...] = ()


@cache
def lexicon() -> dict[str, list[str]]:
    """The hand lexicons of semantic mode (``matching/data/lexicon.json``): word lists,
    each with a sentence on why it exists."""
    path = Path(__file__).parent / "data" / "lexicon.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: v["words"] for k, v in data.items() if not k.startswith("_")}


def parse_args(arguments: str) -> dict[str, str]:
    """The ``key=value`` arguments of a rendered call (JSON objects too).

    >>> parse_args('user_id="mia_1", amount=30')
    {'user_id': 'mia_1', 'amount': '30'}
    >>> parse_args('{"reservation_id": "ZFA04Y"}')
    {'reservation_id': 'ZFA04Y'}
    """
    obj = json_object(arguments)
    if obj is not None:
        return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in obj.items()}
    return {m.group(1): _unquote(m.group(2)) for m in ARG.finditer(arguments.strip())}


def json_object(arguments: str) -> dict[str, Any] | None:
    """The arguments as a JSON object, when they are written as one."""
    s = arguments.strip()
    if not s.startswith("{"):
        return None
    try:
        obj = json.loads(s)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _unquote(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        return raw[1:-1]
    return raw


def humanise_call(name: str, args: dict[str, str]) -> str:
    """A call as words: ``get_user_details user id mia 1`` reads as the embedding reads.

    >>> humanise_call("get_user_details", {"user_id": "mia_1"})
    'get user details user id mia_1'
    """
    keys = " ".join(k.replace("_", " ") for k in args)
    vals = " ".join(v for v in args.values() if len(v) <= 40)
    return " ".join(f"{name.replace('_', ' ')} {keys} {vals}".split())


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` of two words or more.

    >>> sentences("I checked: it is fine. Ok. Shall I go ahead?")
    ['I checked: it is fine.', 'Shall I go ahead?']
    """
    out = []
    for m in _SENTENCE.finditer(text):
        s = m.group(0).strip()
        if len(s.split()) >= 2:
            out.append(s)
    return out


def sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The [start, end) offsets of the sentences of ``text[start:end]``, in ``text``.

    >>> t = "[assistant] Done. Shall I go on?"
    >>> [t[a:b].strip() for a, b in sentence_spans(t, 12, len(t))]
    ['Done.', 'Shall I go on?']
    """
    return [m.span() for m in _SENTENCE.finditer(text, start, end) if m.group(0).strip()]


def sentences_of(text: str) -> list[str]:
    """Sentences and lead clauses (before a colon or semicolon, three words or more).

    >>> sentences_of("I checked: it is fine. Shall I go ahead?")
    ['I checked: it is fine.', 'Shall I go ahead?']
    >>> sentences_of("Your reservation ZFA04Y: a basic economy fare.")
    ['Your reservation ZFA04Y: a basic economy fare.', 'Your reservation ZFA04Y']
    """
    out = []
    for s in sentences(text):
        out.append(s)
        lead = _LEAD.match(s)
        if lead and len(lead.group(1).split()) >= 3 and lead.group(1) != s:
            out.append(lead.group(1))
    return out


def step_of(o: ObservedNode, text: str) -> Step:
    """The :class:`Step` of one observed node (its act from its own words)."""
    from .behaviour import speech_act  # the extractor's act grammar is the one reader

    quotes = [text[s.start : s.end] for s in o.evidence]
    for q in quotes:
        call = tool_call(q.strip())
        if call:
            args = parse_args(call[1])
            return Step("call", call[0], args, "tool", humanise_call(call[0], args))
    said = [strip_tag(q).strip() for q in quotes]
    whole = " ".join(s for s in said if s)
    if not whole:
        whole = o.label
    acts = [speech_act(s) for s in sentences_of(whole)] or [speech_act(whole)]
    strong = [a for a in acts if a in ("confirm", "refuse", "ask")]
    act = strong[0] if strong else ("decide" if "decide" in acts else "inform")
    parts = sentences_of(whole)
    if len(said) > 1:
        parts = [*said, *parts]
    pieces = [s for s in said if s] if len(said) > 1 else sentences(whole)
    return Step(
        act,
        None,
        {},
        "assistant",
        whole,
        tuple(dict.fromkeys(p for p in parts if p != whole)),
        tuple(pieces),
    )


def steps(kept: list[ObservedNode], text: str) -> list[Step]:
    """The steps of the kept observed nodes, in their order; the last thing the agent
    tells, when it informs or concludes, is its ``close``."""
    out = [step_of(o, text) for o in kept]
    said = [i for i, s in enumerate(out) if s.act != "call"]
    if said and out[said[-1]].act in ("inform", "decide"):
        last = out[said[-1]]
        out[said[-1]] = Step("close", None, {}, last.speaker, last.whole, last.parts, last.pieces)
    return out


def acts(step: Step) -> bool:
    """Whether a step *acts* (so that, unpaired, it is an extra action): a call of a
    tool that is not a lookup, or words that report or promise an action.

    >>> acts(Step("call", "cancel_reservation")), acts(Step("call", "get_user_details"))
    (True, False)
    >>> acts(Step("inform", None, whole="I've also signed you up for our newsletter."))
    True
    >>> acts(Step("inform", None, whole="Your flight leaves at 9 am."))
    False
    """
    lex = lexicon()
    if step.act == "call":
        name = (step.tool or "").lower()
        return not any(re.search(rf"(?:^|[_.-]){w}(?:$|[_.-])", name) for w in lex["lookup_verbs"])
    if step.act not in (*_SAID, "close"):
        return False
    return bool(_done_or_promised().search(step.whole))


@cache
def _done_or_promised() -> re.Pattern[str]:
    lex = lexicon()
    verbs = "|".join(sorted(lex["action_verbs"], key=len, reverse=True))
    subject = r"\b(?:i|we)(?:'ve|'ll| have| will| am going to|'m going to| just| also| now|'m| am)*"
    return re.compile(
        rf"{subject}\s+(?:also\s+|now\s+|just\s+|gone ahead and\s+)?(?:{verbs})\w*\b", re.I
    )
