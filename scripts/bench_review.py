"""What a reviewer waits for on the embedded default: ``make bench-review`` ->
docs/benchmarks-review.md.

Starts the app as ``make run`` does (gunicorn and one Celery worker on a
SQLite database and a SQLite broker, here in a throw-away folder), loads the demo data
and the airline contract of ``fixtures/taubench``, then drives Debian's Chromium with
Playwright as a reviewer would:

- *a semantic run*: paste a real τ-bench trace into the run form (the shortest of the
  development set, one per task: 7,000–10,000 characters, longer than the 5,000 a
  typical support chat has), submit, and wait until the page shows the verdict (the worker takes the job from
  the broker, the page polls twice a second); the first run also loads the sentence
  model in the worker and is reported apart;
- *a correction*: mark one step as commentary in the correction table and apply; the
  run's reading is re-rendered in place; then *revert* it;
- *the longest trace*: a run of the largest trace the input limits accept (512 KiB in
  1,000 steps, each an extra action), evaluated before the steps above; its page, each
  part of its trace and the overlay's payload fetched with the browser's session (bytes
  and wall time of each response), then the page opened until the overlay draws its
  trace, and a failure in the last part clicked until its evidence shows. The web
  process's resident memory is read from /proc before and after.

Each figure is wall time in the browser, from the click to the element the reviewer
reads. Run it on an idle machine with the venv installed.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench import doc  # noqa: E402

OUT = ROOT / "docs" / "benchmarks-review.md"
BIN = ROOT / ".venv" / "bin"
TRACES = ROOT / "fixtures" / "taubench" / "traces"
CHROMIUM = os.environ.get("CONTRACTEVAL_CHROMIUM", "/usr/bin/chromium")
RUNS = 6  # the first loads the model; the others are timed warm
CORRECTIONS = 5
SIZE = (5000, 10000)  # characters of the traces pasted


def traces() -> list[tuple[int, str]]:
    """The shortest real traces within ``SIZE``, one per task: (task, text)."""
    seen: dict[int, str] = {}
    paths = sorted(TRACES.glob("task*-trial*.txt"), key=lambda p: (p.stat().st_size, p.name))
    for path in paths:
        text = path.read_text(encoding="utf-8")
        task = int(re.match(r"task(\d+)", path.name).group(1))  # type: ignore[union-attr]
        if SIZE[0] <= len(text) <= SIZE[1] and task not in seen:
            seen[task] = text
    if len(seen) < RUNS:
        raise SystemExit(f"only {len(seen)} traces of {SIZE} characters in {TRACES}")
    return list(seen.items())[:RUNS]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(env: dict[str, str], port: int) -> list[subprocess.Popen]:
    """The web server and the worker of ``make run`` (deploy/Procfile.local)."""
    manage = [str(BIN / "python"), "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run([*manage, "load_demo"], cwd=ROOT, env=env, check=True, capture_output=True)
    subprocess.run([*manage, "shell", "-c", LOAD_AIRLINE], cwd=ROOT, env=env, check=True)
    procs = [
        subprocess.Popen(
            [str(BIN / "gunicorn"), "contracteval_site.wsgi:application"]
            + ["--config", "deploy/gunicorn.conf.py"],
            cwd=ROOT,
            env={**env, "WEB_CONCURRENCY": "2", "BIND": f"127.0.0.1:{port}"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
        subprocess.Popen(
            [str(BIN / "celery"), "-A", "contracteval_site", "worker", "--loglevel=WARNING"]
            + ["--concurrency=2", "-n", "bench@%h"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
    ]
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return procs
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the web server did not start")


LOAD_AIRLINE = """
import json
from pathlib import Path
from django.contrib.auth import get_user_model
from audit import services
from audit.models import Project
admin = get_user_model().objects.get(username="admin")
doc = json.loads(Path("fixtures/taubench/contracts/airline.json").read_text())
c = services.contract_import(project=Project.objects.get(slug="demo"), user=admin, source=doc)
if c.status != "audited":
    services.contract_mark_audited(contract=c, user=admin)
print(c.pk)
"""


# The largest run the input limits accept: trace_bytes in trace_events events, tool
# calls and agent sentences in turn (as tests/web/sweep.py trace_of), each a step.
LOAD_LONG = """
from django.contrib.auth import get_user_model
from audit import services
from audit.models import Contract
from matching.input_limits import Limits
limits, lines = Limits(), []
per = limits.trace_bytes // limits.trace_events
for i in range(limits.trace_events):
    if i % 2 == 0:
        head, tail = f'[tool] lookup_order(order_id="{1000 + i}", note="', '")\\n'
    else:
        head, tail = f"[assistant] I checked order {1000 + i} and the payment is confirmed. ", "\\n"
    lines.append(head + "x" * (per - len(head) - len(tail)) + tail)
