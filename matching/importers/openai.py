"""OpenAI transcripts: Chat Completions messages and Responses API items.

Chat messages (``{"role", "content", "tool_calls"}``) also in their older shapes: a
``function_call`` on the assistant message and ``role: "function"`` for its result; an
assistant message whose ``content`` is null and whose ``refusal`` says why is the
agent's refusal, rendered as its words. Responses API items (``message``,
``function_call``, ``function_call_output``, built-in ``*_call`` tools; ``reasoning``
is the model's private notes and left out) come as a list, a ``Response`` object
(``instructions`` + ``output``) or a logged ``{"input": […], "output": […]}`` pair.

>>> print(render_openai_chat([
...     {"role": "user", "content": "Refund order 1042, please."},
...     {"role": "assistant", "content": None,
...      "function_call": {"name": "lookup_order", "arguments": '{"order_id": "1042"}'}},
...     {"role": "function", "name": "lookup_order", "content": '{"placed": "10 days ago"}'},
...     {"role": "assistant", "content": None, "refusal": "I cannot refund a gift card."}]), end="")
[user] Refund order 1042, please.
[tool] lookup_order(order_id="1042")
[result] {"placed": "10 days ago"}
[assistant] I cannot refund a gift card.
>>> print(render_openai_responses([
...     {"role": "user", "content": "Where is my parcel?"},
...     {"type": "function_call", "name": "track", "arguments": '{"id": "P9"}', "call_id": "c1"},
...     {"type": "function_call_output", "call_id": "c1", "output": "in transit"},
...     {"type": "message", "role": "assistant",
...      "content": [{"type": "output_text", "text": "It is on its way."}]}]), end="")
[user] Where is my parcel?
[tool] track(id="P9")
[result] in transit
[assistant] It is on its way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .base import Events, Format, call_args, fail, format_call, render_events

__all__ = ["CHAT", "RESPONSES", "content_text", "render_openai_chat", "render_openai_responses"]

_TEXT_KEYS = ("text", "refusal", "output", "content")


def content_text(content: Any, path: str, rule: str = "openai-chat") -> str:
    """Text of a string or a list of content parts (text parts joined by newlines;
    other parts, such as images, as ``(image_url)``)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for i, part in enumerate(content):
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping):
                text = next((part[k] for k in _TEXT_KEYS if isinstance(part.get(k), str)), None)
                texts.append(text if text is not None else f"({part.get('type', 'part')})")
            else:
                raise fail("a content part must be text or an object", rule, f"{path}[{i}]")
        return "\n".join(texts)
    raise fail("content must be a string or a list of parts", rule, path)


def _messages(messages: Any, rule: str) -> Sequence[Any]:
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise fail("a transcript is a list of messages", rule)
    return messages


def _assistant(msg: Mapping[str, Any], path: str) -> Events:
    events: Events = []
    text = content_text(msg.get("content"), f"{path}.content")
    refusal = msg.get("refusal")
    if text.strip():
        events.append(("assistant", text))
    elif isinstance(refusal, str) and refusal.strip():
        events.append(("assistant", refusal))  # the agent declined: that is behaviour
    calls = list(msg.get("tool_calls") or [])
    if isinstance(msg.get("function_call"), Mapping):
        calls.append({"function": msg["function_call"], "legacy": True})
    for j, call in enumerate(calls):
        legacy = isinstance(call, Mapping) and call.get("legacy")
        cpath = f"{path}.function_call" if legacy else f"{path}.tool_calls[{j}].function"
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise fail("a tool call needs function.name", "openai-chat", cpath)
        args = call_args(fn.get("arguments"), f"{cpath}.arguments", "openai-chat")
        events.append(("tool", format_call(fn["name"], args)))
    return events


def render_openai_chat(messages: Sequence[Mapping[str, Any]]) -> str:
    """Render an OpenAI chat transcript (messages with ``tool_calls`` and tool results)."""
    events: Events = []
    for i, msg in enumerate(_messages(messages, "openai-chat")):
        path = f"$.messages[{i}]"
        if not isinstance(msg, Mapping):
            raise fail("a message must be an object", "openai-chat", path)
        role = msg.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool", "function"):
            raise fail(
                f"unknown role {role!r}: expected system, user, assistant or tool",
                "openai-chat",
                f"{path}.role",
            )
        if role == "assistant":
            events.extend(_assistant(msg, path))
            continue
        text = content_text(msg.get("content"), f"{path}.content")
        if role in ("system", "developer"):
            if text.strip():
                events.append(("system", text))
        else:
            events.append(("user" if role == "user" else "result", text))
    if not events:
        raise fail("the transcript has no messages with content", "openai-chat")
    return render_events(events)


