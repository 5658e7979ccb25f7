"""Semantic mode's alignment: one optimal, order-aware, many-to-many alignment.

In the spirit of process-mining alignments (synchronous moves, model moves and log
moves, each with a cost), but a step may enact several obligations (a message that
reports a lookup *and* asks for the go-ahead) and an obligation may span adjacent steps
(a call and the sentence that reports it). The cost of a pair is learned: the pair model
(:mod:`matching.pair_model`) gives P(step enacts node) over the features of
:mod:`matching.pair_features`.

The alignment maximises ``sum(logit P(e, s) - logit(pair))`` over the pairs it makes,
minus ``share_margin`` for each obligation past the first that a step enacts, and minus
``order_margin`` for every precedence edge (ALGORITHMS.md §3: ``requires``,
``enables``, ``branches_to``, extended to subtrees) whose pairs cross. Each obligation
takes at most one anchoring step, among its ``top_k`` likeliest with P ≥ ``pair``. It is
solved exactly as a small integer programme (scipy's HiGHS); its size is bounded by
``top_k`` × obligations binaries and ``top_k²`` × precedence pairs constraints, whatever
the trace's length. An ordering failure is therefore reported only where the best
order-respecting alignment is worse by more than ``order_margin`` than one that breaks
the order, and at the edge concerned.

What is left of the steps is read by its more likely reading (:data:`LIKELY`): a step
that asks or seeks confirmation (:data:`OFFERS`) read as an obligation of an intent the
query does not activate (P ≥ 0.5, and more than as any node of G_E(q)) is an extra
action: the agent offers what the procedure for q does not include (a transfer to a
human for a request the policy says to deny); a step read as an inactive node (P ≥ 0.5,
and more than as any active one) is a wrong-branch step; one read as an active
obligation (P ≥ 0.5) repeats it (a call and the sentence that reports it enact one
obligation together); one that *acts* (:func:`matching.observe.acts`: a call that is
not a lookup, words that report or promise an action) is an extra action; anything else
(commentary, small talk) is consumed as commentary on its likeliest obligation.

>>> order_pairs(np.array([[False, True], [False, False]]), {0: [(0, 3.0)], 1: [(1, 1.0)]},
...             np.array([[5, 2], [5, 2]]))
[(0, 1, 0, 1)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .conditioning import Expected
from .embed import one_blas_thread
from .formats import Node, ObservedNode
from .match import Alignment
from .observe import Step, acts, steps
from .pair_features import pairs_of
from .pair_model import PairModel, load_model

_ORDERED = ("requires", "enables", "branches_to")
# A step left over is read by its more likely reading: it repeats an obligation, or takes
# an inactive branch, only when that is more likely than not. Not a knob: an even bet.
LIKELY = 0.5
# The speech acts that offer: only these are read against the intents q does not activate,
# since a statement or a lookup that resembles another intent's obligation (each intent
# has its own "look up the reservation") is not the agent taking up that intent.
OFFERS = ("ask", "confirm")


@dataclass(frozen=True)
class Knobs:
    """The alignment's few knobs, each set by fitting (``make train``), never by hand."""

    pair: float = 0.5  # P from which a step enacts an obligation
    order_margin: float = 2.0  # logit units an order-breaking alignment must gain
    share_margin: float = 2.0  # logit units each further obligation on one step must gain
    top_k: int = 3


@dataclass
class Scored:
    """The alignment with the probabilities the confidence of the verdict reads."""

    alignment: Alignment
    p_active: np.ndarray  # (active pairable obligations, steps)
    p_inactive: np.ndarray  # (inactive nodes, steps)
    rows: list[str]  # the active pairable obligations
    inactive: list[str]
    steps: list[Step]
    p_other: np.ndarray  # (nodes of the intents q does not activate, steps)
    other: list[str]
    crossed: dict[tuple[str, str], float] = field(default_factory=dict)  # edge -> P both right


