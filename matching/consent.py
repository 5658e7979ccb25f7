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
2. the agent's last message before that one asks something: a question, or a request
   for the go-ahead (``consent_requests``: "please confirm", "I'll proceed once you
   agree"), so the yes answers the agent and not a message of its own;
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

__all__ = ["Unconsented", "agrees", "consent_failures", "consent_gates", "unconsented_calls"]

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


def _line(text: str, e: trace.Event) -> int:
    return text.count("\n", 0, e.start) + 1


def _refusal(evs: list[trace.Event], last_user: int | None, used: set[int], text: str) -> str:
    """Why the call that follows ``last_user`` is not consented ("" when it is)."""
    if last_user is None:
        return "no message of the user comes before it"
    said = trace.strip_tag(evs[last_user].text(keep_blank=False))
    at = _line(text, evs[last_user])
    if not agrees(said):
        return f"the user's last message before it (line {at}) does not agree"
    asked = next((e for e in reversed(evs[:last_user]) if e.role == "assistant"), None)
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
