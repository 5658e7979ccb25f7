"""Importers: every trace source renders to the one text form of FORMAT.md §4.

Each format is declared once, by the module that reads it, as a :class:`Format`: its
name, whether parsed JSON is in it, how it renders and what its final answer is.
:data:`FORMATS` gathers them (:data:`INPUT_KINDS` are their names); :func:`detect_kind`
tries them on parsed JSON, the most specific shapes first:

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
from . import anthropic, langchain, openai, otel, tau_bench
from .anthropic import render_anthropic
from .base import ROLES, Format, format_call, last_agent_message, render_events
from .langchain import render_langchain
from .openai import render_openai_chat, render_openai_responses
from .otel import render_otel
from .tau_bench import render_tau_bench, render_tau_results, trajectories

__all__ = [
    "DETECTION_ORDER",
    "FORMATS",
    "INPUT_KINDS",
    "ROLES",
    "Format",
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


def normalise_pasted(text: str) -> str:
    """Pasted text: line endings normalised, nothing else changed (offsets stay put)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _render_text(data: Any, select: Mapping[str, str] | None) -> str:
    if not isinstance(data, str) or not data.strip():
        raise ContractEvalError("the pasted text is empty", rule="text")
    return normalise_pasted(data)


def _text_output(text: str, source_kind: str) -> str | None:
    # a pasted response is the answer whole; a pasted trace's is its last agent message
    return text.strip() if source_kind == "response" else last_agent_message(text)


def _not_rendered(data: Any, select: Mapping[str, str] | None) -> str:
    raise ValueError("an observed document is read as it is, not rendered")


OBSERVED = Format(
    "observed",
    lambda data: isinstance(data, Mapping) and data.get("format") == "contracteval.observed/v1",
    _not_rendered,
)
TEXT = Format("text", lambda data: False, _render_text, _text_output)

#: Every input format by name, in the order forms and documentation list them.
FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        OBSERVED,
        TEXT,
        openai.CHAT,
        openai.RESPONSES,
        anthropic.FORMAT,
        langchain.FORMAT,
        otel.FORMAT,
        tau_bench.RESULTS,
        tau_bench.ACTIONS,
    )
}
INPUT_KINDS = tuple(FORMATS)
# The order in which parsed JSON is tried: the most specific shapes first, since an
# Anthropic body, a LangChain dump and OpenAI chat all hold a list of ``messages``, and
# a results entry's ``traj`` is OpenAI chat.
DETECTION_ORDER = (
    OBSERVED,
    tau_bench.RESULTS,
    otel.FORMAT,
    openai.RESPONSES,
    anthropic.FORMAT,
    langchain.FORMAT,
    openai.CHAT,
    tau_bench.ACTIONS,
)


def detect_kind(data: Any) -> str:
    """Guess the input kind of parsed JSON (one of :data:`INPUT_KINDS` but ``text``)."""
    for fmt in DETECTION_ORDER:
        if fmt.detects(data):
            return fmt.name
    raise ContractEvalError(
        "unrecognised input: expected an observed document, a chat transcript (OpenAI"
        " chat or Responses, Anthropic Messages, LangChain messages), OpenTelemetry"
        " GenAI spans, a τ-bench results file or its 'traj', or a τ-bench action list",
        rule="input-kind",
    )


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
    if kind not in FORMATS:
        raise ValueError(f"cannot render input kind {kind!r}")
    return FORMATS[kind].render(data, select)


def final_output(kind: str, text: str, source_kind: str = "trace") -> str | None:
    """The agent's final answer, checked against output requirements — one rule for
    uploads and ``contracteval import``, declared by the format (:class:`Format`): a
    pasted response whole, otherwise the last agent message of the rendered trace.

    >>> final_output("tau_bench", "[user] Hi\\n[tool] f()\\n[assistant] Done.\\n")
    'Done.'
    >>> final_output("text", " All set. ", "response")
    'All set.'
    """
    return FORMATS[kind].output(text, source_kind)
