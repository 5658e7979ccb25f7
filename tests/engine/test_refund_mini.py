"""The worked example of the spec (examples/refund-mini/README.md), from the copies in
``matching/data``: clean in both modes, and each hand-made perturbation detected and
localised at the right place."""

from __future__ import annotations

import json
from typing import Any

import pytest

from matching.conditioning import condition
from matching.evaluate import METRICS, evaluate, evaluate_detailed
from matching.formats import read_observed
from matching.match import align
from matching.validate import audit_contract, load_contract

from .helpers import edit_trace, refund_contract_doc, refund_observed_doc

MODES = ("oracle", "token")
CONTRACT = load_contract(refund_contract_doc())


def failures(doc: dict[str, Any], mode: str, contract: Any = CONTRACT) -> list[tuple[str, str]]:
    report = evaluate(contract, "q1", read_observed(doc), mode=mode)
    return [(f["family"], f["location"]) for f in report["failures"]]


def test_the_contract_validates_without_errors() -> None:
    assert audit_contract(refund_contract_doc()).errors == []


@pytest.mark.parametrize("mode", MODES)
def test_the_clean_trace_is_clean_with_every_metric_one(mode: str) -> None:
    report = evaluate(CONTRACT, "q1", read_observed(refund_observed_doc()), mode=mode)
    assert report["verdict"] == "clean" and report["failures"] == []
    assert report["metrics"] == dict.fromkeys(METRICS, 1.0)
    assert report["mode"] == mode
    assert report["dropped_observed"] == report["repeated_observed"] == []
    assert report["unjudged_invariants"] == []
    pairs = [(a["expected"], a["observed"]) for a in report["alignment"]]
    assert pairs == [
        ("lookup_order", "o1"),
        ("verify_owner", "o2"),
        ("check_window", "o3"),
        ("approve_refund", "o4"),
        ("confirm_outcome", "o5"),
    ]
    assert all(a["level"] == "direct" for a in report["alignment"])
    if mode == "oracle":
        assert {a["score"] for a in report["alignment"]} == {1.0}
    else:
        assert all(0.35 <= a["score"] <= 1.0 for a in report["alignment"])


def test_token_mode_pairs_o3_with_the_decision_and_derives_the_outcome() -> None:
    e = condition(CONTRACT, "q1")
    ev = evaluate_detailed(e, read_observed(refund_observed_doc()), mode="token")
    assert ev.alignment.pairs["check_window"] == "o3"
    assert "within_window" not in ev.alignment.pairs
    assert ev.status["within_window"] == "derived"  # through approve_refund below it
    assert ev.status["check_window"] == "direct"
    assert ev.pos["within_window"] == ev.pos["approve_refund"] == (3, 3)
    assert ev.status["handle_refund"] == "derived" and ev.status["reply_json"] == "passed"


def test_the_tool_call_pairs_with_approve_refund_by_words() -> None:
    m = align(condition(CONTRACT, "q1"), read_observed(refund_observed_doc()), mode="token")
    assert m.pairs["approve_refund"] == "o4" and m.scores["approve_refund"] < 1.0


def test_meta_tool_binds_a_call_to_its_node_outright() -> None:
    doc = refund_contract_doc()
    doc["nodes"][5]["meta"]["tool"] = "issue_refund"
    contract = load_contract(doc)
    obs = refund_observed_doc()
    obs["nodes"][3].update(label="Ran a backend operation", description="")
    e_plain = condition(CONTRACT, "q1")
    plain = align(e_plain, read_observed(obs), mode="token")
    assert plain.scores["approve_refund"] < 1.0  # paired by the words of the call only
    m = align(condition(contract, "q1"), read_observed(obs), mode="token")
    assert m.pairs["approve_refund"] == "o4" and m.scores["approve_refund"] == 1.0
    assert failures(obs, "token", contract) == []


@pytest.mark.parametrize("mode", MODES)
def test_removing_o2_is_one_omission_at_the_explicit_verify_owner(mode: str) -> None:
    assert failures(edit_trace(refund_observed_doc(), remove=("o2",)), mode) == [
        ("omission", "verify_owner")
    ]


@pytest.mark.parametrize("mode", MODES)
def test_removing_o4_is_one_omission_not_covered_by_the_decision(mode: str) -> None:
    doc = edit_trace(refund_observed_doc(), remove=("o4",))
    assert failures(doc, mode) == [("omission", "approve_refund")]


