"""Framing sections (Purpose, Scope, Definitions, ...) are context, not obligations."""

from __future__ import annotations

import pytest

from matching.context import directs, is_context_heading
from matching.propose import propose_heuristic

SOP = """# Handling a warranty claim

When a customer reports a faulty product, follow these steps.

## 1. Purpose

This procedure sets out how agents handle warranty claims. It keeps decisions consistent
between agents and protects the customer's data.

## 2. Scope

It applies to products bought in the last two years. Claims from business customers must be referred to the B2B desk.

## 3. Procedure

1. Look up the order.
2. Verify the serial number.

## 4. Definitions

- Warranty period: two years from delivery.
- Never confuse it with the returns window.

## Revision history

- 2.1 — reworded step 2.
"""


def _quotes(p):
    return [s["quote"] for item in [*p.nodes, *p.invariants] for s in item["evidence"]]


def _span_of(section: str) -> tuple[int, int]:
    start = SOP.index(section)
    nxt = SOP.find("\n#", start + 1)
    return start, len(SOP) if nxt < 0 else nxt


@pytest.mark.parametrize(
    "heading",
    [
        "Purpose",
        "1. Purpose",
        "2. Scope",
        "Background",
        "Overview",
        "Introduction",
        "4. Definitions",
        "Terms and definitions",
        "References",
        "Revision history",
        "Purpose and scope of this procedure",
        "IV. Background",
        "Section 2: Scope and applicability",
    ],
)
def test_headings_made_only_of_framing_words_name_context_sections(heading):
    assert is_context_heading(heading)


@pytest.mark.parametrize(
    "heading",
    [
        "Procedure",
        "3. Procedure",
        "Scope the request",
        "Changes to a booking",
        "Output",
        "Rules that always apply",
        "Step 1: Verify the patient's identity",
        "About refunds",
    ],
)
def test_headings_that_name_work_are_not_context(heading):
    assert not is_context_heading(heading)


@pytest.mark.parametrize(
    "sentence, directive",
    [
        ("This procedure sets out how agents handle warranty claims.", False),
        ("It applies to products bought in the last two years.", False),
        ("It makes sure that we never disclose data to the wrong person.", False),
        ("Claims from business customers must be referred to the B2B desk.", True),
        ("Agents should record the serial number.", True),
        ("Staff are required to log every call.", True),
        ("**Verify** the serial number.", True),
        ("Ask for the order number.", True),
        ("Never confuse it with the returns window.", True),
        ("Do not ask for a passport.", True),
        ("If the product was bought abroad, escalate.", True),
        ("When the caller is a minor: ask for a parent or guardian.", True),
        ("When a flight is cancelled, passengers need a fast, fair answer.", False),
        ("If a claim is late, it is still registered.", False),
    ],
)
def test_a_sentence_directs_when_it_holds_a_modal_or_opens_an_instruction(sentence, directive):
    assert directs(sentence) is directive


def test_context_sections_get_no_node_and_their_description_is_not_proposed():
    p = propose_heuristic(SOP)
    labels = [n["label"] for n in p.nodes]
    assert not any(
        label.startswith(("Purpose", "Scope", "Definitions", "Revision")) for label in labels
    )
    for section in ("## 1. Purpose", "## Revision history"):
        lo, hi = _span_of(section)
        inside = [
            q
            for item in [*p.nodes, *p.invariants]
            for q in item["evidence"]
            if lo <= q["start"] < hi
        ]
        assert inside == [], section


def test_directive_sentences_inside_context_sections_are_still_proposed():
    p = propose_heuristic(SOP)
    by_quote = {n["evidence"][0]["quote"]: n for n in p.nodes}
    referral = by_quote["Claims from business customers must be referred to the B2B desk."]
    assert referral["type"] == "action"
    # the section has no node of its own: the sentence hangs below the intent
    assert referral["parent"] == p.nodes[0]["id"] and p.nodes[0]["type"] == "intent"
    assert "Never confuse it with the returns window." in [
        s["quote"] for inv in p.invariants for s in inv["evidence"]
    ]
    assert "2.1 — reworded step 2." not in _quotes(p)


def test_procedure_sections_are_proposed_as_before():
    p = propose_heuristic(SOP)
    by_quote = {n["evidence"][0]["quote"]: n for n in p.nodes}
    assert by_quote["3. Procedure"]["type"] == "action"
    assert by_quote["Verify the serial number."]["type"] == "validation"
    assert by_quote["Look up the order."]["parent"] == by_quote["3. Procedure"]["id"]
    assert {
        "source": by_quote["Look up the order."]["id"],
        "target": by_quote["Verify the serial number."]["id"],
        "kind": "enables",
    } in p.edges


def test_the_intent_keeps_its_own_paragraph_and_not_the_purpose_section():
    intent = propose_heuristic(SOP).nodes[0]
    assert [s["quote"] for s in intent["evidence"]] == [
        "Handling a warranty claim",
        "When a customer reports a faulty product, follow these steps.",
    ]
