"""A reviewer's corrections: forced and refused pairs re-scored by the engine, and the
weak-pairing flags of the overlay."""

from __future__ import annotations

import pytest

from matching.conditioning import condition
from matching.corrections import Corrections, correct
from matching.evaluate import evaluate_detailed
from matching.formats import read_observed
from matching.match import align
from matching.overlay import overlay_payload
from matching.validate import load_contract

from .helpers import DATA

EXPECTED = condition(load_contract(DATA / "refund-mini.json"), "q1")


def _obs():
    return read_observed(DATA / "refund-mini-observed-q1.json")


def test_refusing_a_pair_makes_the_step_extra_and_the_obligation_omitted() -> None:
    ev = evaluate_detailed(
        EXPECTED, _obs(), corrections=Corrections(unpair=[("check_window", "o3")])
    )
    assert "check_window" not in ev.alignment.pairs
    families = {(f["family"], f["location"]) for f in ev.failures}
    assert ("extra_action", "o3") in families
    assert ("omission", "check_window") in families
    assert ev.verdict == "non_clean"


def test_forcing_a_pair_replaces_the_automatic_one_and_repeats_the_displaced_step() -> None:
    ev = evaluate_detailed(EXPECTED, _obs(), corrections=Corrections(pair=[("verify_owner", "o1")]))
    m = ev.alignment
    assert m.pairs["verify_owner"] == "o1" and m.scores["verify_owner"] == 1.0
    assert "lookup_order" not in m.pairs
    assert ("o2", "verify_owner") in m.repeats
    assert ev.observed_status["o1"] == "paired"


def test_unpair_then_pair_restores_a_clean_verdict() -> None:
    both = Corrections(unpair=[("check_window", "o3")], pair=[("check_window", "o3")])
    assert evaluate_detailed(EXPECTED, _obs(), corrections=both).verdict == "clean"


def test_corrections_naming_unknown_steps_or_inactive_obligations_are_refused() -> None:
    m = align(EXPECTED, _obs())
    with pytest.raises(ValueError, match="'o99' is not an observed step"):
        correct(m, EXPECTED, Corrections(pair=[("check_window", "o99")]))
    with pytest.raises(ValueError, match="'outside_window' is not an active obligation"):
        correct(m, EXPECTED, Corrections(pair=[("outside_window", "o3")]))


def test_corrections_round_trip_through_stored_json() -> None:
    c = Corrections(pair=[("a", "o1")], unpair=[("b", "o2")], commentary=["o3"])
    assert Corrections.from_data(c.to_data()) == c
    assert Corrections.from_data({"pair": [["a", "o1"]]}).commentary == []


def test_a_step_read_as_commentary_is_neither_extra_nor_paired_and_leaves_its_obligation_open():
    auto = evaluate_detailed(EXPECTED, _obs())
    assert auto.alignment.pairs["check_window"] == "o3"
    ev = evaluate_detailed(EXPECTED, _obs(), corrections=Corrections(commentary=["o3"]))
    families = {(f["family"], f["location"]) for f in ev.failures}
    assert ("omission", "check_window") in families
    assert not any(f["family"] == "extra_action" for f in ev.failures)
    assert "o3" not in {o.id for o in ev.alignment.kept}
    assert ("o3", "commentary, by a reviewer") in ev.alignment.dropped
    assert ev.metrics["observed_precision"] == 1.0


def test_commentary_naming_an_unknown_step_is_refused() -> None:
    with pytest.raises(ValueError, match="'o99' is not an observed step"):
        correct(align(EXPECTED, _obs()), EXPECTED, Corrections(commentary=["o99"]))


def test_later_corrections_replace_earlier_decisions_about_the_same_step() -> None:
    first = Corrections(pair=[("check_window", "o3")], commentary=["o2"])
    later = first.merged(Corrections(commentary=["o3"], pair=[("verify_owner", "o2")]))
    assert later.pair == [("verify_owner", "o2")]
    assert later.commentary == ["o3"]
    undone = later.merged(Corrections(unpair=[("verify_owner", "o2")]))
    assert undone.pair == [] and undone.unpair == [("verify_owner", "o2")]
    assert not Corrections.from_data(None)


def test_overlay_flags_and_counts_weak_pairings_in_token_mode() -> None:
    obs = _obs()
    ev = evaluate_detailed(EXPECTED, obs, mode="token")
    p = overlay_payload(ev, obs)
    weak = [o["id"] for o in p["observed"] if o["weak"]]
    assert p["weak"] == len(weak)
    for o in p["observed"]:
        assert o["weak"] == (o["score"] is not None and o["score"] < 0.5)
    forced = evaluate_detailed(
        EXPECTED,
        obs,
        mode="token",
        corrections=Corrections(pair=[(e, o) for e, o in ev.alignment.pairs.items()]),
    )
    assert overlay_payload(forced, obs)["weak"] == 0
