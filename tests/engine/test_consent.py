"""Consent before a consequential action (matching.consent): which obligations are
consent gates, which calls their user's yes covers, and how semantic mode reports the
rest. Token mode, the spec's literal reading, does not read consent."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from matching.behaviour import extract_behaviour
from matching.conditioning import condition
from matching.consent import (
    agrees,
    consent_failures,
    consent_gates,
    kept_gates,
    settled_orderings,
    unconsented_calls,
)
from matching.evaluate import evaluate_detailed
from matching.validate import load_contract

from .helpers import make_contract


def closure(
    gate_label: str = "Warn that closure is permanent and get explicit confirmation",
) -> Any:
    return load_contract(
        make_contract(
            [
                {"id": "goal", "type": "intent", "label": "Close the customer's account"},
                {
                    "id": "find",
                    "label": "Find the account",
                    "parent": "goal",
                    "meta": {"tool": "find_account"},
                },
                {"id": "warn", "type": "validation", "label": gate_label, "parent": "goal"},
                {
                    "id": "close",
                    "label": "Close the account",
                    "parent": "goal",
                    "meta": {"tool": "close_account"},
                },
            ],
            edges=[
                {"source": "find", "target": "warn", "kind": "requires"},
                {"source": "warn", "target": "close", "kind": "requires"},
            ],
            queries=[{"id": "q1", "text": "Close my account", "branches": {}}],
        )
    )


CONSENTED = """[user] Please close my account ending 4471.
[tool] find_account(last4="4471")
[result] {"id": "A-1", "balance": 0}
[assistant] Closing is permanent and can't be undone. Shall I go ahead and close it?
[user] Yes, go ahead.
[tool] close_account(id="A-1")
[result] {"status": "closed"}
[assistant] Your account is closed.
"""


def lines(contract: Any, text: str) -> list[tuple[str, int]]:
    return [(u.gate, u.call.line) for u in unconsented_calls(condition(contract, "q1"), text)]


def gates(contract: Any) -> dict[str, frozenset[str]]:
    return consent_gates(condition(contract, "q1"))


@pytest.mark.parametrize(
    "label",
    [
        "List the booking details and get an explicit yes",
        "Read back the leave details and get confirmation",
        "Explain the 15% restocking fee and get agreement",
        "Obtain the customer's consent before closing",
    ],
)
def test_an_obligation_that_asks_for_the_users_go_ahead_is_a_gate(label: str) -> None:
    assert gates(closure(label)) == {"warn": frozenset({"close_account"})}


@pytest.mark.parametrize(
    "label",
    [
        "Obtain line manager approval",  # someone else's approval, not the user's consent
        "Confirm the facts before any compensation",  # a check
        "Confirm the disruption in the operations system",
    ],
)
def test_a_check_or_a_third_partys_approval_is_not_a_gate(label: str) -> None:
    assert gates(closure(label)) == {}


def test_a_gate_guarding_no_tool_checks_nothing() -> None:
    c = closure()
    c.by_id["close"].meta.pop("tool")
    assert gates(c) == {}


def test_an_inactive_gates_call_is_not_reported_at_the_gate() -> None:
    e = condition(closure(), "q1")
    calls = unconsented_calls(e, CONSENTED.replace("[user] Yes, go ahead.\n", ""))
    assert [f["location"] for f in consent_failures(e, calls, [])] == ["warn"]
    assert consent_failures(replace(e, active=e.active - {"warn"}), calls, []) == []


def test_a_gate_without_edges_guards_the_next_sibling_that_changes_something() -> None:
    c = closure()
    c.edges.clear()
    assert gates(c) == {"warn": frozenset({"close_account"})}
    c.by_id["close"].meta["tool"] = "get_account_status"  # a lookup needs no consent
    assert gates(c) == {}


def test_a_call_after_a_yes_to_a_request_to_go_ahead_is_consented() -> None:
    assert lines(closure(), CONSENTED) == []


def test_a_call_with_no_yes_before_it_is_not_consented() -> None:
    text = CONSENTED.replace("[user] Yes, go ahead.\n", "")
    why = unconsented_calls(condition(closure(), "q1"), text)[0].why
    assert lines(closure(), text) == [("warn", 5)]
    assert "line 1" in why and "does not agree" in why


def test_a_yes_that_answers_no_request_does_not_consent() -> None:
    text = CONSENTED.replace(
        "Closing is permanent and can't be undone. Shall I go ahead and close it?",
        "Closing is permanent and can't be undone.",
    )
    assert lines(closure(), text) == [("warn", 6)]
    assert "answers no request" in unconsented_calls(condition(closure(), "q1"), text)[0].why


def test_a_yes_after_the_question_was_already_answered_does_not_consent() -> None:
    # the warning comes after the call: the yes before it answers nothing the agent asked,
    # only the earlier question, which the user had already answered
    text = """[user] Please close my account ending 4471.
