"""The web app starts without the engine's heavy imports (docs/performance.md, "Start-up").

Settings, the URLconf and ``manage.py check`` load the views, the API, the models and
the guards; none of them may import numpy, networkx, scipy, jsonschema, the OpenAI SDK,
Celery or drf-spectacular's schema generator at import time. The engine loads with the
first request that evaluates something. These tests check which modules a fresh process
holds (no timing): a new eager import of the engine in a view, a selector, a model or a
service fails here, naming the chain that brought it in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = (
    "numpy",
    "networkx",
    "scipy",
    "jsonschema",
    "openai",
    "celery",
    "kombu",
    "drf_spectacular.generators",
    "drf_spectacular.openapi",  # what extend_schema and DRF's DefaultSchema would import
    "rest_framework.test",
    "matching.evaluate",
    "opentelemetry.proto",  # the OTLP endpoint's messages load with the first export
    "matching.validate",
    "matching.alignment",
    "matching.embed",
)
# what `manage.py check` does: set up Django, load the URLconf, run the checks
START_UP = """
import json, sys
import django
django.setup()
from django.core.management import call_command
from django.urls import get_resolver
get_resolver().url_patterns
call_command("check", verbosity=0)
"""


def _python(code: str, *options: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh Python with this checkout first on the path."""
    env = os.environ | {
        "DJANGO_SETTINGS_MODULE": "contracteval_site.settings",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, *options, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )


def _last_json_line(code: str) -> object:
    out = _python(code)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.splitlines()[-1])


def _who_imports(module: str) -> str:
    """The import chain of ``module`` at start-up (``-X importtime``), for the message."""
    out = _python(START_UP, "-X", "importtime")
    rows = [line.split("|")[-1] for line in out.stderr.splitlines() if "|" in line]
    for i, name in enumerate(rows):
        if name.strip() == module:
            chain, depth = [module], len(name) - len(name.lstrip())
            for later in rows[i + 1 :]:
                d = len(later) - len(later.lstrip())
                if d < depth:
                    chain.append(later.strip())
                    depth = d
            return " <- ".join(chain)
    return module


def test_starting_the_web_app_imports_no_engine_numerics_celery_or_schema_generator():
    loaded = set(_last_json_line(START_UP + "print(json.dumps(sorted(sys.modules)))"))
    assert "audit.views" in loaded and "audit.api" in loaded  # the URLconf was loaded
    heavy = [m for m in HEAVY if m in loaded]
    assert heavy == [], "\n".join(_who_imports(m) for m in heavy)


def test_manage_py_collects_garbage_again_once_the_apps_are_ready():
    # start-up runs with the collector paused (contracteval_site/startup.py); a command
    # that ran on with it paused would never free a reference cycle
    out = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c",
         "import gc, json; print(json.dumps([gc.isenabled(), gc.get_freeze_count()]))"],
        cwd=ROOT, capture_output=True, text=True,
        env=os.environ | {"DJANGO_SETTINGS_MODULE": "contracteval_site.settings"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    enabled, frozen = json.loads(out.stdout.splitlines()[-1])
    assert enabled is True
    assert frozen > 10_000  # what start-up built is never traced again


def test_the_first_task_sent_from_web_code_goes_through_the_configured_celery_app():
    # enqueue imports the tasks when it sends one; the tasks make the project's app
    # current, so a task is never sent through Celery's unconfigured default app
    code = """
import json, sys
import django
django.setup()
from django.conf import settings
from django.urls import get_resolver
get_resolver().url_patterns
before = "contracteval_site.celery" in sys.modules
from audit.tasks import execute_batch, execute_chunk, execute_run, run_proposals
from contracteval_site.celery import app
tasks = (execute_run, execute_batch, execute_chunk, run_proposals)
print(json.dumps({
    "before": before,
    "same_app": all(t._get_app() is app for t in tasks),
    "registered": sorted(n for n in app.tasks if n.startswith("audit.")),
    "broker": app.conf.broker_url == settings.CELERY_BROKER_URL,
}))
"""
    got = _last_json_line(code)
    assert isinstance(got, dict)
    assert got["before"] is False
    assert got["same_app"] is True
    assert {
        "audit.tasks.execute_run",
        "audit.tasks.execute_batch",
        "audit.tasks.execute_chunk",
        "audit.tasks.run_proposals",
    } <= set(got["registered"])
    assert got["broker"] is True


def test_the_warm_up_loads_the_sentence_model_and_queries_no_database(caplog):
    """What gunicorn's master runs before forking: a connection opened there would be
    shared by every worker (pytest-django refuses any query here, and a step that fails
    is logged), and the weights it loads are shared instead of copied."""
    from contracteval_site.warmup import warm_up
    from matching import embed

    embed._load.cache_clear()
    with caplog.at_level("WARNING", logger="contracteval_site.warmup"):
        warm_up()
    assert [r.getMessage() for r in caplog.records] == []
    assert embed._load.cache_info().currsize == 1
