"""The pair model: P(observed step enacts declared node), fitted and calibrated.

A logistic regression over :data:`matching.pair_features.FEATURES` (standardised),
fitted by ``make train`` (``scripts/train.py``, scikit-learn, cross-validated by
contract) and shipped as ``matching/data/pair_model.json``: the coefficients, the
alignment's knobs, the verdict thresholds and the SHA-256 of the training data, so a
test fails when the data changed and the model was not refitted. Reading it needs
numpy only.

>>> m = PairModel(("a", "b"), np.zeros(2), np.ones(2), np.array([2.0, -1.0]), 0.0)
>>> m.predict(np.array([[[0.0, 0.0], [1.0, 0.0]]])).round(3).tolist()
[[0.5, 0.881]]
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .confidence import VerdictModel
from .pair_features import FEATURES

if TYPE_CHECKING:
    from .alignment import Knobs

MODEL_PATH = Path(__file__).parent / "data" / "pair_model.json"
FORMAT = "contracteval.pair_model/v1"


@dataclass(frozen=True)
class Thresholds:
    """A verdict from P(violation): ``clean`` below ``clean_below``, ``violation`` from
    ``violation_from``, ``needs_review`` between."""

    clean_below: float = 0.5
    violation_from: float = 0.5

    def verdict(self, p_violation: float) -> str:
        """The verdict P(violation) reads as.

        >>> Thresholds(0.2, 0.8).verdict(0.5)
        'needs_review'
        """
        if p_violation < self.clean_below:
            return "clean"
        return "violation" if p_violation >= self.violation_from else "needs_review"


@dataclass(frozen=True)
class PairModel:
    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    knobs_: dict[str, Any] = field(default_factory=dict)
    thresholds: Thresholds = Thresholds()
    training: dict[str, Any] = field(default_factory=dict)
    verdict_model: VerdictModel | None = None

    @property
    def knobs(self) -> Knobs:
        from .alignment import Knobs

        return Knobs(**self.knobs_)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """P for every pair of a (..., features) array."""
        if x.shape[-1] != len(self.features):
            raise ValueError(f"expected {len(self.features)} features, got {x.shape[-1]}")
        z = ((x - self.mean) / self.scale) @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "features": list(self.features),
            "mean": self.mean.round(8).tolist(),
            "scale": self.scale.round(8).tolist(),
            "coef": self.coef.round(8).tolist(),
            "intercept": round(float(self.intercept), 8),
            "knobs": self.knobs_,
            "verdict": {
                "clean_below": self.thresholds.clean_below,
                "violation_from": self.thresholds.violation_from,
            },
            "verdict_model": self.verdict_model.to_dict() if self.verdict_model else None,
            "training": self.training,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PairModel:
        if d.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} document")
        if tuple(d["features"]) != FEATURES:
            raise ValueError("the pair model was fitted on other features: run `make train`")
        v = d.get("verdict", {})
        return cls(
            tuple(d["features"]),
            np.array(d["mean"], dtype=np.float64),
            np.array(d["scale"], dtype=np.float64),
            np.array(d["coef"], dtype=np.float64),
            float(d["intercept"]),
            dict(d.get("knobs", {})),
            Thresholds(**v) if v else Thresholds(),
            dict(d.get("training", {})),
            VerdictModel.from_dict(d["verdict_model"]) if d.get("verdict_model") else None,
        )


@cache
def load_model(path: str | None = None) -> PairModel:
    """The shipped pair model (or the one at ``path``)."""
    p = Path(path) if path else MODEL_PATH
    return PairModel.from_dict(json.loads(p.read_text(encoding="utf-8")))
