"""Obligations conditional on an action (``meta.applies_if_action``): when the action
never happened they are ``not_applicable`` — neither an omission nor met, left out of
the metrics' denominators, listed in the report and drawn as such in the overlay; when
it happened they are judged as any obligation."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from matching.conditioning import condition
from matching.errors import ContractEvalError
from matching.evaluate import Evaluation, evaluate_detailed
from matching.formats import read_observed
from matching.model import Contract, observed_from_data
from matching.outcomes import obligation_outcomes
from matching.overlay import overlay_payload
from matching.schema_check import schema_errors
from matching.validate import load_contract

from .helpers import DATA

BASE = json.loads((DATA / "refund-mini.json").read_text())
OBSERVED = json.loads((DATA / "refund-mini-observed-q1.json").read_text())


def _contract(tmp_path, applies: Any = "approve_refund", *, extra: dict | None = None) -> Contract:
    """refund-mini with "ask the customer to confirm the refund" before approving it."""
    doc = copy.deepcopy(BASE)
    approve = next(n for n in doc["nodes"] if n["id"] == "approve_refund")
    consent = {
        "id": "ask_consent",
        "type": "action",
        "label": "Ask the customer to confirm the refund before issuing it",
        "required": True,
        "parent": "within_window",
        "evidence": approve["evidence"],
        "meta": {} if applies is None else {"applies_if_action": applies},
    }
    doc["nodes"].insert(doc["nodes"].index(approve), consent)
    doc["edges"].append({"source": "ask_consent", "target": "approve_refund", "kind": "enables"})
    if extra:
        doc["nodes"].append({**extra, "evidence": approve["evidence"]})
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    return load_contract(path)


def _observed(*, drop: tuple[str, ...] = (), consent: bool = False):
    """The clean q1 trace without the nodes of gold ``drop``, optionally with a consent step."""
    doc = copy.deepcopy(OBSERVED)
    doc["nodes"] = [n for n in doc["nodes"] if n["gold"] not in drop]
    if consent:
        line = "[assistant] Shall I refund the $59.00 to your card now?\n"
        at = doc["source"]["text"].index("[tool] issue_refund")
        doc["source"]["text"] = doc["source"]["text"][:at] + line + doc["source"]["text"][at:]
        for n in doc["nodes"]:
            for s in n["evidence"]:
                s.pop("quote", None)
                if s["start"] >= at:
                    s["start"], s["end"] = s["start"] + len(line), s["end"] + len(line)
        span = {"start": at, "end": at + len(line) - 1}
        doc["nodes"].append(
            {"id": "oc", "label": "Asked to confirm", "evidence": [span], "gold": "ask_consent"}
        )
        for n in doc["nodes"]:
            n.pop("step", None)
        doc["nodes"].sort(key=lambda n: n["evidence"][0]["start"])
    return observed_from_data(doc)


def _evaluate(c: Contract, obs) -> Evaluation:
    return evaluate_detailed(condition(c, "q1"), obs, mode="oracle")


def _found(ev: Evaluation) -> list[tuple[str, str]]:
    return [(f["family"], f["location"]) for f in ev.failures]


def test_a_missing_confirmation_is_an_omission_when_the_agent_acts(tmp_path):
    ev = _evaluate(_contract(tmp_path), _observed())
    assert _found(ev) == [("omission", "ask_consent")]
    assert ev.not_applicable == [] and "not_applicable" not in ev.report()


def test_a_confirmation_is_not_applicable_when_the_agent_never_acts(tmp_path):
    ev = _evaluate(_contract(tmp_path), _observed(drop=("approve_refund",)))
    assert _found(ev) == [("omission", "approve_refund")]
    assert ev.status["ask_consent"] == "not_applicable"
    report = ev.report()
    assert report["not_applicable"] == ["ask_consent"]
    assert schema_errors(report, "report") == []
    # six required obligations, five met; the not-applicable one counts neither way
    assert report["metrics"]["required_recall"] == round(5 / 6, 6)


def test_without_the_condition_the_same_run_reports_the_confirmation_as_omitted(tmp_path):
    ev = _evaluate(_contract(tmp_path, None), _observed(drop=("approve_refund",)))
    assert ("omission", "ask_consent") in _found(ev)
    assert ev.report()["metrics"]["required_recall"] == round(5 / 7, 6)


def test_a_confirmation_asked_for_an_action_never_taken_is_not_applicable_not_met(tmp_path):
    ev = _evaluate(_contract(tmp_path), _observed(drop=("approve_refund",), consent=True))
    assert ev.status["ask_consent"] == "not_applicable"
    assert ev.observed_status["oc"] == "paired"  # the step is explained, not an extra action
    assert _found(ev) == [("omission", "approve_refund")]


def test_an_edge_with_a_not_applicable_end_is_left_out_of_edge_conformance(tmp_path):
    with_na = _evaluate(_contract(tmp_path), _observed(drop=("approve_refund",)))
    without = _evaluate(_contract(tmp_path, None), _observed(drop=("approve_refund",)))
    # refund-mini q1 has 5 ordered edges; the consent edge makes 6 unless it is n/a
    assert with_na.metrics["edge_conformance"] == round(2 / 5, 6)
    assert without.metrics["edge_conformance"] == round(2 / 6, 6)


def test_a_parent_is_derived_without_waiting_for_its_not_applicable_children(tmp_path):
    # "warn about the fee" applies only if store credit is offered: never, on q1
    extra = {
        "id": "warn_fee",
        "type": "action",
        "label": "Warn about the store credit fee",
        "required": True,
        "parent": "handle_refund",
        "meta": {"applies_if_action": ["offer_credit"]},
    }
    c = _contract(tmp_path, extra=extra)
    ev = _evaluate(c, _observed(consent=True))
    assert ev.verdict == "clean" and ev.not_applicable == ["warn_fee"]
    assert ev.status["handle_refund"] == "derived"
    assert set(ev.metrics.values()) == {1.0}


def test_the_overlay_draws_not_applicable_obligations_as_such(tmp_path):
    obs = _observed(drop=("approve_refund",))
    p = overlay_payload(_evaluate(_contract(tmp_path), obs), obs)
    [node] = [n for n in p["nodes"] if n["id"] == "ask_consent"]
    assert node["state"] == "not_applicable" and not node["satisfied"]
    assert p["counts"]["not_applicable"] == 1 and "not_applicable" in p["states"]


@pytest.mark.parametrize(
    ("applies", "says"),
    [
        ("no_such_node", "'no_such_node', which is not a node of the contract"),
        ("ask_consent", "cannot be conditional on its own action"),
        ([], "applies_if_action"),
    ],
)
def test_a_condition_naming_no_other_node_is_refused(tmp_path, applies, says):
    with pytest.raises(ContractEvalError) as err:
        _contract(tmp_path, applies)
    assert says in str(err.value)


def test_a_report_without_conditional_obligations_is_as_before():
    c = load_contract(DATA / "refund-mini.json")
    ev = _evaluate(c, read_observed(DATA / "refund-mini-observed-q1.json"))
    assert "not_applicable" not in ev.report() and ev.not_applicable == []


def test_analytics_count_a_not_applicable_obligation_neither_met_nor_missed(tmp_path):
    obs = _observed(drop=("approve_refund",))
    outcomes = obligation_outcomes(overlay_payload(_evaluate(_contract(tmp_path), obs), obs))
    assert "ask_consent" not in outcomes and outcomes["approve_refund"] == "x"
    acted = _observed()
    outcomes = obligation_outcomes(overlay_payload(_evaluate(_contract(tmp_path), acted), acted))
    assert outcomes["ask_consent"] == "x"


def test_token_mode_reads_the_condition_as_oracle_mode_does(tmp_path):
    obs = _observed(drop=("approve_refund",))
    ev = evaluate_detailed(condition(_contract(tmp_path), "q1"), obs, mode="token")
    assert ev.status["ask_consent"] == "not_applicable" and ev.not_applicable == ["ask_consent"]
    assert ("omission", "ask_consent") not in _found(ev)
