"""Fit the pair model of semantic mode (``make train``) -> matching/data/pair_model.json.

Labelled pairs come from the fixture suite's gold observed graphs
(:mod:`matching.pair_training`). The logistic regression is cross-validated with whole
contracts held out (GroupKFold by contract); the alignment's knobs are chosen on a small
grid by the pooled balanced detection of the held-out contracts (each aligned by a
model that never saw it); the verdict thresholds on P(violation) are fitted on the
development set (``fixtures/taubench``, its *contract* view of the labels), the widest
share decided at ≥ 0.95 balanced accuracy. The file records the SHA-256 of all that data: a test fails when it changed
and the model was not refitted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from pairfit import (  # noqa: E402
    HASHED,
    SUITE,
    C,
    cross_validate,
    dev_pairs,
    devset_features,
    fit_knobs,
    fit_verdict,
    fold_models,
    model_of,
    pairs_for,
    verdict_model_of,
    verdict_oof,
)

from matching.embed import encoder  # noqa: E402
from matching.pair_features import FEATURES  # noqa: E402
from matching.pair_model import MODEL_PATH, PairModel  # noqa: E402
from matching.pair_training import data_hash  # noqa: E402
from matching.suite import load_suite  # noqa: E402

# The verdict is fitted to the labels of what the contract judges: its obligations and
# the invariants it checks by machine (matching.devset), not rules it leaves unjudged.
VIEW = "contract"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=MODEL_PATH)
    ap.add_argument("--keep-knobs", action="store_true", help="refit the coefficients only")
    args = ap.parse_args(argv)
    cache = Path(os.environ.get("CONTRACTEVAL_EMBED_CACHE", ROOT / "var" / "embeddings.npz"))
    cache.parent.mkdir(exist_ok=True)
    encoder().load(cache)
    old = json.loads(MODEL_PATH.read_text()) if MODEL_PATH.is_file() else {}
    suite = load_suite(SUITE)
    x, y, groups = pairs_for(suite).arrays()
    encoder().save(cache)
    cv = cross_validate(x, y, groups)
    print(f"pairs {len(y)}, positives {int(y.sum())}, cv {cv}", file=sys.stderr)
    if args.keep_knobs and old.get("knobs"):
        knobs, knob_fit = old["knobs"], old.get("training", {}).get("knob_fit", {})
    else:
        knobs, knob_fit = fit_knobs(suite, fold_models(x, y, groups))
        print(f"knobs {knobs}", file=sys.stderr)
    dev = dev_pairs()
    tx, views, items, certain = devset_features((x, y), dev, knobs)
    judged = views[VIEW]
    encoder().save(cache)
    if dev is not None:  # the shipped model also learns from the development set's pairs
        dx, dy, _ = dev.arrays()
        x, y = np.vstack([x, dx]), np.concatenate([y, dy])
    model = model_of(x, y, knobs_=knobs)
    # P(violation) of each trace held out by task, then thresholds on those
    oof = verdict_oof(tx, judged, items)
    thresholds, verdict_fit = fit_verdict(oof, judged, items, certain)
    verdict_model = verdict_model_of(tx, judged)
    print(f"thresholds {thresholds}", file=sys.stderr)
    training = {
        "data_sha256": data_hash(HASHED),
        "data": [str(p.relative_to(ROOT)) for p in HASHED],
        "pairs": int(len(y)),
        "positives": int(y.sum()),
        "regularisation_C": C,
        "cross_validation": cv,
        "knob_fit": knob_fit,
        "verdict_fit": {
            "target_balanced_decided": 0.95,
            "view": VIEW,
            "thresholds_all": verdict_fit["thresholds_all"],
        },
    }
    final = PairModel(
        FEATURES,
        model.mean,
        model.scale,
        model.coef,
        model.intercept,
        knobs,
        thresholds,
        training,
        verdict_model,
    )
    args.out.write_text(json.dumps(final.to_dict(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