def pairable(n: Node) -> bool:
    """Intents, outcomes and checked outputs are satisfied by their structure and
    their checks (ALGORITHMS.md §3), never paired with a step."""
    return n.type not in ("intent", "branch_condition") and not n.checked_output


@dataclass(frozen=True)
class Setup:
    """A pair model and the knobs to align with (cross-validation swaps them)."""

    model: PairModel
    knobs: Knobs


def semantic_align(
    expected: Expected, kept: list[ObservedNode], text: str, *, setup: Setup | None = None
) -> Scored:
    """Align ``kept`` (in step order) with G_E(q) and classify every step."""
    with one_blas_thread():
        return _align(expected, kept, text, setup)


def _align(expected: Expected, kept: list[ObservedNode], text: str, setup: Setup | None) -> Scored:
    model = setup.model if setup else load_model()
    knobs = setup.knobs if setup else model.knobs
    by_id = expected.contract.by_id
    rows = [e for e in expected.nodes if pairable(by_id[e])]
    inactive = [
        n.id for n in expected.contract.nodes if n.id in expected.inactive and n.type != "intent"
    ]
    st = steps(kept, text)
    nodes = [by_id[e] for e in rows] + [by_id[i] for i in inactive]
    p = model.predict(pairs_of(nodes, st, expected, n_active=len(rows)))
    p_act, p_in = p[: len(rows)], p[len(rows) :]
    idx = {e: i for i, e in enumerate(expected.nodes)}
    before = precedence(expected)[np.ix_([idx[e] for e in rows], [idx[e] for e in rows])]
    stepno = [o.step for o in kept]
    first = first_steps(p_act, stepno, LIKELY)
    chosen, crossed = solve(p_act, before, first, knobs)
    m = Alignment("semantic", kept, [], {}, {})
    _pairs(m, rows, kept, p_act, chosen)
    m.first_step = {rows[r]: int(first[r, c]) for r, c in chosen.items()}
    other = [n.id for n in expected.contract.nodes if _off_query(n, expected)]
    offers = [j for j, x in enumerate(st) if x.act in OFFERS and j not in chosen.values()]
    p_other = np.zeros((len(other), len(st)))
    if other and offers:  # read only when a step is left to read that way
        nodes = [by_id[e] for e in rows] + [by_id[e] for e in other]
        p_other = model.predict(pairs_of(nodes, st, expected, n_active=len(rows)))[len(rows) :]
    scored = Scored(m, p_act, p_in, rows, inactive, st, p_other, other)
    scored.crossed = {
        (rows[a], rows[b]): float(min(p_act[a, chosen[a]], p_act[b, chosen[b]])) for a, b in crossed
    }
    _leftovers(scored, expected, kept, chosen)
    return scored


def _off_query(n: Node, expected: Expected) -> bool:
    """A pairable node of an intent the query does not activate (not an inactive branch:
    those are read as wrong branches)."""
    return n.id not in expected.active and n.id not in expected.inactive and pairable(n)


def first_steps(p: np.ndarray, stepno: Sequence[int], bar: float) -> np.ndarray:
    """first[r, c]: the first step of obligation r if column c anchors it: c's step, or
    an earlier step whose likeliest obligation is r, read at least ``bar`` (the request
    for the user id before the lookup of the user).

    >>> first_steps(np.array([[0.4, 0.1, 0.9], [0.2, 0.3, 0.1]]), [0, 1, 2], 0.3).tolist()
    [[0, 0, 0], [0, 1, 1]]
    """
    steps = np.asarray(stepno)
    out = np.tile(steps, (p.shape[0], 1))
    if not p.size:
        return out
    top = p.argmax(axis=0)
    for r in range(p.shape[0]):
        hits = steps[(p[r] >= bar) & (top == r)]
        if hits.size:
            out[r] = np.minimum(steps, hits.min())
    return out


