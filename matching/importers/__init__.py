"""Importers: every trace source renders to the one text form of FORMAT.md §4.

Formats (:data:`INPUT_KINDS`; :func:`detect_kind` guesses one from parsed JSON):

- ``observed`` — a ``contracteval.observed/v1`` document (not rendered);
- ``text`` — pasted text, kept as it is;
- ``openai`` — OpenAI chat messages, also legacy ``function_call`` and ``refusal``;
- ``openai_responses`` — OpenAI Responses API items;
- ``anthropic`` — Anthropic Messages (``tool_use``, ``tool_result``, ``system``);
- ``langchain`` — LangChain message dumps;
- ``otel`` — OpenTelemetry GenAI spans;
- ``tau_bench_results`` — a τ-bench results file (choose a trajectory) or one entry;
- ``tau_bench`` — a τ-bench action list (``{"name", "kwargs"}``).

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
>>> detect_kind({"system": "Be brief.", "messages": [{"role": "user", "content": "Hi"}]})
'anthropic'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ContractEvalError
from .anthropic import render_anthropic
from .base import ROLES, format_call, last_agent_message, render_events
from .langchain import LANGCHAIN_TYPES, render_langchain
from .openai import render_openai_chat, render_openai_responses
from .otel import is_otel, render_otel
from .tau_bench import (
    REFERENCE_SOLUTION,
    is_results_entry,
    is_task,
    render_tau_bench,
    render_tau_results,
    trajectories,
)

__all__ = [
    "INPUT_KINDS",
    "ROLES",
    "detect_kind",
    "format_call",
    "final_output",
    "last_agent_message",
    "normalise_pasted",
    "parse_select",
    "render",
    "render_anthropic",
    "render_events",
    "render_langchain",
    "render_openai_chat",
    "render_openai_responses",
    "render_otel",
    "render_tau_bench",
    "render_tau_results",
    "trajectories",
]

INPUT_KINDS = (
    "observed",
    "text",
    "openai",
    "openai_responses",
    "anthropic",
    "langchain",
    "otel",
    "tau_bench_results",
    "tau_bench",
)
_RESPONSE_ITEMS = {"message", "function_call", "function_call_output", "reasoning"}
_ANTHROPIC_BLOCKS = {"tool_use", "tool_result", "thinking", "redacted_thinking"}


def normalise_pasted(text: str) -> str:
    """Pasted text: line endings normalised, nothing else changed (offsets stay put)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _langchain(items: list[Any]) -> bool:
    first = items[0]
    if isinstance(first, (list, tuple)):
        return len(first) == 2 and str(first[0]).lower() in LANGCHAIN_TYPES
    kind = first.get("type") if isinstance(first, Mapping) else None
    return isinstance(kind, str) and (
        kind.lower() in LANGCHAIN_TYPES or kind.removesuffix("Chunk").endswith("Message")
    )


def _anthropic(messages: list[Any]) -> bool:
    for m in messages:
        content = m.get("content") if isinstance(m, Mapping) else None
        if isinstance(content, list) and any(
            isinstance(b, Mapping) and b.get("type") in _ANTHROPIC_BLOCKS for b in content
        ):
            return True
    return False


def _detect_mapping(data: Mapping[str, Any]) -> str | None:
    if data.get("format") == "contracteval.observed/v1":
        return "observed"
    if is_task(data) or (is_task(data.get("info")) and "traj" not in data):
        raise ContractEvalError(REFERENCE_SOLUTION, rule="tau-bench")
    if is_results_entry(data):
        return "tau_bench_results"
    if "resourceSpans" in data or is_otel(data):
        return "otel"
    if data.get("object") == "response" or isinstance(data.get("output"), list):
        return "openai_responses"
    messages = data.get("messages")
    if isinstance(messages, list) and messages:
        if "system" in data or _anthropic(messages):
            return "anthropic"
        return "langchain" if _langchain(messages) else "openai"
    if isinstance(data.get("actions"), list):
        return "tau_bench"
    return None


def _detect_list(data: list[Any]) -> str | None:
    first = data[0]
    if is_results_entry(first):
        return "tau_bench_results"
    if _langchain(data):
        return "langchain"
    if not isinstance(first, Mapping):
        return None
    if any(isinstance(x, Mapping) and x.get("type") in _RESPONSE_ITEMS for x in data):
        return "openai_responses"
    if "role" in first:
        return "anthropic" if _anthropic(data) else "openai"
    if "name" in first and ("kwargs" in first or "arguments" in first):
        return "tau_bench"
    return "otel" if is_otel(data) else None


def detect_kind(data: Any) -> str:
    """Guess the input kind of parsed JSON (one of :data:`INPUT_KINDS` but ``text``)."""
    kind = None
    if isinstance(data, Mapping):
        kind = _detect_mapping(data)
    elif isinstance(data, list) and data:
        kind = _detect_list(data)
    if kind is None:
        raise ContractEvalError(
            "unrecognised input: expected an observed document, a chat transcript (OpenAI"
            " chat or Responses, Anthropic Messages, LangChain messages), OpenTelemetry"
            " GenAI spans, a τ-bench results file or its 'traj', or a τ-bench action list",
            rule="input-kind",
        )
    return kind


def parse_select(value: str | None) -> dict[str, str]:
    """``"task_id=3,trial=0"`` → ``{"task_id": "3", "trial": "0"}``.

    >>> parse_select("task_id=3, trial=0")
    {'task_id': '3', 'trial': '0'}
    """
    out: dict[str, str] = {}
    for part in (value or "").split(","):
        if not part.strip():
            continue
        key, sep, val = part.partition("=")
        if not sep or not key.strip():
            raise ContractEvalError(
                f"cannot read {part.strip()!r}: write key=value, e.g. task_id=3,trial=0",
                rule="select",
            )
        out[key.strip()] = val.strip()
    return out


def render(kind: str, data: Any, *, select: Mapping[str, str] | None = None) -> str:
    """Render an input of the given kind to trace text (not for ``observed``);
    ``select`` chooses a trajectory of a τ-bench results file."""
    if kind == "text":
        if not isinstance(data, str) or not data.strip():
            raise ContractEvalError("the pasted text is empty", rule="text")
        return normalise_pasted(data)
    if kind == "openai":
        return render_openai_chat(data["messages"] if isinstance(data, Mapping) else data)
    if kind == "tau_bench":
        if is_task(data):
            raise ContractEvalError(REFERENCE_SOLUTION, rule="tau-bench")
        return render_tau_bench(data["actions"] if isinstance(data, Mapping) else data)
    if kind == "tau_bench_results":
        return render_tau_results(data, select)
    renderers = {
        "openai_responses": render_openai_responses,
        "anthropic": render_anthropic,
        "langchain": render_langchain,
        "otel": render_otel,
    }
    if kind not in renderers:
        raise ValueError(f"cannot render input kind {kind!r}")
    return renderers[kind](data)


def final_output(kind: str, text: str, source_kind: str = "trace") -> str | None:
    """The agent's final answer, checked against output requirements — one rule for
    uploads and ``contracteval import``: a pasted response whole, otherwise the last
    agent message of the rendered trace (so that what the renderer reads — an OpenAI
    refusal, content parts, a τ-bench ``respond`` — is what the check reads).

    >>> final_output("tau_bench", "[user] Hi\\n[tool] f()\\n[assistant] Done.\\n")
    'Done.'
    >>> final_output("text", " All set. ", "response")
    'All set.'
    """
    if kind == "text" and source_kind == "response":
        return text.strip()
    return last_agent_message(text)
