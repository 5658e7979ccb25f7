"""FORMAT.md §1 structural rules: each broken once, by a crafted document."""

from __future__ import annotations

from typing import Any

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from matching.errors import ContractEvalError
from matching.rules import _acyclic
from matching.validate import audit_contract, load_contract

from .helpers import decision_contract, make_contract, refund_contract_doc


def rules(doc: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(f.rule, f.path, f.node) for f in audit_contract(doc).errors]


def assert_rejected(doc: dict[str, Any], rule: str, path: str, node: str | None) -> None:
    """The audit names exactly this error, and load_contract raises it."""
    assert rules(doc) == [(rule, path, node)]
    with pytest.raises(ContractEvalError) as info:
        load_contract(doc, file="crafted.json")
    err = info.value
    assert (err.rule, err.path, err.file) == (rule, path, "crafted.json")
    assert str(err).startswith(f"crafted.json: {path}: ")


def test_refund_mini_and_the_crafted_base_documents_are_clean() -> None:
    for doc in (refund_contract_doc(), decision_contract()):
        audit = audit_contract(doc)
        assert audit.errors == [] and audit.warnings == []
        load_contract(doc)


def test_unknown_parent_is_an_error_on_that_node() -> None:
    doc = decision_contract()
    doc["nodes"][1]["parent"] = "ghost"
    assert_rejected(doc, "unknown-parent", "$.nodes[1].parent", "first")


@pytest.mark.parametrize("end", ["source", "target"])
def test_unknown_edge_endpoint_is_an_error_naming_the_end(end: str) -> None:
    doc = decision_contract()
    doc["edges"][2][end] = "ghost"
    assert_rejected(doc, "unknown-id", f"$.edges[2].{end}", "ghost")


def test_unknown_applies_to_is_an_error_on_the_invariant() -> None:
    doc = make_contract(
        [{"id": "goal", "type": "intent"}],
        invariants=[{"id": "polite", "applies_to": ["goal", "ghost"]}],
    )
    assert_rejected(doc, "unknown-id", "$.invariants[0].applies_to[1]", "polite")


def test_cycle_in_parent_is_an_error() -> None:
    doc = make_contract(
        [
            {"id": "goal", "type": "intent"},
            {"id": "a", "parent": "b"},
            {"id": "b", "parent": "a"},
        ]
    )
    found = rules(doc)
    assert [r for r, _, _ in found] == ["parent-cycle"]
    assert found[0][2] == "a" and found[0][1] == "$.nodes[1].parent"
    with pytest.raises(ContractEvalError, match="cycle"):
        load_contract(doc)


def test_cycle_among_requires_and_enables_is_an_error() -> None:
    doc = decision_contract()
    doc["edges"].append({"source": "last", "target": "first", "kind": "requires"})
    doc["edges"].append({"source": "first", "target": "last", "kind": "enables"})
    found = rules(doc)
    assert [(r, p) for r, p, _ in found] == [("order-cycle", "$.edges")]
    assert found[0][2] in {"first", "last"}


def test_produces_and_branches_to_edges_never_make_an_order_cycle() -> None:
    doc = decision_contract()
    doc["edges"].append({"source": "last", "target": "first", "kind": "produces"})
    doc["edges"].append({"source": "first", "target": "last", "kind": "enables"})
    assert rules(doc) == []


def test_branches_to_from_a_non_decision_is_an_error() -> None:
    doc = decision_contract()
    doc["edges"].append({"source": "first", "target": "yes", "kind": "branches_to"})
    assert_rejected(doc, "branches-to", "$.edges[3]", "first")


def test_branches_to_to_another_decisions_outcome_is_an_error() -> None:
    doc = decision_contract()
    doc["nodes"].append({**doc["nodes"][2], "id": "gate2", "label": "Second gate"})
    doc["nodes"].append({**doc["nodes"][3], "id": "yes2", "parent": "gate2", "label": "Y2"})
    doc["nodes"].append({**doc["nodes"][5], "id": "no2", "parent": "gate2", "label": "N2"})
    doc["edges"] += [
        {"source": "gate2", "target": "yes2", "kind": "branches_to"},
        {"source": "gate2", "target": "no2", "kind": "branches_to"},
    ]
    assert rules(doc) == []
    doc["edges"].append({"source": "gate2", "target": "yes", "kind": "branches_to"})
    assert_rejected(doc, "branches-to", "$.edges[5]", "gate2")


def test_decision_with_fewer_than_two_outcomes_is_an_error() -> None:
    doc = decision_contract()
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] not in ("no", "do_no")]
    doc["edges"] = [e for e in doc["edges"] if e["target"] != "no"]
    assert_rejected(doc, "decision-outcomes", "$.nodes[2]", "gate")


def test_outcome_without_branches_to_edge_is_an_error() -> None:
    doc = decision_contract()
    doc["edges"] = [e for e in doc["edges"] if e["target"] != "no"]
    assert_rejected(doc, "branch-without-edge", "$.nodes[5]", "no")


