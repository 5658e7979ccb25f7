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


def _inserted(tmp_path, lines: dict[str, str]) -> Observed:
    """The clean trace with each line of ``lines`` inserted before the last event that
    starts with its key, its evidence spans moved along."""
    doc = json.loads(OBSERVED.read_text())
    for before, line in lines.items():
        text = doc["source"]["text"]
        cut = text.rindex(before)
        doc["source"]["text"] = text[:cut] + line + text[cut:]
        for n in doc["nodes"]:
            for s in n["evidence"]:
                if s["start"] >= cut:
                    s["start"], s["end"] = s["start"] + len(line), s["end"] + len(line)
    path = tmp_path / "o.json"
    path.write_text(json.dumps(doc))
    return read_observed(path)


def _with_call(tmp_path, call: str) -> Observed:
    """The clean trace with ``[tool] call`` inserted before its last message."""
    return _inserted(tmp_path, {"[assistant]": f"[tool] {call}\n"})


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


# one act per turn: a call never shares its turn with a reply or with another call

TURNS = """[user] Refund order 1042, please.
[tool] lookup_order(order_id="1042")
[result] {"order_id": "1042", "placed": "10 days ago"}
[tool] think(thought="inside the window")
[result]
[assistant] Order 1042 is inside the window. Shall I refund it?
[user] Yes.
[tool] issue_refund(order_id="1042")
[result] {"status": "refunded"}
[assistant] Your refund is on its way.
"""


def _one_act(tmp_path, text: str) -> list[dict]:
    c = _contract(tmp_path, {"one_act_per_turn": True})
    return _tool_failures(c, Observed("trace", text, []))


def test_one_act_per_turn_holds_when_each_call_waits_for_its_result(tmp_path):
    assert _one_act(tmp_path, TURNS) == []


def test_one_act_per_turn_is_broken_by_a_reply_and_a_call_in_one_turn(tmp_path):
    text = TURNS.replace("[user] Yes.\n", "[user] Yes.\n[assistant] Refunding it now.\n")
    [f] = _one_act(tmp_path, text)
    assert 'replies to the user and calls issue_refund(order_id="1042") (line 9)' in f["detail"]


def test_one_act_per_turn_is_broken_by_a_second_call_before_a_result(tmp_path):
    text = TURNS.replace('[tool] think(thought="inside the window")\n[result]\n', "")
    text = text.replace("[result] {", '[tool] think(thought="x")\n[result] {', 1)
    [f] = _one_act(tmp_path, text)
    assert 'second tool call in one turn, think(thought="x") (line 3)' in f["detail"]


@pytest.mark.parametrize(
    "check", [{"one_act_per_turn": False}, {"one_act_per_turn": True, "max_tool_calls": 3}]
)
def test_a_turn_check_that_is_false_or_mixed_is_refused_by_the_schema(tmp_path, check):
    with pytest.raises(ContractEvalError):
        _contract(tmp_path, check)


def test_the_invariant_perturbation_breaks_the_turn_check_and_the_evaluator_catches_it(tmp_path):
    c = _contract(tmp_path, {"one_act_per_turn": True})
    # the gold trace, its refund call in a turn of its own
    obs = _inserted(
        tmp_path,
        {
            "[assistant] Your refund": '[result] {"status": "refunded"}\n',
            "[tool] issue": "[user] Yes.\n",
        },
    )
    assert _tool_failures(c, obs) == []
    clean = Case("refund-mini/q1/clean", "refund-mini", "q1", obs, True)
    found = set()
    for seed in range(6):
        case = perturb_case(c, clean, "invariant_violation", seed=seed)
        if case is not None:
            found.add(case.location)
            if case.location == "tools_ok":
                assert _tool_failures(c, case.observed)
    assert "tools_ok" in found


def test_a_broken_turn_check_makes_the_semantic_verdict_certain(tmp_path):
    from dataclasses import replace

    from matching.behaviour import extract_behaviour

    c = _contract(tmp_path, {"one_act_per_turn": True})
    output = json.loads(OBSERVED.read_text())["output"]  # the reply the output check reads
    broken = TURNS.replace("[user] Yes.\n", "[user] Yes.\n[assistant] Refunding it now.\n")
    runs = {
        name: evaluate_detailed(
            condition(c, "q1"), replace(extract_behaviour(text), output=output), mode="semantic"
        )
        for name, text in (("kept", TURNS), ("broken", broken))
    }
    assert runs["broken"].certain
    assert runs["broken"].confidence == {"p_violation": 1.0, "verdict": "violation"}
    [f] = [f for f in runs["broken"].failures if f["location"] == "tools_ok"]
    assert f["probability"] == 1.0
    assert not runs["kept"].certain
    assert [f for f in runs["kept"].failures if f["location"] == "tools_ok"] == []
    assert runs["kept"].confidence["p_violation"] < 1.0


def test_a_judged_invariant_adds_its_doubt_to_the_verdict_without_deciding_it(tmp_path):
    from dataclasses import replace

    from matching.behaviour import extract_behaviour

    doc = copy.deepcopy(BASE)
    del doc["invariants"][0]["check"]  # judged by a score, as the LLM judge gives it
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    c = load_contract(path)
    obs = replace(extract_behaviour(TURNS), output=json.loads(OBSERVED.read_text())["output"])
    base = evaluate_detailed(condition(c, "q1"), obs, mode="semantic")
    judged = evaluate_detailed(
        condition(c, "q1"), replace(obs, invariants={"no_full_card": 0.2}), mode="semantic"
    )
    [f] = [f for f in judged.failures if f["location"] == "no_full_card"]
    assert f["probability"] == 0.8
    assert not judged.certain
    p0 = base.confidence["p_violation"]
    assert judged.confidence["p_violation"] == pytest.approx(1 - (1 - p0) * 0.2, abs=1e-5)
    # even a judge's zero is a score, not a check: it does not decide the run alone
    sure = evaluate_detailed(
        condition(c, "q1"), replace(obs, invariants={"no_full_card": 0.0}), mode="semantic"
    )
    assert not sure.certain
