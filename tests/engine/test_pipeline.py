"""The one evaluation pipeline (matching/pipeline.py): its stages, its options, and the
callers that go through it giving what the stages give by hand."""

from __future__ import annotations

import ast
import json
import warnings

import pytest

from matching.conditioning import condition
from matching.enactments import with_enactments
from matching.errors import ContractEvalError
from matching.evaluate import evaluate_detailed
from matching.extract import extract_heuristic
from matching.extractors import FallbackWarning, reextract
from matching.formats import read_observed
from matching.gate import check_text
from matching.input_limits import Limits
from matching.overlay import overlay_payload
from matching.pipeline import Options, expect, judge_trace
from matching.suite import load_suite, run_suite
from matching.validate import load_contract

from .helpers import DATA, ROOT

CONTRACT = load_contract(DATA / "refund-mini.json")
OBSERVED = DATA / "refund-mini-observed-q1.json"
TRACE = "[user] Refund order 1042.\n[assistant] Done, I refunded it.\n"


def _text_doc(text: str = TRACE) -> dict:
    return {
        "format": "contracteval.observed/v1",
        "nodes": [],
        "source": {"kind": "trace", "text": text},
        "output": "refunded",
    }


@pytest.mark.parametrize("mode", ["oracle", "token", "semantic"])
def test_the_report_is_the_evaluation_of_the_conditioned_graph(mode):
    expected = condition(CONTRACT, "q1")
    by_hand = evaluate_detailed(expected, read_observed(OBSERVED), mode=mode)
    outcome = judge_trace(CONTRACT, "q1", read_observed(OBSERVED), Options(mode=mode))
    assert outcome.report == by_hand.report()
    assert outcome.overlay is None  # only when asked for


def test_parsed_data_is_ingested_and_extracted_as_reextract_does():
    outcome = judge_trace(CONTRACT, "q1", _text_doc(), Options(extractor="heuristic"))
    by_hand = reextract(read_observed(_text_doc()), "heuristic")
    assert [n.to_dict() for n in outcome.observed.nodes] == [n.to_dict() for n in by_hand.nodes]
    assert outcome.observed.output == "refunded"


def test_the_overlay_is_the_overlay_of_the_evaluation():
    outcome = judge_trace(CONTRACT, "q1", read_observed(OBSERVED), Options(overlay=True))
    assert outcome.overlay == overlay_payload(outcome.evaluation, outcome.observed)


def test_taught_enactments_count_in_semantic_mode_only():
    taught = {"verify_owner": ["I checked the account holder owns this order"]}
    token = expect(CONTRACT, "q1", mode="token", enactments=taught)
    semantic = expect(CONTRACT, "q1", mode="semantic", enactments=taught)
    assert token.contract is CONTRACT
    assert semantic.contract.to_dict() == with_enactments(CONTRACT, taught).to_dict()


def test_a_caller_extractor_replaces_the_nodes_and_keeps_the_rest():
    seen = []

    def extractor(text, *, kind):
        seen.append(kind)
        return extract_heuristic(text, kind=kind)

    doc = read_observed(_text_doc())
    doc.invariants = {"no_full_card": 1.0}
    outcome = judge_trace(CONTRACT, "q1", doc, Options(extractor="llm"), extract_with=extractor)
    assert seen == ["trace"]
    assert outcome.observed.invariants == {"no_full_card": 1.0}
    assert outcome.observed.output == "refunded"


def test_the_invariant_judge_scores_merge_into_the_observed_graph():
    def judge(expected, observed):
        return {i.id: 0.0 for i in expected.contract.invariants}

    outcome = judge_trace(CONTRACT, "q1", read_observed(OBSERVED), Options(), judge_with=judge)
    assert outcome.judged_invariants and set(outcome.judged_invariants) <= set(
        outcome.observed.invariants
    )
    assert outcome.judged_invariants == {"no_full_card": 0.0}


def test_the_extracted_steps_are_held_to_the_limits():
    steps = "[assistant] I checked the order.\n[assistant] I refunded it.\n"
    options = Options(extractor="heuristic", limits=Limits(trace_events=1))
    with pytest.raises(ContractEvalError, match="steps \\(extracted\\)"):
        judge_trace(CONTRACT, "q1", _text_doc(steps), options)


def test_extraction_warnings_are_collected_when_asked(monkeypatch):
    monkeypatch.delenv("CONTRACTEVAL_LLM_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)  # none may escape
        outcome = judge_trace(
            CONTRACT, "q1", _text_doc(), Options(extractor="llm", record_warnings=True)
        )
    assert outcome.warnings and "heuristic" in outcome.warnings[0]


def test_semantic_mode_is_assessed_and_token_mode_is_not():
    token = judge_trace(CONTRACT, "q1", read_observed(OBSERVED), Options(mode="token"))
    semantic = judge_trace(CONTRACT, "q1", read_observed(OBSERVED), Options(mode="semantic"))
    assert token.assessment is None
    assert semantic.assessment is not None
    assert semantic.assessment["verdict"] == semantic.evaluation.confidence["verdict"]


def test_the_gate_and_the_suite_runner_give_the_pipelines_verdicts():
    checked = check_text(CONTRACT, "q1", TRACE, name="t", mode="token", extractor="heuristic")
    outcome = judge_trace(CONTRACT, "q1", _text_doc(), Options(extractor="heuristic"))
    assert checked.failures == outcome.report["failures"]
    suite = load_suite(ROOT / "fixtures" / "suite")
    suite.cases = suite.cases[:30]
    for result, case in zip(run_suite(suite, mode="token"), suite.cases, strict=True):
        contract = suite.contracts[case.contract]
        assert result.verdict == judge_trace(contract, case.query, case.observed).report["verdict"]


def test_the_engine_imports_no_django():
    """matching/ runs without Django (the command line, CI gates, test suites)."""
    offenders = []
    for path in sorted((ROOT / "matching").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "django"]
    assert offenders == []


def test_the_pipeline_module_reads_top_to_bottom():
    """judge_trace names every stage, in the order the module docstring lists them."""
    source = (ROOT / "matching" / "pipeline.py").read_text(encoding="utf-8")
    body = source.split("def judge_trace(", 1)[1].split("\ndef ", 1)[0]
    stages = ["ingest(", "expect(", "extract(", "hold_to_limits(", "judge(", "evaluate("]
    stages += ["overlay(", "assess("]
    positions = [body.index(s) for s in stages]
    assert positions == sorted(positions), json.dumps(dict(zip(stages, positions, strict=True)))
