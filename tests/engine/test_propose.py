"""The offline heuristic proposer: outline → proposed nodes with exact spans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matching.propose import propose_heuristic, suggest_id
from matching.validate import audit_contract

ROOT = Path(__file__).resolve().parents[2]
REFUND = json.loads((ROOT / "fixtures" / "demo" / "refund-mini.json").read_text())
TEXT = REFUND["artifact"]["text"]


def _by_quote(proposals):
    return {n["evidence"][0]["quote"]: n for n in proposals.nodes}


def test_every_proposal_carries_exact_spans_into_the_text():
    p = propose_heuristic(TEXT)
    assert p.nodes and p.invariants
    for item in [*p.nodes, *p.invariants]:
        for span in item["evidence"]:
            assert TEXT[span["start"] : span["end"]] == span["quote"]
            assert span["quote"] == span["quote"].strip() and span["quote"]


def test_top_heading_is_the_intent_with_its_purpose_paragraph_as_evidence():
    p = propose_heuristic(TEXT)
    intent = p.nodes[0]
    assert intent["type"] == "intent" and intent["parent"] is None
    assert [s["quote"] for s in intent["evidence"]] == [
        "Refunds and returns",
        "When a customer asks for a refund, follow this procedure.",
    ]


def test_cue_words_pick_the_node_type():
    nodes = _by_quote(propose_heuristic(TEXT))
    assert (
        nodes["Verify the purchase belongs to the customer by confirming the email on the order."][
            "type"
        ]
        == "validation"
    )
    assert nodes["If the order is within 30 days"]["type"] == "branch_condition"
    assert nodes["decline the refund and offer store credit instead."]["type"] == "refusal"
    assert (
        nodes['Finish with a JSON object with the keys "order_id" and "resolution".']["type"]
        == "output_requirement"
    )
    assert nodes["Look up the order using the order number the customer gives."]["type"] == "action"


def test_never_sentence_becomes_an_invariant_not_a_node():
    p = propose_heuristic(TEXT)
    quotes = [s["quote"] for inv in p.invariants for s in inv["evidence"]]
    assert quotes == [
        "Never reveal a full card number; refer to cards by their last four digits only."
    ]
    assert all("Never" not in n["evidence"][0]["quote"] for n in p.nodes)


def test_conditional_bullets_make_their_step_a_decision_with_branches_to_edges():
    p = propose_heuristic(TEXT)
    nodes = _by_quote(p)
    decision = nodes["Check the return window: the order must be no more than 30 days old."]
    within = nodes["If the order is within 30 days"]
    older = nodes["If the order is older than 30 days"]
    assert decision["type"] == "decision"
    assert within["parent"] == older["parent"] == decision["id"]
    assert within["required"] is False
    for branch in (within, older):
        edge = {"source": decision["id"], "target": branch["id"], "kind": "branches_to"}
        assert edge in p.edges
    approve = nodes["approve the refund to the original payment method."]
    assert approve["parent"] == within["id"]


def test_numbered_steps_get_enables_edges_in_order():
    p = propose_heuristic("# Task\n\n1. First do this.\n2. Then do that.\n3. Finally finish.\n")
    ids = [n["id"] for n in p.nodes if n["type"] != "intent"]
    assert [(e["source"], e["target"]) for e in p.edges if e["kind"] == "enables"] == [
        (ids[0], ids[1]),
        (ids[1], ids[2]),
    ]


def test_nested_bullets_take_their_parent_from_the_outline():
    text = "# Onboarding\n\n## Accounts\n\n- Create the account\n  - Send the welcome mail\n"
    p = propose_heuristic(text)
    by_label = {n["label"]: n for n in p.nodes}
    assert by_label["Accounts"]["parent"] == by_label["Onboarding"]["id"]
    assert by_label["Create the account"]["parent"] == by_label["Accounts"]["id"]
    assert by_label["Send the welcome mail"]["parent"] == by_label["Create the account"]["id"]


def test_proposals_form_a_schema_valid_contract_without_structural_errors():
    p = propose_heuristic(TEXT)
    audit = audit_contract(p.contract_document("proposed", TEXT))
    assert audit.errors == []
    assert audit.coverage == 1.0


def test_every_proposal_has_a_score_and_a_justification():
    p = propose_heuristic(TEXT)
    ids = [n["id"] for n in p.nodes] + [i["id"] for i in p.invariants]
    assert sorted(p.notes) == sorted(ids)
    for note in p.notes.values():
        assert 0.0 < note.score <= 1.0
        assert note.justification
    assert p.proposer == "heuristic"


def test_ids_are_unique_and_valid():
    text = "# Ship\n\n- Check the box.\n- Check the box.\n"
    p = propose_heuristic(text)
    ids = [n["id"] for n in p.nodes]
    assert len(ids) == len(set(ids)) == 3
    assert suggest_id("  !!!  ") == "node"


@pytest.mark.parametrize("text", ["", "\n\n   \n"])
def test_empty_text_proposes_nothing(text):
    p = propose_heuristic(text)
    assert p.nodes == [] and p.edges == [] and p.invariants == []


def test_non_bmp_characters_keep_code_point_offsets():
    text = "# Emoji 🎉 policy\n\n1. Verify the 🎫 ticket.\n"
    p = propose_heuristic(text)
    for n in p.nodes:
        for s in n["evidence"]:
            assert text[s["start"] : s["end"]] == s["quote"]


def test_module_docstring_example_runs():
    import doctest

    import matching.propose

    result = doctest.testmod(matching.propose)
    assert result.attempted > 0 and result.failed == 0
