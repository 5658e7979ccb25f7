"""CPU cost of semantic mode: model load and a warm case (every text already embedded).

    CONTRACTEVAL_EMBED_CACHE=/tmp/emb.npz .venv/bin/python scripts/bench_semantic.py

Runs every 5th case of `fixtures/suite` (behaviour extraction, taught enactments) twice
and reports the second pass in CPU time of this process (the machine may be shared),
beside token matching on the same extracted graphs.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from matching.embed import encoder  # noqa: E402
from matching.enactments import protocol_expected  # noqa: E402
from matching.suite import Suite, load_suite, run_suite  # noqa: E402


def main() -> int:
    t = time.process_time()
    enc = encoder()
    load = time.process_time() - t
    cache = os.environ.get("CONTRACTEVAL_EMBED_CACHE")
    if cache:
        enc.load(Path(cache))
    suite = load_suite(ROOT / "fixtures" / "suite")
    part = Suite(suite.contracts, suite.cases[::5])
    expected = protocol_expected(suite.contracts, suite.cases, "taught")
    t = time.process_time()
    run_suite(part, mode="semantic", extractor="behaviour", expected=expected)
    cold = (time.process_time() - t) / len(part.cases)
    t = time.process_time()
    run_suite(part, mode="semantic", extractor="behaviour", expected=expected)
    warm = (time.process_time() - t) / len(part.cases)
    t = time.process_time()
    run_suite(part, mode="token", extractor="behaviour", expected=expected)
    token = (time.process_time() - t) / len(part.cases)
    print(
        f"{len(part.cases)} cases; model load {load:.2f} s; first pass {1000 * cold:.1f} ms/case;"
        f" warm {1000 * warm:.1f} ms/case; token mode {1000 * token:.1f} ms/case (CPU time)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