def test_span_outside_the_text_is_an_error() -> None:
    doc = decision_contract()
    size = len(doc["artifact"]["text"])
    doc["nodes"][4]["evidence"] = [{"start": size - 3, "end": size + 5}]
    assert_rejected(doc, "span-out-of-range", "$.nodes[4].evidence[0]", "do_yes")


def test_empty_span_is_an_error() -> None:
    doc = decision_contract()
    doc["nodes"][4]["evidence"] = [{"start": 4, "end": 4}]
    assert_rejected(doc, "span-out-of-range", "$.nodes[4].evidence[0]", "do_yes")


def test_wrong_quote_is_an_error() -> None:
    doc = decision_contract()
    doc["nodes"][4]["evidence"][0]["quote"] = "something else"
    assert_rejected(doc, "quote-mismatch", "$.nodes[4].evidence[0]", "do_yes")


def test_invariant_span_is_checked_like_a_node_span() -> None:
    doc = make_contract([{"id": "goal", "type": "intent"}], invariants=[{"id": "polite"}])
    doc["invariants"][0]["evidence"][0]["quote"] = "nope"
    assert_rejected(doc, "quote-mismatch", "$.invariants[0].evidence[0]", "polite")


def test_node_without_evidence_is_an_error() -> None:
    doc = decision_contract()
    doc["nodes"][1]["evidence"] = []
    assert_rejected(doc, "no-evidence", "$.nodes[1]", "first")


def test_schema_violation_in_a_contract_names_the_json_path_and_rule() -> None:
    doc = decision_contract()
    del doc["nodes"][3]["label"]
    assert rules(doc) == [("required", "$.nodes[3]", "yes")]
    with pytest.raises(ContractEvalError) as info:
        load_contract(doc)
    assert (info.value.path, info.value.rule) == ("$.nodes[3]", "required")
    assert "'label' is a required property" in str(info.value)


def test_duplicate_node_id_is_an_error() -> None:
    doc = decision_contract()
    doc["nodes"][7]["id"] = "first"
    assert ("unique-id", "$.nodes[7].id", "first") in rules(doc)
    with pytest.raises(ContractEvalError, match="duplicate id 'first'"):
        load_contract(doc)


def test_unresolvable_embedded_query_is_an_error() -> None:
    doc = decision_contract()
    doc["queries"] = [{"id": "q1", "branches": {}}]
    found = rules(doc)
    assert found == [("unresolved-decision", "$.queries[0]", "q1")]


# --------------------------------------------------------------------------- warnings


def warnings(doc: dict[str, Any]) -> list[tuple[str, str | None]]:
    audit = audit_contract(doc)
    assert audit.errors == []
    return [(w.rule, w.node) for w in audit.warnings]


def test_required_node_without_intent_ancestor_is_a_warning_not_an_error() -> None:
    doc = decision_contract()
    doc["nodes"].append(
        {
            "id": "orphan",
            "type": "action",
            "label": "Orphan step",
            "required": True,
            "evidence": doc["nodes"][0]["evidence"],
        }
    )
    assert warnings(doc) == [("no-intent-ancestor", "orphan")]
    load_contract(doc)  # still loads


def test_identical_labels_are_a_warning() -> None:
    doc = decision_contract()
    doc["nodes"][7]["label"] = doc["nodes"][1]["label"]
    assert warnings(doc) == [("duplicate-label", "last")]


def test_required_node_below_any_is_a_warning() -> None:
    doc = make_contract(
        [
            {"id": "goal", "type": "intent"},
            {"id": "verify", "parent": "goal", "combine": "any"},
            {"id": "by_login", "parent": "verify", "required": False},
            {"id": "by_password", "parent": "verify", "required": True},
        ]
    )
    assert warnings(doc) == [("required-below-any", "by_password")]


# --------------------------------------------------------------------------- coverage


def test_coverage_is_the_share_of_non_blank_lines_touched_by_a_span() -> None:
    doc = make_contract([{"id": "goal", "type": "intent"}, {"id": "a", "parent": "goal"}])
    doc["artifact"]["text"] += "\n   \nAn untouched line.\nAnother one.\n"
    audit = audit_contract(doc)
    assert (audit.lines, audit.covered_lines, audit.coverage) == (4, 2, 0.5)


def test_an_invariant_span_counts_toward_coverage() -> None:
    doc = make_contract([{"id": "goal", "type": "intent"}], invariants=[{"id": "polite"}])
    assert audit_contract(doc).coverage == 1.0
    doc["invariants"] = []
    assert audit_contract(doc).coverage == 0.5


def test_refund_mini_coverage_counts_its_untouched_heading() -> None:
    audit = audit_contract(refund_contract_doc())
    # 10 non-blank lines: the heading is the only one no span touches.
    assert (audit.lines, audit.covered_lines) == (10, 9)
    assert audit.coverage == 0.9


@given(st.lists(st.tuples(st.sampled_from("abcdefg"), st.sampled_from("abcdefg")), max_size=14))
def test_the_linear_cycle_check_agrees_with_networkx(links: list[tuple[str, str]]) -> None:
    assert _acyclic(links) == nx.is_directed_acyclic_graph(nx.DiGraph(links))
