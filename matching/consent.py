"""Consent before a consequential action, read from the trace (semantic mode).

Procedures often require the agent to list what it is about to do and to get the
user's explicit yes before doing it. Such an obligation is a *consent gate*: an active
node whose label or description asks for the user's own go-ahead (a consent noun after
a consent verb: "get an explicit yes", "read back the details and get confirmation";
lexicons ``consent_nouns`` and ``consent_verbs``). It guards the tools that the nodes it
precedes bind (``meta.tool``, their subtrees included) and that change something (not
lookups); a gate with no ordering edge guards its first later sibling that binds such a
tool.

A call of a guarded tool is *consented* when

1. the user's last message before it agrees (lexicon ``affirmations``) and does not
   open with a refusal or a pause (``refusals``);
2. the message the user answers, the agent's last before the user's turn with no
   other turn of the user between them, asks something: a question, or a request for
   the go-ahead (``consent_requests``: "please confirm", "I'll proceed once you
   agree"), so the yes answers the agent and not a message of its own nor a question
   the user had already answered. A turn split over several messages reads as one;
3. no earlier call guarded by the same gate used that yes: one yes, one action. A retry
   after a failed call, or a second booking, needs the user's word again.

Each gate with an unconsented call is an omission of the gate, reported with its first
such call. The check reads the trace's tags only (``[user]``, ``[assistant]``,
``[tool]``), so it does not depend on how the steps were extracted. A trace without a
``[user]`` event (a response, a log of calls alone) is not judged, and token mode, the
spec's literal reading, does not run it.

>>> from matching.conditioning import condition
>>> from matching.model import Contract, Edge, Node, Query, Span
>>> text = ("[assistant] I will cancel ABC123 and refund your card. Shall I go ahead?\\n"
...         "[user] Yes please.\\n[tool] cancel(id=\\"ABC123\\")\\n[tool] cancel(id=\\"XYZ987\\")")
>>> ask = "List the cancellation and get an explicit yes"
>>> gate = Node("ok", "validation", ask, True, [Span(0, 1)])
>>> act = Node("cancel", "action", "Cancel it", True, [Span(0, 1)], meta={"tool": "cancel"})
>>> c = Contract("c", "policy", [gate, act], [Edge("ok", "cancel", "requires")], [], [Query("q")])
>>> [(u.gate, u.call.line, u.why[:22]) for u in unconsented_calls(condition(c, "q"), text)]
[('ok', 4, 'the yes at line 2 was ')]
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from . import trace
from .conditioning import Expected
from .failures import Failure
from .observe import Step, acts, lexicon
from .tool_checks import Call, call_of

__all__ = [
    "Unconsented",
    "agrees",
    "consent_failures",
    "consent_gates",
    "kept_gates",
    "settled_orderings",
    "unconsented_calls",
]

_NEGATED = re.compile(r"(?:\bnot|n't|\bnever)\s+(?:\w+\s+)?$")
# the edge kinds that put the gate before what it guards (FORMAT.md, edges)
_ORDERED = ("requires", "enables")


@dataclass(frozen=True)
class Unconsented:
    """A call of a tool that ``gate`` guards, made without the user's go-ahead."""

    gate: str
    call: Call
    why: str


def _phrases(key: str) -> str:
    words = sorted(lexicon()[key], key=len, reverse=True)
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in words)


@cache
def _gate_pattern() -> re.Pattern[str]:
    # a consent verb, then at most four words, then a consent noun
    return re.compile(
        rf"\b(?:{_phrases('consent_verbs')})\b(?:\W+\w+){{0,4}}?\W+(?:{_phrases('consent_nouns')})\b",
        re.I,
    )


@cache
def _word_pattern(key: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w'])(?:{_phrases(key)})(?![\w'])", re.I)


