"""A verdict with its confidence (semantic mode).

Each failure semantic mode reports gets the probability that it is real, read from the
pair model (:mod:`matching.pair_model`):

- omission of e: the probability that no step enacts e, ``1 - max_s P(e, s)``; reported
  on a node the alignment does not pair itself (a composite, a decision), the least of
  its pairable descendants';
- extra action at a step: the probability that it enacts no declared node,
  ``1 - max_e P(e, s)`` over active and inactive nodes; for a step that offers an
  obligation of an intent the query does not activate, the probability of that reading;
- wrong branch at a decision: the likeliest inactive reading of its steps;
- ordering at an edge: the probability that both crossing pairs are right (the lesser);
- invariants and checked outputs: their checks are deterministic (1.0), or one minus a
  judged score;
- omission of a consent gate whose guarded call came without the user's yes
  (:mod:`matching.consent`), and the failure at a call, or at an agent's offer of a
  call, of a tool that only inactive obligations bind (:mod:`matching.scope`): these checks read the trace's own turns, so
  they are certain (1.0), and so is the run's violation.

P(violation) is 1.0 when such a check failed, or a machine check of an invariant or an
output; else it is read from the failures the
alignment found (with the pair model's probabilities) by a verdict model (:class:`VerdictModel`, fitted on labelled real
traces with whole tasks held out), or, without one, as the probability
that at least one failure is real (as if independent, :func:`p_violation`); the run's
verdict is ``clean``, ``violation`` or ``needs_review`` by the thresholds
of :class:`matching.pair_model.Thresholds` (fitted on the development set, settable per
project).

>>> lk = Likelihoods(omission={"a": 0.9}, extra={"o2": 0.2})
>>> fs = [{"family": "omission", "location": "a"}, {"family": "extra_action", "location": "o2"}]
>>> [failure_probability(f, lk) for f in fs], round(p_violation([0.9, 0.2]), 3)
([0.9, 0.2], 0.92)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .alignment import Scored
    from .conditioning import Expected

VERDICTS = ("clean", "needs_review", "violation")


@dataclass
class Likelihoods:
    omission: dict[str, float] = field(default_factory=dict)  # obligation -> P(nothing enacts it)
    extra: dict[str, float] = field(default_factory=dict)  # step -> P(it enacts nothing declared)
    wrong: dict[str, float] = field(default_factory=dict)  # step -> P(it enacts an inactive node)
    crossed: dict[tuple[str, str], float] = field(
        default_factory=dict
    )  # edge -> P(both pairs right)
    paired: dict[str, float] = field(default_factory=dict)  # obligation -> P of its pair


def likelihoods(s: Scored) -> Likelihoods:
    """The probabilities behind every failure the alignment ``s`` can lead to."""
    ids = [o.id for o in s.alignment.kept]
    pa, pi = s.p_active, s.p_inactive
    every = np.vstack([pa, pi]) if pi.size else pa
    best = every.max(axis=0) if every.size else np.zeros(len(ids))
    return Likelihoods(
        omission={e: round(1.0 - float(pa[r].max(initial=0.0)), 6) for r, e in enumerate(s.rows)},
        extra={o: _extra(s, j, o, float(best[j])) for j, o in enumerate(ids)},
        wrong={o: round(float(pi[:, j].max()), 6) for j, o in enumerate(ids)} if pi.size else {},
        crossed=dict(s.crossed),
        paired=dict(s.alignment.scores),
    )


def _extra(s: Scored, j: int, o: str, best: float) -> float:
    """P(step j is an extra action): its off-query reading when it offers one, else the
    probability that it enacts no declared node."""
    if o in s.alignment.offered:
        return round(float(s.p_other[:, j].max()), 6)
    return round(1.0 - best, 6)


def failure_probability(
    f: Mapping[str, Any], lk: Likelihoods, expected: Expected | None = None, alignment: Any = None
) -> float:
    """The probability that the failure ``f`` is real."""
    fam, loc = f["family"], f["location"]
    if fam == "omission":
        if loc in lk.omission:
            return lk.omission[loc]
        below = [
            lk.omission[n] for n in (expected.subtree(loc) if expected else []) if n in lk.omission
        ]
        return min(below) if below else 1.0
    if fam == "extra_action":
        return lk.extra.get(loc, 1.0)
    if fam == "wrong_branch":
        steps = (alignment.wrong_branch.get(loc, []) if alignment is not None else []) or []
        return max((lk.wrong.get(o, 0.0) for o in steps), default=1.0)
    if fam == "ordering":
        a, _, b = loc.partition("->")
        if (a, b) in lk.crossed:
            return lk.crossed[(a, b)]
        return min(lk.paired.get(a, 1.0), lk.paired.get(b, 1.0))
    return 1.0


TRACE_FAMILIES = ("omission", "wrong_branch", "ordering", "extra_action")
_PER_FAMILY = tuple(f"{fam}_{w}" for fam in TRACE_FAMILIES for w in ("count", "max", "sum"))
TRACE_FEATURES = (*_PER_FAMILY, "omitted_share", "doubt_max", "doubt_sum")


def trace_features(
    failures: Iterable[Mapping[str, Any]], n_obligations: int, paired: Iterable[float] = ()
) -> list[float]:
    """The summary of one run that the verdict model reads: per matched family the count,
    the largest and the summed probability of its failures, the share of the pairable
    obligations omitted, whether a machine check failed, and the doubt of the pairings
    made (1 - P of each: a weak pairing is an omission that may have been missed).

    >>> trace_features([{"family": "omission", "probability": 0.5}], 2, [0.9])[:3]
    [1.0, 0.5, 0.5]
    >>> len(TRACE_FEATURES)
    15
    """
    fs = list(failures)
    out: list[float] = []
    for fam in TRACE_FAMILIES:
        ps = [float(f.get("probability", 1.0)) for f in fs if f["family"] == fam]
        out += [float(len(ps)), max(ps, default=0.0), sum(ps)]
    omitted = sum(1 for f in fs if f["family"] == "omission")
    out.append(omitted / max(n_obligations, 1))
    doubt = [1.0 - p for p in paired]
    out += [max(doubt, default=0.0), sum(doubt)]
    return out


@dataclass(frozen=True)
class VerdictModel:
    """P(violation) of a run from :func:`trace_features`: a logistic regression fitted
    on labelled real traces (``make train``)."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float

    def p(self, x: Sequence[float]) -> float:
        """P(violation) of one run's trace features.

        >>> VerdictModel((0.0,), (1.0,), (2.0,), 0.0).p([0.0])
        0.5
        """
        z = sum(
            (v - m) / s * c for v, m, s, c in zip(x, self.mean, self.scale, self.coef, strict=True)
        )
        return round(1.0 / (1.0 + math.exp(-max(min(z + self.intercept, 30.0), -30.0))), 6)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> VerdictModel:
        if tuple(d["features"]) != TRACE_FEATURES:
            raise ValueError("the verdict model was fitted on other features: run `make train`")
        return cls(tuple(d["mean"]), tuple(d["scale"]), tuple(d["coef"]), float(d["intercept"]))

    def to_dict(self) -> dict[str, Any]:
        return {
            "features": list(TRACE_FEATURES),
            "mean": [round(v, 8) for v in self.mean],
            "scale": [round(v, 8) for v in self.scale],
            "coef": [round(v, 8) for v in self.coef],
            "intercept": round(self.intercept, 8),
        }


def p_violation(ps: Iterable[float]) -> float:
    """The probability that at least one failure is real (noisy-or)."""
    keep = 1.0
    for p in ps:
        keep *= 1.0 - min(max(p, 0.0), 1.0)
    return round(1.0 - keep, 6)
