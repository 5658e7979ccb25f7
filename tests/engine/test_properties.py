"""Property tests on generated contracts and gold executions (matching.synth)."""

from __future__ import annotations

import copy
import json
import random
from functools import lru_cache
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matching.conditioning import condition
from matching.evaluate import METRICS, evaluate
from matching.formats import (
    Case,
    Contract,
    read_case,
    read_contract,
    read_expected,
    read_observed,
    read_query,
    read_report,
)
from matching.perturb import FAMILIES, perturb_case
from matching.synth import synth_contract, synth_execution
from matching.validate import audit_contract

FAST = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)

seeds = st.integers(min_value=0, max_value=10_000)
sizes = st.integers(min_value=8, max_value=32)
kinds = st.sampled_from(["trace", "response"])


@lru_cache(maxsize=256)
def contract(seed: int, size: int) -> Contract:
    return synth_contract(seed, nodes=size)


def gold(seed: int, size: int, qi: int, kind: str) -> tuple[Contract, Any, Any]:
    c = contract(seed, size)
    q = c.queries[qi % len(c.queries)]
    return c, q, synth_execution(c, q, seed, kind=kind)


def assert_metrics_in_range(report: dict[str, Any]) -> None:
    assert set(report["metrics"]) == set(METRICS)
    for name, value in report["metrics"].items():
        assert value is None or 0.0 <= value <= 1.0, (name, value)
    assert (report["verdict"] == "clean") == (report["failures"] == [])


@FAST
@given(seeds, sizes)
def test_a_generated_contract_is_audit_clean_and_round_trips(seed: int, size: int) -> None:
    c = contract(seed, size)
    audit = audit_contract(c.to_dict())
    assert audit.errors == [] and audit.warnings == []
    assert len(c.nodes) >= size
    assert read_contract(c.to_dict()).to_dict() == c.to_dict()
    for q in c.queries:
        assert read_query(q.to_dict()).to_dict() == q.to_dict()
        e = condition(c, q)
        assert read_expected(json.dumps(e.to_dict())) == e.to_dict()


@FAST
@given(seeds, sizes, st.integers(0, 2), kinds)
def test_a_gold_execution_is_clean_in_oracle_and_token_modes(
    seed: int, size: int, qi: int, kind: str
) -> None:
    c, q, obs = gold(seed, size, qi, kind)
    obs = read_observed(obs.to_dict())  # the document as written
    assert all(s.quote == obs.text[s.start : s.end] for n in obs.nodes for s in n.evidence)
    for mode in ("oracle", "token"):
        report = evaluate(c, q, obs, mode=mode)
        assert report["failures"] == [], (mode, report["failures"])
        assert set(report["metrics"].values()) <= {1.0, None}
        assert report["metrics"]["required_recall"] == 1.0
        assert read_report(copy.deepcopy(report)) == report


@FAST
@given(seeds, sizes, st.integers(0, 2), kinds, st.randoms(use_true_random=False))
def test_metrics_lie_in_the_unit_interval_or_are_null_on_arbitrary_damage(
    seed: int, size: int, qi: int, kind: str, rnd: random.Random
) -> None:
    c, q, obs = gold(seed, size, qi, kind)
    doc = obs.to_dict()
    ids = [n.id for n in c.nodes] + [None, "not-a-node"]
    doc["nodes"] = [n for n in doc["nodes"] if rnd.random() < 0.7]
    for n in doc["nodes"]:
        n["step"] = rnd.randrange(len(doc["nodes"]) + 1)
        if rnd.random() < 0.3:
            n["gold"] = rnd.choice(ids)
        if rnd.random() < 0.1:
            n["evidence"][0]["quote"] = "tampered"
    if rnd.random() < 0.3:
        doc["output"] = rnd.choice(["{}", "nope", '{"case_id": 1}'])
    doc["edges"] = []
    damaged = read_observed(doc)
    for mode in ("oracle", "token"):
        report = evaluate(c, q, damaged, mode=mode)
        assert_metrics_in_range(report)
        assert read_report(copy.deepcopy(report)) == report
        # dropped nodes are never used
        dropped = {d["id"] for d in report["dropped_observed"]}
        assert not dropped & {a["observed"] for a in report["alignment"]}
        assert not dropped & {f["location"] for f in report["failures"]}


