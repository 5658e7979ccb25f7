"""Query conditioning (ALGORITHMS.md §1)."""

from __future__ import annotations

from typing import Any

import pytest

from matching.conditioning import condition
from matching.errors import ContractEvalError
from matching.formats import Query
from matching.validate import load_contract

from .helpers import decision_contract, make_contract, refund_contract_doc


def two_intents() -> dict[str, Any]:
    """setup > prep > {prep_a, prep_b}; serve > {serve_step}; serve_step requires prep_a."""
    return make_contract(
        [
            {"id": "setup", "type": "intent"},
            {"id": "prep", "parent": "setup"},
            {"id": "prep_a", "parent": "prep"},
            {"id": "prep_b", "parent": "prep"},
            {"id": "serve", "type": "intent"},
            {"id": "serve_step", "parent": "serve"},
            {"id": "serve_sub", "parent": "serve_step"},
        ],
        edges=[{"source": "prep_a", "target": "serve_step", "kind": "requires"}],
        invariants=[
            {"id": "always"},
            {"id": "for_prep_b", "applies_to": ["prep_b"]},
            {"id": "for_serve", "applies_to": ["serve_sub", "prep_b"]},
        ],
    )


def test_refund_mini_q1_conditions_exactly_as_the_readme_says() -> None:
    c = load_contract(refund_contract_doc())
    e = condition(c, "q1")
    assert e.nodes == [
        "handle_refund",
        "lookup_order",
        "verify_owner",
        "check_window",
        "within_window",
        "approve_refund",
        "confirm_outcome",
        "reply_json",
    ]
    assert e.pruned == ["outside_window", "decline_refund", "offer_credit"]
    assert e.decisions == {"check_window": "within_window"}
    assert len(e.edges) == 6 and e.invariants == ["no_full_card"]
    assert {(x.source, x.target) for x in e.edges} == {
        ("lookup_order", "verify_owner"),
        ("verify_owner", "approve_refund"),
        ("lookup_order", "check_window"),
        ("check_window", "within_window"),
        ("approve_refund", "confirm_outcome"),
        ("confirm_outcome", "reply_json"),
    }
    # the outcome is not required on its own; its step is
    assert "within_window" not in e.required and "approve_refund" in e.required
    assert e.inactive == {
        "outside_window": "check_window",
        "decline_refund": "check_window",
        "offer_credit": "check_window",
    }
    doc = e.to_dict()
    assert doc["format"] == "contracteval.expected/v1" and doc["query"] == "q1"


def test_refund_mini_q2_takes_the_other_branch() -> None:
    c = load_contract(refund_contract_doc())
    e = condition(c, "q2")
    assert e.pruned == ["within_window", "approve_refund"]
    assert {"decline_refund", "offer_credit", "outside_window"} <= e.active
    assert ("decline_refund", "confirm_outcome") in {(x.source, x.target) for x in e.edges}


def test_a_prerequisite_outside_the_chosen_intent_is_pulled_in_with_its_ancestors() -> None:
    c = load_contract(two_intents())
    e = condition(c, Query("q", intents=["serve"]))
    assert e.nodes == ["setup", "prep", "prep_a", "serve", "serve_step", "serve_sub"]
    # its ancestors come in, but not their other children
    assert e.pruned == ["prep_b"]
    assert [(x.source, x.target) for x in e.edges] == [("prep_a", "serve_step")]
    # invariants apply when applies_to is empty or meets A
    assert e.invariants == ["always", "for_serve"]


def test_without_intents_every_root_is_active() -> None:
    c = load_contract(two_intents())
    e = condition(c, Query("q"))
    assert e.pruned == [] and e.invariants == ["always", "for_prep_b", "for_serve"]


def test_a_pulled_in_prerequisite_brings_its_own_subtree() -> None:
    doc = two_intents()
    doc["edges"] = [{"source": "prep", "target": "serve_step", "kind": "requires"}]
    e = condition(load_contract(doc), Query("q", intents=["serve"]))
    assert e.pruned == [] and {"prep_a", "prep_b"} <= e.active


def test_prerequisites_are_pulled_in_to_a_fixpoint() -> None:
    doc = two_intents()
    doc["nodes"].append(
        {**doc["nodes"][1], "id": "extra", "label": "Extra", "parent": None, "type": "intent"}
    )
    doc["edges"].append({"source": "extra", "target": "prep_a", "kind": "requires"})
    e = condition(load_contract(doc), Query("q", intents=["serve"]))
    assert "extra" in e.active and "prep_a" in e.active


def test_enables_pulls_nothing_in() -> None:
    doc = two_intents()
    doc["edges"][0]["kind"] = "enables"
    e = condition(load_contract(doc), Query("q", intents=["serve"]))
    assert e.nodes == ["serve", "serve_step", "serve_sub"] and e.edges == []


