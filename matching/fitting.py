"""Fitting the few knobs of semantic mode, and scoring verdicts that may abstain.

:func:`fit_thresholds` picks the verdict thresholds on P(violation): the widest share
of decided verdicts whose accuracy reaches a target. :func:`decided_scores` scores
three-way verdicts against labels: balanced agreement on the decided ones, share
decided, and the risk–coverage curve. Pure functions of plain lists.

>>> p = [0.05, 0.1, 0.5, 0.9, 0.95]
>>> y = [False, False, True, True, True]
>>> fit_thresholds(p, y, target=0.95)
Thresholds(clean_below=0.5, violation_from=0.5)
>>> decided_scores(p, y, Thresholds(0.2, 0.8))["share_decided"]
0.8
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .pair_model import Thresholds


def _balanced(pred: np.ndarray, y: np.ndarray) -> float | None:
    pos, neg = y, ~y
    rates = [float((pred[m] == y[m]).mean()) for m in (pos, neg) if m.any()]
    return round(sum(rates) / len(rates), 6) if rates else None


def verdict_scores(verdicts: Sequence[str], y: Sequence[bool]) -> dict[str, Any]:
    """Share decided, and balanced agreement, accuracy and clean specificity on the decided
    ones, of three-way ``verdicts`` against labels ``y`` (True: violation).

    >>> verdict_scores(["clean", "needs_review", "violation"], [False, True, True])["share_decided"]
    0.666667
    """
    ya = np.asarray(y, dtype=bool)
    decided = np.array([v != "needs_review" for v in verdicts], dtype=bool)
    pred = np.array([v == "violation" for v in verdicts], dtype=bool)
    dp, dy = pred[decided], ya[decided]
    return {
        "cases": len(ya),
        "share_decided": round(float(decided.mean()), 6) if len(ya) else None,
        "balanced_decided": _balanced(dp, dy) if decided.any() else None,
        "accuracy_decided": round(float((dp == dy).mean()), 6) if decided.any() else None,
        "clean_specificity_decided": round(float((~dp[~dy]).mean()), 6) if (~dy).any() else None,
    }


def decided_scores(p: Sequence[float], y: Sequence[bool], t: Thresholds) -> dict[str, Any]:
    """Scores of the three-way verdicts of ``p`` against labels ``y`` (True: violation)."""
    pa, ya = np.asarray(p, dtype=float), np.asarray(y, dtype=bool)
    out = verdict_scores([t.verdict(float(x)) for x in pa], ya.tolist())
    out["balanced_all_at_half"] = _balanced(pa >= 0.5, ya)
    return out


def fit_thresholds(p: Sequence[float], y: Sequence[bool], *, target: float = 0.95) -> Thresholds:
    """The thresholds deciding the most cases whose decided verdicts are right at least
    ``target`` of the time (balanced over the two labels, so a set of mostly violations
    cannot reach it by calling everything a violation); ties keep the more accurate.
    When no cut reaches the target, the single cut of best balanced accuracy."""
    pa, ya = np.asarray(p, dtype=float), np.asarray(y, dtype=bool)
    cuts = np.unique(np.r_[pa, 0.0, 1.0 + 1e-9])
    best: tuple[float, float, float, float] | None = None
    for i, lo in enumerate(cuts):
        for hi in cuts[i:]:
            dec = (pa < lo) | (pa >= hi)
            if not dec.any():
                continue
            bal = _balanced((pa >= hi)[dec], ya[dec])
            if bal is None or bal < target:
                continue
            key = (float(dec.mean()), bal, -float(lo), float(hi))
            if best is None or key > best:
                best = key
    if best is not None:
        return Thresholds(round(-best[2], 6), round(min(best[3], 1.0), 6))
    single = max(cuts, key=lambda c: (_balanced(pa >= c, ya) or 0.0, -abs(c - 0.5)))
    return Thresholds(round(float(single), 6), round(float(single), 6))


def risk_coverage(p: Sequence[float], y: Sequence[bool]) -> list[tuple[float, float]]:
    """(share decided, balanced accuracy of the decided) as the abstention band around
    the best single cut widens: the points of a risk–coverage plot."""
    pa, ya = np.asarray(p, dtype=float), np.asarray(y, dtype=bool)
    centre = fit_thresholds(pa.tolist(), ya.tolist(), target=2.0).clean_below
    order = np.argsort(np.abs(pa - centre))[::-1]  # most confident first
    out = []
    for k in range(1, len(pa) + 1):
        idx = order[:k]
        bal = _balanced(pa[idx] >= centre, ya[idx])
        if bal is not None:
            out.append((round(k / len(pa), 6), bal))
    return out


def reliability(
    p: Sequence[float], y: Sequence[bool], bins: int = 10
) -> list[tuple[float, float, int]]:
    """(mean predicted P, observed share of violations, count) per probability bin."""
    pa, ya = np.asarray(p, dtype=float), np.asarray(y, dtype=float)
    edges = np.linspace(0, 1, bins + 1)
    out = []
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        m = (pa >= a) & ((pa < b) if b < 1 else (pa <= b))
        if m.any():
            out.append((round(float(pa[m].mean()), 6), round(float(ya[m].mean()), 6), int(m.sum())))
    return out