[assistant] Before I do: is the reason for closing that you are moving banks?
[user] yep exactly
[tool] find_account(last4="4471")
[result] {"id": "A-1", "balance": 0}
[user] yes please
[tool] close_account(id="A-1")
[result] {"status": "closed"}
[assistant] Closing is permanent and can't be undone. Shall I go ahead?
"""
    assert lines(closure(), text) == [("warn", 7)]
    assert "answers no request" in unconsented_calls(condition(closure(), "q1"), text)[0].why


def test_a_yes_split_over_two_messages_consents() -> None:
    text = CONSENTED.replace(
        "[user] Yes, go ahead.\n", "[user] Yes.\n[user] And email me the letter.\n"
    )
    assert lines(closure(), text) == []


def test_an_ordering_the_consent_check_read_from_the_turns_is_settled() -> None:
    expected = condition(closure(), "q1")
    crossed = [
        {"family": "ordering", "location": "warn->close", "detail": "crossed"},
        {"family": "ordering", "location": "find->warn", "detail": "crossed"},
    ]
    kept = kept_gates(expected, unconsented_calls(expected, CONSENTED))
    assert kept == {"warn": frozenset({"close_account"})}
    assert settled_orderings(expected, kept, crossed) == crossed[:1]
    # a call made before its yes breaks the gate: nothing is settled
    early = CONSENTED.replace("[user] Yes, go ahead.\n", "")
    assert kept_gates(expected, unconsented_calls(expected, early)) == {}


def test_a_read_back_that_ends_in_a_question_asks_for_the_go_ahead() -> None:
    text = CONSENTED.replace(
        "Shall I go ahead and close it?", "Closing account 4471 today. Correct?"
    )
    assert lines(closure(), text.replace("Yes, go ahead.", "correct")) == []


def test_one_yes_covers_one_call() -> None:
    text = CONSENTED.replace(
        '[result] {"status": "closed"}\n',
        '[result] Error: the account has a pending payment\n[tool] close_account(id="A-1", force=true)\n',
    )
    assert lines(closure(), text) == [("warn", 8)]


@pytest.mark.parametrize(
    ("message", "agreed"),
    [
        ("Yes, please proceed.", True),
        ("That sounds good, go ahead", True),
        ("Everything looks good!", True),
        ("No, don't proceed yet.", False),
        ("Wait, go ahead only after I check my balance.", False),
        ("What is the fee?", False),
        ("I'm not sure yet", False),
        ("Yesterday I asked for a refund", False),
    ],
)
def test_agreement_is_read_from_the_users_words(message: str, agreed: bool) -> None:
    assert agrees(message) is agreed


def test_a_trace_without_user_messages_is_not_judged() -> None:
    text = "\n".join(x for x in CONSENTED.splitlines() if not x.startswith("[user]"))
    assert lines(closure(), text) == []


def test_semantic_mode_reports_the_gate_as_a_certain_omission_naming_the_call() -> None:
    c = closure()
    text = CONSENTED.replace("[user] Yes, go ahead.", "[user] Hmm, what happens to my card?")
    ev = evaluate_detailed(condition(c, "q1"), extract_behaviour(text), mode="semantic")
    gate = [f for f in ev.failures if f["location"] == "warn"]
    assert [f["family"] for f in gate] == ["omission"]
    assert gate[0]["probability"] == 1.0
    assert "close_account (line 6)" in gate[0]["detail"]
    assert ev.confidence == {"p_violation": 1.0, "verdict": "violation"}


def test_semantic_mode_reads_a_consented_call_as_no_failure_of_the_gate() -> None:
    ev = evaluate_detailed(
        condition(closure(), "q1"), extract_behaviour(CONSENTED), mode="semantic"
    )
    assert ev.unconsented == []
    assert all(f["location"] != "warn" for f in ev.failures)


def test_token_mode_does_not_read_consent() -> None:
    text = CONSENTED.replace("[user] Yes, go ahead.\n", "")
    ev = evaluate_detailed(condition(closure(), "q1"), extract_behaviour(text), mode="token")
    assert ev.unconsented == []
