"""Query conditioning (ALGORITHMS.md §1): G_D, q -> G_E(q).

The expected graph holds only the active obligations: the intents the query names,
their subtrees with the chosen outcome of every active decision, the prerequisites
that ``requires`` edges pull in (with their ancestors), and the applicable invariants.

>>> from pathlib import Path
>>> from matching.validate import load_contract
>>> c = load_contract(Path(__file__).parent / "data" / "refund-mini.json")
>>> e = condition(c, c.queries_by_id["q1"])
>>> e.pruned
['outside_window', 'decline_refund', 'offer_credit']
>>> e.decisions, len(e.edges), e.invariants
({'check_window': 'within_window'}, 6, ['no_full_card'])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .errors import ContractEvalError
from .formats import EXPECTED, Contract, Edge, Query, read_query


@dataclass(eq=False)
class Expected:
    """G_E(q). ``inactive`` maps every node of an inactive branch to its decision."""

    contract: Contract
    query: Query
    nodes: list[str]
    active: frozenset[str]
    edges: list[Edge]
    invariants: list[str]
    decisions: dict[str, str]
    pruned: list[str]
    required: list[str]
    inactive: dict[str, str] = field(default_factory=dict)

    @cached_property
    def preorder(self) -> list[str]:
        """Active nodes, parents before children (children in declaration order)."""
        c, active = self.contract, self.active
        out: list[str] = []
        stack = [n for n in reversed(self.nodes) if c.by_id[n].parent not in active]
        while stack:
            n = stack.pop()
            out.append(n)
            stack.extend(k for k in reversed(c.children[n]) if k in active)
        return out

    @cached_property
    def active_children(self) -> dict[str, list[str]]:
        c, active = self.contract, self.active
        return {n: [k for k in c.children[n] if k in active] for n in self.nodes}

    def subtree(self, root: str, *, include_self: bool = True) -> list[str]:
        """``root`` and its declared descendants (active or not), pre-order; cached."""
        key = (root, include_self)
        cache = self._subtrees
        if key not in cache:
            c = self.contract
            out = [root] if include_self else []
            stack = list(reversed(c.children[root]))
            while stack:
                n = stack.pop()
                out.append(n)
                stack.extend(reversed(c.children[n]))
            cache[key] = out
        return cache[key]

    @cached_property
    def _subtrees(self) -> dict[tuple[str, bool], list[str]]:
        return {}

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": EXPECTED,
            "contract": self.contract.id,
            "query": self.query.id,
            "nodes": list(self.nodes),
            "edges": [e.to_dict() for e in self.edges],
            "invariants": list(self.invariants),
            "decisions": dict(self.decisions),
            "pruned": list(self.pruned),
            "required": list(self.required),
        }


def resolve_query(contract: Contract, query: Query | Mapping[str, Any] | str) -> Query:
    """A query object from an object, a document, or the id of an embedded query.

    Parameters
    ----------
    contract : Contract
    query : Query, mapping or str

    Returns
    -------
    Query

    Raises
    ------
    ContractEvalError
        For an id the contract has no query of, or a document that is not a query.
    """
    if isinstance(query, Query):
        return query
    if isinstance(query, str):
        if query not in contract.queries_by_id:
            raise ContractEvalError(
                f"no query {query!r} in contract {contract.id!r}"
                f" (it has: {', '.join(contract.queries_by_id) or 'none'})",
                rule="unknown-query",
            )
        return contract.queries_by_id[query]
    return read_query(query, embedded=True)


def condition(contract: Contract, query: Query | Mapping[str, Any] | str) -> Expected:
    """Compute G_E(q) for an audited contract (ALGORITHMS.md §1).

    Parameters
    ----------
    contract : Contract
        The declared contract G_D (audited: no cycles, sound references).
    query : Query, mapping or str
        The query, or the id of one of the contract's queries.

    Returns
    -------
    Expected

    Raises
    ------
    ContractEvalError
        When the query names an unknown intent, leaves an active decision unresolved,
        picks a value that is not an outcome, or contradicts the contract.
    """
    q = resolve_query(contract, query)
    c = contract
    for i, x in enumerate(q.intents):
        if x not in c.by_id:
            raise ContractEvalError(
                f"query {q.id!r} names unknown intent {x!r}",
                path=f"$.intents[{i}]",
                rule="unknown-intent",
            )
    w = _Walk(c, q)
    for r in list(q.intents) or [n.id for n in c.nodes if n.parent is None]:  # §1.1
        w.walk(r)
    w.prerequisites()
    for n in list(w.active):  # §1.4
        w.add_ancestors(n, f"active node {n!r}")
    return _expected(w)


class _Walk:
    """The active set A of §1 as it grows, with the query's branch choices."""

    def __init__(self, c: Contract, q: Query) -> None:
        self.c, self.q = c, q
        self.active: set[str] = set()

    def chosen(self, d: str) -> str:
        """The outcome the query picks for active decision ``d`` (§1.2)."""
        outs = self.c.outcomes[d]
        pick = self.q.branches.get(d)
        if pick is None:
            raise ContractEvalError(
                f"query {self.q.id!r} does not resolve active decision {d!r}"
                f" (outcomes: {', '.join(outs)})",
                path=f"$.branches.{d}",
                rule="unresolved-decision",
            )
        if pick not in outs:
            raise ContractEvalError(
                f"query {self.q.id!r} picks {pick!r} for decision {d!r}, which is not one of"
                f" its outcomes ({', '.join(outs)})",
                path=f"$.branches.{d}",
                rule="not-an-outcome",
            )
        return pick

    def walk(self, start: str) -> None:
        """Add ``start``'s subtree, descending only into chosen outcomes (§1.2)."""
        ids, children, outcomes = self.c.by_id, self.c.children, self.c.outcomes
        stack = [start]
        while stack:
            n = stack.pop()
            if n in self.active:
                continue
            self.active.add(n)
            kids = children[n]
            if ids[n].type == "decision" and outcomes[n]:
                pick = self.chosen(n)
                kids = [k for k in kids if k == pick or ids[k].type != "branch_condition"]
            stack.extend(reversed(kids))

    def add_ancestors(self, n: str, why: str) -> None:
        """Add ``n``'s ancestors; a decision above must be resolved to the outcome
        containing ``n``, else the query contradicts the contract (§1.3–§1.4)."""
        ids = self.c.by_id
        below = n
        for a in self.c.ancestors(n):
            if ids[a].type == "decision" and ids[below].type == "branch_condition":
                pick = self.q.branches.get(a)
                if pick != below:
                    got = f"resolves it to {pick!r}" if pick else "does not resolve it"
                    raise ContractEvalError(
                        f"query {self.q.id!r} contradicts the contract: {why} needs outcome"
                        f" {below!r} of decision {a!r}, but the query {got}",
                        path=f"$.branches.{a}",
                        rule="contradiction",
                    )
            self.active.add(a)
            below = a

    def prerequisites(self) -> None:
        """Pull in the sources of ``requires`` edges into A, to a fixpoint (§1.3)."""
        requires = [e for e in self.c.edges if e.kind == "requires"]
        changed = True
        while changed:
            changed = False
            for e in requires:
                if e.target in self.active and e.source not in self.active:
                    self.add_ancestors(e.source, f"{e.target!r} requires {e.source!r}, which")
                    self.walk(e.source)
                    changed = True


def _expected(w: _Walk) -> Expected:
    """G_E(q) from the final active set: edges, invariants, required set, inactive
    branches (§1.5–§1.6)."""
    c, active = w.c, w.active
    ids, outcomes = c.by_id, c.outcomes
    nodes = sorted(active, key=c.order.__getitem__)
    below_any = {n for n in nodes if any(ids[a].combine == "any" for a in c.ancestors(n))}
    decisions = {d: w.chosen(d) for d in nodes if ids[d].type == "decision" and outcomes[d]}
    inactive: dict[str, str] = {}
    for d, pick in decisions.items():
        for o in outcomes[d]:
            if o != pick:
                stack = [o]
                while stack:
                    x = stack.pop()
                    inactive[x] = d
                    stack.extend(c.children[x])
    return Expected(
        contract=c,
        query=w.q,
        nodes=nodes,
        active=frozenset(active),
        edges=[e for e in c.edges if e.source in active and e.target in active],
        invariants=[
            i.id for i in c.invariants if not i.applies_to or any(x in active for x in i.applies_to)
        ],
        decisions=decisions,
        pruned=[n.id for n in c.nodes if n.id not in active],
        required=[n for n in nodes if ids[n].required and n not in below_any],
        inactive=inactive,
    )