def agrees(message: str) -> bool:
    """Whether a user's message agrees to what was put to them.

    >>> agrees("Yes, please proceed."), agrees("No, don't proceed yet."), agrees("I'm not sure")
    (True, False, False)
    """
    text = message.strip().lstrip("*_-> ").lower()
    if _word_pattern("refusals").match(text):
        return False
    # "not sure", "don't proceed": a negated affirmation is none
    return any(
        not _NEGATED.search(text, 0, m.start())
        for m in _word_pattern("affirmations").finditer(text)
    )


def consent_gates(expected: Expected) -> dict[str, frozenset[str]]:
    """Every consent gate of the contract, active for the query or not, and the tools it
    guards (gates guarding none left out).

    >>> from pathlib import Path
    >>> from matching.conditioning import condition
    >>> from matching.validate import load_contract
    >>> c = load_contract(Path(__file__).parent / "data" / "refund-mini.json")
    >>> consent_gates(condition(c, "q1"))
    {}
    """
    contract, pattern = expected.contract, _gate_pattern()
    out: dict[str, frozenset[str]] = {}
    for n in contract.nodes:
        if not pattern.search(f"{n.label}. {n.description}"):
            continue
        after = [e.target for e in contract.edges if e.source == n.id and e.kind in _ORDERED]
        guarded = _writes(expected, after or _next_acting_sibling(expected, n.id))
        if guarded:
            out[n.id] = guarded
    return out


def _writes(expected: Expected, roots: Iterable[str]) -> frozenset[str]:
    """The tools bound in the subtrees of ``roots`` that change something (a lookup
    needs no consent)."""
    by_id = expected.contract.by_id
    return frozenset(
        tool
        for root in roots
        for m in expected.subtree(root)
        for tool in by_id[m].tools
        if acts(Step("call", tool))
    )


def _next_acting_sibling(expected: Expected, gate: str) -> list[str]:
    """A gate without ordering edges guards the first later sibling that calls a tool
    which changes something: where the procedure declares the yes, the action it is
    for comes next."""
    contract = expected.contract
    parent = contract.by_id[gate].parent
    siblings = (
        contract.children[parent]
        if parent is not None
        else [n.id for n in contract.nodes if n.parent is None]
    )
    later = siblings[siblings.index(gate) + 1 :]
    return next(([s] for s in later if _writes(expected, [s])), [])


def unconsented_calls(expected: Expected, text: str) -> list[Unconsented]:
    """The calls of guarded tools in the trace ``text`` made without consent, in order.

    Every gate of the contract applies, active for the query or not: a cancellation
    needs its yes even when the query asked for something else (the call is then also
    an extra action or a wrong branch, and :func:`consent_failures` leaves it there).
    """
    gates = consent_gates(expected)
    if not gates:
        return []
    evs = [e for e in trace.events(text) if e.role in ("user", "assistant", "tool")]
    if not any(e.role == "user" for e in evs):
        return []
    used: dict[str, set[int]] = {g: set() for g in gates}
    out: list[Unconsented] = []
    last_user: int | None = None
    for i, e in enumerate(evs):
        if e.role == "user":
            last_user = i
            continue
        call = call_of(e, text)
        if call is None:
            continue
        for gate, tools in gates.items():
            if call.name not in tools:
                continue
            why = _refusal(evs, last_user, used[gate], text)
            if why:
                out.append(Unconsented(gate, call, why))
            elif last_user is not None:
                used[gate].add(last_user)
    return out


def kept_gates(expected: Expected, unconsented: list[Unconsented]) -> dict[str, frozenset[str]]:
    """The gates no call of the trace broke (``unconsented``: :func:`unconsented_calls`
    of it), and the tools each guards: every guarded call came after its own yes, or
    none was made.

    >>> from matching.conditioning import condition
    >>> from matching.model import Contract, Edge, Node, Query, Span
    >>> text = ("[assistant] I will cancel ABC123. Shall I go ahead?\\n[user] Yes.\\n"
    ...         "[tool] cancel(id=\\"ABC123\\")")
    >>> ask = "List the cancellation and get an explicit yes"
    >>> gate = Node("ok", "validation", ask, True, [Span(0, 1)])
    >>> act = Node("cancel", "action", "Cancel it", True, [Span(0, 1)], meta={"tool": "cancel"})
    >>> c = Contract("c", "policy", [gate, act], [Edge("ok", "cancel", "requires")], [], [Query("q")])
    >>> e = condition(c, "q")
    >>> kept_gates(e, unconsented_calls(e, text))
    {'ok': frozenset({'cancel'})}
    >>> kept_gates(e, unconsented_calls(e, text.replace("Yes.", "No, wait.")))
    {}
    """
    broken = {u.gate for u in unconsented}
    return {g: tools for g, tools in consent_gates(expected).items() if g not in broken}


