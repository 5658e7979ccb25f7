"""A real Celery worker process (Redis broker) runs a proposal task on the test database."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from audit import services
from audit.models import ProposalRun

from .conftest import require_service

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("CONTRACTEVAL_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")

pytestmark = [pytest.mark.worker]


def _redis_up() -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping())
    except redis.RedisError:
        return False


def _database_url() -> str:
    """The URL of the database this test process uses (pytest-django's test DB)."""
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        assert db["NAME"] != ":memory:" and "mode=memory" not in str(db["NAME"]), (
            "the worker cannot see an in-memory database"
        )
        return f"sqlite:///{db['NAME']}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{auth}@{db['HOST'] or 'localhost'}{port}/{db['NAME']}"


def test_a_celery_worker_process_completes_a_proposal_run(
    transactional_db, project, users, refund_doc
):
    from celery import Celery

    require_service(_redis_up(), f"Redis is not reachable at {REDIS_URL}")
    contract = services.contract_create(
        project=project,
        user=users["annotator"],
        key="draft",
        text=refund_doc["artifact"]["text"],
    )
    run = ProposalRun.objects.create(contract=contract, requested_by=users["annotator"])
    queue = f"contracteval-test-{uuid.uuid4().hex[:8]}"
    env = os.environ | {
        "DATABASE_URL": _database_url(),
        "CELERY_BROKER_URL": REDIS_URL,
        "DJANGO_SETTINGS_MODULE": "contracteval_site.settings",
    }
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "contracteval_site",
            "worker",
            "--pool=solo",
            "--loglevel=INFO",
            "-Q",
            queue,
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
            "-n",
            f"{queue}@%h",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        sender = Celery(broker=REDIS_URL)
        sender.send_task("audit.tasks.run_proposals", args=[run.pk], queue=queue)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and worker.poll() is None:
            run.refresh_from_db()
            if run.status in ("done", "failed"):
                break
            time.sleep(0.3)
    finally:
        worker.terminate()
        try:
            output, _ = worker.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            output, _ = worker.communicate()
    assert run.status == "done", f"run is {run.status!r}; worker said:\n{output[-3000:]}"
    assert "run_proposals" in output and "succeeded" in output
    assert run.created_nodes == contract.nodes.filter(review_status="proposed").count() > 5