def _response_item(item: Mapping[str, Any], path: str) -> Events:
    kind = item.get("type", "message")
    if kind == "message":
        role = item.get("role")
        text = content_text(item.get("content"), f"{path}.content", "openai-responses")
        if role in ("system", "developer"):
            return [("system", text)] if text.strip() else []
        if role not in ("user", "assistant"):
            raise fail(f"unknown role {role!r}", "openai-responses", f"{path}.role")
        return [(role, text)] if text.strip() or role == "user" else []
    if kind == "function_call":
        if not isinstance(item.get("name"), str):
            raise fail("a function_call needs a name", "openai-responses", path)
        args = call_args(item.get("arguments"), f"{path}.arguments", "openai-responses")
        return [("tool", format_call(item["name"], args))]
    if kind in ("function_call_output", "custom_tool_call_output"):
        out = item.get("output")
        return [("result", out if isinstance(out, str) else json.dumps(out, ensure_ascii=False))]
    if kind == "reasoning":
        return []  # the model's private notes, not something it did
    if isinstance(kind, str) and kind.endswith("_call"):
        # Built-in tools (web_search_call, file_search_call, computer_call ...).
        detail = item.get("action") or {k: item[k] for k in ("queries", "query") if k in item}
        return [
            (
                "tool",
                format_call(kind[: -len("_call")], detail if isinstance(detail, Mapping) else {}),
            )
        ]
    raise fail(f"unknown item type {kind!r}", "openai-responses", f"{path}.type")


def render_openai_responses(data: Any) -> str:
    """Render Responses API items: a list, a ``Response`` or ``{"input", "output"}``."""
    events: Events = []
    items: list[tuple[str, Any]] = []
    if isinstance(data, Mapping):
        instructions = data.get("instructions")
        if isinstance(instructions, str) and instructions.strip():
            events.append(("system", instructions))
        inp = data.get("input")
        if isinstance(inp, str):
            events.append(("user", inp))
        elif isinstance(inp, list):
            items.extend((f"$.input[{i}]", x) for i, x in enumerate(inp))
        items.extend((f"$.output[{i}]", x) for i, x in enumerate(data.get("output") or []))
    else:
        items.extend((f"$[{i}]", x) for i, x in enumerate(_messages(data, "openai-responses")))
    for path, item in items:
        if not isinstance(item, Mapping):
            raise fail("an item must be an object", "openai-responses", path)
        events.extend(_response_item(item, path))
    if not events:
        raise fail("the items hold no messages or calls", "openai-responses")
    return render_events(events)


_RESPONSE_ITEMS = {"message", "function_call", "function_call_output", "reasoning"}


def detects_responses(data: Any) -> bool:
    """A ``Response`` (or anything with an ``output`` list), or a list of Responses
    items."""
    if isinstance(data, Mapping):
        return data.get("object") == "response" or isinstance(data.get("output"), list)
    return (
        isinstance(data, list)
        and bool(data)
        and isinstance(data[0], Mapping)
        and any(isinstance(x, Mapping) and x.get("type") in _RESPONSE_ITEMS for x in data)
    )


def detects_chat(data: Any) -> bool:
    """Chat messages with a ``role``, alone or under ``messages`` (read after the formats
    that share that shape: Anthropic and LangChain)."""
    if isinstance(data, Mapping):
        messages = data.get("messages")
        return isinstance(messages, list) and bool(messages)
    return (
        isinstance(data, list) and bool(data) and isinstance(data[0], Mapping) and "role" in data[0]
    )


def _render_chat(data: Any, select: Mapping[str, str] | None) -> str:
    return render_openai_chat(data["messages"] if isinstance(data, Mapping) else data)


CHAT = Format("openai", detects_chat, _render_chat)
RESPONSES = Format(
    "openai_responses", detects_responses, lambda data, select: render_openai_responses(data)
)
