"""Turn reviewers' step-level pair labels of development-set traces into span labels.

Annotators were shown each trace as the behaviour extractor reads it (step ids, acts,
tools, words) beside the query's active obligations and the inactive nodes, and wrote
which nodes each step enacts (``{"task_id", "trial", "pairs": {"o3": ["node", ...]}}``).
Step ids change whenever the extractor does, so the labels are stored by the evidence
spans of those steps: ``fixtures/taubench/pairs.jsonl``, ``{"task_id", "trial",
"pairs": [{"spans": [[start, end], ...], "nodes": [...]}]}``. Training projects them on
whatever steps the extractor then finds (:func:`matching.pair_training.devset_pairs`).

    .venv/bin/python scripts/taubench_pairs.py LABELS.jsonl [LABELS.jsonl ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from matching.devset import load_devset, observed_of  # noqa: E402

DEVSET = ROOT / "fixtures" / "taubench"


def main(argv: list[str]) -> int:
    contract, items = load_devset(DEVSET)
    by_key = {(it.task, it.trial): it for it in items}
    node_ids = {n.id for n in contract.nodes}
    rows = {}
    for path in argv:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            d = json.loads(line)
            it = by_key[(d["task_id"], d["trial"])]
            spans = {o.id: [[s.start, s.end] for s in o.evidence] for o in observed_of(it).nodes}
            out = []
            for oid, nodes in d["pairs"].items():
                bad = [n for n in nodes if n not in node_ids]
                if oid not in spans or bad:
                    raise SystemExit(f"{path}: task {it.task} trial {it.trial}: {oid} {bad}")
                if nodes:
                    out.append({"spans": spans[oid], "nodes": sorted(set(nodes))})
            rows[(it.task, it.trial)] = {"task_id": it.task, "trial": it.trial, "pairs": out}
    with (DEVSET / "pairs.jsonl").open("w", encoding="utf-8") as fh:
        for key in sorted(rows):
            fh.write(json.dumps(rows[key]) + "\n")
    print(f"wrote {len(rows)} traces to {DEVSET / 'pairs.jsonl'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
