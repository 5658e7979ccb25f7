"""Semantic mode: the embedding encoder, the behaviour extractor, structure-respecting
matching, the missing-model error and the extracted-regime scoring of extra actions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from matching import embed
from matching.behaviour import extract_behaviour, is_filler, speech_act
from matching.cli import main
from matching.embed import ModelMissing, encoder
from matching.enactments import harvest, strip_enactments, with_enactments
from matching.evaluate import evaluate
from matching.formats import Observed, ObservedNode, Span, read_observed
from matching.suite import gold_locations
from matching.validate import load_contract

from .helpers import DATA, refund_observed_doc

CONTRACT = load_contract(DATA / "refund-mini.json")

# A clean execution of refund-mini q1 as a reviewer would paste it: greeting, filler,
# the agent's own wording, tool calls and results, no observed graph.
PASTED_CLEAN = """[user] Hi, I'd like a refund for order 1042 please, it arrived ten days ago.
[assistant] Hello! I can help with that. Let me look up your order.
[tool] lookup_order(order_id="1042")
[result] {"order_id": "1042", "email": "sam@example.com", "placed": "10 days ago", "total": 59.00}
[assistant] Thanks for waiting. The email on order 1042 matches the one you wrote from, so I can confirm the purchase is yours.
[assistant] The order was placed 10 days ago, which is inside our 30-day return window.
[tool] issue_refund(order_id="1042", amount=59.00, to="original_payment")
[result] {"refund_id": "RF-88", "status": "approved"}
[assistant] Your refund of $59.00 to the card ending 4242 is approved and should arrive within 5 business days. Is there anything else I can help with?
"""


def _pasted(text: str) -> Observed:
    """The behaviour extractor's graph of ``text``, with the example's final output."""
    obs = extract_behaviour(text, kind="trace")
    obs.output = read_observed(refund_observed_doc()).output
    return obs


# --------------------------------------------------------------------------- encoder


def test_encoder_reproduces_the_published_cosines_of_all_minilm_l6_v2() -> None:
    # sentence-transformers' quickstart prints these cosines for all-MiniLM-L6-v2:
    # [[1.0000, 0.6660, 0.1046], [0.6660, 1.0000, 0.1411], [0.1046, 0.1411, 1.0000]]
    v = encoder().encode(
        ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    )
    sims = v @ v.T
    assert np.allclose(np.diag(sims), 1.0, atol=1e-5)
    assert sims[0, 1] == pytest.approx(0.6660, abs=5e-4)
    assert sims[0, 2] == pytest.approx(0.1046, abs=5e-4)
    assert sims[1, 2] == pytest.approx(0.1411, abs=5e-4)


def test_encoder_in_float32_agrees_with_float64() -> None:
    texts = ["Look up the order", "I have pulled up order VM-39107, the laptop stand."]
    v32 = encoder().encode(texts)
    v64 = embed.Encoder(embed.model_dir(), np.float64).encode(texts)
    assert np.abs(v32 - v64).max() < 1e-5


def test_texts_of_mixed_lengths_encode_as_they_do_alone() -> None:
    texts = ["Hi.", "Look up the order", PASTED_CLEAN, "I have pulled up order VM-39107."]
    together = embed.Encoder(embed.model_dir()).encode(texts)
    alone = np.stack([embed.Encoder(embed.model_dir()).encode([t])[0] for t in texts])
    assert np.abs(together - alone).max() < 1e-5


def test_encoder_counts_the_tokens_and_cpu_of_new_texts_only() -> None:
    enc = encoder()
    text = "A sentence this test alone embeds, about a counter of tokens."
    tokens, spent = enc.tokens_embedded, enc.cpu_spent
    enc.encode([text, text])
    n = len(enc.tokenizer.encode(text).ids)
    assert enc.tokens_embedded - tokens == n
    assert enc.cpu_spent > spent
    tokens, spent = enc.tokens_embedded, enc.cpu_spent
    enc.encode([text])  # memoised: nothing new is run
    assert (enc.tokens_embedded, enc.cpu_spent) == (tokens, spent)


def test_encoding_leaves_the_process_blas_threads_as_they_were() -> None:
    from threadpoolctl import threadpool_info

    before = [i["num_threads"] for i in threadpool_info()]
    embed.Encoder(embed.model_dir()).encode(["a sentence to encode", "and another one"])
    assert [i["num_threads"] for i in threadpool_info()] == before


def test_a_missing_model_is_an_error_naming_make_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(embed.MODEL_ENV, "")
    with pytest.raises(ModelMissing, match="make model"):
        embed.model_dir()


def test_semantic_match_without_the_model_exits_1(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(embed.MODEL_ENV, str(tmp_path))
    code = main(
        [
            "match",
            str(DATA / "refund-mini.json"),
            "--query",
            "q1",
            "--observed",
            str(DATA / "refund-mini-observed-q1.json"),
            "--mode",
            "semantic",
        ]
    )
    assert code == 1
    assert "make model" in capsys.readouterr().err


# --------------------------------------------------------------------------- extractor


@pytest.mark.parametrize(
    ("sentence", "act"),
    [
        ("Could you give me your order number?", "ask"),
        ("What is the reservation ID?", "ask"),
        ("Shall I go ahead? (yes/no)", "confirm"),
        ("Would you like me to cancel the booking?", "confirm"),
        ("I'm sorry, but I can't refund an order outside the window.", "refuse"),
        ("It was delivered 40 days ago, so it is outside the return window.", "decide"),
        ("I have emailed you the prepaid return label.", "inform"),
    ],
)
def test_speech_act_of_a_sentence(sentence: str, act: str) -> None:
    assert speech_act(sentence) == act


@pytest.mark.parametrize(
    "sentence",
    ["Hello!", "Thanks for waiting.", "I can help with that.", "Let me check that for you."],
)
def test_greetings_thanks_and_filler_are_not_behaviour(sentence: str) -> None:
    assert is_filler(sentence)


def test_a_request_for_several_things_is_one_node_per_thing_at_one_step() -> None:
    text = (
        "[assistant] Could you give me your user ID, reservation ID, and the reason"
        " for cancellation?\n"
    )
    nodes = extract_behaviour(text).nodes
    assert [n.label for n in nodes] == [
        "Ask for your user ID",
        "Ask for reservation ID",
        "Ask for the reason for cancellation",
    ]
    assert {n.step for n in nodes} == {0} and {n.description for n in nodes} == {"ask"}
    for n in nodes:
        assert text[n.evidence[0].start : n.evidence[0].end] in n.label


def test_each_sentence_is_one_move_however_the_messages_split_and_calls_are_nodes() -> None:
    merged = (
        '[tool] lookup_order(order_id="7")\n'
        "[assistant] The order is 40 days old. That is past our 30-day window."
        " Shall I go ahead?\n"
        "[assistant] The order is 40 days old.\n"
    )
    split = merged.replace("old. That", "old.\n[assistant] That").replace(
        "window. Shall", "window.\n[assistant] Shall"
    )
    for text in (merged, split):
        nodes = extract_behaviour(text).nodes
        assert [(n.description, n.step, len(n.evidence)) for n in nodes] == [
            ("call", 0, 1),
            ("inform", 1, 1),
            ("confirm", 2, 2),  # a bare request for the go-ahead joins the move before it
        ]  # the last line restates the second one: not a node


# --------------------------------------------------------------------------- matching


def test_semantic_mode_calls_a_pasted_clean_refund_mini_trace_clean() -> None:
    report = evaluate(CONTRACT, "q1", _pasted(PASTED_CLEAN), mode="semantic")
    assert report["mode"] == "semantic"
    assert report["failures"] == [] and report["verdict"] == "clean"


def test_semantic_mode_still_finds_an_omitted_step_in_a_pasted_trace() -> None:
    lines = [x for x in PASTED_CLEAN.splitlines(keepends=True) if "return window" not in x]
    report = evaluate(CONTRACT, "q1", _pasted("".join(lines)), mode="semantic")
    score = {a["expected"]: a["score"] for a in report["alignment"]}.get("check_window", 0.0)
    # reported omitted, or paired only with doubt (a weak pairing the verdict weighs)
    assert ("omission", "check_window") in {
        (f["family"], f["location"]) for f in report["failures"]
    } or score < 0.5


def test_semantic_mode_reports_an_unrelated_tool_call_as_an_extra_action() -> None:
    text = PASTED_CLEAN.replace(
        "[tool] issue_refund", '[tool] export_transcript(format="xlsx")\n[tool] issue_refund'
    )
    obs = _pasted(text)
    call = next(n.id for n in obs.nodes if n.label == "Called export_transcript")
    report = evaluate(CONTRACT, "q1", obs, mode="semantic")
    assert {(f["family"], f["location"]) for f in report["failures"]} == {("extra_action", call)}


def test_token_mode_never_reads_enactments() -> None:
    obs = read_observed(refund_observed_doc())
    taught = with_enactments(CONTRACT, {"check_window": ["placed 10 days ago, inside"]})
    assert evaluate(taught, "q1", obs, mode="token") == evaluate(CONTRACT, "q1", obs, mode="token")


def test_harvest_never_takes_the_excluded_querys_own_cases() -> None:
    from matching.formats import Case

    obs = read_observed(refund_observed_doc())
    case = Case("c1", "refund-mini", "q1", obs, True)
    assert harvest([case], "refund-mini", exclude_query="q1") == {}
    taught = harvest([case], "refund-mini", exclude_query="q2")
    assert "check_window" in taught and all(not t.startswith("[") for t in taught["check_window"])
    assert not any("enactment" in n.meta for n in strip_enactments(CONTRACT).nodes)


# --------------------------------------------------------------------------- scoring


def test_an_extracted_extra_action_is_located_at_the_gold_step_it_overlaps() -> None:
    text = "[assistant] ok.\n[tool] export_transcript()\n"
    gold = Observed("trace", text, [ObservedNode("x1", "Export", [Span(16, 41)], 0)])
    extracted = Observed("trace", text, [ObservedNode("o1", "Called", [Span(16, 41)], 0)])
    assert gold_locations([("extra_action", "o1")], extracted, gold) == [("extra_action", "x1")]
    # no overlap: the extracted id stays
    assert gold_locations([("extra_action", "o9")], extracted, gold) == [("extra_action", "o9")]
    assert json.dumps(gold_locations([], extracted, gold)) == "[]"
