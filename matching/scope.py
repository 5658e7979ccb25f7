"""Calls outside the query's scope, read from the trace (semantic mode).

A contract that binds tools to obligations (``meta.tool``) says what each tool is for.
A call of a tool that changes something (not a lookup), which some obligation of the
contract binds but none of those the query activates, is an action the procedure does
not call for here: a reservation cancelled where the policy's branch for this request
refuses, a transfer to a human for a request the agent can handle, a certificate for
a complaint that earns none. The call's tool name is read from the trace, not guessed
from wording, so the failure is certain.

An agent sentence that offers or promises such a call is one too: the agent puts to the
user an act the procedure does not allow here ("Would you like me to transfer you to a
human agent?" after a refusal the policy requires). It is read from the tool's own name:
a first-person subject, then only the closed ``offer_words`` of the lexicon ("can",
"would", "be happy to", …), then the tool's verb (the first word of its name, in any
inflection) or one of the lexicon's ``giving_verbs`` ("I can offer you a certificate"),
then every other word of its name later in the sentence. A negation, or any
other verb in between, is not an offer ("I cannot transfer you", "I can access your
booking").

The alignment has usually found the step already (an extra action, or a step of an
inactive branch: a wrong branch); the check then claims that failure and names the
call in its detail. Where the alignment paired the call with an active obligation, the
check adds an extra action at the call's step.

Not judged: calls that no kept observed node holds, tools the contract binds nowhere (it says nothing of them: a verification
code sent, a case note written), lookups, responses, and token mode (the spec's literal
reading).

>>> from matching.conditioning import condition
>>> from matching.model import Contract, Node, Query, Span
>>> def node(id, type, parent=None, tool=None):
...     meta = {"tool": tool} if tool else {}
...     return Node(id, type, id, True, [Span(0, 1)], parent=parent, meta=meta)
>>> nodes = [node("ask", "intent"), node("look", "action", "ask", "lookup"),
...          node("cancel_trip", "intent"), node("cancel", "action", "cancel_trip", "cancel")]
>>> c = Contract("c", "policy", nodes, [], [], [Query("q", intents=["ask"])])
>>> text = "[user] When is ABC123?\\n[tool] lookup(id=\\"ABC123\\")\\n[tool] cancel(id=\\"ABC123\\")"
>>> [(s.call.name, s.call.line, s.bound_by) for s in out_of_scope_calls(condition(c, "q"), text)]
[('cancel', 3, ('cancel',))]
>>> said = "[assistant] I can't cancel it. Would you like me to cancel it anyway?"
>>> [(s.call.name, s.said) for s in out_of_scope_offers(condition(c, "q"), said)]
[('cancel', 'Would you like me to cancel it anyway?')]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from . import trace
from .conditioning import Expected
from .failures import Failure
from .match import Alignment
from .observe import Step, acts, lexicon, sentence_spans
from .similarity import stem, tokens
from .tool_checks import Call, call_of
from .tools import name_words

__all__ = [
    "OutOfScope",
    "out_of_scope",
    "out_of_scope_calls",
    "out_of_scope_offers",
    "scope_failures",
]


@dataclass(frozen=True)
class OutOfScope:
    """A call, or an offer of a call, of a tool that only obligations the query does not
    activate bind."""

    call: Call  # an offer's: the tool, no arguments, the sentence's line
    span: tuple[int, int]  # the call's event, or the offering sentence, in the trace
    bound_by: tuple[str, ...]  # the contract's nodes that bind the tool, in its order
    said: str = ""  # the sentence that offers the call ("" for a call)

    @property
    def why(self) -> str:
        act = f"offers to call {self.call.name}" if self.said else f"calls {self.call.name}"
        where = f"line {self.call.line}: {self.said!r}" if self.said else f"line {self.call.line}"
        return (
            f"{act} ({where}), a tool that only obligations this query does not activate"
            f" bind ({', '.join(map(repr, self.bound_by))})"
        )


def _out_of_scope_tools(expected: Expected) -> dict[str, tuple[str, ...]]:
    """Each tool that changes something, that the contract binds and that no active
    obligation binds, with the nodes that bind it."""
    holders: dict[str, list[str]] = {}
    for n in expected.contract.nodes:
        for tool in n.tools:
            holders.setdefault(tool, []).append(n.id)
    return {
        tool: tuple(ns)
        for tool, ns in holders.items()
        if acts(Step("call", tool)) and not any(n in expected.active for n in ns)
    }


def out_of_scope(expected: Expected, text: str) -> list[OutOfScope]:
    """The calls in the trace ``text``, and the agent sentences that offer or promise a
    call, of tools that change something, that the contract binds and that no active
    obligation binds, in the trace's order (one per sentence)."""
    tools = _out_of_scope_tools(expected)
    if not tools:
        return []
    readers = [
        (tool, _offer_pattern(tool), tokens(" ".join(name_words(tool)[1:]))) for tool in tools
    ]
    out: list[OutOfScope] = []
    for e in trace.events(text):
        call = call_of(e, text)
        if call is not None and call.name in tools:
            out.append(OutOfScope(call, (e.start, e.end), tools[call.name]))
        if e.role != "assistant":
            continue
        for start, end in sentence_spans(text, e.start, e.end):
            said = text[start:end]
            for tool, pattern, objects in readers:
                verb = pattern.search(said)
                if verb and objects <= _objects(said, verb):
                    offer = Call(tool, "", text.count("\n", 0, start) + 1)
                    plain = " ".join(trace.strip_tag(said.strip()).split())
                    out.append(OutOfScope(offer, (start, end), tools[tool], plain))
                    break
    return out