text = "".join(lines)
text += "x" * (limits.trace_bytes - len(text.encode()))
user = get_user_model().objects.get(username="reviewer")
contract = Contract.objects.get(key="refund-mini", status="audited")
run, _ = services.run_create(contract=contract, user=user, query_key="q1", kind="text", data=text)
run = services.run_execute(run_id=run.pk)
assert run.status == "done", run.error
last = run.overlay["observed"][-1]["id"]
print(run.pk, next(i for i, f in enumerate(run.overlay["failures"]) if last in f["observed"]))
"""
LONG_TIMES = 5


def long_run(env: dict[str, str]) -> tuple[int, int]:
    """The pk of the largest run and the index of a failure in its trace's last part."""
    pk, failure = _shell(env, LOAD_LONG).split()
    return int(pk), int(failure)


def memory_kib(pid: int, field: str) -> int:
    """``Pss`` (resident, pages shared with the master or each other counted once, in
    shares) or ``VmHWM`` (the peak resident, shared pages whole) of gunicorn master
    ``pid``'s workers: their sum for ``Pss``, the largest for ``VmHWM``; in KiB."""
    values = []
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        source = "smaps_rollup" if field == "Pss" else "status"
        for line in Path(f"/proc/{child}/{source}").read_text().splitlines():
            if line.startswith(field + ":"):
                values.append(int(line.split()[1]))
    if not values:
        raise SystemExit(f"no {field} for the workers of process {pid}")
    return sum(values) if field == "Pss" else max(values)


def long_rounds(request, url: str, pk: int, pid: int, out: dict[str, list[float]]) -> list[float]:
    """LONG_TIMES rounds of the page, each part and the payload: the resident memory of
    process ``pid`` after each (bytes and seconds into ``out``)."""
    rss = []
    for _ in range(LONG_TIMES):
        next_url: str | None = f"{url}/r/{pk}/"
        key = "page"
        while next_url:
            t0 = time.perf_counter()
            body = request.get(next_url).body()
            out[key + "_s"].append(time.perf_counter() - t0)
            out[key].append(len(body))
            more = re.search(rb'<a class="trace-more" href="([^"]+)"', body)
            next_url, key = (f"{url}{more.group(1).decode()}" if more else None), "part"
        t0 = time.perf_counter()
        out["overlay"].append(len(request.get(f"{url}/r/{pk}/overlay.json").body()))
        out["overlay_s"].append(time.perf_counter() - t0)
        rss.append(memory_kib(pid, "Pss") / 1024)
    return rss


