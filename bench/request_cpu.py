"""CPU time the web process spends per request, route by route, on the seeded database.

On a shared machine the load test's wall times measure the queue for a CPU, not the
app; this measures what one request costs the Django process (``time.process_time``),
its queries (count, and their time as the client sees it), and its wall time when it
runs alone (the median, and the least CPU time: on a busy machine the median includes
time lost to other processes' use of the caches, the least much less): 20 requests per route after one warm-up, through the test client (no
network; same middleware, session and token auth as gunicorn). After each request the
connections are handled as a WSGI server does (``close_old_connections``), so with
``CONN_MAX_AGE=0`` every request pays for its own database connection, as it would
in production.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/contracteval_bench \\
        python bench/request_cpu.py [--routes run,inbox] [--profile N] [-n 20]

``--profile N`` prints the N functions with the most cumulative time (``--sort
tottime``: own time) for each route (cProfile on CPU time over the measured requests).
``--doc`` writes ``docs/benchmarks-requests.md`` (``make bench-reads``).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contracteval_site.settings")


class QueryClock:
    """Counts the queries of a request and the time spent waiting for them."""

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.count += 1
            self.seconds += time.perf_counter() - started


def measure(call, n: int, profiler: cProfile.Profile | None) -> dict[str, float]:
    """Median CPU ms, queries and DB ms, median and p95 wall ms of ``n`` calls (after a
    warm-up), closing connections after each as the WSGI handler does."""
    from django.db import close_old_connections, connection

    call()
    close_old_connections()
    cpu, wall, queries, db = [], [], [], []
    for _ in range(n):
        clock = QueryClock()
        c0, w0 = time.process_time(), time.perf_counter()
        if profiler:
            profiler.enable()
        with connection.execute_wrapper(clock):
            response = call()
        close_old_connections()
        if profiler:
            profiler.disable()
        cpu.append((time.process_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
        queries.append(clock.count)
        db.append(clock.seconds * 1000)
        assert response.status_code in (200, 201, 204, 302), response.status_code
    wall.sort()
    return {
        "cpu": statistics.median(cpu),
        "cpu_min": min(cpu),
        "queries": statistics.median(queries),
        "db": statistics.median(db),
        "wall": statistics.median(wall),
        "p95": wall[int(0.95 * (n - 1))],
    }


def routes(ROOT: Path) -> dict:
    from django.contrib.auth import get_user_model
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from audit.models import Contract, Run

    user = get_user_model().objects.get(username="reviewer")
    ui = Client(HTTP_HOST="127.0.0.1")
    ui.force_login(user)  # a session in the database, read on each request as in production
    token = Token.objects.get_or_create(user=user)[0].key
    api = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Token {token}")
    htmx = {"HTTP_HX_REQUEST": "true"}
    run = Run.objects.filter(status="done").order_by("-pk").first()
    assert run is not None, "seed the database first (bench/seed_runs.py)"
    contract = Contract.objects.filter(key="refund-mini", status="audited").latest("version")
    observed = json.loads((ROOT / "matching" / "data" / "refund-mini-observed-q1.json").read_text())
    counter = [0]

    def create():
        counter[0] += 1
        doc = json.loads(json.dumps(observed))
        doc["source"]["text"] += f"\n[assistant] cpu bench {time.time_ns()} {counter[0]}"
        body = {"contract": contract.pk, "query": "q1", "input_kind": "observed", "input": doc}
        return api.post("/api/runs/", json.dumps(body), content_type="application/json")

    return {
        "runs page": lambda: ui.get("/p/demo/runs/"),
        "runs page verdict=non_clean": lambda: ui.get("/p/demo/runs/?verdict=non_clean"),
        "inbox": lambda: ui.get("/p/demo/inbox/"),
        "inbox family=omission": lambda: ui.get("/p/demo/inbox/?family=omission"),
        "run page": lambda: ui.get(f"/r/{run.pk}/"),
        "run status poll (htmx)": lambda: ui.get(f"/r/{run.pk}/status/", **htmx),
        "api runs": lambda: api.get("/api/runs/?project=demo"),
        "api runs verdict=non_clean": lambda: api.get("/api/runs/?project=demo&verdict=non_clean"),
        "api run": lambda: api.get(f"/api/runs/{run.pk}/"),
        "api create run (queued)": create,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20, help="requests per route")
    parser.add_argument("--routes", default="", help="comma-separated substrings of names")
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    parser.add_argument("--sort", default="cumulative", help="pstats order for --profile")
    parser.add_argument("--doc", action="store_true", help="write docs/benchmarks-requests.md")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    import django

    django.setup()
    from django.conf import settings

    wanted = [w for w in args.routes.split(",") if w]
    table = {k: v for k, v in routes(ROOT).items() if not wanted or any(w in k for w in wanted)}
    age = settings.DATABASES["default"].get("CONN_MAX_AGE")
    print(f"CONN_MAX_AGE={age}")
    head = f"{'route':<30} {'cpu ms':>7} {'min':>6} {'queries':>7} {'db ms':>6}"
    print(f"{head} {'wall ms':>8} {'p95':>6}")
    rows = []
    for name, call in table.items():
        profiler = cProfile.Profile(time.process_time) if args.profile else None
        m = measure(call, args.n, profiler)
        rows.append(
            [name, f"{m['cpu']:.1f} ({m['cpu_min']:.1f})", f"{m['queries']:.0f}", f"{m['db']:.1f}"]
        )
        print(
            f"{name:<30} {m['cpu']:7.1f} {m['cpu_min']:6.1f} {m['queries']:7.0f} {m['db']:6.1f}"
            f" {m['wall']:8.1f} {m['p95']:6.1f}"
        )
        if profiler:
            pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.profile)
    if args.doc:
        from bench import doc

        doc.write(
            "requests",
            title="CPU per request",
            command=f"make bench-reads (bench/request_cpu.py -n {args.n} --doc)",
            method=__doc__.split("\n\n    DATABASE_URL")[0].split("\n\n", 1)[1],
            machine_line=doc.machine(doc.postgres_version(), load=load),
            body=[
                f"{args.n} requests per route after a warm-up one; `CONN_MAX_AGE={age}`.",
                "",
                *doc.table(["route", "CPU ms, median (least)", "queries", "database ms"], rows),
            ],
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
