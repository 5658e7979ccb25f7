"""Detect tells a rendered trace (role-tagged lines) from JSON, broken or not."""

from __future__ import annotations

import pytest

from matching.errors import ContractEvalError
from matching.uploads import prepare_input

TRACE = '[user] Refund order 1042\n[tool] lookup_order(order_id="1042")\n[assistant] Done.\n'


def _prepare(data):
    return prepare_input(
        kind="auto", data=data, contract_key="c", query_key="q", extractor="heuristic"
    )


def test_a_rendered_trace_is_text_not_broken_json():
    prepared = _prepare(TRACE)
    assert prepared.kind == "text"


def test_text_that_opens_like_json_and_does_not_parse_is_still_refused():
    with pytest.raises(ContractEvalError, match="looks like JSON"):
        _prepare('{"messages": [')
    with pytest.raises(ContractEvalError, match="looks like JSON"):
        _prepare("[1, 2")


def test_a_json_list_of_messages_is_still_a_transcript():
    prepared = _prepare('[{"role": "user", "content": "Refund order 1042"}]')
    assert prepared.kind == "openai"


def test_a_pasted_trace_ends_with_its_final_output():
    answer = '{"order_id": "1042", "resolution": "refunded"}'
    prepared = _prepare(TRACE.replace("[assistant] Done.", f"[assistant] Done.\n  {answer}"))
    assert prepared.observed["output"] == f"Done.\n{answer}"


def test_a_pasted_trace_without_an_agent_message_has_no_final_output():
    prepared = _prepare('[user] Refund order 1042\n[tool] lookup_order(order_id="1042")\n')
    assert "output" not in prepared.observed
