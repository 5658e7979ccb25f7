"""Semantic mode's order windows and its late pairings (docs/engine.md, "Semantic mode").

:func:`precedence` and :func:`window` give the steps an obligation may pair with, given
the pairs already made; :func:`share` and :func:`second_choice` pair obligations still
unpaired after the rounds of :mod:`matching.semantic_match` (items 8 and 10 there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .conditioning import Expected
from .formats import ObservedNode
from .telling import recaps, reports_outcome, tells

if TYPE_CHECKING:
    from .semantic_match import Rules

_ORDERED = ("requires", "enables", "branches_to")
# a step read as its second choice must read about as well as it does as its first
SECOND_MARGIN = 0.10


def share(
    expected: Expected,
    kept: list[ObservedNode],
    text: str,
    act: np.ndarray,
    pairs: dict[str, int],
    rules: Rules,
) -> dict[str, int]:
    """Obligations to tell the outcome, still unpaired -> the closing message when
    it opens as a recap ("So …", "To sum up, …"), lies in their order window and reads like
    them (at least ``share``), even when it is already paired: the last message reports the
    last action *and* tells the outcome. Else (``share_free``) the free message in their
    window that reads most like them (at least ``share``), whatever obligation it reads
    best as."""
    said = [j for j, o in enumerate(kept) if tells(o, text)]
    if not said:
        return {}
    recap = said[-1] if recaps(kept[said[-1]], text) else None
    taken = set(pairs.values())
    free = np.zeros(len(kept), dtype=bool)
    free[[j for j in said if j not in taken]] = True
    rows = expected.nodes
    by_id = expected.contract.by_id
    steps = np.array([o.step for o in kept])
    before = precedence(expected)
    done = {rows.index(e): col for e, col in pairs.items()}
    out: dict[str, int] = {}
    for r, e in enumerate(rows):
        if e in pairs or not reports_outcome(by_id[e]):
            continue
        win = window(r, done, before, steps)
        c: int | None = None
        if recap is not None and win[recap] and act[r, recap] >= rules.share:
            c = recap
        elif rules.share_free:
            ok = free & win & (act[r] >= rules.share)
            c = int(np.argmax(np.where(ok, act[r], -1.0))) if ok.any() else None
        if c is not None:
            out[e] = c
            done[r] = c
            free[c] = False
    return out


def second_choice(
    expected: Expected,
    kept: list[ObservedNode],
    act: np.ndarray,
    pairs: dict[str, int],
    pairable: np.ndarray,
    bar: float,
    branchy: np.ndarray,
) -> dict[str, int]:
    """Unpaired obligations -> a free step in their window whose own best obligation is
    already paired elsewhere (so the step would only repeat it) and that does not read
    like an inactive branch, when it reads like them at least ``bar``; best first."""
    rows = expected.nodes
    steps = np.array([o.step for o in kept])
    before = precedence(expected)
    done = {rows.index(e): c for e, c in pairs.items()}
    masked = np.where(pairable[:, None], act, -1.0)
    step_best = masked.argmax(axis=0) if act.size else np.zeros(0, dtype=int)
    out: dict[str, int] = {}
    while True:
        taken = set(done.values())
        best: tuple[float, int, int] | None = None
        for r in np.flatnonzero(pairable):
            if r in done:
                continue
            ok = (
                np.array(
                    [c not in taken and int(step_best[c]) in done for c in range(len(kept))],
                    dtype=bool,
                )
                & ~branchy
            )
            ok &= window(int(r), done, before, steps)
            if not ok.any():
                continue
            c = int(np.argmax(np.where(ok, act[r], -1.0)))
            close = act[step_best[c], c] - act[r, c] <= SECOND_MARGIN
            if act[r, c] >= bar and close and (best is None or act[r, c] > best[0]):
                best = (float(act[r, c]), int(r), c)
        if best is None:
            return out
        done[best[1]] = best[2]
        out[rows[best[1]]] = best[2]


def window(r: int, done: dict[int, int], before: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """The steps node r may pair with: no earlier than any paired node that must precede
    it, no later than any that must follow it."""
    lo = max((steps[c] for p, c in done.items() if before[p, r]), default=-1)
    hi = min((steps[c] for p, c in done.items() if before[r, p]), default=1 << 30)
    return (steps >= lo) & (steps <= hi)


def precedence(expected: Expected) -> np.ndarray:
    """before[i, j]: node i must come no later than node j (requires/enables/branches_to edges,
    extended to the subtrees of their ends, transitively)."""
    rows = expected.nodes
    idx = {e: i for i, e in enumerate(rows)}
    n = len(rows)
    before = np.zeros((n, n), dtype=bool)
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
    for k in range(n):  # transitive closure (Warshall), n is a contract's size
        before |= before[:, [k]] & before[[k], :]
    return before
