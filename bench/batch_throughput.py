"""``make bench-batch``: suite batches through the API with 1, 2 and 4 worker processes.

For each process count, one Celery worker (``--concurrency N``, prefork) starts on a
private Redis queue and ``DATABASE_URL`` (PostgreSQL); the fixture suite (1,400 cases,
token mode) is posted to ``POST /api/batches/`` as the reviewer, and the time from the
POST to the batch's "done" is measured (the worker is already up and idle). Then, with
``--kill``, a 16,800-case batch (the suite twelve times, ids made distinct) runs on two
processes; when a third of it is done the worker is SIGKILLed and restarted, and the
script checks that every case is counted once.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/contracteval_bench \\
        python bench/batch_throughput.py [--processes 1 2 4] [--kill] [--json OUT] [--doc]

``--doc`` writes ``docs/benchmarks-batch.md`` (``make bench-batch``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench import doc  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contracteval_site.settings")
BROKER = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/12")
TARGET_SPEED_UP = 1.6  # 2 processes against 1, medians
METHOD = """
The fixture suite (1,400 cases, token mode) posted to ``POST /api/batches/`` as the
reviewer, with one Celery worker of 1, 2 and 4 prefork processes on PostgreSQL and
Redis, timed from the POST to the batch's "done" (the worker is up and idle first, and
this process, the web server of the POSTs, is warmed as gunicorn's master warms its
workers). Where the time went: the sum and maximum of the chunks' evaluation time, how
long after the POST the first chunk started, and the time from the last chunk stored to
the scores. The kill run posts a 16,800-case batch (the suite twelve times, case ids
made distinct) to a 2-process worker, SIGKILLs the whole worker when a third is done,
starts a new one, and counts every case once.
"""


def start_worker(queue: str, processes: int, visibility: int = 30) -> subprocess.Popen:
    env = os.environ | {
        "CELERY_BROKER_URL": BROKER,
        "CELERY_VISIBILITY_TIMEOUT": str(visibility),
        "LOG_LEVEL": "WARNING",
    }
    command = [
        sys.executable, "-m", "celery", "-A", "contracteval_site", "worker", "-Q", queue,
        f"--concurrency={processes}", "--loglevel=WARNING", "-n", f"{queue}-{processes}@%h",
        "--without-gossip", "--without-mingle",
    ]  # fmt: skip
    log = open(ROOT / "var" / f"bench-worker-{queue}.log", "a")  # noqa: SIM115
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def wait_ready(queue: str, processes: int, seconds: float = 60) -> None:
    from contracteval_site.celery import app

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        replies = app.control.ping(destination=[f"{queue}-{processes}@{os.uname().nodename}"])
        if replies:
            return
        time.sleep(0.5)
    raise SystemExit(f"worker for {queue} did not answer in {seconds:.0f} s")


def post_batch(client, archive: bytes | None) -> int:
    from django.core.files.uploadedfile import SimpleUploadedFile

    body: dict = {"project": "demo", "mode": "token", "extractor": "none"}
    if archive is not None:
        body["suite"] = SimpleUploadedFile("suite.zip", archive, "application/zip")
    r = client.post("/api/batches/", body, format="multipart" if archive else "json")
    assert r.status_code == 201, r.content[:500]
    return r.json()["id"]


def wait_done(batch_id: int, seconds: float, on_progress=None):
    from audit.models import Batch

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        # only what the poll needs: this process shares the CPUs with the workers
        batch = Batch.objects.only("status", "done", "total").get(pk=batch_id)
        if batch.is_finished:
            return Batch.objects.defer("archive").get(pk=batch_id)
        if on_progress is not None:
            on_progress(batch)
        time.sleep(0.05)
    raise SystemExit(f"batch {batch_id} not finished in {seconds:.0f} s")


def stop(proc: subprocess.Popen) -> None:
    """Stop a worker and its pool processes (its own process group)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def throughput(client, queue: str, processes: int) -> dict:
    from django.utils import timezone

    from contracteval_site.celery import app

    app.conf.task_default_queue = queue
    worker = start_worker(queue, processes)
    try:
        wait_ready(queue, processes)
        t0 = time.perf_counter()
        batch_id = post_batch(client, None)
        posted, posted_at = time.perf_counter(), timezone.now()
        batch = wait_done(batch_id, 900)
        wall = time.perf_counter() - t0
    finally:
        stop(worker)
    assert batch.status == "done", batch.error
    chunks = list(batch.chunks.defer("cases", "packed", "results"))
    stored = max(c.heartbeat for c in chunks)
    return {
        "processes": processes,
        "cases": batch.total,
        "chunks": len(chunks),
        "post_seconds": round(posted - t0, 3),
        "seconds": round(wall, 3),
        "cases_per_second": round(batch.total / wall, 1),
        # where the time went: evaluating chunks (divides over processes) and the
        # serial parts around it (the POST above, the last store to the scores)
        "chunk_seconds_sum": round(sum(c.seconds or 0 for c in chunks), 3),
        "chunk_seconds_max": round(max(c.seconds or 0 for c in chunks), 3),
        "first_chunk_after_post": round((batch.started_at - posted_at).total_seconds(), 3),
        "scoring_seconds": round((batch.finished_at - stored).total_seconds(), 3),
    }


