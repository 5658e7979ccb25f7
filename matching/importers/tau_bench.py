"""τ-bench: results files, their ``traj`` lists, and plain action lists.

A τ-bench run writes a results file: a list of ``{task_id, reward, info, traj, trial}``,
one per task and trial. ``traj`` is what the agent did — the chat messages of the
episode (system, user, assistant with ``tool_calls``, tool) — and is rendered as an
OpenAI chat transcript. :func:`trajectories` lists the entries, :func:`select` picks
one by ``task_id`` and ``trial``. ``info.task.actions`` is the task's *reference
solution*, not what the agent did: it is refused with that reason.

>>> results = [{"task_id": 3, "trial": 0, "reward": 1.0, "info": {}, "traj": [
...     {"role": "user", "content": "Exchange my keyboard."},
...     {"role": "assistant", "content": "Which order is it?"}]}]
>>> print(render_tau_results(results), end="")
[user] Exchange my keyboard.
[assistant] Which order is it?
>>> trajectories(results)
[{'task_id': 3, 'trial': 0, 'reward': 1.0}]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ContractEvalError
from .base import Events, Format, fail, format_call, render_events
from .openai import render_openai_chat

__all__ = [
    "ACTIONS",
    "REFERENCE_SOLUTION",
    "RESULTS",
    "is_results_entry",
    "is_task",
    "render_tau_bench",
    "render_tau_results",
    "select",
    "trajectories",
]

RULE = "tau-bench"
REFERENCE_SOLUTION = (
    "this is a τ-bench task's 'actions': the reference solution the task was written"
    " with, not what the agent did; import the results file (a list of {task_id, reward,"
    " info, traj, trial}) or one entry's 'traj' instead"
)


def is_results_entry(item: Any) -> bool:
    return isinstance(item, Mapping) and "traj" in item and ("task_id" in item or "info" in item)


def is_task(data: Any) -> bool:
    """A τ-bench task or an entry's ``info``: it carries the reference actions."""
    if not isinstance(data, Mapping):
        return False
    if isinstance(data.get("task"), Mapping) and "actions" in data["task"]:
        return True
    return isinstance(data.get("actions"), list) and bool(
        {"instruction", "user_id", "outputs"} & set(data)
    )


def trajectories(data: Any) -> list[dict[str, Any]]:
    """``{task_id, trial, reward}`` of every entry of a results file."""
    entries = data if isinstance(data, list) else [data]
    return [
        {"task_id": e.get("task_id"), "trial": e.get("trial"), "reward": e.get("reward")}
        for e in entries
        if isinstance(e, Mapping)
    ]


def _listing(data: list[Any], limit: int = 12) -> str:
    rows = [
        f"task_id={t['task_id']},trial={t['trial']} (reward {t['reward']})"
        for t in trajectories(data)
    ]
    more = f"; … {len(rows) - limit} more" if len(rows) > limit else ""
    return "; ".join(rows[:limit]) + more


def select(data: Any, choice: Mapping[str, str] | None) -> Mapping[str, Any]:
    """The entry ``choice`` (``{"task_id": …, "trial": …}``, as strings) names; the one
    entry when there is one. A missing or unmatched choice lists what is there."""
    if isinstance(data, Mapping):
        return data
    if not isinstance(data, list) or not data:
        raise fail("a τ-bench results file is a non-empty list of entries", RULE)
    choice = dict(choice or {})
    unknown = set(choice) - {"task_id", "trial"}
    if unknown:
        raise fail(f"cannot select by {', '.join(sorted(unknown))}: use task_id and trial", RULE)
    hits = [
        e
        for e in data
        if isinstance(e, Mapping) and all(str(e.get(k)) == v for k, v in choice.items())
    ]
    if len(hits) == 1:
        return hits[0]
    what = "no entry matches" if not hits else f"{len(hits)} entries match"
    if not choice:
        what = f"the file holds {len(data)} trajectories"
    raise ContractEvalError(
        f"{what}: choose one with task_id=…,trial=… (available: {_listing(data)})",
        rule="tau-bench-select",
    )


def render_tau_results(data: Any, choice: Mapping[str, str] | None = None) -> str:
    """Render the chosen trajectory of a results file (or a single entry)."""
    entry = select(data, choice)
    traj = entry.get("traj")
    if not isinstance(traj, list) or not traj:
        raise fail("the entry has no 'traj' (the agent's messages)", RULE, "$.traj")
    return render_openai_chat(traj)


def render_tau_bench(actions: Sequence[Mapping[str, Any]]) -> str:
    """Render a τ-bench action list (``{"name", "kwargs"}``; ``respond`` is a message)."""
    if is_task(actions):
        raise fail(REFERENCE_SOLUTION, RULE)
    if not isinstance(actions, Sequence) or isinstance(actions, (str, bytes)) or not actions:
        raise fail("a τ-bench trace is a non-empty list of actions", RULE)
    events: Events = []
    for i, act in enumerate(actions):
        path = f"$[{i}]"
        if not isinstance(act, Mapping) or not isinstance(act.get("name"), str):
            raise fail("an action needs a string 'name'", RULE, path)
        kwargs = act.get("kwargs", act.get("arguments", {}))
        if not isinstance(kwargs, Mapping):
            raise fail("'kwargs' must be an object", RULE, f"{path}.kwargs")
        if act["name"] == "respond":
            events.append(("assistant", str(kwargs.get("content", ""))))
        else:
            events.append(("tool", format_call(act["name"], kwargs)))
        if "observation" in act and act["observation"] is not None:
            events.append(("result", str(act["observation"])))
    return render_events(events)


def detects_results(data: Any) -> bool:
    """A results file or one of its entries (``traj`` beside ``task_id`` or ``info``).
    A task, or an entry's ``info`` alone, carries the reference solution: refused."""
    if isinstance(data, Mapping):
        if is_task(data) or (is_task(data.get("info")) and "traj" not in data):
            raise ContractEvalError(REFERENCE_SOLUTION, rule="tau-bench")
        return is_results_entry(data)
    return isinstance(data, list) and bool(data) and is_results_entry(data[0])


def detects_actions(data: Any) -> bool:
    """An action list (``{"name", "kwargs"}``), alone or under ``actions``."""
    if isinstance(data, Mapping):
        return isinstance(data.get("actions"), list)
    if not (isinstance(data, list) and data and isinstance(data[0], Mapping)):
        return False
    return "name" in data[0] and ("kwargs" in data[0] or "arguments" in data[0])


def _render_actions(data: Any, select: Mapping[str, str] | None) -> str:
    if is_task(data):
        raise ContractEvalError(REFERENCE_SOLUTION, rule="tau-bench")
    return render_tau_bench(data["actions"] if isinstance(data, Mapping) else data)


RESULTS = Format("tau_bench_results", detects_results, render_tau_results)
ACTIONS = Format("tau_bench", detects_actions, _render_actions)
