"""LangChain message dumps: ``messages_to_dict``, ``model_dump`` and ``(role, text)`` pairs.

- ``messages_to_dict``: ``[{"type": "human", "data": {"content": …, …}}, …]``;
- ``model_dump()`` / ``dict()``: ``[{"type": "ai", "content": …, "tool_calls": […]}, …]``;
- tuples: ``[["human", "…"], ["ai", "…"]]``.

Types ``system``, ``human``, ``ai`` (with ``tool_calls`` ``{name, args}``, or the
OpenAI-style ``additional_kwargs.tool_calls`` of older versions), ``tool`` and
``function``; the ``*Chunk`` variants are the same. A dict with ``messages`` (a
LangGraph state) is accepted too.

>>> print(render_langchain([
...     {"type": "human", "data": {"content": "Cancel my booking B7."}},
...     {"type": "ai", "data": {"content": "", "tool_calls": [
...         {"name": "cancel_booking", "args": {"booking_id": "B7"}, "id": "call_1"}]}},
...     {"type": "tool", "data": {"content": "cancelled", "tool_call_id": "call_1"}},
...     {"type": "ai", "data": {"content": "Your booking is cancelled."}}]), end="")
[user] Cancel my booking B7.
[tool] cancel_booking(booking_id="B7")
[result] cancelled
[assistant] Your booking is cancelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import Events, Format, call_args, fail, format_call, render_events
from .openai import content_text

__all__ = ["FORMAT", "LANGCHAIN_TYPES", "render_langchain"]

RULE = "langchain"
LANGCHAIN_TYPES = {
    "system": "system",
    "human": "user",
    "ai": "assistant",
    "tool": "result",
    "function": "result",
    "chat": "user",
}


def _type(raw: Any) -> str | None:
    if not isinstance(raw, str):
        return None
    name = raw.removesuffix("Chunk").removesuffix("MessageChunk").removesuffix("Message")
    return name.lower() if name.lower() in LANGCHAIN_TYPES else None


def _calls(data: Mapping[str, Any], path: str) -> Events:
    calls = data.get("tool_calls")
    if not calls:
        extra = data.get("additional_kwargs") or {}
        calls = extra.get("tool_calls") if isinstance(extra, Mapping) else None
    events: Events = []
    for j, call in enumerate(calls or []):
        cpath = f"{path}.tool_calls[{j}]"
        if not isinstance(call, Mapping):
            raise fail("a tool call must be an object", RULE, cpath)
        fn: Mapping[str, Any] = call
        if isinstance(call.get("function"), Mapping):
            fn = call["function"]
        name = fn.get("name")
        if not isinstance(name, str):
            raise fail("a tool call needs a name", RULE, cpath)
        raw = fn.get("args", fn.get("arguments"))
        events.append(("tool", format_call(name, call_args(raw, f"{cpath}.args", RULE))))
    return events


def render_langchain(data: Any) -> str:
    """Render a LangChain message dump."""
    messages = data.get("messages") if isinstance(data, Mapping) else data
    if not isinstance(messages, list):
        raise fail("a LangChain dump is a list of messages", RULE)
    events: Events = []
    for i, msg in enumerate(messages):
        path = f"$[{i}]"
        body: Mapping[str, Any]
        if isinstance(msg, (list, tuple)) and len(msg) == 2 and _type(msg[0]):
            kind, body = _type(msg[0]), {"content": msg[1]}
        elif isinstance(msg, Mapping) and _type(msg.get("type")):
            kind = _type(msg.get("type"))
            inner = msg.get("data")
            body = inner if isinstance(inner, Mapping) else msg
        else:
            raise fail("a message needs a type: system, human, ai or tool", RULE, path)
        role = LANGCHAIN_TYPES[str(kind)]
        text = content_text(body.get("content"), f"{path}.content", RULE)
        if role == "assistant":
            if text.strip():
                events.append(("assistant", text))
            events.extend(_calls(body, path))
        elif role != "system" or text.strip():
            events.append((role, text))
    if not events:
        raise fail("the dump has no messages with content", RULE)
    return render_events(events)


def _is_dump(items: list[Any]) -> bool:
    first = items[0]
    if isinstance(first, (list, tuple)):
        return len(first) == 2 and str(first[0]).lower() in LANGCHAIN_TYPES
    kind = first.get("type") if isinstance(first, Mapping) else None
    return isinstance(kind, str) and (
        kind.lower() in LANGCHAIN_TYPES or kind.removesuffix("Chunk").endswith("Message")
    )


def detects(data: Any) -> bool:
    """Messages typed the LangChain way (``human``, ``AIMessage``, ``("ai", text)``),
    alone or under ``messages``."""
    messages = data.get("messages") if isinstance(data, Mapping) else data
    return isinstance(messages, list) and bool(messages) and _is_dump(messages)


FORMAT = Format("langchain", detects, lambda data, select: render_langchain(data))
