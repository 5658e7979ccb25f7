"""Anchoring a model's quote: normalised search, exact offsets, and the refusals."""

from __future__ import annotations

import warnings

import pytest

from matching.llm.anchor import AGENT_ROLES, Index, Miss, QuoteReport
from matching.llm.extractor import LLMExtractor, UnreliableExtraction

from .fake_openai import FakeOpenAI, completion

ARTIFACT = (
    "# Refunds\n\n"
    "1. **Look up** the order using the customer’s order number.\n"
    "2. Verify the e-mail address — it must match the account.\n"
    "3. If the order is older than 30 days, decline the refund.\n"
)
TRACE = (
    "[user] Please refund order 1042, it arrived broken.\n"
    '[tool] lookup_order(order_id="1042")\n'
    '[result] {"placed": "10 days ago", "status": "delivered"}\n'
    "[assistant] I have checked your order: it was placed 10 days ago.\n"
    "  I refunded the full amount to your card.\n"
    "[assistant] Done.\n"
)


@pytest.mark.parametrize(
    "quote",
    [
        "Look up the order using the customer's order number.",  # bold dropped, apostrophe
        "LOOK UP THE ORDER USING THE CUSTOMER’S ORDER NUMBER",  # case
        "**Look up** the order   using the customer's\norder number",  # emphasis, re-flowed
    ],
)
def test_normalised_quote_maps_back_to_exact_offsets(quote: str):
    span = Index(ARTIFACT).anchor(quote)
    assert not isinstance(span, Miss)
    s, e = span
    assert ARTIFACT[s:e].startswith("Look up** the order")
    assert ARTIFACT[s:e].rstrip(".").endswith("order number")


def test_dashes_and_hyphens_compare_equal():
    span = Index(ARTIFACT).anchor("Verify the e‑mail address - it must match the account")
    assert not isinstance(span, Miss)
    assert ARTIFACT[span[0] : span[1]] == "Verify the e-mail address — it must match the account"


def test_ambiguous_quote_is_refused():
    miss = Index(ARTIFACT).anchor("the order")
    assert isinstance(miss, Miss) and miss.kind == "ambiguous"
    assert "occurs 2 times" in miss.reason


def test_one_word_quote_is_too_short_but_a_whole_short_event_is_not():
    idx = Index(TRACE)
    miss = idx.anchor("refunded", roles=AGENT_ROLES)
    assert isinstance(miss, Miss) and miss.kind == "too_short"
    span = idx.anchor("Done.", roles=AGENT_ROLES)  # the whole event is one word
    assert not isinstance(span, Miss) and TRACE[span[0] : span[1]] == "Done."


def test_quotes_outside_agent_events_are_refused():
    idx = Index(TRACE)
    miss = idx.anchor("Please refund order 1042, it arrived broken.", roles=AGENT_ROLES)
    assert isinstance(miss, Miss) and miss.kind == "wrong_event"
    miss = idx.anchor('"placed": "10 days ago", "status": "delivered"', roles=AGENT_ROLES)
    assert isinstance(miss, Miss) and miss.kind == "wrong_event"
    span = idx.anchor('lookup_order(order_id="1042")', roles=AGENT_ROLES)
    assert not isinstance(span, Miss)


def test_a_quote_spanning_continuation_lines_stays_in_its_event():
    idx = Index(TRACE)
    span = idx.anchor("placed 10 days ago. I refunded the full amount", roles=AGENT_ROLES)
    assert not isinstance(span, Miss)
    assert TRACE[span[0] : span[1]] == "placed 10 days ago.\n  I refunded the full amount"


def test_order_decides_between_repeats():
    text = "[tool] get_order(id=7)\n[assistant] Checking again.\n[tool] get_order(id=7)\n"
    idx = Index(text)
    first = idx.anchor("get_order(id=7)", roles=AGENT_ROLES)
    assert isinstance(first, Miss) and first.kind == "ambiguous"
    second = idx.anchor("get_order(id=7)", after=30, roles=AGENT_ROLES)
    assert second == (text.rindex("get_order"), len(text) - 1)


def test_report_counts_and_flags_unreliable():
    report = QuoteReport()
    report.kept()
    report.miss(Miss("too_short", "x"))
    assert not report.unreliable  # half is not most
    report.miss(Miss("wrong_event", "y"))
    assert report.unreliable
    assert report.to_dict() == {
        "quotes": 3,
        "kept": 1,
        "discarded": 2,
        "reasons": {"too_short": 1, "wrong_event": 1},
        "unreliable": True,
    }


def test_extractor_keeps_agent_quotes_and_flags_a_thin_result(server: FakeOpenAI, client):  # type: ignore[no-untyped-def]
    def node(quote: str) -> dict[str, object]:
        return {"quote": quote, "label": "step", "description": "", "type": "action"}

    server.push(
        completion(
            {
                "nodes": [
                    node("Please refund order 1042, it arrived broken."),  # the user's words
                    node('lookup_order(order_id="1042")'),
                    node("the"),
                    node("I **refunded** the full amount to your card"),
                ]
            }
        )
    )
    extractor = LLMExtractor(client=client)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        obs = extractor(TRACE, kind="trace")
    assert [n.evidence[0].quote for n in obs.nodes] == [
        'lookup_order(order_id="1042")',
        "I refunded the full amount to your card",
    ]
    assert extractor.report.reasons == {"wrong_event": 1, "too_short": 1}
    assert not extractor.report.unreliable and not caught

    server.push(completion({"nodes": [node("it arrived broken"), node('"status": "delivered"')]}))
    with pytest.warns(UnreliableExtraction, match="kept 0 of 2 quotes"):
        extractor(TRACE, kind="trace")
