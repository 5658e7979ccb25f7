"""Semantic mode on small hand-made contracts and traces: what a clean execution must read
as, beside the failure it must still find. No rule of these is switched: one alignment
over the pair model's probabilities (matching.alignment) decides them all."""

from __future__ import annotations

from typing import Any

import pytest

from matching.behaviour import extract_behaviour
from matching.conditioning import condition
from matching.evaluate import evaluate, evaluate_detailed
from matching.validate import load_contract

from .helpers import make_contract

# A small support procedure, worded as an annotator would write it.
SUPPORT = load_contract(
    make_contract(
        [
            {"id": "goal", "type": "intent", "label": "Resolve the customer's order question"},
            {
                "id": "verify",
                "type": "validation",
                "label": "Verify the caller with a one-time code",
                "parent": "goal",
            },
            {"id": "lookup", "label": "Look up the order", "parent": "goal"},
            {"id": "refund", "label": "Issue the refund to the original card", "parent": "goal"},
        ],
        edges=[
            {"source": "verify", "target": "lookup", "kind": "requires"},
            {"source": "lookup", "target": "refund", "kind": "requires"},
        ],
        queries=[{"id": "q1", "text": "A refund for a delivered order", "branches": {}}],
    )
)

CLEAN = """[user] Hi, I want my money back for order 5521.
[assistant] I've texted a one-time code to your phone. Could you read it back to me?
[user] 448120
[assistant] Thanks, that code matches, so you're verified.
[assistant] The blue enamel kettle you bought in March is on file here.
[tool] issue_refund(order_id="5521", to="original_card")
[assistant] Your refund to the original card has been issued.
"""


def failures(text: str, contract: Any = SUPPORT) -> set[tuple[str, str]]:
    report = evaluate(contract, "q1", extract_behaviour(text), mode="semantic")
    return {(f["family"], f["location"]) for f in report["failures"]}


def families(text: str, contract: Any = SUPPORT) -> set[str]:
    return {fam for fam, _ in failures(text, contract)}


def test_a_step_that_reads_most_like_a_free_obligation_enacts_it() -> None:
    # "I've found order 5521 for the kettle" shares little wording with "Look up the
    # order", but it is the only thing in its place and it reads most like that step
    assert failures(CLEAN) == set()


def test_an_obligation_with_nothing_in_its_place_is_omitted_or_paired_in_doubt() -> None:
    text = CLEAN.replace(
        "[assistant] The blue enamel kettle you bought in March is on file here.\n", ""
    )
    ev = evaluate_detailed(condition(SUPPORT, "q1"), extract_behaviour(text), mode="semantic")
    reported = ("omission", "lookup") in {(f["family"], f["location"]) for f in ev.failures}
    # a pairing with any step that reads at all like it is made, but with its doubt
    assert reported or ev.alignment.scores["lookup"] < 0.5
    clean = evaluate_detailed(condition(SUPPORT, "q1"), extract_behaviour(CLEAN), mode="semantic")
    assert clean.confidence and ev.confidence
    assert ev.confidence["p_violation"] > clean.confidence["p_violation"]


def test_an_off_topic_tool_call_is_still_an_extra_action() -> None:
    text = CLEAN.replace(
        "[tool] issue_refund",
        '[tool] subscribe_newsletter(list="weekly_deals")\n[tool] issue_refund',
    )
    obs = extract_behaviour(text)
    call = next(n.id for n in obs.nodes if n.label == "Called subscribe_newsletter")
    assert failures(text) == {("extra_action", call)}


def test_a_tool_call_beside_the_sentence_that_reports_it_is_a_repeat_not_an_extra() -> None:
    text = CLEAN.replace(
        "[assistant] I've texted",
        '[tool] send_verification_code(phone="+44 7700 900123")\n[assistant] I\'ve texted',
    )
    assert failures(text) == set()


IDENTITY = load_contract(
    make_contract(
        [
            {"id": "goal", "type": "intent", "label": "Close the customer's account"},
            {
                "id": "identify",
                "type": "validation",
                "label": "Check the customer's name, date of birth and postcode",
                "parent": "goal",
            },
            {"id": "close", "label": "Close the account", "parent": "goal"},
        ],
        edges=[{"source": "identify", "target": "close", "kind": "requires"}],
        queries=[{"id": "q1", "text": "Close my account", "branches": {}}],
    )
)


