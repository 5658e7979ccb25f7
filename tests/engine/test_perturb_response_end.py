"""Regression: removing the sentences that end a response keeps inserted spans exact."""

from __future__ import annotations

from pathlib import Path

from matching.formats import Case, Observed, ObservedNode, Span
from matching.perturb import perturb_case
from matching.validate import load_contract

DATA = Path(__file__).resolve().parents[2] / "matching" / "data"


def _response(sentences: list[tuple[str, str, str]]) -> Observed:
    text, nodes, pos = "", [], 0
    for i, (gold, label, sentence) in enumerate(sentences):
        if text:
            text += " "
            pos += 1
        nodes.append(
            ObservedNode(
                f"o{i + 1}", label, [Span(pos, pos + len(sentence))], i, gold=gold, index=i
            )
        )
        text += sentence
        pos += len(sentence)
    return Observed("response", text, nodes, output='{"order_id": "977", "resolution": "declined"}')


def test_wrong_branch_when_the_chosen_branch_ends_a_response():
    c = load_contract(DATA / "refund-mini.json")
    obs = _response(
        [
            ("lookup_order", "Looked up the order", "I found order 977."),
            (
                "verify_owner",
                "Verified the purchase belongs to the customer",
                "The email on it is yours, so the purchase is verified.",
            ),
            (
                "check_window",
                "Checked the 30-day window",
                "It was placed in March, more than 30 days ago.",
            ),
            ("confirm_outcome", "Confirmed the outcome", "Here is what we decided for you."),
            ("decline_refund", "Declined the refund", "I have to decline the refund."),
            ("offer_credit", "Offered store credit", "I can offer store credit instead."),
        ]
    )
    # q2 takes outside_window; its two steps are the last two sentences of the text
    case = perturb_case(
        c, Case("refund-mini/q2/clean", "refund-mini", "q2", obs, True), "wrong_branch"
    )
    assert case is not None and case.location == "check_window"
    text = case.observed.text
    for n in case.observed.nodes:
        for s in n.evidence:
            assert 0 <= s.start < s.end <= len(text)
            assert s.quote == text[s.start : s.end]
