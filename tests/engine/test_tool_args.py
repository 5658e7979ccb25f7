"""Argument constraints of tool-bound nodes (``meta.tool_args``): a call that breaks one
is an ``output_contract`` failure at the node naming the call and its line; malformed
constraints are refused with what is wrong; the output_contract perturbation breaks
each kind of constraint and the evaluator catches it; contracts without them report as
before."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from matching.conditioning import condition
from matching.errors import ContractEvalError
from matching.evaluate import evaluate, evaluate_detailed
from matching.formats import Case, Observed, read_observed
from matching.model import Contract, observed_from_data
from matching.overlay import overlay_payload
from matching.perturb import perturb_case
from matching.validate import audit_contract, load_contract

from .helpers import DATA

BASE = json.loads((DATA / "refund-mini.json").read_text())
OBSERVED = DATA / "refund-mini-observed-q1.json"
CALL = 'issue_refund(order_id="1042", amount=59.00, to="original_payment")'


def _contract(tmp_path, tool_args: Any, *, tool: Any = "issue_refund") -> Contract:
    doc = copy.deepcopy(BASE)
    node = next(n for n in doc["nodes"] if n["id"] == "approve_refund")
    node["meta"] = (
        {"tool_args": tool_args} if tool is None else {"tool": tool, "tool_args": tool_args}
    )
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    return load_contract(path)


def _with_call(call: str, *, before: str = "") -> Observed:
    """The clean trace with its refund call written as ``call`` (and ``before`` on top)."""
    doc = json.loads(OBSERVED.read_text())
    text = doc["source"]["text"]
    at, delta = text.index(CALL), len(call) - len(CALL)
    doc["source"]["text"] = before + text.replace(CALL, call)
    for n in doc["nodes"]:
        for s in n["evidence"]:
            s.pop("quote", None)
            s["start"] += len(before) + (delta if s["start"] > at else 0)
            s["end"] += len(before) + (delta if s["end"] > at else 0)
    return observed_from_data(doc)


def _failures(c: Contract, obs: Observed) -> list[dict]:
    return evaluate_detailed(condition(c, "q1"), obs, mode="oracle").failures


ARGS = {
    "order_id": {"in_query": True},
    "to": {"one_of": ["original_payment", "store_credit"]},
    "amount": {"matches": r"^\d+\.\d\d$"},
    "note": "ignored",
}


def test_a_call_that_keeps_every_argument_constraint_is_clean(tmp_path):
    c = _contract(tmp_path, ARGS)
    assert _failures(c, read_observed(OBSERVED)) == []


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (CALL.replace('"1042"', '"977"'), "order_id='977' is not something the user said"),
        (CALL.replace("original_payment", "gift_card"), "to='gift_card' is not one of"),
        (CALL.replace("59.00", "59"), "amount='59' does not match"),
        ('issue_refund(amount=59.00, to="original_payment")', "argument order_id is missing"),
    ],
)
def test_a_call_breaking_an_argument_constraint_is_an_output_contract_failure_naming_the_call(
    tmp_path, call, says
):
    c = _contract(tmp_path, ARGS)
    obs = _with_call(call)
    [f] = _failures(c, obs)
    assert (f["family"], f["location"]) == ("output_contract", "approve_refund")
    line = obs.text[: obs.text.index(call)].count("\n") + 1
    assert f"{call} (line {line})" in f["detail"] and says in f["detail"]


def test_equals_compares_json_values_and_strings_as_written(tmp_path):
    c = _contract(tmp_path, {"amount": {"equals": 59.0}, "to": {"equals": "original_payment"}})
    assert _failures(c, read_observed(OBSERVED)) == []
    [f] = _failures(c, _with_call(CALL.replace("59.00", "60")))
    assert "amount='60' is not 59.0" in f["detail"]


def test_a_value_the_user_gives_in_the_trace_counts_as_said(tmp_path):
    c = _contract(tmp_path, {"order_id": {"in_query": True}})
    call = CALL.replace('"1042"', '"977"')
    assert _failures(c, _with_call(call)) != []
    assert _failures(c, _with_call(call, before="[user] Sorry, the order is 977.\n")) == []


def test_an_inactive_node_does_not_check_the_calls_of_its_tool(tmp_path):
    c = _contract(tmp_path, {"to": {"one_of": ["store_credit"]}})
    obs = read_observed(OBSERVED)
    # q2 takes the other branch: approve_refund is pruned, its constraints do not apply
    ev = evaluate_detailed(condition(c, "q2"), obs, mode="oracle")
    assert "approve_refund" not in {f["location"] for f in ev.failures}


@pytest.mark.parametrize(
    ("tool_args", "tool", "says"),
    [
        ({"a": {"close_to": 1}}, "issue_refund", "'close_to' was unexpected"),
        ({"a": {"matches": "("}}, "issue_refund", "not a valid Python regular expression"),
        ({"a": {"one_of": []}}, "issue_refund", "should be non-empty"),
        ({"a": "skip"}, "issue_refund", "'ignored' was expected"),
        ({"a": {"in_query": True}}, None, "tool_args needs meta.tool"),
        ({"a": {"equals": 1, "one_of": [1]}}, "issue_refund", "tool_args.a"),
    ],
)
def test_malformed_argument_constraints_are_refused_naming_what_is_wrong(
    tmp_path, tool_args, tool, says
):
    with pytest.raises(ContractEvalError) as err:
        _contract(tmp_path, tool_args, tool=tool)
    assert says in str(err.value)


@pytest.mark.parametrize(
    "rule",
    [
        {"in_query": True},
        {"one_of": ["original_payment"]},
        {"matches": r"^original_"},
        {"equals": "original_payment"},
    ],
)
def test_the_output_contract_perturbation_breaks_an_argument_and_the_evaluator_catches_it(
    tmp_path, rule
):
    key = "order_id" if "in_query" in rule else "to"
    c = _contract(tmp_path, {key: rule, "amount": "ignored"})
    clean = Case("refund-mini/q1/clean", "refund-mini", "q1", read_observed(OBSERVED), True)
    cases = [perturb_case(c, clean, "output_contract", seed=seed) for seed in range(8)]
    # the generator draws one checked output or constrained call per seed
    case = next(x for x in cases if x is not None and x.location == "approve_refund")
    assert CALL not in case.observed.text and "[tool] issue_refund(" in case.observed.text
    [f] = _failures(c, case.observed)
    assert f["family"] == "output_contract" and f"argument {key}=" in f["detail"]


def test_a_contract_without_argument_constraints_reports_as_before(tmp_path):
    doc = copy.deepcopy(BASE)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    obs = _with_call(CALL.replace('"1042"', '"977"'))
    plain = evaluate(load_contract(path), "q1", obs, mode="oracle")
    assert plain == evaluate(load_contract(DATA / "refund-mini.json"), "q1", obs, mode="oracle")
    assert plain["verdict"] == "clean"


def test_the_overlay_points_an_argument_failure_at_the_step_citing_the_offending_call(tmp_path):
    c = _contract(tmp_path, ARGS)
    obs = _with_call(CALL.replace("original_payment", "gift_card"))
    p = overlay_payload(evaluate_detailed(condition(c, "q1"), obs, mode="oracle"), obs)
    [f] = p["failures"]
    assert f["nodes"] == ["approve_refund"] and f["observed"] == ["o4"]


def test_a_matches_regex_that_can_backtrack_for_ever_is_warned_about(tmp_path):
    doc = copy.deepcopy(BASE)
    node = next(n for n in doc["nodes"] if n["id"] == "approve_refund")
    node["meta"] = {"tool": "issue_refund", "tool_args": {"to": {"matches": "^(a+)+$"}}}
    audit = audit_contract(doc)
    assert [w.path for w in audit.warnings if w.rule == "nested-quantifier"] == [
        "$.nodes[5].meta.tool_args.to.matches"
    ]


def test_token_mode_checks_the_arguments_of_the_calls_it_pairs_by_tool_binding(tmp_path):
    c = _contract(tmp_path, ARGS)
    obs = _with_call(CALL.replace("original_payment", "gift_card"))
    ev = evaluate_detailed(condition(c, "q1"), obs, mode="token")
    assert ("output_contract", "approve_refund") in [
        (f["family"], f["location"]) for f in ev.failures
    ]
    assert (
        ev.alignment.pairs["approve_refund"] == "o4"
    )  # still matched: a wrong argument is no omission