def test_the_other_items_of_one_request_are_one_move_not_extra_actions() -> None:
    text = (
        "[assistant] Could you give me your full name, date of birth, and the postcode on the"
        " account?\n[user] Ana Ruiz, 2 May 1980, N1 9GU.\n"
        '[tool] close_account(id="A-1")\n[assistant] Your account is now closed.\n'
    )
    assert failures(text, IDENTITY) == set()


CLOSURE = load_contract(
    make_contract(
        [
            {"id": "goal", "type": "intent", "label": "Close the customer's account"},
            {
                "id": "identify",
                "type": "validation",
                "label": "Check the customer's date of birth and postcode",
                "parent": "goal",
            },
            {"id": "reason", "label": "Ask the reason for closing", "parent": "goal"},
            {"id": "close", "label": "Close the account", "parent": "goal"},
        ],
        edges=[
            {"source": "identify", "target": "reason", "kind": "requires"},
            {"source": "reason", "target": "close", "kind": "requires"},
        ],
        queries=[{"id": "q1", "text": "Close my account", "branches": {}}],
    )
)


def test_a_combined_request_for_two_ordered_obligations_is_not_an_ordering_failure() -> None:
    text = (
        "[assistant] Could you give me the reason you want to close the account, your date of"
        " birth, and your postcode?\n[user] Moving abroad, 2 May 1980, N1 9GU.\n"
        '[tool] close_account(id="A-1")\n[assistant] Your account is now closed.\n'
    )
    # the reason is asked for first, in the same sentence as the identity check: one step
    assert failures(text, CLOSURE) == set()


@pytest.mark.parametrize(
    "sentence", ["Please call Dr. Haddad's office today.", "Ask St. Mary's ward for the notes."]
)
def test_a_title_abbreviation_does_not_split_a_sentence(sentence: str) -> None:
    obs = extract_behaviour(f"[assistant] {sentence}\n")
    assert [[s.quote for s in n.evidence] for n in obs.nodes] == [[sentence]]


def test_a_restatement_of_a_paired_step_in_other_words_is_not_an_extra_action() -> None:
    text = CLEAN + "[assistant] Just so you know, the money goes back to the card you paid with.\n"
    assert failures(text) == set()


@pytest.mark.parametrize(
    ("sentence", "filler"),
    [
        ("Ouch, I'm sorry about the fall.", True),
        ("Sorry to hear about the leak; that's a horrible thing to come home to.", True),
        ("I'm sorry for the wait, so I've added a credit to your account.", False),
        ("Thanks for reading back the code; that confirms it's you.", False),
        ("I'm sorry, but I can't refund a final-sale item.", False),
    ],
)
def test_sympathy_is_not_behaviour_unless_a_clause_does_something(
    sentence: str, filler: bool
) -> None:
    nodes = extract_behaviour(f"[assistant] {sentence}\n").nodes
    assert (nodes == []) is filler


def test_an_item_of_a_request_is_read_with_the_sentence_that_asks_for_it() -> None:
    contract = load_contract(
        make_contract(
            [
                {"id": "goal", "type": "intent", "label": "Triage the caller's headache"},
                {"id": "screen", "label": "Screen for stroke warning signs", "parent": "goal"},
                {"id": "book", "label": "Book a routine appointment", "parent": "goal"},
            ],
            edges=[{"source": "screen", "target": "book", "kind": "requires"}],
            queries=[{"id": "q1", "text": "I have a headache", "branches": {}}],
        )
    )
    text = (
        "[assistant] To rule out a stroke, could you tell me if you have any weakness,"
        " slurred speech, or confusion?\n[user] None of those.\n"
        '[tool] book_appointment(slot="Thu 10:15")\n'
        "[assistant] You're booked for a routine appointment on Thursday at 10:15.\n"
    )
    obs = extract_behaviour(text)
    # one node per item, all at the same step
    assert [(n.step, n.description) for n in obs.nodes][:3] == [(0, "ask")] * 3
    assert failures(text, contract) == set()