def kill_run(client, queue: str, copies: int = 12, processes: int = 2) -> dict:
    from audit.models import Batch
    from audit.services.batches import fixture_suite_dir
    from contracteval_site.celery import app
    from tests.web.workers import repeated_suite_zip

    app.conf.task_default_queue = queue
    archive, n = repeated_suite_zip(fixture_suite_dir(), copies)
    worker = start_worker(queue, processes, visibility=10)
    wait_ready(queue, processes)
    t0 = time.perf_counter()
    batch_id = post_batch(client, archive)
    state: dict = {}

    def kill_at_a_third(batch) -> None:
        if "killed_at" not in state and batch.done >= n // 3:
            state["killed_at"] = batch.done
            # the whole worker (main process and pool), at once: no warm shutdown
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
            state["restarted"] = start_worker(queue, processes, visibility=10)

    try:
        batch = wait_done(batch_id, 1800, kill_at_a_third)
    finally:
        stop(state.get("restarted") or worker)
    chunks = list(Batch.objects.get(pk=batch_id).chunks.order_by("index"))
    ids = [row[0] for c in chunks for row in c.results or []]
    return {
        "cases": n,
        "killed_at_done": state.get("killed_at"),
        "status": batch.status,
        "done": batch.done,
        "scored_cases": (batch.scores or {}).get("cases"),
        "case_rows": len(ids),
        "distinct_case_ids": len(set(ids)),
        "chunks_run_twice": sum(1 for c in chunks if c.attempts > 1),
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--kill", action="store_true", help="also the 16,800-case kill run")
    parser.add_argument("--repeat", type=int, default=3, help="batches per process count")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--doc", action="store_true", help="write docs/benchmarks-batch.md")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    os.environ["CELERY_BROKER_URL"] = BROKER
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from rest_framework.test import APIClient

    call_command("migrate", verbosity=0, interactive=False)
    call_command("load_demo", verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
    client = APIClient(HTTP_HOST="127.0.0.1")  # an allowed host, as a browser sends
    client.force_authenticate(get_user_model().objects.get(username="reviewer"))
    # This process is the web server of the POSTs: warm it as gunicorn's master warms
    # its workers, or the first POST (the 1-process figure) pays ~1 s of imports.
    from contracteval_site.warmup import warm_up

    warm_up()
    assert client.get("/api/batches/?project=demo").status_code == 200
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    out: dict = {"throughput": [], "median_cases_per_second": {}}
    for p in args.processes:
        rows = [throughput(client, queue, p) for _ in range(max(1, args.repeat))]
        for row in rows:
            print(json.dumps(row))
        out["throughput"] += rows
        out["median_cases_per_second"][p] = statistics.median(r["cases_per_second"] for r in rows)
    medians = out["median_cases_per_second"]
    print(json.dumps({"median_cases_per_second": medians}))
    if 1 in medians and 2 in medians:
        print(f"2 processes / 1 process (medians): {medians[2] / medians[1]:.2f}x")
    if args.kill:
        out["kill"] = kill_run(client, queue)
        print(json.dumps(out["kill"]))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    if args.doc:
        flags = f"--repeat {args.repeat}" + (" --kill" if args.kill else "")
        doc.write(
            "batch",
            title="suite batches over worker processes",
            command=f"make bench-batch (bench/batch_throughput.py {flags} --doc)",
            method=METHOD,
            machine_line=doc.machine(doc.postgres_version(), doc.redis_version(BROKER), load=load),
            body=_body(out, args.repeat),
        )
    return 0


def _body(out: dict, repeat: int) -> list[str]:
    """The figures of ``out`` as the document's tables."""
    rows = []
    for p, median in out["median_cases_per_second"].items():
        runs = [r for r in out["throughput"] if r["processes"] == p]
        rows.append(
            [
                p,
                f"**{median:,.1f}**",
                ", ".join(f"{r['cases_per_second']:,.1f}" for r in runs),
                f"{statistics.median(r['chunk_seconds_sum'] for r in runs):.2f} s",
                f"{statistics.median(r['first_chunk_after_post'] for r in runs):.2f} s",
                f"{statistics.median(r['scoring_seconds'] for r in runs):.2f} s",
            ]
        )
    header = ["processes", "cases/s, median", f"each of {repeat}", "chunks' time, summed"]
    body = doc.table([*header, "POST → first chunk", "last chunk → scores"], rows)
    medians = out["median_cases_per_second"]
    if 1 in medians and 2 in medians:
        ratio = medians[2] / medians[1]
        met = "met" if ratio >= TARGET_SPEED_UP else "not met"
        body += [
            "",
            f"2 processes against 1: **{ratio:.2f}×** (target ≥ {TARGET_SPEED_UP}×: {met}).",
        ]
    if "kill" in out:
        k = out["kill"]
        once = k["case_rows"] == k["distinct_case_ids"] == k["scored_cases"] == k["cases"]
        body += ["", "## Killed and restarted mid-way", ""]
        body += doc.table(
            [
                "cases",
                "killed at",
                "status",
                "scored",
                "case rows",
                "distinct ids",
                "chunks run twice",
                "wall",
                "every case once",
            ],
            [
                [
                    f"{k['cases']:,}",
                    f"{k['killed_at_done']:,}",
                    k["status"],
                    f"{k['scored_cases']:,}",
                    f"{k['case_rows']:,}",
                    f"{k['distinct_case_ids']:,}",
                    k["chunks_run_twice"],
                    f"{k['seconds']} s",
                    "yes" if once else "**no**",
                ]
            ],
        )
    return body


if __name__ == "__main__":
    raise SystemExit(main())
