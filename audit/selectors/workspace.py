"""Reads for the workspace page: the outline, the artifact cut into highlighted pieces,
a node's detail, the audit history, and the query preview. Each works on the rows of
:func:`audit.selectors.contracts.load_contract_rows`."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from matching.conditioning import Expected, condition
from matching.errors import ContractEvalError
from matching.formats import contract_from_data

from ..models import (
    AuditRecord,
    Contract,
    ContractStatus,
    Edge,
    Invariant,
    Node,
    NodeType,
    ProposalRun,
    ReviewStatus,
)
from .audits import cached_audit
from .contracts import ContractRows, document_from_rows

if TYPE_CHECKING:
    from matching.validate import Audit

HISTORY_LIMIT = 100


@dataclass
class OutlineRow:
    node: Node
    depth: int
    children: int


def outline_order(links: Sequence[tuple[int, int | None]]) -> list[tuple[int, int, int]]:
    """``(pk, depth, children)`` of nodes given as ``(pk, parent pk)`` in declaration
    order, in hierarchy order (depth-first, declaration order among siblings); nodes
    of a parent cycle follow at depth 0."""
    known = {pk for pk, _ in links}
    kids: dict[int | None, list[int]] = defaultdict(list)
    for pk, parent in links:
        kids[parent if parent in known else None].append(pk)
    out: list[tuple[int, int, int]] = []
    seen: set[int] = set()
    stack: list[tuple[int, int]] = [(pk, 0) for pk in reversed(kids[None])]
    no_kids: list[int] = []
    while stack:
        pk, depth = stack.pop()
        if pk in seen:
            continue
        seen.add(pk)
        children = kids.get(pk, no_kids)  # most nodes are leaves: no list, no generator
        out.append((pk, depth, len(children)))
        for child in reversed(children):
            stack.append((child, depth + 1))
    out.extend((pk, 0, len(kids.get(pk, no_kids))) for pk, _ in links if pk not in seen)
    return out


def outline(rows: ContractRows) -> list[OutlineRow]:
    """Nodes in hierarchy order (see :func:`outline_order`)."""
    order = outline_order([(n.pk, n.parent_id) for n in rows.nodes])
    return [OutlineRow(rows.by_pk[pk], depth, kids) for pk, depth, kids in order]


def cut_text(text: str, marks: Sequence[tuple[int, int]]) -> list[tuple[int, int, list[int]]]:
    """``text`` cut at every mark boundary: ``(start, end, covering)`` for each piece,
    ``covering`` the indices of the marks over it (in mark order). Empty marks only cut.

    >>> cut_text("abcdef", [(1, 4), (2, 3)])
    [(0, 1, []), (1, 2, [0]), (2, 3, [0, 1]), (3, 4, [0]), (4, 6, [])]
    """
    bounds = sorted({0, len(text), *(m[0] for m in marks), *(m[1] for m in marks)})
    starts: dict[int, list[int]] = defaultdict(list)
    for i, m in enumerate(marks):
        if m[0] < m[1]:
            starts[m[0]].append(i)
    active: set[int] = set()
    out: list[tuple[int, int, list[int]]] = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        active.update(starts.get(a, ()))
        active = {i for i in active if marks[i][1] > a}
        out.append((a, b, sorted(active)))
    return out


@dataclass
class Segment:
    start: int
    text: str
    css: str = ""
    nodes: str = ""
    primary: str = ""


def segments(rows: ContractRows, window: tuple[int, int] | None = None) -> list[Segment]:
    """The artifact cut at every span boundary; each piece knows the nodes covering it.

    A piece takes its colour from the shortest non-rejected span over it (the most
    specific obligation), so nested evidence stays readable. With ``window``
    (``(lo, hi)``, both span boundaries) only the pieces inside it, cut as they are in
    the whole text.
    """
    text = rows.text
    marks: list[tuple[int, int, str, str, bool]] = []  # start, end, owner, css, rejected
    for n in rows.nodes:
        css = f"hl t-{n.type} s-{n.review_status}"
        for s in rows.spans.get(n.pk, []):
            marks.append((s.start, min(s.end, len(text)), n.node_id, css, n.is_rejected))
    for inv in rows.invariants:
        for s in rows.invariant_spans.get(inv.pk, []):
            marks.append(
                (s.start, min(s.end, len(text)), f"inv:{inv.inv_id}", "hl t-invariant", False)
            )
    if window is not None:
        marks = [m for m in marks if m[1] > window[0] and m[0] < window[1]]
    out: list[Segment] = []
    for a, b, active in cut_text(text, [(m[0], m[1]) for m in marks]):
        if window is not None and not window[0] <= a < window[1]:
            continue
        if not active:
            out.append(Segment(a, text[a:b]))
            continue
        covering = sorted(active, key=lambda i: (marks[i][4], marks[i][1] - marks[i][0], -i))
        best = marks[covering[0]]
        owners = " ".join(dict.fromkeys(marks[i][2] for i in covering))
        out.append(Segment(a, text[a:b], best[3], owners, best[2]))
    return out


@dataclass
class NodeDetail:
    node: Node
    spans: list[dict[str, Any]]
    parent: Node | None
    out_edges: list[tuple[Edge, Node]]
    in_edges: list[tuple[Edge, Node]]
    invariants: list[Invariant]
    children: list[Node]

    @property
    def meta_json(self) -> str:
        """The node's meta as JSON, as the edit form and the export write it."""
        return json.dumps(self.node.meta, ensure_ascii=False, sort_keys=True)


