"""Time compliance analytics on a database seeded by ``bench/seed_runs.py``.

Measures, on the audited ``refund-mini`` contract of the demo project: the rates per
obligation from the runs' compact ``obligations`` column and, for comparison, from their
overlays (what reading the overlay JSON would cost), the clean-run trend per day and
per week, a comparison of two agent versions, and the analytics page and API answers
through Django's test client (best of ``--repeat``).

    DATABASE_URL=sqlite:////tmp/bench.sqlite3 python bench/seed_runs.py --runs 100000
    DATABASE_URL=sqlite:////tmp/bench.sqlite3 python bench/analytics.py [--doc]

``--doc`` writes ``docs/benchmarks-analytics.md`` (``make bench-reads``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench import doc  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contracteval_site.settings")


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def rates_from_overlays(contract, runs) -> None:
    """The same rates, read from each run's overlay: the cost the compact column avoids."""
    from audit.models import Run
    from matching.outcomes import obligation_outcomes

    done = Run.objects.filter(contract=contract, status="done")
    rows = done.values_list("overlay", flat=True).iterator(chunk_size=2000)
    for overlay in rows:
        obligation_outcomes(overlay or {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--doc", action="store_true", help="write docs/benchmarks-analytics.md")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from audit.models import Contract
    from audit.selectors import analytics

    contract = Contract.objects.filter(key="refund-mini", status="audited").latest("version")
    runs = analytics.finished_runs(contract)
    client = Client()
    client.force_login(get_user_model().objects.get(username="reviewer"))
    page, api = f"/c/{contract.pk}/analytics/", f"/api/contracts/{contract.pk}/analytics/"
    compare = f"/c/{contract.pk}/analytics/compare/?a=1.4.0&b=1.5.0"
    get = lambda url: client.get(url, HTTP_HOST="127.0.0.1")  # noqa: E731
    timings = {
        "rates (RunOutcome patterns)": lambda: analytics.obligation_rates(contract, runs),
        "rates from the overlays instead": lambda: rates_from_overlays(contract, runs),
        "trend per day": lambda: analytics.clean_trend(runs, "day"),
        "trend per week": lambda: analytics.clean_trend(runs, "week"),
        "compare 1.4.0 / 1.5.0": lambda: analytics.compare(
            contract, runs, "agent_version", "1.4.0", "1.5.0"
        ),
        "page": lambda: get(page),
        "page, one version, 30 days": lambda: get(f"{page}?agent_version=1.5.0&since=2026-11-03"),
        "compare page": lambda: get(compare),
        "API": lambda: get(api),
    }
    n_runs = runs.count()
    print(f"{n_runs:,} finished runs of {contract.key} v{contract.version}")
    rows = []
    for name, fn in timings.items():
        ms = 1000 * best(fn, args.repeat)
        rows.append([name, f"{ms:,.0f}"])
        print(f"{name:<36} {ms:8.0f} ms")
    if args.doc:
        doc.write(
            "analytics",
            title=f"compliance analytics at {n_runs:,} runs",
            command=f"make bench-reads (bench/analytics.py --repeat {args.repeat} --doc)",
            method=__doc__.split("\n\n")[1],
            machine_line=doc.machine(doc.postgres_version(), load=load),
            body=[
                f"{n_runs:,} finished runs of `{contract.key}` v{contract.version};"
                f" best of {args.repeat}.",
                "",
                *doc.table(["read", "wall ms"], rows),
            ],
        )


if __name__ == "__main__":
    main()