def settled_orderings(
    expected: Expected, consented: dict[str, frozenset[str]], ordered: list[Failure]
) -> list[Failure]:
    """The ordering failures of ``ordered`` that the consent check settles: on an edge
    from a gate of ``consented`` (:func:`kept_gates`) to a node whose subtree binds a
    tool it guards. The order such an edge asks for is that of the yes and the call, and
    the check read it from the turns themselves: every call came after its own yes, or
    none was made. Where the alignment crosses the edge, it has placed the gate at a
    later message that reads like it (a summary after the change) or the action at words
    about it, and its crossing is no evidence that anything was done first."""
    out = []
    for f in ordered:
        u, _, v = f["location"].partition("->")
        tools = consented.get(u, frozenset())
        by_id = expected.contract.by_id
        if tools and any(t in tools for m in expected.subtree(v) for t in by_id[m].tools):
            out.append(f)
    return out


def _line(text: str, e: trace.Event) -> int:
    return text.count("\n", 0, e.start) + 1


def _refusal(evs: list[trace.Event], last_user: int | None, used: set[int], text: str) -> str:
    """Why the call that follows ``last_user`` is not consented ("" when it is)."""
    if last_user is None:
        return "no message of the user comes before it"
    first = last_user  # a turn split over several messages is read as one
    while first > 0 and evs[first - 1].role == "user":
        first -= 1
    said = " ".join(trace.strip_tag(e.text(keep_blank=False)) for e in evs[first : last_user + 1])
    at = _line(text, evs[last_user])
    if not agrees(said):
        return f"the user's last message before it (line {at}) does not agree"
    k = next((k for k in range(first - 1, -1, -1) if evs[k].role != "tool"), None)
    asked = evs[k] if k is not None and evs[k].role == "assistant" else None
    words = asked.text(keep_blank=False) if asked is not None else ""
    if "?" not in words and not _word_pattern("consent_requests").search(words):
        return f"the yes at line {at} answers no request to go ahead"
    if last_user in used:
        return f"the yes at line {at} was already used by an earlier call"
    return ""


def consent_failures(
    expected: Expected, unconsented: list[Unconsented], omitted: list[Failure]
) -> list[Failure]:
    """The omission of each active gate with an unconsented call, naming its first one:
    the alignment's own omission of the gate, its detail extended, when it found no step
    for the gate at all (in ``omitted``), else a new one. An inactive gate's call is
    judged where its step is (an extra action or a wrong branch), not here."""
    ids = expected.contract.by_id
    found = {f["location"]: f for f in omitted}
    out: list[Failure] = []
    for gate in dict.fromkeys(u.gate for u in unconsented):
        if gate not in expected.active:
            continue
        first = next(u for u in unconsented if u.gate == gate)
        n = sum(1 for u in unconsented if u.gate == gate)
        more = f" ({n} such calls)" if n > 1 else ""
        why = f"{first.call.name} (line {first.call.line}): {first.why}{more}"
        if gate in found:
            found[gate]["detail"] += f"; nothing asked for the yes before {why}"
            out.append(found[gate])
            continue
        detail = (
            f"required {ids[gate].type} {gate!r} ({ids[gate].label}) is not evidenced before {why}"
        )
        out.append({"family": "omission", "location": gate, "detail": detail})
    return out