def node_detail(rows: ContractRows, node: Node) -> NodeDetail:
    text = rows.text
    return NodeDetail(
        node=node,
        spans=[
            {"pk": s.pk, "start": s.start, "end": s.end, "quote": text[s.start : s.end]}
            for s in rows.spans.get(node.pk, [])
        ],
        parent=rows.by_pk.get(node.parent_id) if node.parent_id else None,
        out_edges=[(e, rows.by_pk[e.target_id]) for e in rows.edges if e.source_id == node.pk],
        in_edges=[(e, rows.by_pk[e.source_id]) for e in rows.edges if e.target_id == node.pk],
        invariants=[inv for inv in rows.invariants if node.pk in rows.applies_to.get(inv.pk, [])],
        children=[n for n in rows.nodes if n.parent_id == node.pk],
    )


def find_node(rows: ContractRows, node_id: str | None) -> Node | None:
    if not node_id:
        return None
    return next((n for n in rows.nodes if n.node_id == node_id), None)


VERBS = {
    "confirm": "confirmed",
    "reject": "rejected",
    "edit": "edited",
    "create": "created",
    "delete": "deleted",
    "save": "saved",
    "import": "imported",
    "propose": "added proposals to",
    "request_proposals": "asked for proposals on",
    "add_evidence": "added evidence to",
    "remove_evidence": "removed evidence from",
    "status": "changed the status of",
    "new_version": "started a new version of",
    "undo": "undid the review of",
}


def _changes(before: Any, after: Any) -> list[tuple[str, Any, Any]]:
    """``(key, before, after)`` for every value that differs (whole values otherwise)."""
    if isinstance(before, dict) and isinstance(after, dict):
        keys = [*before, *(k for k in after if k not in before)]
        return [(k, before.get(k), after.get(k)) for k in keys if before.get(k) != after.get(k)]
    if isinstance(after, dict) and before is None:
        return [(k, None, v) for k, v in after.items()]
    if isinstance(before, dict) and after is None:
        return [(k, v, None) for k, v in before.items()]
    return [] if before == after else [("value", before, after)]


def history(contract: Contract, limit: int = HISTORY_LIMIT) -> list[AuditRecord]:
    """The contract's audit records, newest first, each with ``verb`` and ``changes``."""
    records = list(
        AuditRecord.objects.filter(contract=contract)
        .select_related("user")
        .order_by("-created_at", "-pk")[:limit]
    )
    for r in records:
        r.verb = VERBS.get(r.action, r.action.replace("_", " "))
        r.changes = _changes(r.before, r.after)
    return records


