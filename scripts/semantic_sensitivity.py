"""Sensitivity of semantic mode to one threshold, and a cross-validation by contract.

    PYTHONPATH=$PWD .venv/bin/python scripts/semantic_sensitivity.py mutual 0 0.15 0.2 0.25

For each value of the named field of ``matching.semantic_match.Rules``, runs
`fixtures/suite` in semantic mode (behaviour extraction) under the zero-shot and taught
protocols and prints clean specificity, balanced detection and extra-action detection.
Then a two-fold cross-validation by contract: the contracts are split in two halves
(alphabetical order, alternating), the value with the best mean balanced detection over
both protocols is chosen on one half and reported on the other, and the other way round.
A value that only fits this suite would win on one half and lose on the other.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from matching.embed import encoder  # noqa: E402
from matching.enactments import protocol_expected  # noqa: E402
from matching.semantic_match import RULES, rules_in_effect  # noqa: E402
from matching.suite import load_suite, run_suite, score  # noqa: E402

PROTOCOLS = ("zero-shot", "taught")


def _brief(s: dict) -> tuple[float, float, float]:
    ea = s["per_family"].get("extra_action", {}).get("detection") or 0.0
    return s["clean_specificity"], s["balanced_detection_accuracy"], ea


def main(argv: list[str]) -> int:
    field, values = argv[0], [float(v) for v in argv[1:]]
    cache = os.environ.get("CONTRACTEVAL_EMBED_CACHE")
    if cache and Path(cache).exists():
        encoder().load(Path(cache))
    suite = load_suite(ROOT / "fixtures" / "suite")
    names = sorted(suite.contracts)
    halves = (set(names[0::2]), set(names[1::2]))
    expected = {p: protocol_expected(suite.contracts, suite.cases, p) for p in PROTOCOLS}
    runs: dict[tuple[float, str], list] = {}
    print(f"{field:>8} protocol   specificity balanced extra-action")
    for v in values:
        rules = replace(RULES, **{field: v})
        with rules_in_effect(rules):
            for p in PROTOCOLS:
                res = run_suite(suite, mode="semantic", extractor="behaviour", expected=expected[p])
                runs[(v, p)] = res
                sp, bal, ea = _brief(score(res))
                print(f"{v:8.3f} {p:10s} {sp:11.3f} {bal:8.3f} {ea:12.3f}", flush=True)
    if cache:
        encoder().save(Path(cache))

    def half_score(v: float, half: set[str]) -> dict[str, tuple[float, float, float]]:
        return {
            p: _brief(score([r for r in runs[(v, p)] if r.id.split("/")[0] in half]))
            for p in PROTOCOLS
        }

    print("\ncross-validation by contract (choose on one half, report on the other)")
    for i, (pick, report) in enumerate((halves, halves[::-1])):
        best = max(values, key=lambda v: sum(half_score(v, pick)[p][1] for p in PROTOCOLS))
        out = half_score(best, report)
        fixed = half_score(getattr(RULES, field), report)
        print(
            f"fold {i + 1}: chosen on {sorted(pick)} -> {field}={best}; on {sorted(report)}: "
            + "; ".join(
                f"{p} spec {out[p][0]:.3f} bal {out[p][1]:.3f} ea {out[p][2]:.3f}"
                f" (default {fixed[p][0]:.3f}/{fixed[p][1]:.3f})"
                for p in PROTOCOLS
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
