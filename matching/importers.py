"""Importers: every trace source renders to the one text form of FORMAT.md §4.

One event per line, ``[role] text``; continuation lines of an event are indented by two
spaces; tool calls are written ``name(arg=value, …)`` with JSON values. Rendering once
and storing the rendered text keeps every evidence offset stable.

>>> print(render_openai_chat([
...     {"role": "user", "content": "Refund order 1042, please."},
...     {"role": "assistant", "content": None, "tool_calls": [
...         {"id": "c1", "type": "function",
...          "function": {"name": "lookup_order", "arguments": '{"order_id": "1042"}'}}]},
...     {"role": "tool", "tool_call_id": "c1", "content": '{"placed": "10 days ago"}'},
...     {"role": "assistant", "content": "Your order is eligible.\\nI have refunded it."}]))
[user] Refund order 1042, please.
[tool] lookup_order(order_id="1042")
[result] {"placed": "10 days ago"}
[assistant] Your order is eligible.
  I have refunded it.
<BLANKLINE>
>>> print(render_tau_bench([{"name": "get_order", "kwargs": {"id": 7}},
...                         {"name": "respond", "kwargs": {"content": "Done."}}]))
[tool] get_order(id=7)
[assistant] Done.
<BLANKLINE>
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .errors import ContractEvalError

ROLES = ("system", "user", "assistant", "tool", "result")
INPUT_KINDS = ("observed", "text", "openai", "tau_bench")


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


def _content_text(content: Any, path: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for i, part in enumerate(content):
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, str):
                texts.append(part)
            else:
                raise ContractEvalError(
                    "a content part must be text", path=f"{path}[{i}]", rule="openai-chat"
                )
        return "\n".join(texts)
    raise ContractEvalError(
        "content must be a string or a list of parts", path=path, rule="openai-chat"
    )


def render_openai_chat(messages: Sequence[Mapping[str, Any]]) -> str:
    """Render an OpenAI chat transcript (messages with ``tool_calls`` and tool results)."""
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise ContractEvalError("a chat transcript is a list of messages", rule="openai-chat")
    events: list[tuple[str, str]] = []
    for i, msg in enumerate(messages):
        path = f"$.messages[{i}]"
        if not isinstance(msg, Mapping):
            raise ContractEvalError("a message must be an object", path=path, rule="openai-chat")
        role = msg.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool", "function"):
            raise ContractEvalError(
                f"unknown role {role!r}: expected system, user, assistant or tool",
                path=f"{path}.role",
                rule="openai-chat",
            )
        text = _content_text(msg.get("content"), f"{path}.content")
        if role in ("system", "developer"):
            if text.strip():
                events.append(("system", text))
        elif role == "user":
            events.append(("user", text))
        elif role in ("tool", "function"):
            events.append(("result", text))
        else:
            if text.strip():
                events.append(("assistant", text))
            for j, call in enumerate(msg.get("tool_calls") or []):
                cpath = f"{path}.tool_calls[{j}].function"
                fn = call.get("function") if isinstance(call, Mapping) else None
                if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
                    raise ContractEvalError(
                        "a tool call needs function.name", path=cpath, rule="openai-chat"
                    )
                raw = fn.get("arguments") or "{}"
                try:
                    args = json.loads(raw) if isinstance(raw, str) else raw
                except json.JSONDecodeError as exc:
                    raise ContractEvalError(
                        f"arguments are not JSON: {exc.msg}",
                        path=f"{cpath}.arguments",
                        rule="openai-chat",
                    ) from None
                if not isinstance(args, Mapping):
                    raise ContractEvalError(
                        "arguments must be a JSON object",
                        path=f"{cpath}.arguments",
                        rule="openai-chat",
                    )
                events.append(("tool", format_call(fn["name"], args)))
    if not events:
        raise ContractEvalError("the transcript has no messages with content", rule="openai-chat")
    return render_events(events)


def render_tau_bench(actions: Sequence[Mapping[str, Any]]) -> str:
    """Render a τ-bench action list (``{"name", "kwargs"}``; ``respond`` is a message)."""
    if not isinstance(actions, Sequence) or isinstance(actions, (str, bytes)) or not actions:
        raise ContractEvalError("a τ-bench trace is a non-empty list of actions", rule="tau-bench")
    events: list[tuple[str, str]] = []
    for i, act in enumerate(actions):
        path = f"$[{i}]"
        if not isinstance(act, Mapping) or not isinstance(act.get("name"), str):
            raise ContractEvalError("an action needs a string 'name'", path=path, rule="tau-bench")
        kwargs = act.get("kwargs", act.get("arguments", {}))
        if not isinstance(kwargs, Mapping):
            raise ContractEvalError(
                "'kwargs' must be an object", path=f"{path}.kwargs", rule="tau-bench"
            )
        if act["name"] == "respond":
            events.append(("assistant", str(kwargs.get("content", ""))))
        else:
            events.append(("tool", format_call(act["name"], kwargs)))
        if "observation" in act and act["observation"] is not None:
            events.append(("result", str(act["observation"])))
    return render_events(events)


def normalise_pasted(text: str) -> str:
    """Pasted text: line endings normalised, nothing else changed (offsets stay put)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def detect_kind(data: Any) -> str:
    """Guess the input kind of parsed JSON: ``observed``, ``openai`` or ``tau_bench``."""
    if isinstance(data, Mapping):
        if data.get("format") == "contracteval.observed/v1":
            return "observed"
        if isinstance(data.get("messages"), list):
            return "openai"
        if isinstance(data.get("actions"), list):
            return "tau_bench"
    if isinstance(data, list) and data and isinstance(data[0], Mapping):
        if "role" in data[0]:
            return "openai"
        if "name" in data[0]:
            return "tau_bench"
    raise ContractEvalError(
        "unrecognised input: expected an observed document, an OpenAI chat transcript"
        " (a list of messages) or a τ-bench action list",
        rule="input-kind",
    )


def render(kind: str, data: Any) -> str:
    """Render an input of the given kind to trace text (not for ``observed``)."""
    if kind == "text":
        if not isinstance(data, str) or not data.strip():
            raise ContractEvalError("the pasted text is empty", rule="text")
        return normalise_pasted(data)
    if kind == "openai":
        return render_openai_chat(data["messages"] if isinstance(data, Mapping) else data)
    if kind == "tau_bench":
        return render_tau_bench(data["actions"] if isinstance(data, Mapping) else data)
    raise ValueError(f"cannot render input kind {kind!r}")
