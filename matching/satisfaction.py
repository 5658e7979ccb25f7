"""Satisfaction and positions of expected nodes (ALGORITHMS.md §3, first half).

A node of G_E(q) is satisfied *directly* (paired in M), *derived* from its children,
*covered* by a directly evidenced task above it, or — a checked output — by passing
its check. Each satisfied node has a position: an interval of steps.

>>> from pathlib import Path
>>> from matching.conditioning import condition
>>> from matching.formats import read_observed
>>> from matching.match import align
>>> from matching.validate import load_contract
>>> data = Path(__file__).parent / "data"
>>> e = condition(load_contract(data / "refund-mini.json"), "q1")
>>> obs = read_observed(data / "refund-mini-observed-q1.json")
>>> s = satisfaction(e, align(e, obs, mode="oracle"), obs)
>>> s.how("within_window"), s.pos["within_window"], s.how("reply_json")
('derived', (3, 3), 'passed')
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .checks import OutputCheck, check_output
from .conditioning import Expected
from .formats import Observed
from .match import Alignment

# A match on one of these covers nothing below it (§3 covered).
STRUCTURAL = frozenset({"intent", "decision", "branch_condition"})

Pos = tuple[int, int]


@dataclass
class Satisfaction:
    """Which expected nodes are satisfied, how, and where.

    Attributes
    ----------
    direct, derived, covered : set of str
        The nodes satisfied by each rule of §3 (disjoint).
    outputs : dict
        Each checked output of G_E(q) -> its :class:`~matching.checks.OutputCheck`.
    pos : dict
        Node id -> ``(start, end)`` step interval, for every satisfied node and every
        checked output.
    not_applicable : set of str
        The nodes conditional on an action that did not happen (``meta.applies_if_action``,
        see :attr:`matching.model.Node.triggers`) and their active descendants: neither met nor missed.
    """

    direct: set[str] = field(default_factory=set)
    derived: set[str] = field(default_factory=set)
    covered: set[str] = field(default_factory=set)
    outputs: dict[str, OutputCheck] = field(default_factory=dict)
    pos: dict[str, Pos] = field(default_factory=dict)
    not_applicable: set[str] = field(default_factory=set)

    @property
    def sat(self) -> set[str]:
        """Every satisfied node: direct, derived, covered, or a passing checked output."""
        passed = {n for n, r in self.outputs.items() if r.passed}
        return self.direct | self.derived | self.covered | passed

    def how(self, node: str) -> str | None:
        """``direct``, ``derived``, ``covered``, ``passed``/``failed``/``unjudged`` (a
        checked output), or ``None`` when the node is not satisfied."""
        if node in self.outputs:
            r = self.outputs[node].passed
            return "unjudged" if r is None else "passed" if r else "failed"
        for name, nodes in (
            ("direct", self.direct),
            ("derived", self.derived),
            ("covered", self.covered),
        ):
            if node in nodes:
                return name
        return None


def satisfaction(expected: Expected, m: Alignment, observed: Observed) -> Satisfaction:
    """Apply the satisfaction rules of ALGORITHMS.md §3 in their order of precedence.

    Parameters
    ----------
    expected : Expected
        G_E(q).
    m : Alignment
        The alignment M of the observed graph (§2).
    observed : Observed
        The observed document, for its final ``output``.

    Returns
    -------
    Satisfaction
    """
    ids = expected.contract.by_id
    s = Satisfaction()
    steps = {o.id: o.step for o in m.kept}
    for e, o in m.pairs.items():
        if not ids[e].checked_output:
            s.direct.add(e)
            first = m.first_step.get(e, steps[o])
            s.pos[e] = (first, first)
    _derive(expected, s)
    _cover(expected, s)
    last = max(steps.values(), default=-1)
    for n in expected.nodes:
        if ids[n].checked_output:
            s.outputs[n] = check_output(n, ids[n].meta, observed.output)
            s.pos[n] = (last + 1, last + 1)
    s.not_applicable = _not_applicable(expected, s)
    if s.not_applicable:  # a parent no longer waits for its not-applicable children
        _derive(expected, s)
        _cover(expected, s)
    return s


def _not_applicable(expected: Expected, s: Satisfaction) -> set[str]:
    """Active nodes whose trigger actions all went unsatisfied, with their subtrees."""
    ids = expected.contract.by_id
    conditional = [n for n in expected.nodes if ids[n].triggers]
    if not conditional:
        return set()
    sat = s.sat
    out: set[str] = set()
    for n in conditional:
        if not any(t in sat for t in ids[n].triggers):
            out.update(x for x in expected.subtree(n) if x in expected.active)
    return out


def _hull(pos: dict[str, Pos], nodes: list[str]) -> Pos:
    return min(pos[k][0] for k in nodes), max(pos[k][1] for k in nodes)


def _derive(expected: Expected, s: Satisfaction) -> None:
    """derived(e), bottom-up (children before parents: reverse pre-order). §3 derived."""
    ids = expected.contract.by_id
    for n in reversed(expected.preorder):
        node = ids[n]
        if n in s.direct or node.checked_output:
            continue
        pick = expected.decisions.get(n) if node.type == "decision" else None
        if pick is not None and pick in s.direct:  # the decision rule wins
            s.derived.add(n)
            s.pos[n] = s.pos[pick]
            continue
        if node.explicit:
            continue
        children = [k for k in expected.active_children[n] if not ids[k].checked_output]
        done = [k for k in children if k in s.direct or k in s.derived]
        if node.combine == "any":
            basis = done
        else:
            basis = [k for k in children if ids[k].required and k not in s.not_applicable]
            if any(k not in s.direct and k not in s.derived for k in basis):
                basis = []
        if basis:
            s.derived.add(n)
            s.pos[n] = _hull(s.pos, basis)


def _cover(expected: Expected, s: Satisfaction) -> None:
    """covered(e): the first direct node walking up, before any structural or explicit
    node. §3 covered."""
    ids = expected.contract.by_id
    for n in expected.nodes:
        node = ids[n]
        if n in s.direct or n in s.derived or node.explicit or node.checked_output:
            continue
        p = node.parent
        while p is not None:
            anc = ids[p]
            if anc.type in STRUCTURAL or anc.explicit:
                break
            if p in s.direct:
                s.covered.add(n)
                s.pos[n] = s.pos[p]
                break
            p = anc.parent
