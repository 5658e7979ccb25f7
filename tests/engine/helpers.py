"""Helpers of the engine tests: the refund-mini example and tiny crafted contracts."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2] / "matching" / "data"


def refund_contract_doc() -> dict[str, Any]:
    return json.loads((DATA / "refund-mini.json").read_text("utf-8"))


def refund_observed_doc() -> dict[str, Any]:
    return json.loads((DATA / "refund-mini-observed-q1.json").read_text("utf-8"))


def make_contract(
    nodes: list[dict[str, Any]],
    edges: list[dict[str, str]] | tuple[()] = (),
    invariants: list[dict[str, Any]] | tuple[()] = (),
    queries: list[dict[str, Any]] | tuple[()] = (),
) -> dict[str, Any]:
    """A contract document with one artifact line per node and per invariant.

    Node dicts need ``id`` (``type`` defaults to ``action``, ``label`` to a phrase made
    from the id, ``required`` to true); evidence is that node's own line unless given.
    """
    lines: list[str] = []
    spans = []
    pos = 0
    items = [*nodes, *invariants]
    for item in items:
        body = f"Line for {item['id'].replace('_', ' ')}."
        spans.append({"start": pos, "end": pos + len(body), "quote": body})
        lines.append(body)
        pos += len(body) + 1
    out_nodes = []
    for n, sp in zip(nodes, spans, strict=False):
        d: dict[str, Any] = {
            "id": n["id"],
            "type": "action",
            "label": "Do " + n["id"].replace("_", " "),
            "required": True,
            "evidence": [sp],
        }
        d.update(n)
        out_nodes.append(d)
    out_inv = []
    for inv, sp in zip(invariants, spans[len(nodes) :], strict=True):
        d = {"id": inv["id"], "label": inv["id"], "evidence": [sp]}
        d.update(inv)
        out_inv.append(d)
    return {
        "format": "contracteval.contract/v1",
        "id": "crafted",
        "artifact": {"text": "\n".join(lines) + "\n"},
        "nodes": out_nodes,
        "edges": list(edges),
        "invariants": out_inv,
        "queries": list(queries),
    }


def decision_contract() -> dict[str, Any]:
    """intent > [first, gate (decision) > {yes > do_yes, no > do_no}, last]."""
    return make_contract(
        [
            {"id": "goal", "type": "intent"},
            {"id": "first", "parent": "goal"},
            {"id": "gate", "type": "decision", "parent": "goal"},
            {"id": "yes", "type": "branch_condition", "parent": "gate", "required": False},
            {"id": "do_yes", "parent": "yes"},
            {"id": "no", "type": "branch_condition", "parent": "gate", "required": False},
            {"id": "do_no", "parent": "no"},
            {"id": "last", "parent": "goal"},
        ],
        edges=[
            {"source": "gate", "target": "yes", "kind": "branches_to"},
            {"source": "gate", "target": "no", "kind": "branches_to"},
            {"source": "first", "target": "gate", "kind": "requires"},
        ],
    )


def mutate(doc: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(doc)
