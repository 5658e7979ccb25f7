"""Fit the pair model of semantic mode (``make train``) -> matching/data/pair_model.json.

Labelled pairs come from the fixture suite's gold observed graphs
(:mod:`matching.pair_training`). The logistic regression is cross-validated with whole
contracts held out (GroupKFold), and its out-of-fold figures are written beside the
coefficients. The alignment's knobs and the verdict thresholds are kept from the
current file unless ``--knobs`` / ``--thresholds`` name a JSON file that sets them
(``scripts/fit_knobs.py`` writes them by cross-validation).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score
from sklearn.model_selection import GroupKFold
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from matching.pair_features import FEATURES  # noqa: E402
from matching.pair_model import MODEL_PATH, PairModel, Thresholds  # noqa: E402
from matching.pair_training import data_hash, suite_pairs  # noqa: E402
from matching.suite import load_suite  # noqa: E402

SUITE = ROOT / "fixtures" / "suite"
HASHED = [SUITE, ROOT / "matching" / "data" / "lexicon.json"]
C = 1.0  # L2 strength: the library default, not tuned


def fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, LogisticRegression]:
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    lr = LogisticRegression(C=C, max_iter=2000).fit((x - mean) / scale, y)
    return mean, scale, lr


def cross_validate(x: np.ndarray, y: np.ndarray, groups: np.ndarray, folds: int = 5) -> dict:
    oof = np.zeros(len(y))
    for tr, te in GroupKFold(n_splits=folds).split(x, y, groups):
        mean, scale, lr = fit(x[tr], y[tr])
        oof[te] = lr.predict_proba((x[te] - mean) / scale)[:, 1]
    return {
        "folds": folds,
        "held_out": "whole contracts",
        "log_loss": round(float(log_loss(y, oof)), 4),
        "brier": round(float(brier_score_loss(y, oof)), 4),
        "auc": round(float(roc_auc_score(y, oof)), 4),
    }


def pairs_for(suite_dir: Path):  # type: ignore[no-untyped-def]
    suite = load_suite(suite_dir)
    bar = tqdm(total=0, desc="pairs", unit="case", file=sys.stderr)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    pairs = suite_pairs(suite, progress=progress)
    bar.close()
    return pairs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=MODEL_PATH)
    ap.add_argument("--knobs", type=Path, help="a JSON file with the fitted knobs and thresholds")
    args = ap.parse_args(argv)
    old = json.loads(MODEL_PATH.read_text()) if MODEL_PATH.is_file() else {}
    x, y, groups = pairs_for(SUITE).arrays()
    cv = cross_validate(x, y, groups)
    print(f"pairs {len(y)}, positives {int(y.sum())}, cv {cv}", file=sys.stderr)
    mean, scale, lr = fit(x, y)
    fitted = json.loads(args.knobs.read_text()) if args.knobs else old
    knobs = fitted.get("knobs", {})
    verdict = fitted.get("verdict", {})
    model = PairModel(
        FEATURES,
        mean,
        scale,
        lr.coef_[0],
        float(lr.intercept_[0]),
        knobs,
        Thresholds(**verdict) if verdict else Thresholds(),
        {
            "data_sha256": data_hash(HASHED),
            "data": [str(p.relative_to(ROOT)) for p in HASHED],
            "pairs": int(len(y)),
            "positives": int(y.sum()),
            "regularisation_C": C,
            "cross_validation": cv,
            "fitting": fitted.get("fitting", {}),
        },
    )
    args.out.write_text(json.dumps(model.to_dict(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
