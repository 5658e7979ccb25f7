"""Untrusted input is refused with a message, never a crash: encoding, depth, NUL, size."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from matching.errors import ContractEvalError
from matching.formats import load_json
from matching.input_limits import InputRefused, Limits, check_json, check_text, decode_utf8
from matching.input_limits import load_json as load_limited
from matching.suite import load_suite

ROOT = Path(__file__).resolve().parents[2]
DEEP = "[" * 100_000 + "]" * 100_000


def test_a_document_deeper_than_the_parser_goes_is_an_error_not_a_crash():
    with pytest.raises(ContractEvalError, match="nested deeper than 64 levels"):
        load_json(DEEP, file="deep.json")


def test_a_document_nested_within_the_parser_but_past_the_limit_is_refused():
    doc = {"format": "contracteval.contract/v1", "meta": json.loads("[" * 200 + "]" * 200)}
    with pytest.raises(ContractEvalError, match=r"deeper than 64 levels \(under \$\.meta"):
        load_json(json.dumps(doc))


def test_limited_json_names_the_size_limit_with_status_413():
    with pytest.raises(InputRefused) as caught:
        load_limited(b"[" + b"1," * 600 + b"1]", what="the trace", max_bytes=1000)
    assert caught.value.status == 413
    assert "the limit is 1,000 bytes" in caught.value.message


def test_a_byte_order_mark_is_accepted_and_latin_1_is_refused():
    assert load_limited(b'\xef\xbb\xbf{"t": "caf\xc3\xa9"}', what="x", max_bytes=99) == {
        "t": "café"
    }
    with pytest.raises(InputRefused, match=r"not UTF-8 text \(byte 10 is 0xe9\)"):
        load_limited('{"t": "café"}'.encode("latin-1"), what="x", max_bytes=99)


@pytest.mark.parametrize(
    ("value", "rule", "path"),
    [
        ({"label": "a\x00b"}, "nul", "$.label"),
        ({"nodes": [{"id": "x", "meta": {"k\x00": 1}}]}, "nul", "$.nodes[0].meta"),
        ({"text": "\ud800"}, "encoding", "$.text"),
    ],
)
def test_strings_postgresql_cannot_store_are_refused_with_their_path(value, rule, path):
    with pytest.raises(InputRefused) as caught:
        check_json(value, what="the document")
    assert (caught.value.rule, caught.value.path) == (rule, path)


def test_form_text_with_replacement_characters_was_not_utf8():
    assert check_text("caf\ufffd", what="the title") == "caf\ufffd"
    with pytest.raises(InputRefused, match="the document is not UTF-8 text"):
        check_text("caf\ufffd", what="the document", form_field=True)


def test_decode_refuses_binary_naming_the_byte():
    with pytest.raises(InputRefused, match=r"byte 0 is 0xff"):
        decode_utf8(b"\xff\xfe\x00\x01", what="cases.jsonl")


def test_a_suite_line_that_is_not_utf8_or_too_deep_is_a_case_error(tmp_path):
    clean = ROOT / "fixtures" / "clean"
    suite = tmp_path / "suite"
    shutil.copytree(clean / "contracts", suite / "contracts")
    first = (clean / "cases.jsonl").read_text().splitlines()[0]
    (suite / "cases.jsonl").write_bytes(
        b"\xef\xbb\xbf" + first.encode() + b"\n\xff\xfe binary\n" + DEEP.encode() + b"\n"
    )
    loaded = load_suite(suite)
    assert len(loaded.cases) == 1
    errors = [e["error"] for e in loaded.errors]
    assert "not UTF-8 text (byte 0)" in errors[0] and "cases.jsonl:2" in errors[0]
    assert "nested deeper than 64 levels" in errors[1]


# ---------------------------------------------------------------- the table of limits


def test_limits_are_read_from_one_spec_and_refuse_unknown_names_or_values():
    limits = Limits.parse("trace_bytes=1MiB, trace_events=2_000 suite_archive_bytes=50MiB")
    assert (limits.trace_bytes, limits.trace_events) == (1024 * 1024, 2000)
    assert limits.suite_archive_bytes == 50 * 1024 * 1024
    assert limits.json_depth == Limits().json_depth  # the rest keep their defaults
    for spec, message in [
        ("trace_byte=1", "unknown limit 'trace_byte'"),
        ("trace_bytes=", "expected trace_bytes=<whole number>"),
        ("trace_bytes=1.5MiB", "expected trace_bytes=<whole number>"),
        ("trace_bytes=0", "at least 1"),
        ("json_depth=900", "at most 500"),
    ]:
        with pytest.raises(ValueError, match=re.escape(message)):
            Limits.parse(spec)


def test_the_request_limits_follow_the_largest_upload():
    limits = Limits(upload_bytes=8 * 1024 * 1024, suite_archive_bytes=1024)
    assert limits.request_bytes == 8 * 1024 * 1024 + 64 * 1024
    assert limits.body_bytes == limits.request_bytes


def test_a_trace_is_refused_by_size_before_its_events_are_counted():
    limits = Limits(trace_bytes=100, trace_events=1)
    with pytest.raises(InputRefused) as caught:
        limits.check_trace("[user] hi\n" * 50)
    assert caught.value.status == 413 and "the trace is 500 bytes" in caught.value.message
    with pytest.raises(InputRefused, match="the trace with its final output is 210 bytes"):
        limits.check_trace("[user] hi\n", "x" * 200)
    limits.check_trace("[user] hi\n", "fine")


def test_an_upload_is_refused_past_its_limits_before_it_is_parsed():
    from matching.uploads import prepare_input

    limits = Limits(upload_bytes=1000, trace_bytes=500)
    with pytest.raises(InputRefused, match=r"the input is 1,001 bytes; the limit is 1,000"):
        prepare_input(kind="auto", data="{" * 1001, contract_key="c", query_key="q", limits=limits)
    observed = {
        "format": "contracteval.observed/v1",
        "source": {"kind": "trace", "text": "[user] hi\n"},
        "nodes": [{"id": f"o{i}"} for i in range(3)],
    }
    with pytest.raises(InputRefused, match="the observed document has 3 nodes; the limit is 2"):
        prepare_input(
            kind="auto",
            data=observed,
            contract_key="c",
            query_key="q",
            limits=Limits(trace_events=2),
        )