def test_an_unchosen_outcome_is_pruned_with_its_descendants() -> None:
    c = load_contract(decision_contract())
    e = condition(c, Query("q", branches={"gate": "yes"}))
    assert e.pruned == ["no", "do_no"]
    assert e.inactive == {"no": "gate", "do_no": "gate"}
    assert e.decisions == {"gate": "yes"}
    assert [(x.source, x.target, x.kind) for x in e.edges] == [
        ("gate", "yes", "branches_to"),
        ("first", "gate", "requires"),
    ]


def test_an_unresolved_active_decision_is_an_error_naming_it_and_its_outcomes() -> None:
    c = load_contract(decision_contract())
    with pytest.raises(ContractEvalError) as info:
        condition(c, Query("q7"))
    err = info.value
    assert err.rule == "unresolved-decision" and err.path == "$.branches.gate"
    assert "'gate'" in err.message and "yes, no" in err.message and "q7" in err.message


def test_a_branch_value_that_is_not_an_outcome_is_an_error() -> None:
    c = load_contract(decision_contract())
    with pytest.raises(ContractEvalError) as info:
        condition(c, Query("q", branches={"gate": "do_yes"}))
    assert info.value.rule == "not-an-outcome" and "'do_yes'" in info.value.message


def test_entries_for_decisions_that_never_become_active_are_ignored() -> None:
    doc = decision_contract()
    doc["nodes"].append({**doc["nodes"][0], "id": "other", "label": "Other intent"})
    c = load_contract(doc)
    e = condition(c, Query("q", intents=["other"], branches={"gate": "nonsense"}))
    assert e.nodes == ["other"] and e.decisions == {}


def test_an_unknown_intent_is_an_error() -> None:
    c = load_contract(decision_contract())
    with pytest.raises(ContractEvalError) as info:
        condition(c, Query("q", intents=["ghost"], branches={"gate": "yes"}))
    assert (info.value.rule, info.value.path) == ("unknown-intent", "$.intents[0]")


def test_a_requires_edge_into_the_unchosen_outcome_contradicts_the_query() -> None:
    doc = decision_contract()
    doc["edges"].append({"source": "do_no", "target": "last", "kind": "requires"})
    c = load_contract(doc)
    with pytest.raises(ContractEvalError) as info:
        condition(c, Query("q", branches={"gate": "yes"}))
    err = info.value
    assert err.rule == "contradiction" and err.path == "$.branches.gate"
    assert "'no'" in err.message and "'yes'" in err.message
    # choosing the outcome that holds the prerequisite is fine
    assert "do_no" in condition(c, Query("q", branches={"gate": "no"})).active


def test_a_prerequisite_below_an_unresolved_inactive_decision_contradicts_the_query() -> None:
    doc = decision_contract()
    doc["nodes"].append({**doc["nodes"][0], "id": "other", "label": "Other intent"})
    doc["nodes"].append({**doc["nodes"][1], "id": "o_step", "label": "O step", "parent": "other"})
    doc["edges"].append({"source": "do_no", "target": "o_step", "kind": "requires"})
    c = load_contract(doc)
    with pytest.raises(ContractEvalError) as info:
        condition(c, Query("q", intents=["other"]))
    assert info.value.rule == "contradiction" and "does not resolve it" in info.value.message


def test_children_of_an_any_node_and_their_subtrees_are_never_required() -> None:
    doc = make_contract(
        [
            {"id": "goal", "type": "intent"},
            {"id": "verify", "parent": "goal", "combine": "any"},
            {"id": "by_login", "parent": "verify", "required": False},
            {"id": "by_password", "parent": "verify", "required": True},
            {"id": "type_password", "parent": "by_password", "required": True},
            {"id": "after", "parent": "goal"},
        ]
    )
    e = condition(load_contract(doc), Query("q"))
    assert e.required == ["goal", "verify", "after"]
    assert e.nodes == ["goal", "verify", "by_login", "by_password", "type_password", "after"]


def test_a_query_given_as_an_embedded_mapping_without_format_is_accepted() -> None:
    c = load_contract(refund_contract_doc())
    e = condition(
        c,
        {"id": "q9", "intents": ["handle_refund"], "branches": {"check_window": "outside_window"}},
    )
    assert e.query.id == "q9" and e.decisions == {"check_window": "outside_window"}


def test_an_unknown_embedded_query_id_is_an_error() -> None:
    c = load_contract(refund_contract_doc())
    with pytest.raises(ContractEvalError) as info:
        condition(c, "q99")
    assert info.value.rule == "unknown-query" and "q1, q2" in info.value.message