def latest_proposal_run(contract: Contract) -> ProposalRun | None:
    return ProposalRun.objects.filter(contract=contract).order_by("-created_at", "-pk").first()


def contract_versions(contract: Contract) -> list[Contract]:
    return list(
        Contract.objects.filter(project_id=contract.project_id, key=contract.key)
        .only("pk", "version", "status")
        .order_by("-version")
    )


def status_counts(statuses: Iterable[str]) -> dict[str, int]:
    """How many nodes have each review status."""
    counts = {s.value: 0 for s in ReviewStatus}
    for status in statuses:
        counts[status] += 1
    return counts


def can_mark_audited(contract: Contract, audit: Audit, counts: dict[str, int]) -> bool:
    return (
        contract.status != ContractStatus.AUDITED
        and audit.ok
        and counts[ReviewStatus.PROPOSED] == 0
        and sum(counts.values()) > counts[ReviewStatus.REJECTED]
    )


# ---------------------------------------------------------------------------- queries


@dataclass
class DecisionChoice:
    node: Node
    outcomes: list[Node]
    chosen: str
    needs_choice: bool


@dataclass
class QueryPreview:
    decisions: list[DecisionChoice]
    expected: Expected | None
    error: str
    branches: dict[str, str]  # the choices of the active decisions


def query_preview(
    rows: ContractRows, intents: Iterable[str], branches: dict[str, str]
) -> QueryPreview:
    """Which decisions a query activates, and its expected graph once they are chosen.

    The engine conditions the contract; an unresolved active decision is tried with its
    first outcome only to discover the decisions below it, and is shown as needing a choice.
    """
    doc = {**document_from_rows(rows), "queries": []}
    structure = cached_audit(doc)
    if structure.errors:
        return QueryPreview([], None, f"fix the {len(structure.errors)} audit error(s) first", {})
    parsed = contract_from_data(doc)
    by_id = {n.node_id: n for n in rows.nodes}
    trial = {k: v for k, v in branches.items() if v}
    needs: list[str] = []
    expected: Expected | None = None
    error = ""
    for _ in range(len(parsed.outcomes) + 1):
        try:
            expected = condition(
                parsed, {"id": "preview", "text": "", "intents": list(intents), "branches": trial}
            )
            break
        except ContractEvalError as exc:
            decision = exc.path.removeprefix("$.branches.")
            if exc.rule == "unresolved-decision" and decision in parsed.outcomes:
                needs.append(decision)
                trial[decision] = parsed.outcomes[decision][0]
                continue
            error = exc.message
            break
    if expected is None:
        return QueryPreview([], None, error, {})
    decisions = [
        DecisionChoice(
            node=by_id[d],
            outcomes=[by_id[o] for o in parsed.outcomes[d]],
            chosen="" if d in needs else pick,
            needs_choice=d in needs,
        )
        for d, pick in expected.decisions.items()
    ]
    chosen = {d.node.node_id: d.chosen for d in decisions if d.chosen}
    return QueryPreview(decisions, None if needs else expected, error, chosen)


def intent_choices(rows: ContractRows) -> list[Node]:
    return [n for n in rows.nodes if n.type == NodeType.INTENT and not n.is_rejected]


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "…"


def last_change(contract_id: int, object_type: str, object_id: str) -> str:
    """What the newest audit record of one object changed, for a conflict message:
    ``"by bob at 16:02 UTC: label 'A' → 'B'"`` (empty when there is no record)."""
    last = (
        AuditRecord.objects.filter(
            contract_id=contract_id, object_type=object_type, object_id=object_id
        )
        .select_related("user")
        .order_by("-created_at", "-pk")
        .first()
    )
    if last is None:
        return ""
    who = last.user.get_username() if last.user else "someone"
    changes = "; ".join(
        f"{key} {_short(old)} → {_short(new)}"
        for key, old, new in _changes(last.before, last.after)
    )
    when = last.created_at.strftime("%H:%M:%S UTC")
    verb = VERBS.get(last.action, last.action.replace("_", " "))
    return f"{verb} by {who} at {when}" + (f": {changes}" if changes else "")
