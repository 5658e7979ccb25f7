"""A small scripted agent that records its work as OpenTelemetry GenAI spans with the
real SDK: one ``invoke_agent`` root span, a ``chat`` span per model call (its input
holds the conversation so far, as instrumentations record it) and an ``execute_tool``
span per tool call. The tests export them to ``/v1/traces``."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

QUERY_Q1 = "Order 1042 arrived ten days ago, I want my money back."
ORDER = {"order_id": "1042", "email": "sam@example.com", "placed": "10 days ago", "total": 59.0}
FINAL = '{"order_id": "1042", "resolution": "refunded"}'

# (what the model says, the tool call it makes or None, what the tool answers)
CLEAN_REFUND: list[tuple[str, tuple[str, dict] | None, Any]] = [
    ("", ("lookup_order", {"order_id": "1042"}), ORDER),
    (
        "The email on order 1042 matches the one you wrote from, so the purchase is yours.",
        None,
        None,
    ),
    ("The order was placed 10 days ago, inside the 30-day return window.", None, None),
    ("", ("issue_refund", {"order_id": "1042", "amount": 59.0, "to": "original_payment"}), "ok"),
    ("Your refund of $59.00 to the card ending 4242 is approved.", None, None),
    (FINAL, None, None),
]
# The same agent skipping the ownership check and the window check.
CARELESS_REFUND = [CLEAN_REFUND[0], CLEAN_REFUND[3], CLEAN_REFUND[5]]


def provider(exporter: SpanExporter, service: str = "refund-service") -> TracerProvider:
    tp = TracerProvider(resource=Resource.create({"service.name": service}))
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp


def _text(role: str, text: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def run_agent(
    tp: TracerProvider,
    script=CLEAN_REFUND,
    *,
    agent: str = "refund-bot",
    query: str = QUERY_Q1,
    model: str = "gpt-test-mini",
    extra: dict[str, str] | None = None,
) -> str:
    """Play ``script`` as agent ``agent`` answering ``query``; the trace id (hex)."""
    tracer = tp.get_tracer("scripted-agent")
    conversation = [_text("user", query)]
    with tracer.start_as_current_span(f"invoke_agent {agent}") as root:
        root.set_attributes({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent})
        root.set_attributes(extra or {})
        for i, (say, call, answer) in enumerate(script):
            with tracer.start_as_current_span(f"chat {model}") as chat:
                parts = [{"type": "text", "content": say}] if say else []
                if call:
                    parts.append(
                        {"type": "tool_call", "id": f"c{i}", "name": call[0], "arguments": call[1]}
                    )
                reply = {"role": "assistant", "parts": parts}
                chat.set_attributes(
                    {
                        "gen_ai.operation.name": "chat",
                        "gen_ai.request.model": model,
                        "gen_ai.response.model": model,
                        "gen_ai.input.messages": json.dumps(conversation),
                        "gen_ai.output.messages": json.dumps([reply]),
                    }
                )
            conversation.append(reply)
            if call:
                with tracer.start_as_current_span(f"execute_tool {call[0]}") as tool:
                    tool.set_attributes(
                        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call[0]}
                    )
                result = answer if isinstance(answer, str) else json.dumps(answer)
                conversation.append(
                    {
                        "role": "tool",
                        "parts": [
                            {"type": "tool_call_response", "id": f"c{i}", "response": result}
                        ],
                    }
                )
        trace_id = format(root.get_span_context().trace_id, "032x")
    return trace_id
