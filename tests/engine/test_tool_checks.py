"""Tool-call checks of invariants: forbidden tools, a permitted list and a call limit are
judged from the trace's tool calls, name the offending call, are refused by the schema
when malformed, and have a perturbation that the evaluator catches."""

from __future__ import annotations

import copy
import json

import pytest

from matching.conditioning import condition
from matching.errors import ContractEvalError
from matching.evaluate import evaluate_detailed
from matching.formats import Case, Observed, read_observed
from matching.model import Contract
from matching.perturb import perturb_case
from matching.validate import load_contract

from .helpers import DATA

BASE = json.loads((DATA / "refund-mini.json").read_text())
OBSERVED = DATA / "refund-mini-observed-q1.json"
SPAN = BASE["invariants"][0]["evidence"]


def _contract(tmp_path, check: dict) -> Contract:
    doc = copy.deepcopy(BASE)
    doc["invariants"].append(
        {"id": "tools_ok", "label": "Only the refund tools", "evidence": SPAN, "check": check}
    )
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    return load_contract(path)


def _with_call(tmp_path, call: str) -> Observed:
    """The clean trace with ``[tool] call`` inserted before its last message."""
    doc = json.loads(OBSERVED.read_text())
    text = doc["source"]["text"]
    cut = text.rindex("[assistant]")
    line = f"[tool] {call}\n"
    doc["source"]["text"] = text[:cut] + line + text[cut:]
    for n in doc["nodes"]:
        for s in n["evidence"]:
            if s["start"] >= cut:
                s["start"], s["end"] = s["start"] + len(line), s["end"] + len(line)
    path = tmp_path / "o.json"
    path.write_text(json.dumps(doc))
    return read_observed(path)


def _tool_failures(c: Contract, obs: Observed) -> list[dict]:
    ev = evaluate_detailed(condition(c, "q1"), obs, mode="oracle")
    return [f for f in ev.failures if f["location"] == "tools_ok"]


@pytest.mark.parametrize(
    ("check", "call", "says"),
    [
        ({"forbid_tools": ["delete_account"]}, 'delete_account(user="sam")', "a forbidden tool"),
        (
            {"allow_tools": ["lookup_order", "issue_refund"]},
            "send_coupon(code=10)",
            "not a permitted tool",
        ),
        ({"max_tool_calls": 2}, 'lookup_order(order_id="1042")', "more than 2"),
    ],
)
def test_a_tool_check_is_broken_by_the_offending_call_and_names_it_with_its_line(
    tmp_path, check, call, says
):
    c = _contract(tmp_path, check)
    clean = read_observed(OBSERVED)
    assert _tool_failures(c, clean) == []
    broken = _with_call(tmp_path, call)
    [f] = _tool_failures(c, broken)
    assert f["family"] == "invariant_violation" and says in f["detail"]
    line = broken.text[: broken.text.rindex(f"[tool] {call}")].count("\n") + 1
    assert f"{call} (line {line})" in f["detail"]


def test_a_response_makes_no_tool_calls_and_never_breaks_a_tool_check(tmp_path):
    c = _contract(tmp_path, {"allow_tools": []})
    obs = Observed("response", "I have refunded your order via issue_refund(order=1).", [])
    ev = evaluate_detailed(condition(c, "q1"), obs, mode="oracle")
    assert ev.invariant_scores["tools_ok"] == 1.0


@pytest.mark.parametrize(
    "check",
    [
        {"forbid_tools": ["a"], "forbid_regex": "x"},
        {"max_tool_calls": -1},
        {"forbid_tools": []},
        {"allow_tools": "lookup_order"},
    ],
)
def test_a_malformed_tool_check_is_refused_by_the_schema(tmp_path, check):
    with pytest.raises(ContractEvalError):
        _contract(tmp_path, check)


@pytest.mark.parametrize(
    "check",
    [
        {"forbid_tools": ["delete_account"]},
        {"allow_tools": ["lookup_order"]},
        {"max_tool_calls": 3},
    ],
)
def test_the_invariant_perturbation_breaks_a_tool_check_and_the_evaluator_catches_it(
    tmp_path, check
):
    c = _contract(tmp_path, check)
    clean = Case("refund-mini/q1/clean", "refund-mini", "q1", read_observed(OBSERVED), True)
    found = set()
    for seed in range(6):  # the generator draws one invariant of the case per seed
        case = perturb_case(c, clean, "invariant_violation", seed=seed)
        if case is not None:
            found.add(case.location)
    assert "tools_ok" in found