def out_of_scope_calls(expected: Expected, text: str) -> list[OutOfScope]:
    """The calls of :func:`out_of_scope`."""
    return [s for s in out_of_scope(expected, text) if not s.said]


def out_of_scope_offers(expected: Expected, text: str) -> list[OutOfScope]:
    """The offers of calls of :func:`out_of_scope`."""
    return [s for s in out_of_scope(expected, text) if s.said]


def _objects(said: str, verb: re.Match[str]) -> frozenset[str]:
    """The words that may name what an offer offers: the rest of the sentence after the
    tool's own verb; only the next few words after a giving verb, whose object comes
    at once ("offer you a $30 certificate"), not a noun later in the sentence ("offer
    a certificate for the delay on your reservation" offers no reservation).

    >>> import re
    >>> sorted(_objects("I can offer you a certificate for your reservation",
    ...                 re.search("I can offer", "I can offer you a certificate for your reservation")))
    ['certif']
    """
    rest = said[verb.end() :]
    giving = verb.group(0).split()[-1].lower()
    if any(giving.startswith(stem(w)) for w in lexicon()["giving_verbs"]):
        rest = " ".join(rest.split()[:_GIVEN_WITHIN])
    return tokens(rest)


_GIVEN_WITHIN = 5  # "offer you a travel certificate": a verb, a pronoun, an article, two nouns


@cache
def _offer_pattern(tool: str) -> re.Pattern[str]:
    """'I', 'we' or 'me', then only offer words (at least one, or "'ll"/"'d"), then the
    tool's verb, or a giving verb, in any inflection; or a question's "shall I", "can
    we", … then the verb."""
    words = name_words(tool)
    giving = lexicon()["giving_verbs"] if len(words) > 1 else []  # a giving verb needs an object
    verbs = [stem(w.lower()) for w in (words[0], *giving)]
    verb = "(?:" + "|".join(map(re.escape, verbs)) + ")"
    bridge = "|".join(sorted(map(re.escape, lexicon()["offer_words"]), key=len, reverse=True))
    return re.compile(
        rf"\b(?:i|we|me)(?:(?:'ll|'d)(?:\s+(?:{bridge}))*|(?:\s+(?:{bridge}))+)\s+{verb}\w*"
        rf"|\b(?:shall|should|can|could|may)\s+(?:i|we)\s+{verb}\w*",
        re.I,
    )


def scope_failures(
    expected: Expected, m: Alignment, calls: list[OutOfScope], found: list[Failure]
) -> tuple[list[Failure], list[Failure]]:
    """The failures that the out-of-scope ``calls`` (and offers of calls) make certain:
    those of ``found`` (the alignment's) at each one's step, their detail extended, and
    new extra actions where the alignment reported none; returned as (all of them, the
    new ones), in the trace's order.

    A call's step is the first kept observed node whose evidence holds the call or the
    offering sentence (one the observed graph leaves out is not judged); its failure is
    the extra action at that step, or the wrong branch it was folded into.
    """
    out: list[Failure] = []
    fresh: list[Failure] = []
    for s in calls:
        step = next(iter(m.steps_at(*s.span)), None)
        if step is None:  # the observed graph leaves the call out: nothing to judge
            continue
        f = _failure_at(expected, m, step, found)
        if f is None:
            f = {
                "family": "extra_action",
                "location": step,
                "detail": f"observed step {step!r} {s.why}",
            }
            fresh.append(f)
        elif s.why not in f["detail"]:
            f["detail"] += f"; step {step!r} {s.why}"
        if not any(f is g for g in out):
            out.append(f)
    return out, fresh


def _failure_at(
    expected: Expected, m: Alignment, step: str, found: list[Failure]
) -> Failure | None:
    """The alignment's failure at ``step``: its extra action, or the wrong branch of
    the decision whose inactive outcome the step enacts."""
    if step in m.wrong_branch_of:
        decision = expected.inactive.get(m.wrong_branch_of[step])
        return next(
            (f for f in found if f["family"] == "wrong_branch" and f["location"] == decision),
            None,
        )
    return next((f for f in found if f["family"] == "extra_action" and f["location"] == step), None)
