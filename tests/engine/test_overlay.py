"""The overlay payload (matching/overlay.py): node states, edges, observed links and failure
targets on the refund-mini example and its hand-made perturbations; JSON-serialisable;
user text carried raw."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from matching.conditioning import condition
from matching.evaluate import evaluate_detailed
from matching.formats import read_observed
from matching.overlay import OVERLAY, STATES, overlay_payload
from matching.synth import synth_contract, synth_execution
from matching.validate import load_contract

from .helpers import edit_trace, refund_contract_doc, refund_observed_doc

MODES = ("oracle", "token")
EXTRA_LINE = "[assistant] I've also signed you up for our weekly newsletter."
XSS = "<script>alert(1)</script>"


def payload(
    obs_doc: dict[str, Any], mode: str = "token", contract_doc: dict[str, Any] | None = None
) -> dict[str, Any]:
    contract = load_contract(contract_doc or refund_contract_doc())
    obs = read_observed(obs_doc)
    return overlay_payload(evaluate_detailed(condition(contract, "q1"), obs, mode=mode), obs)


def states(p: dict[str, Any]) -> dict[str, str]:
    return {n["id"]: n["state"] for n in p["nodes"]}


def observed(p: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {o["id"]: o for o in p["observed"]}


def failures(p: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["family"], f["location"]) for f in p["failures"]]


def wrong_branch_doc() -> dict[str, Any]:
    return edit_trace(
        refund_observed_doc(),
        remove=("o4",),
        insert=(
            "o3",
            "[assistant] I must decline the refund because the window has passed.",
            {"id": "w1", "label": "Declined the refund", "gold": "decline_refund", "evidence": []},
        ),
    )


def extra_doc() -> dict[str, Any]:
    node = {"id": "x1", "label": "Subscribed the customer to the newsletter", "gold": None}
    return edit_trace(refund_observed_doc(), insert=("o2", EXTRA_LINE, {**node, "evidence": []}))


@pytest.mark.parametrize("mode", MODES)
def test_clean_every_declared_node_has_its_state(mode: str) -> None:
    p = payload(refund_observed_doc(), mode)
    assert p["format"] == OVERLAY and p["verdict"] == "clean" and p["failures"] == []
    assert states(p) == {
        "handle_refund": "derived",
        "lookup_order": "direct",
        "verify_owner": "direct",
        "check_window": "direct",
        "within_window": "derived",
        "approve_refund": "direct",
        "outside_window": "inactive_branch",
        "decline_refund": "inactive_branch",
        "offer_credit": "inactive_branch",
        "confirm_outcome": "direct",
        "reply_json": "passed",
    }
    assert set(p["states"]) == set(STATES) and sum(p["counts"].values()) == 11
    by_id = {n["id"]: n for n in p["nodes"]}
    assert by_id["outside_window"]["branch_of"] == "check_window"
    assert by_id["check_window"]["chosen_outcome"] == "within_window"
    assert by_id["verify_owner"]["observed"] == [{"id": "o2", "relation": "pairs"}]
    assert by_id["verify_owner"]["pos"] == [1, 1] and by_id["decline_refund"]["pos"] is None
    assert by_id["approve_refund"]["parent"] == "within_window"
    assert by_id["approve_refund"]["depth"] == 3
    assert by_id["verify_owner"]["explicit"] and by_id["verify_owner"]["required"]
    art = p["artifact"]["text"]
    (span,) = by_id["lookup_order"]["spans"]
    assert art[span["start"] : span["end"]].startswith("Look up the order")
    assert [(o["id"], o["status"], o["expected"]) for o in p["observed"]] == [
        ("o1", "paired", "lookup_order"),
        ("o2", "paired", "verify_owner"),
        ("o3", "paired", "check_window"),
        ("o4", "paired", "approve_refund"),
        ("o5", "paired", "confirm_outcome"),
    ]
    assert p["metrics"] == {k: 1.0 for k in p["metrics"]}
    assert p["mode"] == mode


def test_edges_by_kind_with_active_flags() -> None:
    p = payload(refund_observed_doc())
    edges = {e["id"]: e for e in p["edges"]}
    assert edges["check_window->outside_window"] == {
        "id": "check_window->outside_window",
        "source": "check_window",
        "target": "outside_window",
        "kind": "branches_to",
        "active": False,
        "ordering_violation": False,
    }
    assert edges["lookup_order->check_window"]["kind"] == "requires"
    assert edges["lookup_order->check_window"]["active"]
    assert edges["confirm_outcome->reply_json"]["kind"] == "produces"
    assert not any(e["ordering_violation"] for e in p["edges"])


@pytest.mark.parametrize("mode", MODES)
def test_omission_marks_the_node_and_points_the_failure_at_it(mode: str) -> None:
    p = payload(edit_trace(refund_observed_doc(), remove=("o2",)), mode)
    assert states(p)["verify_owner"] == "omitted"
    assert p["failures"] == [
        {
            "family": "omission",
            "location": "verify_owner",
            "detail": p["failures"][0]["detail"],
            "nodes": ["verify_owner"],
            "edges": [],
            "observed": [],
            "invariants": [],
        }
    ]
    assert "o2" not in observed(p)
    assert p["counts"]["omitted"] == 1


@pytest.mark.parametrize("mode", MODES)
def test_wrong_branch_marks_the_decision_the_folded_step_and_the_inactive_target(
    mode: str,
) -> None:
    p = payload(wrong_branch_doc(), mode)
    assert failures(p) == [("wrong_branch", "check_window")]
    s = states(p)
    assert s["check_window"] == "wrong_branch"  # the decision that has the failure
    assert s["approve_refund"] == "wrong_branch"  # folded into it
    assert s["decline_refund"] == "inactive_branch"
    w1 = observed(p)["w1"]
    assert (w1["status"], w1["expected"], w1["relation"]) == (
        "wrong_branch",
        "decline_refund",
        "wrong_branch",
    )
    (f,) = p["failures"]
    assert f["observed"] == ["w1"]
    assert f["nodes"][0] == "check_window"
    assert {"decline_refund", "approve_refund"} <= set(f["nodes"])
    by_id = {n["id"]: n for n in p["nodes"]}
    assert by_id["decline_refund"]["observed"] == [{"id": "w1", "relation": "wrong_branch"}]
    assert by_id["check_window"]["status"] in ("direct", "derived")  # the engine's own status


@pytest.mark.parametrize("mode", MODES)
def test_ordering_flags_the_edge_and_the_failure_points_at_edge_nodes_and_steps(
    mode: str,
) -> None:
    p = payload(edit_trace(refund_observed_doc(), move=("o2", "after", "o4")), mode)
    assert failures(p) == [("ordering", "verify_owner->approve_refund")]
    edges = {e["id"]: e for e in p["edges"]}
    assert edges["verify_owner->approve_refund"]["ordering_violation"]
    assert [e["id"] for e in p["edges"] if e["ordering_violation"]] == [
        "verify_owner->approve_refund"
    ]
    (f,) = p["failures"]
    assert f["edges"] == ["verify_owner->approve_refund"]
    assert f["nodes"] == ["verify_owner", "approve_refund"]
    assert f["observed"] == ["o2", "o4"]
    assert states(p)["verify_owner"] == "direct"  # satisfied, just late
    assert p["metrics"]["edge_conformance"] == 0.8


@pytest.mark.parametrize("mode", MODES)
def test_extra_action_is_an_unpaired_observed_node_the_failure_points_at(mode: str) -> None:
    p = payload(extra_doc(), mode)
    assert failures(p) == [("extra_action", "x1")]
    x1 = observed(p)["x1"]
    assert (x1["status"], x1["expected"], x1["relation"], x1["score"]) == (
        "extra",
        None,
        None,
        None,
    )
    (span,) = x1["spans"]
    assert p["trace"]["text"][span["start"] : span["end"]] == EXTRA_LINE
    assert p["failures"][0]["observed"] == ["x1"]
    assert all(s in ("direct", "derived", "passed", "inactive_branch") for s in states(p).values())


def test_invariant_and_output_failures_point_at_their_elements() -> None:
    doc = edit_trace(refund_observed_doc(), append=("o5", " The card is 4111 1111 1111 1111."))
    doc["output"] = json.dumps({"order_id": "1042"})
    p = payload(doc, "oracle")
    assert failures(p) == [
        ("invariant_violation", "no_full_card"),
        ("output_contract", "reply_json"),
    ]
    assert p["failures"][0]["invariants"] == ["no_full_card"]
    assert p["failures"][1]["nodes"] == ["reply_json"]
    assert states(p)["reply_json"] == "failed"
    (inv,) = p["invariants"]
    assert inv["violated"] and inv["score"] == 0.0 and inv["judged"] and inv["active"]
    assert p["trace"]["output"] == '{"order_id": "1042"}'


def test_a_repeat_points_at_the_node_it_repeats() -> None:
    doc = edit_trace(
        refund_observed_doc(),
        insert=(
            "o1",
            '[tool] lookup_order(order_id="1042")',
            {"id": "r1", "label": "Looked up the order", "gold": "lookup_order", "evidence": []},
        ),
    )
    p = payload(doc, "oracle")
    r1 = observed(p)["r1"]
    assert (r1["status"], r1["expected"], r1["relation"]) == ("repeat", "lookup_order", "repeats")
    by_id = {n["id"]: n for n in p["nodes"]}
    assert {"id": "r1", "relation": "repeats"} in by_id["lookup_order"]["observed"]


def test_dropped_observed_nodes_are_listed_not_drawn() -> None:
    doc = refund_observed_doc()
    doc["nodes"][4]["evidence"][0]["quote"] = "not what the text says"
    p = payload(doc, "oracle")
    assert p["dropped"] == [
        {"id": "o5", "reason": "every span's quote differs from the source text"}
    ]
    assert "o5" not in observed(p)


def test_pruned_nodes_outside_any_active_decision() -> None:
    doc = refund_contract_doc()
    art = doc["artifact"]["text"]
    doc["nodes"].append(
        {
            "id": "handle_exchange",
            "type": "intent",
            "label": "Handle an exchange",
            "required": True,
            "evidence": [{"start": 0, "end": 21}],
        }
    )
    assert art[0:21] == "# Refunds and returns"
    contract = load_contract(doc)
    obs = read_observed(refund_observed_doc())
    p = overlay_payload(evaluate_detailed(condition(contract, "q1"), obs), obs)
    assert states(p)["handle_exchange"] == "pruned"
    assert states(p)["outside_window"] == "inactive_branch"


def test_user_text_is_carried_raw_and_the_payload_is_json() -> None:
    cdoc = refund_contract_doc()
    cdoc["artifact"]["text"] += f"\n{XSS} & <b>bold</b>\n"
    cdoc["nodes"][1]["label"] = f"Look up the order {XSS}"
    odoc = copy.deepcopy(extra_doc())
    odoc = edit_trace(odoc, append=("x1", f" {XSS}"))
    odoc["nodes"][1]["label"] = f"<img src=x onerror=alert(2)> {XSS}"
    p = payload(odoc, "oracle", cdoc)
    text = json.dumps(p)
    back = json.loads(text)
    assert back == p
    assert XSS in p["artifact"]["text"] and "&lt;" not in p["artifact"]["text"]
    assert XSS in p["trace"]["text"]
    assert {n["id"]: n["label"] for n in p["nodes"]}["lookup_order"].endswith(XSS)
    assert observed(p)["o2"]["label"].startswith("<img src=x")


def test_a_300_node_synthetic_contract_gives_a_consistent_payload() -> None:
    c = synth_contract(2, nodes=300)
    q = c.queries[0]
    e = condition(c, q)
    obs = synth_execution(c, q, 2, kind="trace", expected=e)
    p = overlay_payload(evaluate_detailed(e, obs, mode="oracle"), obs)
    json.dumps(p)
    assert len(p["nodes"]) == len(c.nodes) >= 300
    ids = {n["id"] for n in p["nodes"]}
    assert all(e["source"] in ids and e["target"] in ids for e in p["edges"])
    assert all(n["parent"] is None or n["parent"] in ids for n in p["nodes"])
    assert {n["id"] for n in p["nodes"] if n["active"]} == set(e.nodes)
    assert sum(p["counts"].values()) == len(c.nodes)
    assert p["verdict"] == "clean"
    assert all(n["state"] in STATES for n in p["nodes"])
