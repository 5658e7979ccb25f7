"""What a reviewer waits for on the embedded default: ``make bench-review`` ->
docs/benchmarks-review.md.

Starts the app as ``make run`` does (the development server and one Celery worker on a
SQLite database and a SQLite broker, here in a throw-away folder), loads the demo data
and the airline contract of ``fixtures/taubench``, then drives Debian's Chromium with
Playwright as a reviewer would:

- *a semantic run*: paste a real τ-bench trace into the run form (the shortest of the
  development set, one per task: 7,000–10,000 characters, longer than the 5,000 a
  typical support chat has), submit, and wait until the page shows the verdict (the worker takes the job from
  the broker, the page polls twice a second); the first run also loads the sentence
  model in the worker and is reported apart;
- *a correction*: mark one step as commentary in the correction table and apply; the
  run's reading is re-rendered in place; then *revert* it.

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
            [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=ROOT,
            env=env,
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


def airline_pk(env: dict[str, str]) -> int:
    code = (
        "from audit.models import Contract; print(Contract.objects.get(key='taubench-airline').pk)"
    )
    done = subprocess.run(
        [str(BIN / "python"), "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout.strip().splitlines()[-1])


def measure(url: str, contract: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"run": [], "correct": [], "revert": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(f"{url}/login/")
        page.fill("input[name=username]", "reviewer")
        page.fill("input[name=password]", "review-demo")
        page.click("button[type=submit]")
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
        ]
    )


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
            out = measure(f"http://127.0.0.1:{port}", airline_pk(env))
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