@pytest.mark.parametrize("mode", MODES)
def test_moving_o2_after_o4_is_one_ordering_failure(mode: str) -> None:
    doc = edit_trace(refund_observed_doc(), move=("o2", "after", "o4"))
    assert [n["id"] for n in doc["nodes"]] == ["o1", "o3", "o4", "o2", "o5"]
    assert failures(doc, mode) == [("ordering", "verify_owner->approve_refund")]


@pytest.mark.parametrize("mode", MODES)
def test_appending_the_violation_example_is_one_invariant_violation(mode: str) -> None:
    example = CONTRACT.invariants[0].check["violation_example"]  # type: ignore[index]
    doc = edit_trace(refund_observed_doc(), append=("o5", example))
    assert failures(doc, mode) == [("invariant_violation", "no_full_card")]
    report = evaluate(CONTRACT, "q1", read_observed(doc), mode=mode)
    assert report["metrics"]["invariant_score"] == 0.0


@pytest.mark.parametrize("mode", MODES)
def test_an_output_without_resolution_is_one_output_contract_failure(mode: str) -> None:
    doc = refund_observed_doc()
    doc["output"] = json.dumps({"order_id": "1042"})
    assert failures(doc, mode) == [("output_contract", "reply_json")]
    report = evaluate(CONTRACT, "q1", read_observed(doc), mode=mode)
    assert report["metrics"]["output_validity"] == 0.0
    assert report["metrics"]["required_recall"] == 1.0  # a checked output is not recalled


@pytest.mark.parametrize(
    "output", [None, "not json", json.dumps({"order_id": 1042, "resolution": "refunded"})]
)
def test_a_missing_non_json_or_mistyped_output_fails_the_output_contract(
    output: str | None,
) -> None:
    doc = refund_observed_doc()
    if output is None:
        del doc["output"]
    else:
        doc["output"] = output
    assert failures(doc, "oracle") == [("output_contract", "reply_json")]


def test_o4_before_o2_is_two_ordering_failures_in_oracle_mode() -> None:
    doc = edit_trace(refund_observed_doc(), move=("o4", "before", "o2"))
    assert failures(doc, "oracle") == [
        ("ordering", "verify_owner->approve_refund"),
        ("ordering", "check_window->within_window"),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_acting_on_the_other_outcome_is_a_wrong_branch_at_the_decision(mode: str) -> None:
    doc = edit_trace(
        refund_observed_doc(),
        remove=("o4",),
        insert=(
            "o3",
            "[assistant] I must decline the refund because the window has passed.",
            {"id": "w1", "label": "Declined the refund", "gold": "decline_refund", "evidence": []},
        ),
    )
    e = condition(CONTRACT, "q1")
    ev = evaluate_detailed(e, read_observed(doc), mode=mode)
    assert [(f["family"], f["location"]) for f in ev.failures] == [("wrong_branch", "check_window")]
    # the omission of the chosen outcome's step is folded into it
    assert ev.status["approve_refund"] == "folded"
    assert "approve_refund" in ev.failures[0]["detail"]
    assert ev.alignment.wrong_branch == {"check_window": ["w1"]}
    assert ev.metrics["branch_correctness"] == 0.0


@pytest.mark.parametrize("mode", MODES)
def test_an_unsupported_action_is_an_extra_action_at_its_observed_id(mode: str) -> None:
    doc = edit_trace(
        refund_observed_doc(),
        insert=(
            "o2",
            "[assistant] I've also signed you up for our weekly newsletter.",
            {
                "id": "x1",
                "label": "Subscribed the customer to the newsletter",
                "gold": None,
                "evidence": [],
            },
        ),
    )
    assert failures(doc, mode) == [("extra_action", "x1")]
    report = evaluate(CONTRACT, "q1", read_observed(doc), mode=mode)
    assert report["metrics"]["observed_precision"] == round(5 / 6, 6)


def test_q2_gold_trace_of_q1_is_a_wrong_branch_in_oracle_mode() -> None:
    report = evaluate(CONTRACT, "q2", read_observed(refund_observed_doc()), mode="oracle")
    assert [(f["family"], f["location"]) for f in report["failures"]] == [
        ("wrong_branch", "check_window")
    ]
