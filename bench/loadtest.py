"""``make loadtest``: seed runs, start ``make serve``, run locust headless, report.

1. Seeds ``DATABASE_URL`` (PostgreSQL) up to ``--runs`` runs (``bench/seed_runs.py``).
2. Starts ``make serve`` (gunicorn + a Celery worker + beat) on that database and
   private Redis databases (``LOADTEST_BROKER_URL``, default db 11; the shared cache
   ``LOADTEST_CACHE_URL``, db 13; the batch benchmark uses 12), on ``--port``.
3. Runs ``bench/locustfile.py`` headless: ``--users`` users, spawned over 10 s, for
   ``--time``.
4. Waits for the queue to drain (every run created by the test finished), stops the
   server, and prints p50/p95/p99 and errors for all reads together, run creation and
   each route, against the targets (reads p95 < 100 ms, p99 < 250 ms; creation p95 <
   150 ms; 0 errors), with the CPU the server, PostgreSQL and locust used per request
   and warnings about the database (no statistics, autovacuum off). ``--json OUT``
   writes the same figures as JSON; ``--doc`` writes ``docs/benchmarks-load.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench import doc  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contracteval_site.settings")
VAR = ROOT / "var"
BIN = Path(sys.executable).parent
# p95 and p99 ms of reads, p95 ms of run creation
TARGETS = {"read": {"p95_ms": 100, "p99_ms": 250}, "create run": {"p95_ms": 150}}
METHOD = """
Seeds the database up to the given number of runs and analyses it, starts ``make serve``
on it (gunicorn with cores + 1 workers warmed in the master, a Celery worker and beat at
``nice 10``, private Redis databases for the broker and the shared cache), runs
``bench/locustfile.py`` headless (think time 0.5–1.5 s; reads of the runs list, inbox,
run page, status poll and API, and run creation, by the task weights of the locust
file), waits for the queue to drain, and reports exact percentiles over all reads and
over run creation, with the CPU the server's processes, PostgreSQL and locust used per
request.
"""


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (nearest rank) of ``values``.

    >>> percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95)
    10
    >>> percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 50)
    5
    """
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, -(-len(ordered) * q // 100))  # ceil without floats
    return ordered[int(rank) - 1]


def summarise(samples: dict[str, list[list]]) -> dict[str, dict[str, float]]:
    out = {}
    for group, rows in samples.items():
        times = [t for t, _ in rows]
        out[group] = {
            "requests": len(rows),
            "errors": sum(1 for _, failed in rows if failed),
            "p50_ms": round(percentile(times, 50), 1),
            "p95_ms": round(percentile(times, 95), 1),
            "p99_ms": round(percentile(times, 99), 1),
        }
    return out


def wait_http(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"the server did not answer {url} within {seconds:.0f} s")


def pending_since(last_pk: int) -> int:
    """Runs created after ``last_pk`` that the workers have not finished yet."""
    from audit.models import Run

    return Run.objects.filter(pk__gt=last_pk, status__in=["queued", "running"]).count()


def drain(last_pk: int, seconds: float) -> tuple[int, float]:
    """Wait until the test's runs are all finished: ``(still pending, seconds waited)``."""
    started = time.monotonic()
    pending = pending_since(last_pk)
    while pending and time.monotonic() - started < seconds:
        time.sleep(1)
        pending = pending_since(last_pk)
    return pending, round(time.monotonic() - started, 1)


def processes() -> dict[int, tuple[str, int, float]]:
    """Every live process: pid -> (name, parent pid, user + system CPU seconds)."""
    tick, out = os.sysconf("SC_CLK_TCK"), {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        name = raw[raw.index("(") + 1 : raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2 :].split()
        out[int(entry.name)] = (name, int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    return out


def server_cpu(server: subprocess.Popen) -> float:
    """CPU of ``make serve``'s live processes (its descendants): gunicorn, the worker,
    beat."""
    table, tree = processes(), {server.pid}
    grew = True
    while grew:
        grew = False
        for pid, (_name, parent, _cpu) in table.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return sum(table[pid][2] for pid in tree if pid in table)


def postgres_cpu() -> float:
    """CPU of every live PostgreSQL process (other databases' work included)."""
    return sum(cpu for name, _parent, cpu in processes().values() if name.startswith("postgres"))


def database_warnings() -> list[str]:
    """What makes PostgreSQL's plans at 100,000 runs unlike production's."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW autovacuum")
        autovacuum = cursor.fetchone()[0]
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'audit_run'")
        estimated = cursor.fetchone()[0]
    out = []
    if autovacuum != "on":
        out.append("autovacuum is off: statistics come only from the seeder's ANALYZE")
    if estimated is None or estimated < 0:
        out.append("audit_run was never analysed: the planner guesses (run bench/seed_runs.py)")
    return out


def start_serve(port: int, broker: str, cache: str) -> subprocess.Popen:
    env = os.environ | {
        "CELERY_BROKER_URL": broker,
        "CACHE_URL": cache,
        "PORT": str(port),
        "LOG_LEVEL": "WARNING",
    }
    env["WEB_ACCESS_LOG"] = str(VAR / "loadtest-access.log")
    log = open(VAR / "loadtest-serve.log", "w")  # noqa: SIM115 - lives as long as the server
    return subprocess.Popen(
        ["make", "-s", "serve", f"PORT={port}"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # one process group: stopped together below
    )


def stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def reviewer_session() -> str:
    """A signed-in session of the reviewer, as the login form would make it."""
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.contrib.sessions.backends.db import SessionStore

    user = get_user_model().objects.get(username="reviewer")
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return session.session_key


def run_locust(host: str, users: int, duration: str, token: str, contract: int) -> dict:
    samples = VAR / "loadtest-samples.json"
    env = os.environ | {
        "LOADTEST_SESSION": reviewer_session(),
        "LOADTEST_TOKEN": token,
        "LOADTEST_CONTRACT": str(contract),
        "LOADTEST_SAMPLES": str(samples),
    }
    command = [
        str(BIN / "locust"), "-f", str(ROOT / "bench" / "locustfile.py"), "--headless",
        "--host", host, "--users", str(users), "--spawn-rate", str(max(1, users // 10)),
        "--run-time", duration, "--csv", str(VAR / "loadtest"), "--only-summary",
    ]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, cwd=ROOT, env=env, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    locust_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"samples": json.loads(samples.read_text()), "locust_cpu": locust_cpu}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--time", default="60s")
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--doc", action="store_true", help="write docs/benchmarks-load.md")
    args = parser.parse_args(argv)
    broker = os.environ.get("LOADTEST_BROKER_URL", "redis://127.0.0.1:6379/11")
    cache = os.environ.get("LOADTEST_CACHE_URL", "redis://127.0.0.1:6379/13")
    VAR.mkdir(exist_ok=True)
    seed = [sys.executable, str(ROOT / "bench" / "seed_runs.py"), "--runs", str(args.runs)]
    subprocess.run(seed, check=True)
    import django

    django.setup()
    from audit.models import Contract, Run

    contract = Contract.objects.filter(key="refund-mini", status="audited").latest("version").pk
    token = (VAR / "loadtest-token").read_text().strip()
    last_pk = Run.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    warnings = database_warnings()
    load_before = os.getloadavg()[0]
    server = start_serve(args.port, broker, cache)
    try:
        wait_http(f"http://127.0.0.1:{args.port}/login/", 120)
        host = f"http://127.0.0.1:{args.port}"
        served, pg = server_cpu(server), postgres_cpu()
        locust = run_locust(host, args.users, args.time, token, contract)
        served, pg = server_cpu(server) - served, postgres_cpu() - pg
        pending, waited = drain(last_pk, 300)
    finally:
        stop(server)
    summary = summarise(locust["samples"])
    requests = sum(row["requests"] for row in summary.values()) or 1
    report = {
        "users": args.users,
        "duration": args.time,
        "runs_in_database": Run.objects.count(),
        "runs_created": Run.objects.filter(pk__gt=last_pk).count(),
        "queue_pending_after": pending,
        "drain_seconds": waited,
        "load_average_before": round(load_before, 2),
        "database_warnings": warnings,
        # CPU used while locust ran, per request: is the machine the bottleneck?
        "cpu_ms_per_request": {
            "web_worker_beat": round(1000 * served / requests, 1),
            "postgres_all_databases": round(1000 * pg / requests, 1),
            "locust": round(1000 * locust["locust_cpu"] / requests, 1),
        },
        "summary": summary,
    }
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    if args.doc:
        doc.write(
            "load",
            title=f"load test at {report['runs_in_database']:,} runs",
            command=f"make loadtest (bench/loadtest.py --users {args.users} --time {args.time}"
            f" --runs {args.runs} --doc)",
            method=METHOD,
            machine_line=doc.machine(
                doc.postgres_version(), doc.redis_version(broker), load=load_before
            ),
            body=_body(report),
        )
    return 0


def _verdict(group: str, row: dict[str, float]) -> str:
    """Whether ``row`` met its group's targets (and had no error)."""
    bars = TARGETS.get(group)
    if not bars:
        return ""
    met = row["errors"] == 0 and all(row[k] < v for k, v in bars.items())
    words = ", ".join(f"{k.split('_')[0]} < {v}" for k, v in bars.items())
    return f"{words}, 0 errors: {'met' if met else '**not met**'}"


def _body(report: dict) -> list[str]:
    """The report as the document's tables."""
    summary, cpu = report["summary"], report["cpu_ms_per_request"]
    order = ["read", "create run", *sorted(k for k in summary if k not in ("read", "create run"))]
    rows = [
        [
            g,
            summary[g]["requests"],
            summary[g]["errors"],
            summary[g]["p50_ms"],
            f"**{summary[g]['p95_ms']}**",
            summary[g]["p99_ms"],
            _verdict(g, summary[g]),
        ]
        for g in order
        if g in summary
    ]
    body = [
        f"{report['users']} users for {report['duration']}; {report['runs_created']:,} runs"
        f" created, {report['queue_pending_after']} still queued after the drain"
        f" ({report['drain_seconds']} s).",
        "",
        *doc.table(["requests", "count", "errors", "p50 ms", "p95 ms", "p99 ms", "target"], rows),
        "",
        "CPU per request while locust ran:",
        "",
        *doc.table(
            ["web, worker and beat", "PostgreSQL", "locust"],
            [
                [
                    f"{cpu['web_worker_beat']} ms",
                    f"{cpu['postgres_all_databases']} ms",
                    f"{cpu['locust']} ms",
                ]
            ],
        ),
    ]
    if report["database_warnings"]:
        body += ["", "Warnings about the database:", ""]
        body += [f"- {w}" for w in report["database_warnings"]]
    return body


if __name__ == "__main__":
    raise SystemExit(main())
