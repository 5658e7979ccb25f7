"""Agreement of double annotation: κ, α, span F1 and path-changing disagreements,
checked against values computed by hand."""

from __future__ import annotations

import pytest

from matching.agreement import (
    apply_decisions,
    cohen_kappa,
    compare,
    expected_diff,
    krippendorff_alpha,
    span_f1,
)
from matching.validate import load_contract

from .helpers import refund_contract_doc


def refund() -> dict:
    return load_contract(refund_contract_doc()).to_dict()


def all_confirmed(doc: dict) -> dict:
    return {n["id"]: {"action": "confirm"} for n in doc["nodes"]}


def test_kappa_matches_the_hand_computed_value_for_three_categories() -> None:
    # p_o = 3/4; p_e = (2*1 + 1*2 + 1*1)/16 = 5/16; κ = (12/16 - 5/16)/(11/16) = 7/11
    a = ["confirm", "reject", "confirm", "edit"]
    b = ["confirm", "reject", "reject", "edit"]
    assert cohen_kappa(a, b) == pytest.approx(7 / 11)


def test_kappa_of_a_balanced_two_by_two_table_is_point_six() -> None:
    # 8 of 10 agree, both say confirm 5 times: p_o = 0.8, p_e = 0.5, κ = 0.6
    a = ["c"] * 5 + ["r"] * 5
    b = ["c"] * 4 + ["r"] + ["r"] * 4 + ["c"]
    assert cohen_kappa(a, b) == pytest.approx(0.6)


def test_kappa_is_one_when_both_use_a_single_category_throughout() -> None:
    assert cohen_kappa(["confirm"] * 4, ["confirm"] * 4) == 1.0


def test_kappa_is_one_for_total_agreement_and_minus_one_for_total_opposition() -> None:
    assert cohen_kappa(["c", "r", "e"], ["c", "r", "e"]) == 1.0
    assert cohen_kappa(["c", "r"], ["r", "c"]) == -1.0


def test_kappa_is_not_measured_without_items_and_refuses_unequal_lengths() -> None:
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError, match="same items"):
        cohen_kappa(["c"], ["c", "r"])


def test_alpha_of_two_annotators_matches_the_coincidence_matrix_by_hand() -> None:
    # o_cc=2 o_rr=2 o_ee=2 o_cr=o_rc=1, n=8; D_o = 2/8, D_e = 2*(9+6+6)/56 = 3/4
    units = [["c", "c"], ["r", "r"], ["c", "r"], ["e", "e"]]
    assert krippendorff_alpha(units) == pytest.approx(1 - (2 / 8) / (3 / 4))


def test_alpha_of_three_annotators_matches_the_hand_computed_value() -> None:
    # o_cc = 3 + 1, o_cr = o_rc = 1, o_rr = 3, n = 9; D_o = 2/9, D_e = 40/72; α = 0.6
    units = [["c", "c", "c"], ["c", "c", "r"], ["r", "r", "r"]]
    assert krippendorff_alpha(units) == pytest.approx(0.6)


def test_alpha_skips_missing_values_and_units_without_a_pair() -> None:
    with_gaps = [["c", "c", None], ["r", None, "r"], ["c", None, None], ["c", "r", None]]
    assert krippendorff_alpha(with_gaps) == pytest.approx(
        krippendorff_alpha([["c", "c"], ["r", "r"], ["c", "r"]])
    )
    assert krippendorff_alpha([["c", None], [None, None]]) is None


def test_alpha_is_one_when_every_value_is_the_same_category() -> None:
    assert krippendorff_alpha([["c", "c"], ["c", "c", "c"]]) == 1.0


def test_span_f1_counts_characters_once_even_where_spans_overlap() -> None:
    assert span_f1([(0, 10)], [(5, 15)]) == pytest.approx(0.5)
    assert span_f1([(0, 10), (5, 10)], [(0, 10)]) == 1.0
    assert span_f1([(0, 4)], []) == 0.0
    assert span_f1([], []) is None