def measure_long(page, url: str, run: tuple[int, int], pid: int) -> dict[str, list[float]]:
    """Bytes and seconds of each response of the longest run's page, and the browser's."""
    pk, failure = run
    out: dict[str, list[float]] = {"page": [], "page_s": [], "part": [], "part_s": []}
    out |= {"overlay": [], "overlay_s": [], "shown_s": [], "failure_s": []}
    out["rss_before"] = [memory_kib(pid, "Pss") / 1024]
    out["rss_rounds"] = long_rounds(page.request, url, pk, pid, out)
    out["rss_peak"] = [memory_kib(pid, "VmHWM") / 1024]
    for _ in range(LONG_TIMES):
        t0 = time.perf_counter()
        page.goto(f"{url}/r/{pk}/")
        page.wait_for_selector(".ce-text--trace .ce-trace-part")
        out["shown_s"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        page.locator(f".ce-side button.ce-fail[data-failure='{failure}']").click()
        page.locator(".ce-text--trace mark.is-selected").first.wait_for(timeout=60_000)
        out["failure_s"].append(time.perf_counter() - t0)
    return out


def airline_pk(env: dict[str, str]) -> int:
    code = (
        "from audit.models import Contract; print(Contract.objects.get(key='taubench-airline').pk)"
    )
    return int(_shell(env, code))


def _shell(env: dict[str, str], code: str) -> str:
    """The last line ``code`` prints in ``manage.py shell`` on ``env``'s database."""
    done = subprocess.run(
        [str(BIN / "python"), "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip().splitlines()[-1]


def measure(url: str, contract: int, long: tuple[int, int], pid: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"run": [], "correct": [], "revert": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(f"{url}/login/")
        page.fill("input[name=username]", "reviewer")
        page.fill("input[name=password]", "review-demo")
        page.click("button[type=submit]")
        out |= measure_long(page, url, long, pid)
        for i, (task, text) in enumerate(traces()):
            page.goto(f"{url}/p/demo/runs/new/")
            page.select_option("select[name=target]", f"{contract}|t{task}")
            page.select_option("select[name=mode]", "semantic")
            page.select_option("select[name=extractor]", "behaviour")
            page.fill("textarea[name=text]", text)
            t0 = time.perf_counter()
            page.click("form.run-form button[type=submit]")
            page.wait_for_selector("[data-testid=run-verdict]", timeout=120_000)
            out["run"].append(time.perf_counter() - t0)
            print(f"bench-review: run {i + 1}: {out['run'][-1]:.2f} s", file=sys.stderr)
        run_page = page.url
        for _ in range(CORRECTIONS):
            page.goto(run_page)
            page.locator("[data-testid=run-correction] > summary").click()
            page.locator(
                "[data-testid=correct-form] input[name=commentary]:not([disabled])"
            ).first.check()
            t0 = time.perf_counter()
            page.click("[data-testid=correct-form] button[type=submit]")
            page.wait_for_selector("[data-testid=run-corrected]")
            out["correct"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            page.click("[data-testid=revert-form] button")
            page.wait_for_selector("[data-testid=run-corrected]", state="detached")
            out["revert"].append(time.perf_counter() - t0)
        browser.close()
    return out


def render(out: dict[str, list[float]], load: float, chars: list[int]) -> str:
    warm = out["run"][1:]

    def row(name: str, xs: list[float]) -> str:
        return f"| {name} | {len(xs)} | {statistics.median(xs):.2f} | {max(xs):.2f} |"

    return "\n".join(
        [
            "# Benchmarks: what a reviewer waits for",
            "",
            "<!-- generated by scripts/bench_review.py (make bench-review) -->",
            "",
            (__doc__ or "").split("\n\n", 1)[1].strip(),
            "",
            doc.machine(load=load),
            "",
            f"Traces: {len(chars)} real τ-bench airline traces of {min(chars):,}–{max(chars):,}"
            " characters (fixtures/taubench), one per task, semantic mode, behaviour extractor.",
            "",
            "| step | times | median s | slowest s |",
            "| --- | ---: | ---: | ---: |",
            f"| first semantic run (the worker loads the sentence model) | 1 | {out['run'][0]:.2f} | {out['run'][0]:.2f} |",
            row("semantic run, submit to verdict shown", warm),
            row("correction applied and re-rendered in place", out["correct"]),
            row("revert to the engine's reading", out["revert"]),
            "",
            *render_long(out),
        ]
    )


def render_long(out: dict[str, list[float]]) -> list[str]:
    def row(name: str, sizes: list[float], seconds: list[float]) -> str:
        return (
            f"| {name} | {len(seconds)} | {max(sizes):,.0f} | {statistics.median(seconds):.3f}"
            f" | {max(seconds):.3f} |"
        )

    parts = len(out["part"]) // LONG_TIMES
    return [
        "## The longest trace",
        "",
        f"One run of a 524,288-byte trace in 1,000 steps: its page and its {parts} further"
        " parts, fetched in the browser's session, and the overlay's payload (wall time"
        " over the loopback: the server's time to answer).",
        "",
        "| response | times | largest bytes | median s | slowest s |",
        "| --- | ---: | ---: | ---: | ---: |",
        row("run page (the trace's first part inline)", out["page"], out["page_s"]),
        row("a further part of the trace", out["part"], out["part_s"]),
        row("the overlay's payload", out["overlay"], out["overlay_s"]),
        "",
        "The web processes of `make run` (two gunicorn sync workers), their memory"
        " together (PSS: a page shared with the master or the other worker, the sentence"
        f" model's weights among them, counted in shares): {out['rss_before'][0]:.0f} MiB before"
        " the first of these requests; after each round (the page, its parts, the"
        " payload) "
        + ", ".join(f"{x:.0f}" for x in out["rss_rounds"])
        + f" MiB. The larger worker's peak resident size (VmHWM): {out['rss_peak'][0]:.0f}"
        " MiB.",
        "",
        "| in the browser | times | median s | slowest s |",
        "| --- | ---: | ---: | ---: |",
        f"| page opened until the overlay draws the trace | {LONG_TIMES}"
        f" | {statistics.median(out['shown_s']):.2f} | {max(out['shown_s']):.2f} |",
        f"| a failure in the last part clicked until its evidence shows | {LONG_TIMES}"
        f" | {statistics.median(out['failure_s']):.2f} | {max(out['failure_s']):.2f} |",
        "",
    ]


def main() -> int:
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
        env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{tmp}/db.sqlite3",
            "CELERY_BROKER_URL": f"sqla-local+sqlite:///{tmp}/broker.sqlite3",
        }
        port = free_port()
        procs = start(env, port)
        try:
            long = long_run(env)
            out = measure(f"http://127.0.0.1:{port}", airline_pk(env), long, procs[0].pid)
        finally:
            for p in procs:
                p.send_signal(signal.SIGTERM)
            for p in procs:
                p.wait(timeout=30)
    chars = [len(t) for _, t in traces()]
    OUT.write_text(render(out, load, chars))
    print(json.dumps(out), file=sys.stderr)
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
