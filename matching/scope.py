"""Calls outside the query's scope, read from the trace (semantic mode).

A contract that binds tools to obligations (``meta.tool``) says what each tool is for.
A call of a tool that changes something (not a lookup), which some obligation of the
contract binds but none of those the query activates, is an action the procedure does
not call for here: a reservation cancelled where the policy's branch for this request
refuses, a transfer to a human for a request the agent can handle, a certificate for
a complaint that earns none. The call's tool name is read from the trace, not guessed
from wording, so the failure is certain.

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
"""

from __future__ import annotations

from dataclasses import dataclass

from . import trace
from .conditioning import Expected
from .failures import Failure
from .match import Alignment
from .observe import Step, acts
from .tool_checks import Call, call_of

__all__ = ["OutOfScope", "out_of_scope_calls", "scope_failures"]


@dataclass(frozen=True)
class OutOfScope:
    """A call of a tool that only obligations the query does not activate bind."""

    call: Call
    span: tuple[int, int]  # the call's event in the trace: [start, end)
    bound_by: tuple[str, ...]  # the contract's nodes that bind the tool, in its order


def out_of_scope_calls(expected: Expected, text: str) -> list[OutOfScope]:
    """The calls in the trace ``text`` of tools that change something, that the contract
    binds and that no active obligation binds, in order."""
    contract = expected.contract
    holders: dict[str, list[str]] = {}
    for n in contract.nodes:
        for tool in n.tools:
            holders.setdefault(tool, []).append(n.id)
    out: list[OutOfScope] = []
    for e in trace.events(text):
        call = call_of(e, text)
        if call is None or call.name not in holders or not acts(Step("call", call.name)):
            continue
        if not any(n in expected.active for n in holders[call.name]):
            out.append(OutOfScope(call, (e.start, e.end), tuple(holders[call.name])))
    return out


def scope_failures(
    expected: Expected, m: Alignment, calls: list[OutOfScope], found: list[Failure]
) -> tuple[list[Failure], list[Failure]]:
    """The failures that the out-of-scope ``calls`` make certain: those of ``found`` (the
    alignment's) at each call's step, their detail extended, and new extra actions where
    the alignment reported none; returned as (all of them, the new ones), in call order.

    A call's step is the first kept observed node whose evidence holds the call (a call the
    observed graph leaves out is not judged); its failure is the extra action at that
    step, or the wrong branch it was folded into.
    """
    out: list[Failure] = []
    fresh: list[Failure] = []
    for s in calls:
        step = next(iter(m.steps_at(*s.span)), None)
        if step is None:  # the observed graph leaves the call out: nothing to judge
            continue
        why = (
            f"calls {s.call.name} (line {s.call.line}), a tool that only obligations"
            f" this query does not activate bind ({', '.join(map(repr, s.bound_by))})"
        )
        f = _failure_at(expected, m, step, found)
        if f is None:
            f = {
                "family": "extra_action",
                "location": step,
                "detail": f"observed step {step!r} {why}",
            }
            fresh.append(f)
        elif why not in f["detail"]:
            f["detail"] += f"; step {step!r} {why}"
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
