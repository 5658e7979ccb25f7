"""The label views of the development set (matching.devset): what each counts as a
violation, and that the contract view follows the contract's machine-checked invariants."""

from __future__ import annotations

from pathlib import Path

from matching.devset import VIEWS, DevItem, checked_rules, load_devset

TAUBENCH = Path(__file__).resolve().parents[2] / "fixtures" / "taubench"
TURN_RULE = "if you make a tool call, you should not respond to the user simultaneously."


def item(*violations: tuple[str, str]) -> DevItem:
    label = {
        "compliant": not violations,
        "violations": [{"family": f, "rule": r, "message_index": 1} for f, r in violations],
    }
    return DevItem("t1", 1, 0, "", label)


def test_a_global_rule_counts_only_in_the_contract_view_when_an_invariant_checks_it() -> None:
    it = item(("invariant_violation", TURN_RULE))
    assert [it.violates(v, [TURN_RULE.upper()]) for v in VIEWS] == [False, True, True]
    assert [it.violates(v, []) for v in VIEWS] == [False, False, True]


def test_a_procedural_violation_counts_in_every_view() -> None:
    it = item(("omission", "Ask for the user id."))
    assert [it.violates(v) for v in VIEWS] == [True, True, True]


def test_a_compliant_label_counts_in_no_view() -> None:
    assert [item().violates(v, [TURN_RULE]) for v in VIEWS] == [False, False, False]


def test_the_airline_contract_checks_only_the_turn_rule_by_machine() -> None:
    contract, items = load_devset(TAUBENCH)
    rules = checked_rules(contract)
    assert len(rules) == 1 and TURN_RULE in " ".join(rules[0].split())
    counts = {v: sum(it.violates(v, rules) for it in items) for v in VIEWS}
    assert counts["procedural"] <= counts["contract"] <= counts["strict"]
    assert counts["procedural"] < counts["contract"]