def solve(
    p: np.ndarray, before: np.ndarray, first: np.ndarray, knobs: Knobs
) -> tuple[dict[int, int], list[tuple[int, int]]]:
    """The optimal anchors ``{row: column}`` and the precedence pairs they cross;
    ``first[r, c]``: where r's enactment starts if c anchors it (:func:`first_steps`).

    >>> p = np.array([[0.99, 0.2], [0.98, 0.3]])  # both read strongly at step 0: share it
    >>> solve(p, np.array([[False, True], [False, False]]), np.array([[0, 1], [0, 1]]), Knobs())
    ({0: 0, 1: 0}, [])
    """
    logit = _logit(p) - _logit(np.array(knobs.pair))
    cand: dict[int, list[tuple[int, float]]] = {}
    for r in range(p.shape[0]):
        ok = np.flatnonzero(p[r] >= knobs.pair)
        top = ok[np.argsort(-p[r, ok], kind="stable")][: knobs.top_k]
        if top.size:
            cand[r] = [(int(c), float(logit[r, c])) for c in top]
    clashes = order_pairs(before, cand, first)
    tops = [cs[0][0] for cs in cand.values()]
    if not clashes and len(set(tops)) == len(tops):  # no crossing, no sharing: the likeliest
        return {r: cs[0][0] for r, cs in cand.items()}, []
    return _milp(cand, clashes, knobs)


def order_pairs(
    before: np.ndarray, cand: dict[int, list[tuple[int, float]]], first: np.ndarray
) -> list[tuple[int, int, int, int]]:
    """``(a, b, column of a, column of b)`` of every candidate pair that would start
    ``a`` after ``b`` although ``a`` must come first."""
    out = []
    for a, ca in cand.items():
        for b, cb in cand.items():
            if a != b and before[a, b]:
                out += [(a, b, i, j) for i, _ in ca for j, _ in cb if first[a, i] > first[b, j]]
    return out