def test_rejecting_a_node_drops_its_edges_and_reparents_its_children() -> None:
    doc = refund()
    v = apply_decisions(doc, {"within_window": {"action": "reject"}})
    by_id = {n["id"]: n for n in v["nodes"]}
    assert "within_window" not in by_id
    assert by_id["approve_refund"]["parent"] == "check_window"
    assert all("within_window" not in (e["source"], e["target"]) for e in v["edges"])


def test_one_rejection_that_removes_a_required_step_is_path_changing() -> None:
    doc = refund()
    a = all_confirmed(doc)
    b = dict(a, approve_refund={"action": "reject"})
    report = compare(doc, {"ann": a, "bea": b})
    [d] = report.disagreements
    assert (d.node, d.path_changing, d.queries) == ("approve_refund", True, ["q1"])
    [diff] = report.query_diffs
    assert diff.query == "q1" and diff.only_a == ["approve_refund"]
    assert "approve_refund" in diff.required_changed
    assert report.path_changing == 1


def test_a_label_edit_is_a_disagreement_that_changes_no_expected_graph() -> None:
    doc = refund()
    a = all_confirmed(doc)
    b = dict(a, lookup_order={"action": "edit", "fields": {"label": "Find the order"}})
    report = compare(doc, {"ann": a, "bea": b})
    [d] = report.disagreements
    assert d.node == "lookup_order" and not d.path_changing
    assert report.query_diffs == []


def test_path_changing_disagreements_come_first() -> None:
    doc = refund()
    a = all_confirmed(doc)
    b = dict(
        a,
        lookup_order={"action": "edit", "fields": {"label": "Find it"}},
        offer_credit={"action": "reject"},
    )
    report = compare(doc, {"ann": a, "bea": b})
    assert [(d.node, d.path_changing) for d in report.disagreements] == [
        ("offer_credit", True),
        ("lookup_order", False),
    ]
    assert report.disagreements[0].queries == ["q2"]


def test_a_query_that_no_longer_conditions_is_a_changed_expected_graph() -> None:
    doc = refund()
    b = apply_decisions(doc, {"within_window": {"action": "reject"}})
    diff = expected_diff(doc, b, doc["queries"][0])
    assert diff.error_a is None and "within_window" in (diff.error_b or "")
    assert diff.changed and "approve_refund" in diff.nodes


def test_figures_of_two_annotators_match_hand_computed_values() -> None:
    doc = refund()
    a = all_confirmed(doc)
    b = dict(
        a,
        verify_owner={"action": "edit", "fields": {"type": "action", "evidence": [[149, 189]]}},
        reply_json={"action": "reject"},
    )
    r = compare(doc, {"ann": a, "bea": b})
    # decisions: 9 confirm/confirm, 1 confirm/edit, 1 confirm/reject over 11 nodes
    p_o, p_e = 9 / 11, (11 * 9) / 121
    assert r.kappa == pytest.approx((p_o - p_e) / (1 - p_e))
    # 10 nodes both kept, one with another type
    assert r.type_agreement == pytest.approx(9 / 10)
    # verify_owner's span shrinks from 81 to 40 characters; the other 9 spans agree
    kept = [n for n in doc["nodes"] if n["id"] != "reply_json"]
    total = sum(s["end"] - s["start"] for n in kept for s in n["evidence"])
    assert r.span_f1 == pytest.approx(2 * (total - 41) / (total + total - 41))
    # 8 edges against 7 (confirm_outcome -produces-> reply_json is gone)
    assert r.edge_agreement == pytest.approx(2 * 7 / 15)
    assert r.figures()["disagreements"] == 2


def test_three_annotators_report_alpha_over_all_of_them() -> None:
    doc = refund()
    a = all_confirmed(doc)
    c = dict(a, offer_credit={"action": "reject"})
    r = compare(doc, {"a": a, "b": a, "c": c})
    assert r.alpha == pytest.approx(
        krippendorff_alpha(
            [
                ["confirm"] * 3 if n["id"] != "offer_credit" else ["confirm", "confirm", "reject"]
                for n in doc["nodes"]
            ]
        )
    )
    assert [d.node for d in r.disagreements] == ["offer_credit"]
