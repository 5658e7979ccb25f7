"""Machine checks: draft 2020-12 output schemas, and regexes that cannot hang a worker."""

from __future__ import annotations

from typing import Any

import pytest

from matching import checks
from matching.conditioning import condition
from matching.evaluate import evaluate_detailed
from matching.formats import read_observed, read_report
from matching.validate import audit_contract, load_contract

from .helpers import refund_contract_doc, refund_observed_doc

# Backtracks exponentially in the length of a run of "a" that does not end the text.
EVIL = r"(a|aa)+$"
EVIL_TEXT = "a" * 40 + "!"


def _evaluate(contract: dict[str, Any], observed: dict[str, Any]):
    c = load_contract(contract)
    return evaluate_detailed(condition(c, "q1"), read_observed(observed), mode="oracle")


def _with_output_meta(meta: dict[str, Any]) -> dict[str, Any]:
    doc = refund_contract_doc()
    node = next(n for n in doc["nodes"] if n["id"] == "reply_json")
    node["meta"] = meta
    return doc


@pytest.mark.parametrize(
    ("schema", "output", "message"),
    [
        (
            {"type": "object", "dependentRequired": {"card": ["cvv"]}},
            '{"card": "4242"}',
            "'cvv' is a dependency of 'card'",
        ),
        (
            {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
            '["1042", "two"]',
            "'two' is not of type 'integer'",
        ),
        (
            {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "unevaluatedProperties": False,
            },
            '{"order_id": "1042", "note": "extra"}',
            "Unevaluated properties are not allowed ('note' was unexpected)",
        ),
    ],
)
def test_an_output_failing_a_2020_12_keyword_is_an_output_contract_failure(
    schema: dict[str, Any], output: str, message: str
) -> None:
    ev = _evaluate(
        _with_output_meta({"json_schema": schema}), refund_observed_doc() | {"output": output}
    )
    assert [(f["family"], f["location"]) for f in ev.failures] == [
        ("output_contract", "reply_json")
    ]
    assert message in ev.failures[0]["detail"]
    assert ev.status["reply_json"] == "failed" and ev.metrics["output_validity"] == 0.0


def test_an_output_meeting_the_2020_12_keywords_passes() -> None:
    schema = {
        "type": "object",
        "dependentRequired": {"order_id": ["resolution"]},
        "properties": {"order_id": {"type": "string"}, "resolution": {"type": "string"}},
        "unevaluatedProperties": False,
    }
    ev = _evaluate(_with_output_meta({"json_schema": schema}), refund_observed_doc())
    assert ev.failures == [] and ev.status["reply_json"] == "passed"


def test_a_check_regex_searches_like_re_on_ordinary_patterns() -> None:
    assert checks.search(r"\b(?:\d[ -]?){13,16}\b", "card 4111 1111 1111 1111 here")
    assert not checks.search(r"\b(?:\d[ -]?){13,16}\b", "card ending 4242")
    assert checks.fullmatch(r"[A-Z]{3}-\d+", "ABC-12") and not checks.fullmatch("A", "AB")


def test_an_invariant_whose_regex_runs_out_of_time_is_unjudged_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(checks, "REGEX_TIMEOUT", 0.05)
    doc = refund_contract_doc()
    doc["invariants"][0]["check"] = {"forbid_regex": EVIL}
    obs = refund_observed_doc()
    obs["source"]["text"] += f"[assistant] {EVIL_TEXT}\n"
    ev = _evaluate(doc, obs)  # with re, this search would run for hours
    assert ev.failures == [] and ev.unjudged == ["no_full_card"]
    assert "no_full_card" not in ev.invariant_scores and ev.metrics["invariant_score"] is None
    report = ev.report()
    read_report(report)  # still a valid report
    assert report["unjudged_invariants"] == ["no_full_card"]
    [item] = report["unjudged_checks"]
    assert item["id"] == "no_full_card" and "time limit" in item["reason"]


def test_an_output_regex_that_runs_out_of_time_is_unjudged_not_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(checks, "REGEX_TIMEOUT", 0.05)
    obs = refund_observed_doc() | {"output": EVIL_TEXT}
    ev = _evaluate(_with_output_meta({"regex": EVIL}), obs)
    assert ev.failures == [] and ev.status["reply_json"] == "unjudged"
    assert ev.metrics["output_validity"] is None
    assert "reply_json" in ev.unjudged_reasons
    assert [c["id"] for c in ev.report()["unjudged_checks"]] == ["reply_json"]


def test_reports_without_a_timed_out_check_have_no_unjudged_checks_key() -> None:
    ev = _evaluate(refund_contract_doc(), refund_observed_doc())
    assert "unjudged_checks" not in ev.report()


@pytest.mark.parametrize(
    ("rx", "nested"),
    [
        (r"(a+)+$", True),
        (r"(\w*\s)*x", True),
        (r"(?:a|b+)*", True),
        (r"^(?=(a+)+)", True),
        (r"\b(?:\d[ -]?){13,16}\b", False),
        (r"(ab)+c*", False),
        (r"(?>a+)+", False),  # atomic: never backtracks into the group
        (r"[(a+)+]", False),  # a character class, not a group
        (r"(", False),  # invalid: the audit reports it as such
    ],
)
def test_nested_quantifiers_are_recognised(rx: str, nested: bool) -> None:
    assert checks.nested_quantifier(rx) is nested


def test_the_audit_warns_about_a_nested_quantifier_in_a_check() -> None:
    doc = _with_output_meta({"regex": r"(\d+)+"})
    doc["invariants"][0]["check"] = {"require_regex": r"(?:ok\s*)+done"}
    audit = audit_contract(doc)
    assert audit.errors == []
    found = [(w.rule, w.path) for w in audit.warnings]
    assert ("nested-quantifier", "$.nodes[10].meta.regex") in found
    assert ("nested-quantifier", "$.invariants[0].check.require_regex") in found


def test_a_schema_pattern_that_runs_out_of_time_leaves_the_output_unjudged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(checks, "REGEX_TIMEOUT", 0.05)
    schema = {"type": "object", "properties": {"note": {"type": "string", "pattern": EVIL}}}
    obs = refund_observed_doc() | {"output": '{"note": "' + EVIL_TEXT + '"}'}
    ev = _evaluate(_with_output_meta({"json_schema": schema}), obs)
    assert ev.failures == [] and ev.status["reply_json"] == "unjudged"
