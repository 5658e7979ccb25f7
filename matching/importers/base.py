"""The one text form of FORMAT.md §4 and the helpers every importer shares.

One event per line, ``[role] text``; continuation lines of an event are indented by two
spaces; tool calls are written ``name(arg=value, …)`` with JSON values. Rendering once
and storing the rendered text keeps every evidence offset stable.

>>> print(render_events([("user", "Hi"), ("assistant", "Hello.\\nHow can I help?")]), end="")
[user] Hi
[assistant] Hello.
  How can I help?
>>> format_call("lookup_order", {"order_id": "1042", "verbose": True})
'lookup_order(order_id="1042", verbose=true)'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ContractEvalError
from ..trace import ROLES, events

__all__ = [
    "ROLES",
    "Events",
    "Format",
    "call_args",
    "fail",
    "format_call",
    "last_agent_message",
    "render_events",
]

Events = list[tuple[str, str]]


def render_events(events: Iterable[tuple[str, str]]) -> str:
    """Render ``(role, text)`` events; the result ends with a newline."""
    lines = []
    for role, text in events:
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}")
        body = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
        parts = body.split("\n")
        lines.append(f"[{role}] {parts[0]}")
        lines.extend(f"  {p}" for p in parts[1:])
    return "".join(line + "\n" for line in lines)


def format_call(name: str, args: Mapping[str, Any]) -> str:
    """``name(k=v, …)`` with JSON values, keys in the given order."""
    inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    return f"{name}({inner})"


def fail(message: str, rule: str, path: str = "$") -> ContractEvalError:
    """The error an importer raises: the message, where, and which format it expected."""
    return ContractEvalError(message, path=path, rule=rule)


def call_args(raw: Any, path: str, rule: str) -> Mapping[str, Any]:
    """Tool-call arguments given as a JSON string or an object (None: no arguments)."""
    if raw is None or raw == "":
        return {}
    args = raw
    if isinstance(raw, str):
        try:
            args = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise fail(f"arguments are not JSON: {exc.msg}", rule, path) from None
    if not isinstance(args, Mapping):
        raise fail("arguments must be a JSON object", rule, path)
    return args


def last_agent_message(text: str) -> str | None:
    """The text of the last ``[assistant]`` event of a rendered trace, or None.

    >>> last_agent_message("[assistant] Checking.\\n[tool] f()\\n[assistant] Done:\\n  all.\\n")
    'Done:\\nall.'
    """
    for event in reversed(list(events(text))):
        if event.role != "assistant":
            continue
        first, *rest = event.lines
        body = "\n".join(
            [first[event.tag_length :], *(x[2:] if x.startswith("  ") else x for x in rest)]
        )
        return body.strip() or None
    return None


def _last_agent_message(text: str, source_kind: str) -> str | None:
    return last_agent_message(text)


@dataclass(frozen=True)
class Format:
    """One input format, declared by the module that reads it: its name (one of
    :data:`matching.importers.INPUT_KINDS`), whether parsed JSON is in it, how it renders
    to trace text (``select`` chooses among several traces), and the agent's final
    answer in the rendered text (by default its last agent message, so that what the
    renderer reads — an OpenAI refusal, content parts, a τ-bench ``respond`` — is what
    the output check reads).

    >>> fmt = Format("lines", lambda d: isinstance(d, list), lambda d, s: "".join(d))
    >>> fmt.detects(["[assistant] Done.\\n"]), fmt.output("[assistant] Done.\\n", "trace")
    (True, 'Done.')
    """

    name: str
    detects: Callable[[Any], bool]
    render: Callable[[Any, Mapping[str, str] | None], str]
    output: Callable[[str, str], str | None] = _last_agent_message
