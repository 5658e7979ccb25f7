"""OpenTelemetry GenAI spans (the ``gen_ai.*`` semantic conventions) → one trace.

Accepted containers: an OTLP/JSON export (``resourceSpans`` → ``scopeSpans`` →
``spans``, attributes as ``[{"key", "value": {"stringValue": …}}]``), a list of spans,
or ``{"spans": […]}`` / ``{"data": […]}`` with plain ``attributes`` objects, as
Langfuse and OpenLLMetry write them. Spans are ordered by start time.

Both generations of the conventions are read:

- ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON: messages of ``parts``
  — ``text``, ``tool_call``, ``tool_call_response``) and ``gen_ai.system_instructions``;
- the indexed attributes ``gen_ai.prompt.N.role`` / ``.content`` and
  ``gen_ai.completion.N.role`` / ``.content`` / ``.tool_calls.M.name`` / ``.arguments``.

Span events carry the same content in some instrumentations: the attributes of a
``gen_ai.*`` event (``gen_ai.client.inference.operation.details``) are read as the
span's, ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` (``gen_ai.prompt`` /
``gen_ai.completion`` JSON) as its input and output messages, and the message events
(``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.tool.message``,
``gen_ai.system.message``, ``gen_ai.choice``) as one message each.

A chat span's input repeats the conversation so far, so the trace is the *last* chat
span's input followed by its output. Tool spans (``gen_ai.operation.name`` =
``execute_tool``) are used when no chat span carries the conversation.

>>> span = {"name": "chat gpt-4o", "startTimeUnixNano": "1", "attributes": [
...     {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
...     {"key": "gen_ai.prompt.0.role", "value": {"stringValue": "user"}},
...     {"key": "gen_ai.prompt.0.content", "value": {"stringValue": "Is B7 refundable?"}},
...     {"key": "gen_ai.completion.0.role", "value": {"stringValue": "assistant"}},
...     {"key": "gen_ai.completion.0.content", "value": {"stringValue": "Yes, it is."}}]}
>>> print(render_otel({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}), end="")
[user] Is B7 refundable?
[assistant] Yes, it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .base import Events, Format, call_args, fail, format_call, render_events

__all__ = ["FORMAT", "is_otel", "render_otel", "spans_of"]

RULE = "otel-genai"
_INDEXED = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")
_ROLE = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


def _value(v: Any) -> Any:
    """An OTLP ``AnyValue`` (``{"stringValue": …}`` …) or a plain value."""
    if isinstance(v, Mapping) and len(v) == 1:
        ((key, inner),) = v.items()
        if key == "arrayValue":
            return [_value(x) for x in (inner or {}).get("values", [])]
        if key.endswith("Value"):
            return int(inner) if key == "intValue" else inner
    return v


def _attributes(span: Mapping[str, Any]) -> dict[str, Any]:
    raw = span.get("attributes") or {}
    if isinstance(raw, list):
        return {a["key"]: _value(a.get("value")) for a in raw if isinstance(a, Mapping)}
    return dict(raw) if isinstance(raw, Mapping) else {}


_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def _event_message(name: str, attrs: Mapping[str, Any]) -> dict[str, Any] | None:
    """One conversation message from a message event (None for any other event)."""
    if name == "gen_ai.choice":
        message = attrs.get("message")
        if isinstance(message, str):
            try:
                message = json.loads(message)
            except json.JSONDecodeError:
                message = {"content": message}
        if isinstance(message, Mapping):
            return {"role": "assistant", **message}
        return {"role": "assistant", "content": attrs.get("content")}
    if name in _MESSAGE_EVENTS:
        return {"role": attrs.get("role") or _MESSAGE_EVENTS[name], "content": attrs.get("content")}
    return None


def _with_events(attrs: dict[str, Any], events: Any) -> dict[str, Any]:
    """``attrs`` with what the span's ``gen_ai`` events say folded in (attributes the
    span sets itself win)."""
    inputs: list[Any] = []
    outputs: list[Any] = []
    folded: dict[str, Any] = {}
    for event in events if isinstance(events, list) else []:
        if not isinstance(event, Mapping):
            continue
        name, e_attrs = str(event.get("name") or ""), _attributes(event)
        message = _event_message(name, e_attrs)
        if message is not None:
            (outputs if name == "gen_ai.choice" else inputs).append(message)
        elif name == "gen_ai.content.prompt" and "gen_ai.prompt" in e_attrs:
            folded.setdefault("gen_ai.input.messages", e_attrs["gen_ai.prompt"])
        elif name == "gen_ai.content.completion" and "gen_ai.completion" in e_attrs:
            folded.setdefault("gen_ai.output.messages", e_attrs["gen_ai.completion"])
        elif name.startswith("gen_ai."):
            for key, value in e_attrs.items():
                if key.startswith("gen_ai."):
                    folded.setdefault(key, value)
    if inputs:
        folded.setdefault("gen_ai.input.messages", inputs)
    if outputs:
        folded.setdefault("gen_ai.output.messages", outputs)
    return {**folded, **attrs}


def spans_of(data: Any) -> list[dict[str, Any]]:
    """Every span of an export, as ``{"start": …, "attrs": {…}}`` in start order."""
    spans: list[Any] = []
    if isinstance(data, Mapping) and isinstance(data.get("resourceSpans"), list):
        for rs in data["resourceSpans"]:
            for ss in (
                (rs or {}).get("scopeSpans") or (rs or {}).get("instrumentationLibrarySpans") or []
            ):
                spans.extend((ss or {}).get("spans") or [])
    elif isinstance(data, Mapping):
        spans = data.get("spans") or data.get("data") or []
    elif isinstance(data, list):
        spans = data
    out = []
    for s in spans:
        if isinstance(s, Mapping):
            start = s.get("startTimeUnixNano") or s.get("start_time") or s.get("startTime") or 0
            attrs = _with_events(_attributes(s), s.get("events"))
            out.append({"start": str(start).zfill(32), "attrs": attrs})
    return sorted(out, key=lambda s: s["start"])


def is_otel(data: Any) -> bool:
    """Whether ``data`` holds spans with ``gen_ai.*`` attributes."""
    try:
        return any(any(k.startswith("gen_ai.") for k in s["attrs"]) for s in spans_of(data))
    except (AttributeError, KeyError, TypeError):
        return False


def _parts(message: Mapping[str, Any]) -> Events:
    """Events of one convention message (``parts``, or a plain ``content``)."""
    role = _ROLE.get(
        str(message.get("role")), "result" if message.get("role") == "tool" else "user"
    )
    parts = message.get("parts")
    if not isinstance(parts, list):
        parts = [{"type": "text", "content": message.get("content")}]
    events: Events = []
    for p in parts:
        kind = p.get("type") if isinstance(p, Mapping) else None
        if kind == "text" and isinstance(p.get("content"), str) and p["content"].strip():
            events.append((role, p["content"]))
        elif kind == "tool_call" and isinstance(p.get("name"), str):
            args = call_args(p.get("arguments"), "$.parts.arguments", RULE)
            events.append(("tool", format_call(p["name"], args)))
        elif kind == "tool_call_response":
            resp = p.get("response")
            events.append(("result", resp if isinstance(resp, str) else json.dumps(resp)))
    return events


def _indexed(attrs: Mapping[str, Any], which: str) -> Events:
    """Events from ``gen_ai.prompt.N.*`` or ``gen_ai.completion.N.*`` attributes."""
    msgs: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        m = _INDEXED.match(key)
        if m and m.group(1) == which:
            msgs.setdefault(int(m.group(2)), {})[m.group(3)] = value
    events: Events = []
    for _, msg in sorted(msgs.items()):
        role = msg.get("role", "assistant" if which == "completion" else "user")
        text = msg.get("content")
        if isinstance(text, str) and text.strip():
            events.append((_ROLE.get(role, "result" if role == "tool" else "user"), text))
        n = 0
        while f"tool_calls.{n}.name" in msg:
            args = call_args(msg.get(f"tool_calls.{n}.arguments"), key_path(which, n), RULE)
            events.append(("tool", format_call(str(msg[f"tool_calls.{n}.name"]), args)))
            n += 1
    return events


def key_path(which: str, n: int) -> str:
    return f"$.attributes['gen_ai.{which}.N.tool_calls.{n}.arguments']"


def _json_messages(raw: Any) -> list[Any]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            raise fail("gen_ai messages are not JSON", RULE) from None
    return raw if isinstance(raw, list) else []


def _chat_events(attrs: Mapping[str, Any]) -> Events:
    events: Events = []
    system = attrs.get("gen_ai.system_instructions")
    for part in _json_messages(system) if system else []:
        if isinstance(part, Mapping) and isinstance(part.get("content"), str):
            events.append(("system", part["content"]))
    if "gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs:
        for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
            for msg in _json_messages(attrs.get(key)):
                if isinstance(msg, Mapping):
                    events.extend(_parts(msg))
        return events
    return events + _indexed(attrs, "prompt") + _indexed(attrs, "completion")


def render_otel(data: Any) -> str:
    """Render GenAI spans as one trace."""
    spans = spans_of(data)
    chats = [s for s in spans if _chat_events(s["attrs"])]
    if chats:
        events = _chat_events(chats[-1]["attrs"])
    else:
        events = []
        for s in spans:
            a = s["attrs"]
            if a.get("gen_ai.operation.name") == "execute_tool" and a.get("gen_ai.tool.name"):
                args = call_args(a.get("gen_ai.tool.call.arguments"), "$.attributes", RULE)
                events.append(("tool", format_call(str(a["gen_ai.tool.name"]), args)))
                if a.get("gen_ai.tool.call.result") is not None:
                    events.append(("result", str(a["gen_ai.tool.call.result"])))
    if not events:
        raise fail("no span carries gen_ai messages or tool calls", RULE)
    return render_events(events)


def detects(data: Any) -> bool:
    """An OTLP export (``resourceSpans``), or spans with ``gen_ai.*`` attributes."""
    if isinstance(data, Mapping):
        return "resourceSpans" in data or is_otel(data)
    return isinstance(data, list) and bool(data) and isinstance(data[0], Mapping) and is_otel(data)


FORMAT = Format("otel", detects, lambda data, select: render_otel(data))
