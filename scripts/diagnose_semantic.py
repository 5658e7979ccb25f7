"""Why semantic mode flags clean executions: one line per false alarm, then counts.

    PYTHONPATH=$PWD .venv/bin/python scripts/diagnose_semantic.py [--protocol taught]
        [--extractor behaviour] [--contracts a,b] [--perturbed] [--quiet]

Runs the clean cases of `fixtures/suite` (or, with ``--perturbed``, every case) in
semantic mode on extracted graphs and, for every failure reported on a clean case, prints
its family, the observed sentence or obligation involved, and the similarities that
decided it: for an extra action its best similarity to an active obligation, the margin
to the runner-up and its cover score; for an omission the obligation's best similarity to
any step and the step that took it instead; for an ordering the two ends' steps. It reads
no gold pairing: only the report and the similarity matrix a reviewer could compute.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from matching.conditioning import Expected  # noqa: E402
from matching.embed import encoder  # noqa: E402
from matching.enactments import protocol_expected  # noqa: E402
from matching.evaluate import evaluate_detailed  # noqa: E402
from matching.extractors import reextract  # noqa: E402
from matching.match import keep_evidence  # noqa: E402
from matching.semantic import cover_scores, node_matrix, observed_text  # noqa: E402
from matching.suite import load_suite, run_suite, score  # noqa: E402


def _explain(exp: Expected, obs, ev) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """(family/cause, detail) for each failure of one evaluation."""
    kept, _ = keep_evidence(obs)
    texts = [observed_text(o, obs.text) for o in kept]
    rows = exp.nodes
    s = node_matrix([exp.contract.by_id[e] for e in rows], exp, texts)
    col = {o.id: j for j, o in enumerate(kept)}
    paired = ev.alignment.pairs
    out = []
    for f in ev.failures:
        fam, loc = f["family"], f["location"]
        if fam == "extra_action":
            j = col[loc]
            order = np.argsort(-s[:, j])
            best = s[order[0], j] if len(rows) else 0.0
            second = s[order[1], j] if len(rows) > 1 else 0.0
            cov = float(cover_scores(exp, [texts[j]])[0])
            act = kept[j].description
            out.append(
                (
                    f"extra/{act}",
                    f"best {best:.2f} ({rows[order[0]]}, {'paired' if rows[order[0]] in paired else 'free'})"
                    f" margin {best - second:.2f} cover {cov:.2f} :: {texts[j][:110]!r}",
                )
            )
        elif fam == "omission":
            i = rows.index(loc)
            j = int(np.argmax(s[i])) if len(kept) else -1
            owner = next((e for e, o in paired.items() if j >= 0 and o == kept[j].id), None)
            node = exp.contract.by_id[loc]
            out.append(
                (
                    f"omission/{node.type}",
                    f"{loc} best {s[i, j] if j >= 0 else 0:.2f} step taken by {owner}"
                    f" :: {node.label!r} <- {texts[j][:90] if j >= 0 else ''!r}",
                )
            )
        else:
            out.append((fam, f"{loc} {f.get('detail', '')[:150]}"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--protocol", default="taught")
    ap.add_argument("--extractor", default="behaviour")
    ap.add_argument("--contracts", default="")
    ap.add_argument("--perturbed", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    cache = os.environ.get("CONTRACTEVAL_EMBED_CACHE")
    if cache and Path(cache).exists():
        encoder().load(Path(cache))
    suite = load_suite(ROOT / "fixtures" / "suite")
    if a.contracts:
        keep = set(a.contracts.split(","))
        suite.cases = [c for c in suite.cases if c.contract in keep]
    expected = protocol_expected(suite.contracts, suite.cases, a.protocol)
    if a.perturbed:
        s = score(run_suite(suite, mode="semantic", extractor=a.extractor, expected=expected))
        fam = {k: v["detection"] for k, v in s["per_family"].items()}
        print(f"specificity {s['clean_specificity']} balanced {s['balanced_detection_accuracy']}")
        print(f"per family {fam}")
    causes: Counter[str] = Counter()
    flagged = 0
    clean = [c for c in suite.cases if c.clean]
    for case in clean:
        exp = expected[(case.contract, case.query)]
        obs = reextract(case.observed, a.extractor)
        ev = evaluate_detailed(exp, obs, mode="semantic")
        if not ev.failures:
            continue
        flagged += 1
        for cause, detail in _explain(exp, obs, ev):
            causes[cause] += 1
            if not a.quiet:
                print(f"{case.id:40s} {cause:24s} {detail}")
    print(f"\nclean cases flagged: {flagged} of {len(clean)}")
    for cause, n in causes.most_common():
        print(f"  {n:4d}  {cause}")
    if cache:
        encoder().save(Path(cache))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