def _milp(
    cand: dict[int, list[tuple[int, float]]],
    clashes: list[tuple[int, int, int, int]],
    knobs: Knobs,
) -> tuple[dict[int, int], list[tuple[int, int]]]:
    """The integer programme: a binary per candidate pair, one per precedence edge that
    may cross (cost ``order_margin``) and an integer per step that more than one
    obligation may take (cost ``share_margin`` per obligation past the first)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    var = [(r, c, w) for r, cs in cand.items() for c, w in cs]
    col = {(r, c): k for k, (r, c, _) in enumerate(var)}
    edges = sorted({(a, b) for a, b, _, _ in clashes})
    steps = sorted({c for _, c, _ in var})
    ev = {e: len(var) + k for k, e in enumerate(edges)}
    sv = {c: len(var) + len(edges) + k for k, c in enumerate(steps)}
    n = len(var) + len(edges) + len(steps)
    cost = np.zeros(n)
    cost[: len(var)] = [-w for _, _, w in var]
    cost[len(var) : len(var) + len(edges)] = knobs.order_margin
    cost[len(var) + len(edges) :] = knobs.share_margin
    rows, ub = [], []
    for r in cand:  # one anchor at most per obligation
        rows.append(_row(n, {col[(r, c)]: 1.0 for c, _ in cand[r]}))
        ub.append(1.0)
    for a, b, i, j in clashes:  # a crossing pair switches its edge's penalty on
        rows.append(_row(n, {col[(a, i)]: 1.0, col[(b, j)]: 1.0, ev[(a, b)]: -1.0}))
        ub.append(1.0)
    for c in steps:  # obligations on one step beyond the first are paid for
        rows.append(_row(n, {**{col[(r, c)]: 1.0 for r, c2, _ in var if c2 == c}, sv[c]: -1.0}))
        ub.append(1.0)
    upper = np.ones(n)
    upper[len(var) + len(edges) :] = len(cand)
    res = milp(
        cost,
        constraints=LinearConstraint(np.array(rows), -np.inf, np.array(ub)),
        integrality=np.ones(n),
        bounds=Bounds(0, upper),
        options={"time_limit": 2.0},
    )
    x = np.round(res.x) if res.x is not None else np.zeros(n)
    chosen = {r: c for (r, c, _), v in zip(var, x[: len(var)], strict=True) if v > 0.5}
    crossed = [e for e in edges if x[ev[e]] > 0.5 and e[0] in chosen and e[1] in chosen]
    return chosen, crossed


def _row(n: int, entries: dict[int, float]) -> np.ndarray:
    row = np.zeros(n)
    for k, v in entries.items():
        row[k] = v
    return row


def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(q / (1 - q))


def _pairs(
    m: Alignment, rows: list[str], kept: list[ObservedNode], p: np.ndarray, chosen: dict[int, int]
) -> None:
    """Anchors into the alignment: on a step several obligations enact, the likeliest is
    its pair and the others are shared."""
    first: dict[int, int] = {}
    for r, c in sorted(chosen.items(), key=lambda rc: -p[rc[0], rc[1]]):
        first.setdefault(c, r)
    for r in sorted(chosen):
        c = chosen[r]
        m.pairs[rows[r]] = kept[c].id
        m.scores[rows[r]] = round(float(p[r, c]), 6)
        others = np.delete(p[:, c], r)
        m.margins[rows[r]] = round(float(p[r, c] - others.max()), 6) if others.size else 1.0
        if first[c] != r:
            m.shared[rows[r]] = kept[c].id


def _leftovers(
    s: Scored, expected: Expected, kept: list[ObservedNode], chosen: dict[int, int]
) -> None:
    m = s.alignment
    anchored = set(chosen.values())
    for j, o in enumerate(kept):
        if j in anchored:
            continue
        pa = s.p_active[:, j]
        best_a = float(pa.max()) if pa.size else 0.0
        best_i = float(s.p_inactive[:, j].max()) if s.p_inactive.size else 0.0
        r = int(pa.argmax()) if pa.size else -1
        best_o = float(s.p_other[:, j].max()) if s.p_other.size else 0.0
        if s.steps[j].act in OFFERS and best_o >= LIKELY and best_o > max(best_a, best_i):
            m.offered[o.id] = s.other[int(s.p_other[:, j].argmax())]  # an extra action
        elif best_i >= LIKELY and best_i > best_a:
            node = s.inactive[int(s.p_inactive[:, j].argmax())]
            m.wrong_branch.setdefault(expected.inactive[node], []).append(o.id)
            m.wrong_branch_of[o.id] = node
        elif r >= 0 and best_a >= LIKELY:
            m.repeats.append((o.id, s.rows[r]))  # enacts again, or with its anchor
        elif acts(s.steps[j]):
            continue  # an extra action: ``align`` lists what nothing consumed
        elif r >= 0:
            m.repeats.append((o.id, s.rows[r]))  # commentary on its likeliest obligation


def precedence(expected: Expected) -> np.ndarray:
    """before[i, j]: G_E's node i must come no later than node j, by one requires/enables/
    branches_to edge extended to the subtrees of its ends. Not closed transitively: the
    alignment charges each edge a misplaced step breaks, not every obligation downstream.
    """
    rows = expected.nodes
    idx = {e: i for i, e in enumerate(rows)}
    before = np.zeros((len(rows), len(rows)), dtype=bool)
    for edge in expected.edges:
        if edge.kind not in _ORDERED:
            continue
        src, dst = set(expected.subtree(edge.source)), set(expected.subtree(edge.target))
        if edge.target in src:  # a decision and its own outcome: the node itself first
            src = {edge.source}
        elif edge.source in dst:
            continue
        us = [x for x in src if x in idx]
        vs = [x for x in dst if x in idx]
        for u in us:
            before[idx[u], [idx[v] for v in vs]] = True
    return before
