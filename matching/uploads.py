"""Uploads of an agent's work, parsed into one observed document (no Django).

An upload is an observed document, an OpenAI chat transcript, a τ-bench action list or
pasted text (a trace or a final response). :func:`prepare_input` recognises the kind,
renders anything that is not already an observed document to trace text (see
:mod:`matching.importers`), and checks the result against the observed schema: a bad
upload raises :class:`~matching.errors.ContractEvalError` naming what is wrong.

>>> doc = prepare_input(kind="auto", data="I refunded the order.", contract_key="c",
...                     query_key="q1")
>>> (doc.kind, doc.extractor, doc.observed["source"]["kind"], doc.observed["output"])
('text', 'heuristic', 'response', 'I refunded the order.')

Sizes are checked before anything is parsed, and the trace (rendered, with its final
output) before it is validated: within the :class:`~matching.input_limits.Limits` given
(the engine's defaults unless the caller has its own):

>>> from matching.input_limits import Limits
>>> prepare_input(kind="text", data="[user] Hi\\n" * 3, contract_key="c", query_key="q1",
...               limits=Limits(trace_events=2))
Traceback (most recent call last):
...
matching.input_limits.InputRefused: $: the trace has 3 events; the limit is 2 \
(INPUT_LIMITS trace_events) [count]

A pasted trace has no final output of its own; give it beside the trace:

>>> trace = '[tool] refund(order_id="7")\\n[assistant] Refunded.'
>>> doc = prepare_input(kind="auto", data=trace, contract_key="c", query_key="q1",
...                     output='{"resolution": "refunded"}')
>>> (doc.observed["source"]["kind"], doc.observed["output"])
('trace', '{"resolution": "refunded"}')
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ContractEvalError
from .formats import OBSERVED, read_observed
from .importers import INPUT_KINDS, detect_kind, final_output, parse_select, render
from .input_limits import DEFAULT_LIMITS, Limits, decode_utf8, size_of
from .model import EXTRACTOR_CHOICES, MODES, SOURCE_KINDS
from .trace import EVENT, is_trace


@dataclass
class PreparedInput:
    """One upload, ready to evaluate."""

    kind: str  # one of INPUT_KINDS
    observed: dict[str, Any]  # a contracteval.observed/v1 document
    extractor: str


def _parse_json(raw: str | bytes, limits: Limits) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ContractEvalError(
            f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", rule="json"
        ) from None
    except UnicodeDecodeError:
        raise ContractEvalError("not UTF-8 text", rule="json") from None
    except RecursionError:
        raise _too_deep(limits) from None


def _too_deep(limits: Limits) -> ContractEvalError:
    return ContractEvalError(
        f"the input is nested deeper than {limits.json_depth} levels", rule="depth"
    )


def prepare_input(
    *,
    kind: str,
    data: Any,
    contract_key: str,
    query_key: str,
    source_kind: str = "auto",
    extractor: str = "none",
    mode: str = "token",
    select: str | Mapping[str, str] | None = None,
    output: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> PreparedInput:
    """Parse, render and validate one input, within ``limits``.

    Parameters
    ----------
    kind : str
        One of :data:`INPUT_KINDS`, or ``auto``: JSON that is an observed document, a
        chat transcript or an action list is recognised; anything else is pasted text.
    data : str, bytes or parsed JSON
    contract_key, query_key : str
        What it is evaluated against.
    source_kind : str
        ``response``, ``trace`` or ``auto`` (a rendered trace is a trace).
    extractor, mode : str
        The run's options; text is extracted, so it needs token mode.
    select : str or mapping, optional
        ``task_id=…,trial=…``: the trajectory of a τ-bench results file (without one,
        a file of several is refused with the list of them).
    output : str, optional
        The agent's final output (checked against the output requirements) for an input
        that does not end with it; it replaces a transcript's final message (an observed
        document carries its own ``output``).
    limits : Limits
        ``upload_bytes`` for ``data`` as sent (before it is parsed), ``trace_bytes``
        and ``trace_events`` for the trace it renders to, ``json_depth``.

    Returns
    -------
    PreparedInput

    Raises
    ------
    ContractEvalError
        Naming what is wrong (:class:`~matching.input_limits.InputRefused`: a limit).
    """
    _check_options(mode, extractor)
    limits.check_bytes("upload_bytes", size_of(data), what="the input")
    kind, data = _recognise(kind, data, limits)
    output = _given_output(kind, output)
    if kind == "observed":
        if isinstance(data, str):
            data = _parse_json(data, limits)
        _check_observed(data, limits)
        read_observed(data)  # schema, ids and steps: the engine's message on failure
        return PreparedInput(kind=kind, observed=dict(data), extractor=extractor)
    return _rendered(
        kind, data, contract_key, query_key, source_kind, extractor, mode, select, output, limits
    )


def _check_observed(data: Any, limits: Limits) -> None:
    """An observed document within the depth, trace and node limits, before the schema
    checks (which recurse per level and read every node)."""
    limits.check_json(data, what="the input", strings=False)
    if not isinstance(data, Mapping):
        return  # the schema check says what it should be
    source = data.get("source")
    text = source.get("text") if isinstance(source, Mapping) else None
    output = data.get("output")
    if isinstance(text, str):
        limits.check_trace(text, output if isinstance(output, str) else None)
    nodes = data.get("nodes")
    if isinstance(nodes, list):
        what = "the observed document"
        limits.check_count("trace_events", len(nodes), what=what, unit="nodes")


def _rendered(
    kind: str,
    data: Any,
    contract_key: str,
    query_key: str,
    source_kind: str,
    extractor: str,
    mode: str,
    select: str | Mapping[str, str] | None,
    output: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> PreparedInput:
    """A transcript, action list or pasted text as an observed document with no nodes
    (the extractor finds them), its final output (``output`` when given) kept for the
    output checks."""
    if isinstance(select, str) or select is None:
        select = parse_select(select)
    if kind != "text" and isinstance(data, str):
        data = _parse_json(data, limits)
    if kind != "text":
        limits.check_json(data, what="the input", strings=False)  # renderers recurse per level
    text = render(kind, data, select=select)
    limits.check_trace(text, output)
    if source_kind == "auto":
        source_kind = "trace" if kind != "text" or is_trace(text) else "response"
    if source_kind not in SOURCE_KINDS:
        raise ContractEvalError(
            f"unknown source kind {source_kind!r}: expected response or trace", rule="source-kind"
        )
    if mode == "oracle":
        raise ContractEvalError(
            "oracle mode needs an observed document with gold labels; rendered text is"
            " extracted, so use token or semantic mode",
            rule="mode",
        )
    doc: dict[str, Any] = {
        "format": OBSERVED,
        "contract": contract_key,
        "query": query_key,
        "source": {"kind": source_kind, "text": text},
        "nodes": [],
    }
    output = output or final_output(kind, text, source_kind)
    if output:
        doc["output"] = output
    read_observed(doc)
    # text has no nodes until it is extracted
    return PreparedInput(
        kind=kind, observed=doc, extractor=extractor if extractor != "none" else "heuristic"
    )


def _given_output(kind: str, output: str | None) -> str | None:
    """The final output given beside the input (None when blank); refused beside an
    observed document, which carries its own."""
    if not (output and output.strip()):
        return None
    if kind == "observed":
        raise ContractEvalError(
            "an observed document gives its final output in its own 'output' field;"
            " leave the separate final output empty",
            rule="output",
        )
    return output


def _check_options(mode: str, extractor: str) -> None:
    if mode not in MODES:
        raise ContractEvalError(f"unknown mode {mode!r}: expected {', '.join(MODES)}", rule="mode")
    if extractor not in EXTRACTOR_CHOICES:
        raise ContractEvalError(
            f"unknown extractor {extractor!r}: expected {', '.join(EXTRACTOR_CHOICES)}",
            rule="extractor",
        )


def _recognise(kind: str, data: Any, limits: Limits) -> tuple[str, Any]:
    """``(kind, data)`` with bytes decoded and ``auto`` resolved to a known kind."""
    if isinstance(data, bytes):
        data = decode_utf8(data, what="the input")
    if kind == "auto":
        parsed = _json_or_none(data, limits) if isinstance(data, str) else data
        if parsed is not None:
            limits.check_json(parsed, what="the input", strings=False)
        kind, data = ("text", data) if parsed is None else (detect_kind(parsed), parsed)
    if kind not in INPUT_KINDS:
        raise ContractEvalError(
            f"unknown input kind {kind!r}: expected one of {', '.join(INPUT_KINDS)}",
            rule="input-kind",
        )
    return kind, data


def _json_or_none(text: str, limits: Limits) -> Any:
    """The JSON of ``text`` if it opens like JSON, else None (pasted prose)."""
    stripped = text.strip()
    if stripped[:1] not in ("{", "["):
        return None
    try:
        return json.loads(stripped)
    except RecursionError:
        raise _too_deep(limits) from None
    except json.JSONDecodeError as exc:
        # A rendered trace (FORMAT.md §4) opens with a role tag such as "[user] ":
        # that is text, not broken JSON.
        if EVENT.match(stripped):
            return None
        # Text that opens like JSON is almost always a broken upload, not an agent's
        # answer: say so rather than evaluate it as prose.
        raise ContractEvalError(
            f"this looks like JSON but is not valid JSON ({exc.msg} at line"
            f" {exc.lineno} column {exc.colno}); fix it, or choose the input kind"
            " 'Pasted response or trace' to evaluate it as text",
            rule="json",
        ) from None
