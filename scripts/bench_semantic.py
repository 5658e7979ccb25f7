"""The cost of semantic mode per trace: ``make bench-semantic`` -> docs/benchmarks-semantic.md.

CPU time (this process, one core's worth of BLAS as configured) of reading one trace in
semantic mode: behaviour extraction, typed steps, pair features (embedding every step
text), the pair model, the alignment and the evaluation. "With the model loaded": the
embedding weights are in memory and the contract's own texts are embedded (they are the
same for every trace of a contract); the trace's texts are not. "Embedding" is the part
of that CPU spent running the sentence encoder on the trace's new texts.

Two tables: every development-set trace (``fixtures/taubench``) by length, and longer
traces made by joining 1, 2, 4 and 8 *different* trajectories end to end and reading
them under one query (steps grow, obligations stay, and no text repeats, so no
embedding is reused), to show how the cost grows with steps × obligations.

Embedding dominates and is arithmetic bound (about 21 million floating-point operations
per token), so these seconds scale with the machine's matrix-product speed, measured
below on one core: compare that figure before comparing seconds across machines.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import doc  # noqa: E402
from matching.behaviour import extract_behaviour  # noqa: E402
from matching.conditioning import condition  # noqa: E402
from matching.devset import load_devset  # noqa: E402
from matching.embed import encoder, one_blas_thread  # noqa: E402
from matching.evaluate import evaluate_detailed  # noqa: E402
from matching.pair_features import node_texts  # noqa: E402

OUT = ROOT / "docs" / "benchmarks-semantic.md"
BUCKETS = [(0, 10_000), (10_000, 15_000), (15_000, 20_000), (20_000, 30_000), (30_000, 10**9)]


def warm_contract(contract, expected) -> set[str]:  # type: ignore[no-untyped-def]
    texts = {t for n in contract.nodes for t in node_texts(n, expected)[0]}
    encoder().encode(sorted(texts))
    return texts


def one(contract, query: str, text: str) -> dict:  # type: ignore[no-untyped-def]
    """CPU seconds of one trace, its contract's texts embedded, its own texts not."""
    enc = encoder()
    expected = condition(contract, query)
    keep = warm_contract(contract, expected)
    with enc._lock:
        for t in [t for t in enc._cache if t not in keep]:
            del enc._cache[t]
    spent, tokens = enc.cpu_spent, enc.tokens_embedded
    t0 = time.process_time()
    obs = extract_behaviour(text, kind="trace")
    ev = evaluate_detailed(expected, obs, mode="semantic")
    cpu = time.process_time() - t0
    n_obl = len(ev.alignment.likelihoods.omission) if ev.alignment.likelihoods else 0
    return {
        "chars": len(text),
        "steps": len(obs.nodes),
        "obligations": n_obl,
        "cpu": cpu,
        "embed": enc.cpu_spent - spent,
        "tokens": enc.tokens_embedded - tokens,
    }


def gemm_gflops() -> float:
    """Float32 matrix-product speed on one BLAS thread, at the encoder's shapes."""
    rng = np.random.default_rng(0)
    a = rng.random((1024, 384), dtype=np.float32)
    b = rng.random((384, 1536), dtype=np.float32)
    with one_blas_thread():
        a @ b
        t0 = time.process_time()
        for _ in range(30):
            a @ b
        dt = time.process_time() - t0
    return 30 * 2 * a.shape[0] * a.shape[1] * b.shape[1] / dt / 1e9


def per_cell(r: dict) -> float:
    return 1000 * r["cpu"] / max(r["steps"] * r["obligations"], 1)


def by_length(rows: list[dict]) -> list[str]:
    lines = [
        "| trace length (chars) | traces | median steps | median obligations | median CPU s"
        " | max CPU s | median embedding share | median ms per (step × obligation) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for lo, hi in BUCKETS:
        b = [r for r in rows if lo <= r["chars"] < hi]
        if not b:
            continue
        label = f"{lo:,}–{hi:,}" if hi < 10**9 else f"≥ {lo:,}"
        share = statistics.median(r["embed"] / max(r["cpu"], 1e-9) for r in b)
        lines.append(
            f"| {label} | {len(b)} | {statistics.median(r['steps'] for r in b):.0f}"
            f" | {statistics.median(r['obligations'] for r in b):.0f}"
            f" | {statistics.median(r['cpu'] for r in b):.2f} | {max(r['cpu'] for r in b):.2f}"
            f" | {share:.0%} | {statistics.median(per_cell(r) for r in b):.2f} |"
        )
    return lines


def joined(contract, items) -> list[str]:  # type: ignore[no-untyped-def]
    """1, 2, 4 and 8 different trajectories joined under the first one's query."""
    picked = sorted(items, key=lambda it: abs(len(it.text) - 12_000))[:8]
    head = picked[0].text.partition("\n[user]")[0]
    bodies = ["[user]" + it.text.partition("\n[user]")[2].rstrip("\n") for it in picked]
    lines = [
        "| trajectories | chars | steps | obligations | CPU s | embedding CPU s"
        " | ms per embedded token | ms per (step × obligation) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for k in (1, 2, 4, 8):
        r = one(contract, picked[0].query, head + "\n" + "\n".join(bodies[:k]) + "\n")
        lines.append(
            f"| {k} | {r['chars']:,} | {r['steps']} | {r['obligations']} | {r['cpu']:.2f}"
            f" | {r['embed']:.2f} | {1000 * r['embed'] / max(r['tokens'], 1):.2f}"
            f" | {per_cell(r):.2f} |"
        )
    names = ", ".join(f"task {it.task} trial {it.trial}" for it in picked)
    return [f"Trajectories, in order: {names}; read under query `{picked[0].query}`.", "", *lines]


def main() -> int:
    contract, items = load_devset(ROOT / "fixtures" / "taubench")
    encoder()
    one(contract, items[0].query, items[0].text)  # first-use costs (imports, BLAS) once
    rows = []
    for k, it in enumerate(items):
        rows.append(one(contract, it.query, it.text))
        print(f"\r{k + 1}/{len(items)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    tokens = sum(r["tokens"] for r in rows)
    lines = [
        "# Benchmarks: semantic mode per trace",
        "",
        "<!-- generated by scripts/bench_semantic.py (make bench-semantic) -->",
        "",
        __doc__.split("\n\n", 1)[1].strip(),
        "",
        doc.machine(),
        "",
        f"Float32 matrix product on one core: {gemm_gflops():.0f} GFLOP/s. Embedding over"
        f" all traces: {1000 * sum(r['embed'] for r in rows) / max(tokens, 1):.2f} ms of CPU"
        f" per token ({tokens:,} tokens).",
        "",
        f"Traces: {len(items)} of `fixtures/taubench`.",
        "",
        "## Development-set traces by length",
        "",
        *by_length(rows),
        "",
        "## Longer traces: different trajectories joined",
        "",
        *joined(contract, items),
    ]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
