"""Semantic mode's alignment, pair model, typed steps and verdict confidence (no database)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from matching.alignment import Knobs, first_steps, solve
from matching.behaviour import extract_behaviour
from matching.conditioning import condition
from matching.confidence import p_violation
from matching.evaluate import evaluate_detailed
from matching.fitting import decided_scores, fit_thresholds
from matching.formats import ObservedNode, Span
from matching.observe import acts, parse_args, steps
from matching.pair_features import FEATURES
from matching.pair_model import MODEL_PATH, PairModel, Thresholds, load_model
from matching.pair_training import data_hash, step_golds
from matching.validate import load_contract

from .helpers import DATA, ROOT

BEFORE = np.array([[False, True], [False, False]])  # obligation 0 must come before 1


def test_one_step_may_enact_two_obligations() -> None:
    p = np.array([[0.95, 0.1], [0.9, 0.2]])
    chosen, crossed = solve(p, BEFORE, first_steps(p, [0, 1], 0.3), Knobs())
    assert chosen == {0: 0, 1: 0} and crossed == []


def test_order_is_kept_when_breaking_it_gains_less_than_the_margin() -> None:
    # obligation 1 reads best at step 0 and a little less at step 2; 0 is at step 1
    p = np.array([[0.1, 0.9, 0.1], [0.8, 0.1, 0.7]])
    chosen, crossed = solve(p, BEFORE, first_steps(p, [0, 1, 2], 0.99), Knobs(order_margin=2.0))
    assert chosen == {0: 1, 1: 2} and crossed == []


def test_order_is_broken_and_reported_at_the_edge_when_nothing_else_reads_like_it() -> None:
    p = np.array([[0.1, 0.95], [0.95, 0.05]])
    chosen, crossed = solve(p, BEFORE, first_steps(p, [0, 1], 0.99), Knobs(order_margin=2.0))
    assert chosen == {0: 1, 1: 0} and crossed == [(0, 1)]


def test_an_obligation_starts_at_the_request_that_precedes_its_lookup() -> None:
    p = np.array([[0.4, 0.05, 0.99]])
    assert first_steps(p, [0, 1, 2], 0.3)[0, 2] == 0


def test_the_solver_stays_small_whatever_the_trace_length() -> None:
    # a chain of 30 obligations, each likeliest at three random steps of 2,000: the
    # programme has 90 candidate binaries however long the trace
    rng = np.random.default_rng(0)
    p = np.full((30, 2000), 0.01)
    for r in range(30):
        p[r, rng.choice(2000, 3, replace=False)] = 0.9
    before = np.eye(30, k=1, dtype=bool)
    chosen, crossed = solve(p, before, first_steps(p, list(range(2000)), 0.99), Knobs(top_k=3))
    # an obligation whose every candidate would break two edges may stay unpaired: two
    # crossings cost more than its pairing gains
    assert len(chosen) >= 28 and all(p[r, c] == 0.9 for r, c in chosen.items())
    assert all(before[a, b] for a, b in crossed)


def test_steps_carry_act_tool_and_arguments_as_fields() -> None:
    text = (
        "[assistant] Shall I cancel reservation ZFA04Y? (yes/no)\n"
        '[tool] cancel_reservation(reservation_id="ZFA04Y")\n'
        "[assistant] Done: the booking is void and the money is on its way back.\n"
    )
    obs = extract_behaviour(text)
    st = steps(obs.nodes, text)
    assert [(s.act, s.tool) for s in st] == [
        ("confirm", None),
        ("call", "cancel_reservation"),
        ("close", None),
    ]
    assert st[1].args == {"reservation_id": "ZFA04Y"}
    # the closing act is a field, never words added to the label
    assert obs.nodes[-1].label.startswith("Done")


@pytest.mark.parametrize(
    ("args", "parsed"),
    [('a="x, y", b=2', {"a": "x, y", "b": "2"}), ('{"k": [1, 2]}', {"k": "[1, 2]"}), ("", {})],
)
def test_call_arguments_parse_from_both_renderings(args: str, parsed: dict) -> None:
    assert parse_args(args) == parsed


def test_a_lookup_call_does_not_act_but_a_write_call_and_a_promise_do() -> None:
    text = '[tool] get_order(id="1")\n[tool] post_to_social(text="hi")\n[assistant] We\'ll refund you.\n'
    st = steps(extract_behaviour(text).nodes, text)
    assert [acts(s) for s in st] == [False, True, True]


def test_a_step_overlapping_two_gold_moves_is_labelled_with_both() -> None:
    gold = [
        ObservedNode("g1", "x", [Span(0, 10)], 0, gold="lookup"),
        ObservedNode("g2", "y", [Span(11, 20)], 1, gold="confirm"),
    ]
    assert step_golds(ObservedNode("o1", "z", [Span(0, 20)], 0), gold) == {"lookup", "confirm"}


def test_the_shipped_pair_model_reads_the_current_features() -> None:
    m = load_model()
    assert m.features == FEATURES
    assert 0 < m.knobs.pair < 1 and m.knobs.top_k >= 1
    assert m.thresholds.clean_below <= m.thresholds.violation_from


def test_the_shipped_pair_model_was_fitted_on_the_current_training_data() -> None:
    recorded = json.loads(MODEL_PATH.read_text())["training"]
    paths = [ROOT / p for p in recorded["data"]]
    assert data_hash(paths) == recorded["data_sha256"], "training data changed: run `make train`"


def test_a_model_fitted_on_other_features_is_refused() -> None:
    d = load_model().to_dict()
    d["features"] = d["features"][:-1]
    with pytest.raises(ValueError, match="make train"):
        PairModel.from_dict(d)


def test_semantic_failures_carry_probabilities_and_the_verdict_is_three_way() -> None:
    c = load_contract(DATA / "refund-mini.json")
    text = '[user] Refund order 7 please.\n[tool] post_to_social(text="refund!")\n'
    ev = evaluate_detailed(condition(c, "q1"), extract_behaviour(text), mode="semantic")
    assert ev.failures and all(0.0 <= f["probability"] <= 1.0 for f in ev.failures)
    assert ev.confidence is not None
    assert ev.confidence["verdict"] in ("clean", "needs_review", "violation")
    assert ev.report()["confidence"]["p_violation"] == ev.confidence["p_violation"]
    assert ev.assess(Thresholds(1.1, 1.1))["verdict"] == "clean"


def test_token_mode_reports_carry_no_confidence() -> None:
    c = load_contract(DATA / "refund-mini.json")
    ev = evaluate_detailed(condition(c, "q1"), extract_behaviour("[assistant] Hi there friend.\n"))
    assert ev.confidence is None and "confidence" not in ev.report()


def test_p_violation_is_the_chance_that_any_failure_is_real() -> None:
    assert p_violation([]) == 0.0
    assert p_violation([0.5, 0.5]) == 0.75


def test_thresholds_abstain_rather_than_decide_below_the_target() -> None:
    p = [0.1, 0.2, 0.45, 0.55, 0.8, 0.9]
    y = [False, False, True, False, True, True]
    t = fit_thresholds(p, y, target=0.95)
    s = decided_scores(p, y, t)
    assert s["balanced_decided"] == 1.0 and s["share_decided"] == pytest.approx(4 / 6)


_INSURANCE = (
    "[user] Hi, the insurance on my reservation PEP4E0 is not showing. Can you add it?\n"
    "[assistant] Could you give me your user id?\n[user] It is mia_li_3668.\n"
    '[tool] get_reservation_details(reservation_id="PEP4E0")\n'
    '[result] {"reservation_id": "PEP4E0", "insurance": "no"}\n'
    "[assistant] I'm sorry, but travel insurance cannot be added after the booking is made.\n"
)


def _airline_failures(text: str) -> list[dict]:
    contract = load_contract(ROOT / "fixtures" / "taubench" / "contracts" / "airline.json")
    obs = extract_behaviour(text)
    return evaluate_detailed(condition(contract, "t36"), obs, mode="semantic").failures


def test_offering_what_another_intent_does_is_an_extra_action() -> None:
    # the query asks about insurance only; the offer of a transfer takes up the
    # "transfer to a human" intent that the policy reserves for out-of-scope requests
    offer = "[assistant] Would you like me to transfer you to a human agent who may help?\n"
    (extra,) = [f for f in _airline_failures(_INSURANCE + offer) if f["family"] == "extra_action"]
    assert "offers 'transfer_user'" in extra["detail"] and extra["probability"] > 0.5


def test_saying_what_another_intent_is_about_is_not_an_extra_action() -> None:
    said = "[assistant] A human agent would not be able to add it either.\n"
    assert _airline_failures(_INSURANCE) == _airline_failures(_INSURANCE + said) == []
