"""What fitting and measuring semantic mode share (``scripts/train.py``,
``scripts/results.py``): labelled pairs of the fixture suite, logistic fits, models per
fold with whole contracts held out, the knob grid, and the development set's P(violation)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score
from sklearn.model_selection import GroupKFold
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from matching.alignment import Knobs, Setup  # noqa: E402
from matching.conditioning import condition  # noqa: E402
from matching.devset import folds_by_task, load_devset, observed_of  # noqa: E402
from matching.enactments import protocol_expected  # noqa: E402
from matching.evaluate import evaluate_detailed  # noqa: E402
from matching.confidence import VerdictModel, trace_features  # noqa: E402
from matching.fitting import fit_thresholds  # noqa: E402
from matching.pair_features import FEATURES  # noqa: E402
from matching.pair_model import PairModel, Thresholds  # noqa: E402
from matching.pair_training import suite_pairs  # noqa: E402
from matching.suite import Suite, run_suite, score  # noqa: E402

SUITE = ROOT / "fixtures" / "suite"
DEVSET = ROOT / "fixtures" / "taubench"
HASHED = [
    SUITE,
    DEVSET / "labels.jsonl",
    DEVSET / "contracts",
    ROOT / "matching" / "data" / "lexicon.json",
]
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


def pairs_for(suite):  # type: ignore[no-untyped-def]
    bar = tqdm(total=0, desc="pairs", unit="case", file=sys.stderr)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    pairs = suite_pairs(suite, progress=progress)
    bar.close()
    return pairs


def model_of(x: np.ndarray, y: np.ndarray, **kw) -> PairModel:  # type: ignore[no-untyped-def]
    mean, scale, lr = fit(x, y)
    return PairModel(FEATURES, mean, scale, lr.coef_[0], float(lr.intercept_[0]), **kw)


def fold_models(x, y, groups, folds: int = 5) -> list[tuple[set[str], PairModel]]:  # type: ignore[no-untyped-def]
    """(held-out contracts, model fitted without them) per fold."""
    out = []
    for tr, te in GroupKFold(n_splits=folds).split(x, y, groups):
        out.append((set(groups[te]), model_of(x[tr], y[tr])))
    return out


GRID = {"pair": (0.02, 0.05, 0.1, 0.2), "order_margin": (0.0, 2.0)}


def fit_knobs(suite, folds) -> tuple[dict, dict]:  # type: ignore[no-untyped-def]
    """The knobs of best pooled balanced detection on the contracts each fold held out
    (zero-shot: the pair model never saw the contract it aligns)."""
    expected = protocol_expected(suite.contracts, suite.cases, "zero-shot")
    table = {}
    combos = [(p, o) for p in GRID["pair"] for o in GRID["order_margin"]]
    for p, o in tqdm(combos, desc="knobs", file=sys.stderr):
        knobs = Knobs(pair=p, span=round(p / 2, 6), order_margin=o)
        results = []
        for held, model in folds:
            sub = Suite(
                contracts=suite.contracts, cases=[c for c in suite.cases if c.contract in held]
            )
            results += run_suite(
                sub,
                mode="semantic",
                extractor="behaviour",
                expected=expected,
                jobs=2,
                semantic=Setup(model, knobs),
            )
        table[(p, o)] = score(results)["balanced_detection_accuracy"]
    (p, o), bal = max(table.items(), key=lambda kv: (kv[1], -kv[0][1]))
    knobs = {"pair": p, "span": round(p / 2, 6), "order_margin": o, "top_k": 3}
    grid = [{"pair": k[0], "order_margin": k[1], "balanced": v} for k, v in table.items()]
    return knobs, {"grid": grid, "chosen_balanced_held_out_contracts": bal}


def devset_features(model: PairModel):  # type: ignore[no-untyped-def]
    """Every development-set trace read in semantic mode: its trace features
    (:func:`matching.confidence.trace_features`) and its two labels."""
    contract, items = load_devset(DEVSET)
    setup = Setup(model, model.knobs)
    x = []
    for it in tqdm(items, desc="dev set", file=sys.stderr):
        ev = evaluate_detailed(
            condition(contract, it.query), observed_of(it), mode="semantic", semantic=setup
        )
        n = len(ev.alignment.likelihoods.omission) if ev.alignment.likelihoods else 0
        x.append(trace_features(ev.failures, n))
    procedural = [it.violates("procedural") for it in items]
    strict = [it.violates("strict") for it in items]
    return np.array(x), procedural, strict, items


def verdict_model_of(x: np.ndarray, y) -> VerdictModel:  # type: ignore[no-untyped-def]
    mean, scale, lr = fit(x, np.asarray(y))
    return VerdictModel(
        tuple(mean.tolist()), tuple(scale.tolist()), tuple(lr.coef_[0].tolist()),
        float(lr.intercept_[0]),
    )


def verdict_oof(x: np.ndarray, y, items) -> list[float]:  # type: ignore[no-untyped-def]
    """P(violation) of each trace from a verdict model fitted without its task's fold."""
    ya = np.asarray(y)
    out = np.zeros(len(ya))
    for fold in folds_by_task(items, 5):
        rest = np.array([i for i in range(len(ya)) if i not in set(fold)])
        vm = verdict_model_of(x[rest], ya[rest])
        out[fold] = [vm.p(row) for row in x[fold]]
    return out.tolist()


def fit_verdict(ps, ys, items) -> tuple[Thresholds, dict]:  # type: ignore[no-untyped-def]
    """Thresholds on the whole development set, and the held-out-task figures of
    thresholds fitted without each fold's tasks."""
    held = {"p": [], "y": [], "verdicts": []}
    for fold in folds_by_task(items, 5):
        rest = [i for i in range(len(items)) if i not in set(fold)]
        t = fit_thresholds([ps[i] for i in rest], [ys[i] for i in rest])
        for i in fold:
            held["p"].append(ps[i])
            held["y"].append(ys[i])
            held["verdicts"].append(t.verdict(ps[i]))
    t_all = fit_thresholds(ps, ys)
    return t_all, {"thresholds_all": [t_all.clean_below, t_all.violation_from], "held_out": held}
