"""Every LLM component through the CLI, against an endpoint in each failure mode: the
right result, or exit 1 with one line naming the reason, within the deadline."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from matching.cli import main

from .fake_openai import FakeOpenAI, completion
from .helpers import DATA, clean_case, gold_extraction_answer, gold_proposals_answer, tiny_suite

# mode -> words of the one-line reason
FAILURES = {
    "malformed": "not JSON",
    "missing_fields": "is a required property",
    "rate_limited": "rate limited; gave up after 2 tries; last HTTP 429",
    "server_error": "server error; gave up after 2 tries; last HTTP 500",
    "stall": "timed out",
    "html": "returned an HTML page (HTTP 200)",
    "refusal": 'the model refused: "I can\'t help with that request."',
    "huge": "the answer is too long",
}


@pytest.fixture
def fast(llm_env: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    """Short waits: Retry-After 0.05 s, a stall of 3 s against a 1 s deadline."""
    llm_env.retry_after = "0.05"
    llm_env.stall_seconds = 3.0
    monkeypatch.setenv("CONTRACTEVAL_LLM_DEADLINE", "1")
    return llm_env


def trace_file(tmp_path: Path) -> Path:
    src = tmp_path / "trace.txt"
    src.write_text(clean_case().observed.text, encoding="utf-8")
    return src


def extraction() -> object:
    return completion(gold_extraction_answer(clean_case()))


def one_line_error(capsys: pytest.CaptureFixture[str], words: str) -> None:
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1, captured.err  # no traceback
    assert captured.err.startswith("contracteval: error: LLM call failed: extract")
    assert words in captured.err


@pytest.mark.parametrize("mode", sorted(FAILURES))
def test_extract_fails_with_one_line(
    fast: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str
):
    fast.switch(mode).push(extraction(), extraction())
    started = time.monotonic()
    rc = main(["extract", "--source", str(trace_file(tmp_path)), "--extractor", "llm"])
    assert rc == 1
    assert time.monotonic() - started < 6.0  # deadline 1 s per call, at most two calls
    one_line_error(capsys, FAILURES[mode])


@pytest.mark.parametrize("mode", ["good", "fenced", "no_json_schema"])
def test_extract_succeeds_on_endpoints_that_answer(
    fast: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str
):
    fast.switch(mode).push(extraction())
    rc = main(["extract", "--source", str(trace_file(tmp_path)), "--extractor", "llm"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["nodes"]) == len(clean_case().observed.nodes)


def test_match_with_llm_extractor_fails_with_one_line(
    fast: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    fast.switch("html")
    rc = main(
        [
            "match",
            str(DATA / "refund-mini.json"),
            "--query",
            "q1",
            "--observed",
            str(DATA / "refund-mini-observed-q1.json"),
            "--extractor",
            "llm",
        ]
    )
    assert rc == 1
    one_line_error(capsys, "HTML page")


def test_suite_records_failed_cases_and_goes_on(
    fast: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    cases = tiny_suite(tmp_path)  # clean, omission, ordering
    # The first case meets a rate limit for all its tries, the others get answers.
    fast.switch("rate_limited", 2)
    fast.push(*[completion(gold_extraction_answer(c)) for c in cases[1:]])
    assert main(["suite", str(tmp_path), "--extractor", "llm"]) == 0
    out = capsys.readouterr().out
    assert "errored cases (counted wrong): 1" in out
    assert f"  {cases[0].id}: extract: rate limited; gave up after 2 tries" in out
    assert "3 cases in" in out
    assert "LLM fake-model: 4 call(s), 2 failed" in out


def test_judge_lists_refusals_per_case(
    fast: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    tiny_suite(tmp_path)
    fast.switch("refusal")
    assert main(["judge", str(tmp_path), "--judge", "expected"]) == 0
    out = capsys.readouterr().out
    assert "errored cases (counted wrong): 3" in out
    assert out.count("the model refused") == 3


def test_judge_succeeds_without_json_schema_support(
    fast: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    tiny_suite(tmp_path)
    fast.switch("no_json_schema")
    verdict = {"clean": True, "family": None, "rationale": "ok"}
    fast.push(*[completion(verdict)] * 3)
    assert main(["judge", str(tmp_path), "--judge", "output"]) == 0
    out = capsys.readouterr().out
    assert "errored" not in out
    # One refused json_schema request, then every call in json_object.
    assert [(r.get("response_format") or {}).get("type") for r in fast.requests] == [
        "json_schema",
        "json_object",
        "json_object",
        "json_object",
    ]


def test_components_lists_the_failed_calls(
    fast: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    tiny_suite(tmp_path, families=())
    fast.switch("huge")
    assert main(["components", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("the answer is too long") == 2  # the compiler and the extractor


def test_components_succeed_with_fenced_answers(
    fast: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    tiny_suite(tmp_path, families=())
    fast.switch("fenced").push(completion(gold_proposals_answer()), extraction())
    assert main(["components", str(tmp_path)]) == 0
    rows = [line.split()[1:3] for line in capsys.readouterr().out.splitlines() if "llm:" in line]
    assert rows == [["1", "1.000"], ["1", "1.000"]]


def unchecked_contract(tmp_path: Path) -> Path:
    doc = json.loads((DATA / "refund-mini.json").read_text())
    for inv in doc["invariants"]:
        inv.pop("check", None)
    path = tmp_path / "contract.json"
    path.write_text(json.dumps(doc))
    return path


def match_judged(tmp_path: Path) -> list[str]:
    return [
        "match",
        str(unchecked_contract(tmp_path)),
        "--query",
        "q1",
        "--observed",
        str(DATA / "refund-mini-observed-q1.json"),
        "--judge-invariants",
    ]


def test_invariant_judge_through_match(
    fast: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    fast.switch("fenced").push(completion({"score": 0.0, "rationale": "card number shown"}))
    assert main(match_judged(tmp_path)) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["verdict"] == "non_clean"
    assert "invariant_violation" in {f["family"] for f in report["failures"]}
    assert "LLM fake-model: 1 call(s)" in captured.err


@pytest.mark.parametrize("mode", ["stall", "refusal", "missing_fields"])
def test_invariant_judge_failure_is_one_line(
    fast: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str
):
    fast.switch(mode).push(*[completion({"score": 1.0, "rationale": "kept"})] * 2)
    assert main(match_judged(tmp_path)) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("contracteval: error: LLM call failed: judge-invariant")


def test_bad_timeout_setting_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setenv("CONTRACTEVAL_LLM_API_KEY", "k")
    monkeypatch.setenv("CONTRACTEVAL_LLM_TIMEOUT", "soon")
    rc = main(["extract", "--source", str(trace_file(tmp_path)), "--extractor", "llm"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "contracteval: usage error: CONTRACTEVAL_LLM_TIMEOUT='soon' is not a valid number" in err
    assert "Traceback" not in err


def test_extract_notes_discarded_quotes(
    fast: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    answer = gold_extraction_answer(clean_case())
    answer["nodes"].append(
        {"quote": "a sentence nobody wrote", "label": "x", "description": "", "type": None}
    )
    fast.push(completion(answer))
    assert main(["extract", "--source", str(trace_file(tmp_path)), "--extractor", "llm"]) == 0
    err = capsys.readouterr().err
    n = len(answer["nodes"])
    assert (
        f"contracteval: note: LLM extractor kept {n - 1} of {n} quotes; discarded: 1 not found"
        in err
    )
