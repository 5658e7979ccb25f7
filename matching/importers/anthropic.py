"""Anthropic Messages: a top-level ``system`` and messages of content blocks.

Blocks: ``text``; ``tool_use`` (``name``, ``input``) is a call; ``tool_result`` (in a
user turn, its ``content`` a string or text blocks) is what the tool returned;
``thinking`` / ``redacted_thinking`` are the model's private notes and left out;
``server_tool_use`` is a call too, ``*_tool_result`` a result. Accepts a request body
``{"system", "messages"}`` (``system`` a string or text blocks) or the messages alone.

>>> print(render_anthropic({
...     "system": [{"type": "text", "text": "You are a refunds agent."}],
...     "messages": [
...         {"role": "user", "content": "Refund order 1042."},
...         {"role": "assistant", "content": [
...             {"type": "thinking", "thinking": "I should look it up."},
...             {"type": "text", "text": "Let me look it up."},
...             {"type": "tool_use", "id": "tu1", "name": "lookup_order",
...              "input": {"order_id": "1042"}}]},
...         {"role": "user", "content": [
...             {"type": "tool_result", "tool_use_id": "tu1",
...              "content": [{"type": "text", "text": "placed 10 days ago"}]}]}]}), end="")
[system] You are a refunds agent.
[user] Refund order 1042.
[assistant] Let me look it up.
[tool] lookup_order(order_id="1042")
[result] placed 10 days ago
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .base import Events, Format, fail, format_call, render_events

__all__ = ["FORMAT", "render_anthropic"]

RULE = "anthropic-messages"


def _text(content: Any, path: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, Mapping) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, Mapping):
                parts.append(f"({block.get('type', 'block')})")
        return "\n".join(parts)
    if isinstance(content, Mapping):
        return json.dumps(content, ensure_ascii=False)
    raise fail("content must be a string or a list of blocks", RULE, path)


def _block(block: Any, role: str, path: str) -> Events:
    if not isinstance(block, Mapping):
        raise fail("a content block must be an object", RULE, path)
    kind = block.get("type")
    if kind == "text":
        return [(role, block.get("text") or "")] if (block.get("text") or "").strip() else []
    if kind in ("tool_use", "server_tool_use"):
        if not isinstance(block.get("name"), str):
            raise fail("a tool_use block needs a name", RULE, path)
        args = block.get("input") or {}
        if not isinstance(args, Mapping):
            raise fail("a tool_use input must be an object", RULE, f"{path}.input")
        return [("tool", format_call(block["name"], args))]
    if kind == "tool_result" or (isinstance(kind, str) and kind.endswith("_tool_result")):
        text = _text(block.get("content"), f"{path}.content")
        if block.get("is_error"):
            text = f"error: {text}"
        return [("result", text)]
    if kind in ("thinking", "redacted_thinking"):
        return []  # private notes, not behaviour
    return [(role, f"({kind})")]


def render_anthropic(data: Any) -> str:
    """Render an Anthropic Messages transcript (request body or message list)."""
    events: Events = []
    messages = data
    if isinstance(data, Mapping):
        system = _text(data.get("system"), "$.system")
        if system.strip():
            events.append(("system", system))
        messages = data.get("messages")
    if not isinstance(messages, list):
        raise fail("an Anthropic transcript has a list of messages", RULE, "$.messages")
    for i, msg in enumerate(messages):
        path = f"$.messages[{i}]"
        if not isinstance(msg, Mapping) or msg.get("role") not in ("user", "assistant"):
            raise fail("a message needs role user or assistant", RULE, path)
        content = msg.get("content")
        if isinstance(content, str):
            events.append((msg["role"], content))
            continue
        if not isinstance(content, list):
            raise fail("content must be a string or a list of blocks", RULE, f"{path}.content")
        for j, block in enumerate(content):
            events.extend(_block(block, msg["role"], f"{path}.content[{j}]"))
    if not events:
        raise fail("the transcript has no content", RULE)
    return render_events(events)


_BLOCKS = {"tool_use", "tool_result", "thinking", "redacted_thinking"}


def _has_blocks(messages: list[Any]) -> bool:
    for m in messages:
        content = m.get("content") if isinstance(m, Mapping) else None
        if isinstance(content, list) and any(
            isinstance(b, Mapping) and b.get("type") in _BLOCKS for b in content
        ):
            return True
    return False


def detects(data: Any) -> bool:
    """A request body (a ``system`` beside its messages, or Anthropic content blocks) or
    a message list with ``role`` and content blocks."""
    if isinstance(data, Mapping):
        messages = data.get("messages")
        return (
            isinstance(messages, list)
            and bool(messages)
            and ("system" in data or _has_blocks(messages))
        )
    return (
        isinstance(data, list)
        and bool(data)
        and isinstance(data[0], Mapping)
        and "role" in data[0]
        and _has_blocks(data)
    )


FORMAT = Format("anthropic", detects, lambda data, select: render_anthropic(data))
