"""A contract's exported document in two steps: :class:`ExportBase` (everything the
export shows, for every node, rejected or not) and :meth:`ExportBase.document` (the
document once the rejected nodes are left out).

The split is what lets a review be audited without reading the contract again: a
review changes only which nodes are rejected, so the base read before it still holds
(the content revision, ``Contract.revision - Contract.review_revision``, says when it
does not), and the new document is the old
base with the new set of rejected nodes. Both the fresh export and that cached path go
through the same two functions, so they cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .contracts import ContractRows

CONTRACT_FORMAT = "contracteval.contract/v1"
# Where an exported contract carries its tool catalogue (the first root node's meta).
TOOLS_KEY = "tools"


@dataclass
class ExportBase:
    """The export of every node. ``nodes`` are the node documents with ``parent`` the
    node's own parent (kept or not) and no tool catalogue; ``edges`` are ``(source,
    target, kind)`` ids; ``invariants`` are the invariant documents with ``applies_to``
    naming every node it applies to. Plain data: it is cached (pickled) as it is."""

    head: dict[str, Any]  # format, id, title, domain, artifact
    nodes: list[dict[str, Any]]
    edges: list[tuple[str, str, str]]
    invariants: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    catalogue: list[Any]

    def document(self, rejected: Collection[str]) -> dict[str, Any]:
        """The ``contracteval.contract/v1`` document without the nodes of ``rejected``
        (ids): a node below a rejected node hangs from its nearest kept ancestor, and
        edges and ``applies_to`` entries that name a rejected node are dropped. Each
        node, edge, invariant and query is a new dict (their values are the base's), so
        replacing a key of the document leaves the base as it was."""
        rejected = frozenset(rejected)
        parent_of = {n["id"]: n["parent"] for n in self.nodes} if rejected else {}

        def exported_parent(parent: str | None) -> str | None:
            seen: set[str] = set()
            while parent is not None and parent in rejected and parent not in seen:
                seen.add(parent)  # a cycle of rejected nodes leaves no parent
                parent = parent_of[parent]
            return None if parent in rejected else parent

        nodes = [
            {**n, "parent": exported_parent(n["parent"])} if n["parent"] in rejected else {**n}
            for n in self.nodes
            if n["id"] not in rejected
        ]
        _attach_catalogue(nodes, self.catalogue)
        doc = dict(self.head)
        doc["nodes"] = nodes
        doc["edges"] = [
            {"source": s, "target": t, "kind": k}
            for s, t, k in self.edges
            if s not in rejected and t not in rejected
        ]
        doc["invariants"] = [
            {**inv, "applies_to": [x for x in inv["applies_to"] if x not in rejected]}
            for inv in self.invariants
        ]
        doc["queries"] = [dict(q) for q in self.queries]
        return doc


def _attach_catalogue(nodes: list[dict[str, Any]], catalogue: list[Any]) -> None:
    """Put the tool catalogue in the first root node's ``meta.tools``: the format has no
    contract-level meta, and a node's meta is free-form (docs/engine.md)."""
    if not catalogue:
        return
    root = next((n for n in nodes if n["parent"] is None), None)
    if root is not None:
        root["meta"] = {**root["meta"], TOOLS_KEY: catalogue}


def export_base(rows: ContractRows) -> ExportBase:
    """The :class:`ExportBase` of all the rows of a contract."""
    c, text = rows.contract, rows.text
    ids = {n.pk: n.node_id for n in rows.nodes}
    head: dict[str, Any] = {"format": CONTRACT_FORMAT, "id": c.key}
    if c.title:
        head["title"] = c.title
    if c.domain:
        head["domain"] = c.domain
    artifact: dict[str, Any] = {"text": text}
    if c.artifact.media_type:
        artifact["media_type"] = c.artifact.media_type
    head["artifact"] = artifact
    nodes = [
        {
            "id": n.node_id,
            "type": n.type,
            "label": n.label,
            "description": n.description,
            "required": n.required,
            "explicit": n.explicit,
            "combine": n.combine,
            "parent": None if n.parent_id is None else ids[n.parent_id],
            "evidence": [
                {"start": s.start, "end": s.end, "quote": text[s.start : s.end]}
                for s in rows.spans.get(n.pk, [])
            ],
            "meta": n.meta,
        }
        for n in rows.nodes
    ]
    invariants = []
    for inv in rows.invariants:
        d: dict[str, Any] = {
            "id": inv.inv_id,
            "label": inv.label,
            "description": inv.description,
            "evidence": [
                {"start": s.start, "end": s.end, "quote": text[s.start : s.end]}
                for s in rows.invariant_spans.get(inv.pk, [])
            ],
            "applies_to": [ids[pk] for pk in rows.applies_to.get(inv.pk, [])],
        }
        if inv.machine_check is not None:
            d["check"] = inv.machine_check
        invariants.append(d)
    return ExportBase(
        head=head,
        nodes=nodes,
        edges=[(ids[e.source_id], ids[e.target_id], e.kind) for e in rows.edges],
        invariants=invariants,
        queries=[
            {"id": q.query_id, "text": q.text, "intents": q.intents, "branches": q.branches}
            for q in rows.queries
        ],
        catalogue=c.tool_catalogue,
    )


def rejected_ids(rows: ContractRows) -> set[str]:
    """The ids of the rows' rejected nodes."""
    return {n.node_id for n in rows.nodes if n.is_rejected}
