"""``contracteval judge``, ``components``, ``suite``/``extract --extractor llm``: with the
fake server configured through the environment, and with no key at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matching.cli import main

from .fake_openai import FakeOpenAI, completion, error
from .helpers import clean_case, gold_extraction_answer, gold_proposals_answer, tiny_suite


def verdict(clean: bool, family: str | None) -> dict[str, object]:
    return {"clean": clean, "family": family, "rationale": "scripted"}


def test_judge_end_to_end(llm_env: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    tiny_suite(tmp_path / "suite")
    llm_env.push(
        completion(verdict(True, None), prompt_tokens=100, completion_tokens=10),
        completion(verdict(False, "omission"), prompt_tokens=100, completion_tokens=10),
        completion(verdict(True, None), prompt_tokens=100, completion_tokens=10),  # misses it
    )
    out = tmp_path / "judge.json"
    rc = main(["judge", str(tmp_path / "suite"), "--judge", "trace-checklist", "--json", str(out)])
    stdout = capsys.readouterr().out
    assert rc == 0
    lines = stdout.splitlines()
    assert lines[0].split() == ["family", "cases", "detection", "localization", "exact", "loc."]
    assert any(line.split()[:5] == ["omission", "1", "1.000", "—", "—"] for line in lines)
    assert any(line.split()[:5] == ["ordering", "1", "0.000", "—", "—"] for line in lines)
    assert "LLM fake-model: 3 call(s), 0 failed, 300 prompt + 30 completion tokens" in stdout
    doc = json.loads(out.read_text())
    assert (doc["cases"], doc["mode"], doc["judge"], doc["model"]) == (
        3,
        "judge",
        "trace-checklist",
        "fake-model",
    )
    assert doc["detection_accuracy"] == round(2 / 3, 6)
    assert doc["balanced_detection_accuracy"] == 0.75
    assert doc["localization"] is None and doc["exact_localization"] is None
    assert [v["family"] for v in doc["verdicts"]] == [None, "omission", None]
    assert doc["llm"]["calls"] == 3 and len(doc["calls"]) == 3
    assert all(c["latency"] >= 0 for c in doc["calls"])


def test_judge_limit_and_failed_calls(
    llm_env: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    tiny_suite(tmp_path)
    llm_env.push(completion(verdict(True, None)), error(500), error(500))
    rc = main(["judge", str(tmp_path), "--judge", "output", "--limit", "2"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "2 cases in" in out
    assert "errored cases (counted wrong): 1" in out and "gave up after 2 tries" in out
    assert len(llm_env.requests) == 3
    assert main(["judge", str(tmp_path), "--judge", "output", "--limit", "0"]) == 2


def test_judge_without_key_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    tiny_suite(tmp_path)
    assert main(["judge", str(tmp_path), "--judge", "trace"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "the LLM judges need an LLM endpoint and none is configured" in captured.err
    assert "CONTRACTEVAL_LLM_API_KEY" in captured.err and "nothing was run" in captured.err


def test_judge_kind_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as info:
        main(["judge", str(tmp_path), "--judge", "vibes"])
    assert info.value.code == 2


def test_components_end_to_end(
    llm_env: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    tiny_suite(tmp_path, families=())
    # The declared study asks first (one chunk), then the observed study (one clean case).
    llm_env.push(
        completion(gold_proposals_answer()), completion(gold_extraction_answer(clean_case()))
    )
    out = tmp_path / "components.json"
    assert main(["components", str(tmp_path), "--json", str(out)]) == 0
    stdout = capsys.readouterr().out
    llm_rows = [line.split()[1:] for line in stdout.splitlines() if line.startswith("llm:")]
    # A perfect compiler and a perfect extractor score 1 on every figure.
    assert llm_rows == [
        ["1", "1.000", "1.000", "1.000", "1.000", "1.000", "1.000"],
        ["1", "1.000", "1.000", "1.000"],
    ]
    assert stdout.count("heuristic ") == 2
    doc = json.loads(out.read_text())
    llm_declared = doc["declared"][1]
    assert (llm_declared["node_f1"], llm_declared["type_accuracy"], llm_declared["edge_f1"]) == (
        1.0,
        1.0,
        1.0,
    )
    assert doc["observed"][1]["precision"] == doc["observed"][1]["recall"] == 1.0
    assert doc["llm"]["calls"] == 2
    assert doc["declared"][0]["compiler"] == "heuristic" and doc["declared"][0]["node_f1"] < 1.0


def test_components_imperfect_llm_is_scored_lower(
    llm_env: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    tiny_suite(tmp_path, families=())
    answer = gold_proposals_answer()
    answer["nodes"] = answer["nodes"][:5]  # half the graph
    answer["edges"] = [
        e
        for e in answer["edges"]
        if e["source"] in {n["key"] for n in answer["nodes"]}
        and e["target"] in {n["key"] for n in answer["nodes"]}
    ]
    extraction = gold_extraction_answer(clean_case())
    extraction["nodes"] = extraction["nodes"][:2]
    llm_env.push(completion(answer), completion(extraction))
    out = tmp_path / "c.json"
    assert main(["components", str(tmp_path), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    d = doc["declared"][1]
    assert (d["node_precision"], d["node_recall"]) == (1.0, round(5 / 11, 6))
    assert doc["observed"][1]["recall"] == 0.4 and doc["observed"][1]["precision"] == 1.0


def test_components_without_key_runs_heuristics_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    tiny_suite(tmp_path, families=())
    assert main(["components", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "warning: no LLM endpoint configured" in captured.err
    assert "no LLM row is reported" in captured.err
    assert "llm" not in captured.out
    assert "heuristic" in captured.out


def test_suite_with_llm_extractor(
    llm_env: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    tiny_suite(tmp_path, families=())
    llm_env.push(completion(gold_extraction_answer(clean_case())))
    assert main(["suite", str(tmp_path), "--extractor", "llm"]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err
    assert "clean (specificity)         1      1.000" in captured.out
    assert len(llm_env.requests) == 1


def test_suite_and_extract_without_key_fall_back_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    tiny_suite(tmp_path, families=())
    assert main(["suite", str(tmp_path), "--extractor", "llm"]) == 0
    assert "using the offline heuristic extractor instead" in capsys.readouterr().err
    src = tmp_path / "trace.txt"
    src.write_text(clean_case().observed.text, encoding="utf-8")
    assert main(["extract", "--source", str(src), "--extractor", "llm"]) == 0
    captured = capsys.readouterr()
    assert "using the offline heuristic extractor instead" in captured.err
    assert json.loads(captured.out)["nodes"]


def test_bad_llm_setting_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setenv("CONTRACTEVAL_LLM_MAX_RETRIES", "many")
    assert main(["judge", str(tmp_path), "--judge", "trace"]) == 2
    assert "CONTRACTEVAL_LLM_MAX_RETRIES='many'" in capsys.readouterr().err