@settings(FAST, max_examples=15)
@given(seeds, sizes, st.integers(0, 2), kinds, st.integers(0, 3))
def test_every_generated_perturbation_is_detected_and_localised_in_oracle_mode(
    seed: int, size: int, qi: int, kind: str, pseed: int
) -> None:
    c, q, obs = gold(seed, size, qi, kind)
    e = condition(c, q)
    clean = Case(f"{c.id}/{q.id}/clean", c.id, q.id, obs, True)
    made = {}
    for family in FAMILIES:
        case = perturb_case(c, clean, family, seed=pseed, expected=e)
        if case is None:
            continue
        made[family] = case
        case.id = f"{c.id}/{q.id}/{family}-1"
        assert (case.family, case.clean) == (family, False)
        back = read_case(json.dumps(case.to_dict()))
        text = back.observed.text
        for n in back.observed.nodes:
            for s in n.evidence:
                assert s.quote == text[s.start : s.end]
        report = evaluate(c, q, back.observed, mode="oracle")
        assert [(f["family"], f["location"]) for f in report["failures"]] == [
            (family, case.location)
        ]
        assert report["dropped_observed"] == []
        assert_metrics_in_range(report)
        steps = sorted({n.step for n in back.observed.nodes})
        assert steps == list(range(len(steps)))  # renumbered 0..n-1
    # the families a synthetic gold execution always admits
    assert {"omission", "extra_action", "invariant_violation"} <= set(made)
    if any(c.by_id[n].checked_output for n in e.nodes):
        assert "output_contract" in made
    if e.decisions:
        assert "wrong_branch" in made


@FAST
@given(seeds, sizes, st.integers(0, 2), kinds, st.randoms(use_true_random=False))
def test_reordering_the_observed_node_list_without_changing_steps_changes_nothing(
    seed: int, size: int, qi: int, kind: str, rnd: random.Random
) -> None:
    c, q, obs = gold(seed, size, qi, kind)
    doc = obs.to_dict()
    # some damage first, so extra actions, repeats and omissions are in the report too
    doc["nodes"] = [n for n in doc["nodes"] if rnd.random() < 0.8]
    if doc["nodes"]:
        twin = copy.deepcopy(rnd.choice(doc["nodes"]))
        twin["id"] = "twin"
        twin["step"] = len(doc["nodes"]) + 5
        doc["nodes"].append(twin)
    doc["edges"] = []
    shuffled = copy.deepcopy(doc)
    rnd.shuffle(shuffled["nodes"])
    for mode in ("oracle", "token"):
        a = evaluate(c, q, read_observed(doc), mode=mode)
        b = evaluate(c, q, read_observed(shuffled), mode=mode)
        assert a == b


@FAST
@given(seeds, sizes, st.integers(0, 2), kinds)
def test_a_synthetic_case_round_trips_through_writer_and_reader(
    seed: int, size: int, qi: int, kind: str
) -> None:
    c, q, obs = gold(seed, size, qi, kind)
    assert read_observed(obs.to_dict()).to_dict() == obs.to_dict()
    case = Case(f"{c.id}/{q.id}/clean", c.id, q.id, obs, True)
    assert read_case(json.dumps(case.to_dict())).to_dict() == case.to_dict()


@FAST
@given(seeds, sizes, st.integers(0, 2), kinds)
def test_synthesis_is_deterministic_for_a_seed(seed: int, size: int, qi: int, kind: str) -> None:
    c1 = synth_contract(seed, nodes=size)
    assert c1.to_dict() == contract(seed, size).to_dict()
    q = c1.queries[qi % len(c1.queries)]
    assert (
        synth_execution(c1, q, seed, kind=kind).to_dict()
        == synth_execution(contract(seed, size), q, seed, kind=kind).to_dict()
    )
