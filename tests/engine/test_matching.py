"""Matching details (ALGORITHMS.md §2-§4): dropped spans, repeats, tool binding,
consumed outputs, agent text, determinism and null metrics."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from matching.conditioning import condition
from matching.evaluate import METRICS, evaluate, evaluate_detailed
from matching.formats import Query, read_observed
from matching.match import align
from matching.validate import load_contract

from .helpers import edit_trace, make_contract, refund_contract_doc, refund_observed_doc

MODES = ("oracle", "token")
CONTRACT = load_contract(refund_contract_doc())


def report(doc: dict[str, Any], mode: str, query: str = "q1") -> dict[str, Any]:
    return evaluate(CONTRACT, query, read_observed(doc), mode=mode)


def fails(r: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["family"], f["location"]) for f in r["failures"]]


# --------------------------------------------------------------------------- dropped spans


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("span", "reason"),
    [
        ({"start": 158, "end": 9999}, "every span is outside the source text"),
        (
            {"start": 158, "end": 251, "quote": "[assistant] Something else entirely"},
            "every span's quote differs from the source text",
        ),
    ],
)
def test_a_node_whose_only_span_is_bad_is_dropped_reported_and_never_used(
    mode: str, span: dict[str, Any], reason: str
) -> None:
    doc = refund_observed_doc()
    doc["nodes"][1]["evidence"] = [span]
    r = report(doc, mode)
    assert r["dropped_observed"] == [{"id": "o2", "reason": reason}]
    assert "o2" not in [a["observed"] for a in r["alignment"]]
    assert fails(r) == [("omission", "verify_owner")]
    assert r["metrics"]["observed_precision"] == 1.0  # only kept nodes count


def test_a_node_with_one_span_out_of_range_and_one_misquoted_names_both() -> None:
    doc = refund_observed_doc()
    doc["nodes"][1]["evidence"] = [
        {"start": 158, "end": 9999},
        {"start": 158, "end": 251, "quote": "nope"},
    ]
    (dropped,) = report(doc, "oracle")["dropped_observed"]
    assert dropped["id"] == "o2" and "outside" in dropped["reason"] and "quot" in dropped["reason"]


def test_a_bad_span_is_discarded_but_the_node_keeps_its_good_spans() -> None:
    doc = refund_observed_doc()
    # a misquoted second span whose words would pair o3 with the refund instead
    doc["nodes"][2]["evidence"].append(
        {"start": 331, "end": 404, "quote": "approve refund original payment method"}
    )
    r = report(doc, "token")
    assert r["dropped_observed"] == [] and r["verdict"] == "clean"
    m = align(condition(CONTRACT, "q1"), read_observed(doc), mode="token")
    assert [s.end for s in next(n for n in m.kept if n.id == "o3").evidence] == [330]


def test_a_span_without_quote_means_the_text_at_its_offsets() -> None:
    doc = refund_observed_doc()
    for n in doc["nodes"]:
        for s in n["evidence"]:
            del s["quote"]
    for mode in MODES:
        assert report(doc, mode)["verdict"] == "clean"


# --------------------------------------------------------------------------- repeats


def test_oracle_pairs_the_earliest_of_several_nodes_with_one_gold_and_repeats_the_rest() -> None:
    doc = edit_trace(
        refund_observed_doc(),
        insert=(
            "o4",
            '[tool] lookup_order(order_id="1042")',
            {
                "id": "o1b",
                "label": "Looked up the order again",
                "gold": "lookup_order",
                "evidence": [],
            },
        ),
    )
    r = report(doc, "oracle")
    assert r["verdict"] == "clean"
    assert r["repeated_observed"] == [{"id": "o1b", "of": "lookup_order"}]
    assert ("lookup_order", "o1") in [(a["expected"], a["observed"]) for a in r["alignment"]]
    # a repeat counts as kept but not paired
    assert r["metrics"]["observed_precision"] == round(5 / 6, 6)


def test_equal_steps_pair_the_first_in_list_order() -> None:
    doc = refund_observed_doc()
    twin = copy.deepcopy(doc["nodes"][0])
    twin["id"] = "o0"
    doc["nodes"].append(twin)  # same step 0 and gold, later in the list
    r = report(doc, "oracle")
    assert r["repeated_observed"] == [{"id": "o0", "of": "lookup_order"}]


@pytest.mark.parametrize("mode", MODES)
def test_a_repeat_after_a_later_step_leaves_the_position_unchanged(mode: str) -> None:
    doc = edit_trace(
        refund_observed_doc(),
        insert=(
            "o5",
            "[assistant] The email on order 1042 matches the one you wrote from, so the"
            " purchase is yours.",
            {
                "id": "o2b",
                "label": "Verified the customer owns the purchase",
                "description": "Confirmed the email on the order matches the customer's email.",
                "gold": "verify_owner",
                "evidence": [],
            },
        ),
    )
    r = report(doc, mode)
    assert r["verdict"] == "clean", r["failures"]
    assert r["repeated_observed"] == [{"id": "o2b", "of": "verify_owner"}]


# --------------------------------------------------------------------------- tool binding


def tool_contract(tool: str | None) -> Any:
    meta = {"tool": tool} if tool else {}
    return load_contract(
        make_contract(
            [
                {"id": "goal", "type": "intent", "label": "Serve the visitor"},
                {"id": "notify", "parent": "goal", "label": "Notify the warehouse", "meta": meta},
            ]
        )
    )


@pytest.mark.parametrize(
    ("tool", "pairs"), [("zq_send", True), (["other", "zq_send"], True), (None, False)]
)
def test_meta_tool_pairs_a_call_of_that_tool_whatever_its_words(tool: Any, pairs: bool) -> None:
    c = tool_contract(tool)
    text = "[tool] zq_send(x=1)\n"
    obs = read_observed(
        {
            "format": "contracteval.observed/v1",
            "source": {"kind": "trace", "text": text},
            "nodes": [
                {"id": "o1", "label": "Ran something", "evidence": [{"start": 0, "end": 19}]}
            ],
        }
    )
    r = evaluate(c, Query("q"), obs, mode="token")
    if pairs:
        assert r["verdict"] == "clean"
        assert r["alignment"] == [
            {"expected": "notify", "observed": "o1", "score": 1.0, "level": "direct"}
        ]
    else:
        assert fails(r) == [("omission", "notify"), ("extra_action", "o1")]


# --------------------------------------------------------------------------- outputs


def test_a_step_pairing_with_the_checked_output_is_consumed_not_extra() -> None:
    doc = edit_trace(
        refund_observed_doc(),
        insert=(
            "o5",
            "[assistant] Finish with a JSON object: order_id and resolution.",
            {
                "id": "o6",
                "label": "Finished with a JSON object",
                "evidence": [],
                "description": "The final output is JSON with order_id and resolution.",
            },
        ),
    )
    ev = evaluate_detailed(condition(CONTRACT, "q1"), read_observed(doc), mode="token")
    assert ev.alignment.consumed_output == ["o6"] and ev.alignment.extra == []
    assert ev.failures == [] and ev.observed_status["o6"] == "output"
    # the pair never satisfies the output: its check still judges it
    doc["output"] = "{}"
    ev = evaluate_detailed(condition(CONTRACT, "q1"), read_observed(doc), mode="token")
    assert [(f["family"], f["location"]) for f in ev.failures] == [
        ("output_contract", "reply_json")
    ]


def test_a_regex_output_must_fullmatch_and_both_checks_must_pass() -> None:
    doc = refund_contract_doc()
    doc["nodes"][-1]["meta"]["regex"] = r'\{"order_id": "\d+", .*\}'
    c = load_contract(doc)
    obs = refund_observed_doc()
    assert evaluate(c, "q1", read_observed(obs))["verdict"] == "clean"
    obs["output"] = ' {"order_id": "1042", "resolution": "refunded"}'  # JSON, no fullmatch
    assert fails(evaluate(c, "q1", read_observed(obs))) == [("output_contract", "reply_json")]


# --------------------------------------------------------------------------- invariants


def test_forbidden_text_in_user_or_result_lines_is_not_the_agents_text() -> None:
    doc = refund_observed_doc()
    card = "4111 1111 1111 1111"
    doc["source"]["text"] = f"[user] my card is {card}\n" + doc["source"]["text"]
    for n in doc["nodes"]:
        for s in n["evidence"]:
            s["start"] += len(f"[user] my card is {card}\n")
            s["end"] += len(f"[user] my card is {card}\n")
    assert report(doc, "oracle")["verdict"] == "clean"
    doc["output"] = json.dumps({"order_id": "1042", "resolution": "refunded", "card": card})
    assert fails(report(doc, "oracle")) == [("invariant_violation", "no_full_card")]


def test_an_unchecked_invariant_uses_the_observed_score_or_is_unjudged() -> None:
    doc = refund_contract_doc()
    doc["invariants"].append(
        {"id": "polite", "label": "Be polite", "evidence": doc["invariants"][0]["evidence"]}
    )
    c = load_contract(doc)
    obs = refund_observed_doc()
    r = evaluate(c, "q1", read_observed(obs), mode="oracle")
    assert r["unjudged_invariants"] == ["polite"] and r["verdict"] == "clean"
    assert r["metrics"]["invariant_score"] == 1.0  # left out of the mean
    obs["invariants"] = [{"id": "polite", "score": 0.4}, {"id": "no_full_card", "score": 0.0}]
    r = evaluate(c, "q1", read_observed(obs), mode="oracle")
    # the checked invariant ignores the observed score
    assert fails(r) == [("invariant_violation", "polite")]
    assert r["metrics"]["invariant_score"] == 0.7 and r["unjudged_invariants"] == []


def test_a_require_regex_invariant_scores_one_only_when_it_matches() -> None:
    doc = refund_contract_doc()
    doc["invariants"][0]["check"] = {"require_regex": r"ending \d{4}"}
    c = load_contract(doc)
    obs = refund_observed_doc()
    assert evaluate(c, "q1", read_observed(obs))["verdict"] == "clean"
    obs = edit_trace(obs, remove=("o5",))
    assert ("invariant_violation", "no_full_card") in fails(evaluate(c, "q1", read_observed(obs)))


# --------------------------------------------------------------------------- ordering


@pytest.mark.parametrize("mode", MODES)
def test_equal_steps_are_combined_and_never_an_ordering_failure(mode: str) -> None:
    doc = refund_observed_doc()
    doc["nodes"][1]["step"] = 3  # verify_owner and approve_refund combined
    assert report(doc, mode)["verdict"] == "clean"


# --------------------------------------------------------------------------- determinism


@pytest.mark.parametrize("mode", MODES)
def test_the_same_input_always_gives_the_same_report(mode: str) -> None:
    doc = edit_trace(
        refund_observed_doc(),
        insert=(
            "o1",
            '[tool] lookup_order(order_id="1042")',
            {
                "id": "o1b",
                "label": "Looked up the order",
                "gold": "lookup_order",
                "description": "Found order 1042 from the order number the customer gave.",
                "evidence": [],
            },
        ),
    )
    first = report(doc, mode)
    assert all(report(copy.deepcopy(doc), mode) == first for _ in range(5))
    # twins with identical text: the earlier step is paired, the later is the repeat
    assert first["repeated_observed"] == [{"id": "o1b", "of": "lookup_order"}]


def test_ties_in_token_mode_pair_in_step_then_list_order() -> None:
    doc = refund_observed_doc()
    twin = copy.deepcopy(doc["nodes"][0])
    twin["id"] = "a0"
    doc["nodes"].insert(0, twin)  # same step and text, first in the list
    r = report(doc, "token")
    assert ("lookup_order", "a0") in [(a["expected"], a["observed"]) for a in r["alignment"]]
    assert r["repeated_observed"] == [{"id": "o1", "of": "lookup_order"}]


# --------------------------------------------------------------------------- null metrics


def test_metrics_with_empty_denominators_are_null_never_one() -> None:
    c = load_contract(make_contract([{"id": "goal", "type": "intent", "label": "Greet"}]))
    obs = read_observed(
        {
            "format": "contracteval.observed/v1",
            "source": {"kind": "response", "text": ""},
            "nodes": [],
        }
    )
    r = evaluate(c, Query("q"), obs, mode="token")
    assert r["metrics"] == {
        "required_recall": 0.0,
        "observed_precision": None,
        "edge_conformance": None,
        "branch_correctness": None,
        "invariant_score": None,
        "output_validity": None,
    }
    assert fails(r) == [("omission", "goal")]


def test_a_contract_without_required_nodes_has_null_recall() -> None:
    c = load_contract(make_contract([{"id": "goal", "type": "intent", "required": False}]))
    obs = read_observed(
        {
            "format": "contracteval.observed/v1",
            "source": {"kind": "response", "text": "Hello."},
            "nodes": [{"id": "o1", "label": "Greeted", "evidence": [{"start": 0, "end": 6}]}],
        }
    )
    r = evaluate(c, Query("q"), obs, mode="oracle")
    assert r["metrics"]["required_recall"] is None
    assert r["metrics"]["observed_precision"] == 0.0
    assert set(r["metrics"]) == set(METRICS)
