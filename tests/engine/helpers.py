"""Helpers of the engine tests: the refund-mini example and tiny crafted contracts."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "matching" / "data"


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


def edit_trace(
    doc: dict[str, Any],
    *,
    remove: tuple[str, ...] = (),
    move: tuple[str, str, str] | None = None,
    insert: tuple[str, str, dict[str, Any]] | None = None,
    append: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """Edit an observed trace whose nodes each quote one whole line, like an annotator.

    ``remove`` drops nodes with their lines; ``move=(id, "before"|"after", other)`` moves
    a node's line; ``insert=(after_id, line, node)`` adds a node quoting a new line;
    ``append=(id, text)`` extends a node's line. Spans, quotes and steps (text order)
    are recomputed; observed edges touching a removed node are dropped.
    """
    doc = copy.deepcopy(doc)
    text = doc["source"]["text"]
    lines = text.split("\n")
    starts, pos = [], 0
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1
    owner: dict[int, str] = {}
    nodes = {n["id"]: n for n in doc["nodes"]}
    for n in doc["nodes"]:
        (span,) = n["evidence"]
        i = starts.index(span["start"])
        assert span["end"] == starts[i] + len(lines[i]), "a node must quote one whole line"
        owner[i] = n["id"]
    rows: list[tuple[str, str | None]] = [(line, owner.get(i)) for i, line in enumerate(lines)]
    rows = [r for r in rows if r[1] not in remove]
    if move is not None:
        nid, where, other = move
        row = next(r for r in rows if r[1] == nid)
        rows.remove(row)
        at = next(i for i, r in enumerate(rows) if r[1] == other)
        rows.insert(at if where == "before" else at + 1, row)
    if insert is not None:
        after, line, node = insert
        at = next(i for i, r in enumerate(rows) if r[1] == after)
        rows.insert(at + 1, (line, node["id"]))
        nodes[node["id"]] = copy.deepcopy(node)
    if append is not None:
        nid, extra = append
        at = next(i for i, r in enumerate(rows) if r[1] == nid)
        rows[at] = (rows[at][0] + extra, nid)
    new_text = "\n".join(r[0] for r in rows)
    out_nodes, pos, step = [], 0, 0
    for line, nid in rows:
        if nid is not None:
            n = nodes[nid]
            n["evidence"] = [{"start": pos, "end": pos + len(line), "quote": line}]
            n["step"] = step
            step += 1
            out_nodes.append(n)
        pos += len(line) + 1
    kept = {n["id"] for n in out_nodes}
    doc["source"]["text"] = new_text
    doc["nodes"] = out_nodes
    doc["edges"] = [e for e in doc.get("edges", []) if e["source"] in kept and e["target"] in kept]
    return doc
