"""Tool-call checks of invariants: which tools an agent may call, and how often.

An invariant's ``check`` may, beside the text checks (``forbid_regex``,
``require_regex``), name the agent's tool calls — the ``[tool] name(arguments)`` events
of a trace, which every importer renders:

- ``{"forbid_tools": ["delete_account"]}``: violated by any call to one of them;
- ``{"allow_tools": ["lookup_order", "issue_refund"]}``: violated by a call to any other
  tool (the contract's whole catalogue of permitted tools, or a step's);
- ``{"max_tool_calls": 8}``: violated by more calls than that;
- ``{"one_act_per_turn": true}``: violated by an agent turn that both writes to the user
  and calls a tool, or that makes a second call before a result comes back ("one tool
  call at a time, and never a reply with it"). Turns are parted by the user's messages
  and the tools' results, so it reads traces whose importer renders results.

A response (no trace) makes no calls, so it never breaks them. Each check is judged
exactly (score 1.0 or 0.0), and :func:`offending` names the call that broke it, with
its line, as the failure's evidence.

>>> text = "[user] Close my account\\n[tool] lookup(id=7)\\n[tool] delete_account(id=7)\\n"
>>> calls = tool_calls("trace", text)
>>> [(c.name, c.line) for c in calls]
[('lookup', 2), ('delete_account', 3)]
>>> score({"forbid_tools": ["delete_account"]}, calls), score({"max_tool_calls": 2}, calls)
(0.0, 1.0)
>>> offending({"allow_tools": ["lookup"]}, calls)
'calls delete_account(id=7) (line 3), not a permitted tool'
>>> said = "[user] Close it\\n[assistant] Closing it now.\\n[tool] delete_account(id=7)\\n"
>>> offending({"one_act_per_turn": True}, tool_calls("trace", said))
'replies to the user and calls delete_account(id=7) (line 3) in one turn'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, TypeGuard

from . import trace

KINDS = ("forbid_tools", "allow_tools", "max_tool_calls", "one_act_per_turn")
_AGENT = ("assistant", "tool")


@dataclass(frozen=True)
class Call:
    name: str
    arguments: str
    line: int  # 1-based line of the trace where the call is
    turn: int = 0  # the agent's turn: turns are parted by user messages and tool results
    replied: bool = False  # whether the agent also wrote to the user in that turn


def is_tool_check(check: Mapping[str, Any] | None) -> TypeGuard[Mapping[str, Any]]:
    return check is not None and any(k in check for k in KINDS)


@lru_cache(maxsize=8)
def tool_calls(kind: str, text: str) -> tuple[Call, ...]:
    """The tool calls of an observed text, in order (none in a response); cached, since
    scoring a run's tool checks and naming what broke them read the same trace."""
    if kind != "trace":
        return ()
    calls: list[Call] = []
    replied: set[int] = set()
    turn = 0
    for event in trace.events(text):
        if event.role not in _AGENT:
            turn += 1
        elif event.role == "assistant":
            replied.add(turn)
        elif (call := call_of(event, text)) is not None:
            calls.append(replace(call, turn=turn))
    return tuple(replace(c, replied=c.turn in replied) for c in calls)


def call_of(event: trace.Event, text: str) -> Call | None:
    """The call of one ``[tool]`` event of ``text`` (None for any other event)."""
    if event.role != "tool":
        return None
    # a call's JSON arguments may run over several lines
    call = trace.tool_call(" ".join(x.strip() for x in event.lines if x.strip()))
    return None if call is None else Call(call[0], call[1], text.count("\n", 0, event.start) + 1)


def _broken(check: Mapping[str, Any], calls: Sequence[Call]) -> Call | None:
    if "forbid_tools" in check:
        banned = set(check["forbid_tools"])
        return next((c for c in calls if c.name in banned), None)
    if "allow_tools" in check:
        allowed = set(check["allow_tools"])
        return next((c for c in calls if c.name not in allowed), None)
    if "one_act_per_turn" in check:
        return _second_act(calls)
    limit = int(check["max_tool_calls"])
    return calls[limit] if len(calls) > limit else None


def _second_act(calls: Sequence[Call]) -> Call | None:
    """The first call made in a turn that also replied, or after another call of its turn."""
    turns: set[int] = set()
    for c in calls:
        if c.replied or c.turn in turns:
            return c
        turns.add(c.turn)
    return None


def score(check: Mapping[str, Any], calls: Sequence[Call]) -> float:
    """1.0 when the calls keep the check, 0.0 when they break it."""
    return 0.0 if _broken(check, calls) is not None else 1.0


def offending(check: Mapping[str, Any], calls: Sequence[Call]) -> str:
    """What broke the check, in words naming the call and its line ("" if nothing)."""
    c = _broken(check, calls)
    if c is None:
        return ""
    where = f"{c.name}({c.arguments}) (line {c.line})"
    if "forbid_tools" in check:
        return f"calls {where}, a forbidden tool"
    if "allow_tools" in check:
        return f"calls {where}, not a permitted tool"
    if "one_act_per_turn" in check:
        if c.replied:
            return f"replies to the user and calls {where} in one turn"
        return f"makes a second tool call in one turn, {where}, before a result"
    return f"makes {len(calls)} tool calls, more than {check['max_tool_calls']}: from {where}"
