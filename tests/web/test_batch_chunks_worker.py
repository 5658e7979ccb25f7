"""Batches fanned out over real Celery worker processes (Redis): the chunks are shared
between workers, each stored once, and a worker killed mid-batch loses one chunk that
is delivered again and counted once."""

from __future__ import annotations

import signal
import time
from dataclasses import replace

import pytest

from audit import enqueue
from audit.models import Batch, BatchChunk
from audit.services import batches

from .conftest import ensure_fixture_suite, require_service
from .workers import (
    REDIS_URL,
    new_queue,
    redis_up,
    repeated_suite_zip,
    start_worker,
    stop_worker,
)

pytestmark = [pytest.mark.worker]
# A killed worker's unacknowledged chunk comes back after this many seconds.
VISIBILITY = "4"


@pytest.fixture
def queue(transactional_db, monkeypatch):
    """A private queue; batches created by the test are sent to it."""
    from celery import Celery

    require_service(redis_up(), f"Redis is not reachable at {REDIS_URL}")
    name = new_queue()
    sender = Celery(broker=REDIS_URL, set_as_current=False)  # the app stays current
    monkeypatch.setattr(
        enqueue,
        "enqueue_batch",
        lambda pk: sender.send_task("audit.tasks.execute_batch", args=[pk], queue=name),
    )
    return name


def _wait(batch: Batch, seconds: float, until=lambda b: b.is_finished) -> list[int]:
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        batch.refresh_from_db()
        seen.append(batch.done)
        if until(batch) or batch.is_finished:
            break
        time.sleep(0.1)
    return seen


def _assert_every_case_counted_once(batch: Batch, n: int) -> list[BatchChunk]:
    chunks = list(batch.chunks.order_by("index"))
    ids = [row[0] for c in chunks for row in c.results]
    assert batch.status == "done", batch.error
    assert batch.done == batch.total == batch.scores["cases"] == n
    assert all(c.status == "done" and c.done == c.total == len(c.results) for c in chunks)
    assert sum(c.total for c in chunks) == len(ids) == len(set(ids)) == n
    assert batch.scores["errors"] == []
    return chunks


def test_two_workers_share_the_chunks_of_one_batch(queue, project, users, settings):
    # the worker cuts the chunks, so it is the worker that needs the sizes
    env = {"BATCH_CHUNKS": "1", "BATCH_CHUNK_CASES": "100"}
    ensure_fixture_suite()
    workers = [start_worker(queue, name=f"{queue}-{i}", env=env) for i in (1, 2)]
    try:
        batch = batches.batch_create(project=project, user=users["reviewer"], mode="token")
        seen = _wait(batch, 300)
    finally:
        output = [stop_worker(w) for w in workers]
    chunks = _assert_every_case_counted_once(batch, batch.total)
    assert len(chunks) == -(-batch.total // 100) > 2
    assert seen == sorted(seen)  # progress, summed from the chunks, only moves forward
    # both processes took chunks: the batch was shared, not run by one task
    for out in output:
        assert "audit.tasks.execute_chunk" in out and "succeeded" in out, out[-2000:]
    # a chunk may be tried twice (SQLite answers "database is locked" to one of two
    # writers; the task retries), and is still stored and counted once, as above
    assert Batch.objects.count() == 1


def test_a_killed_worker_loses_one_chunk_that_is_redelivered_and_counted_once(
    queue, project, users, settings
):
    settings.INPUT_LIMITS = replace(settings.INPUT_LIMITS, suite_archive_bytes=100 * 1024 * 1024)
    archive, n = repeated_suite_zip(ensure_fixture_suite(), 2)
    env = {
        "CELERY_VISIBILITY_TIMEOUT": VISIBILITY,
        "BATCH_CHUNKS": "1",
        "BATCH_CHUNK_CASES": "150",
        "INPUT_LIMITS": "suite_archive_bytes=100MiB",
    }
    first = start_worker(queue, name=f"{queue}-a", env=env)
    second = None
    try:
        batch = batches.batch_create(
            project=project, user=users["reviewer"], mode="token", archive=archive
        )
        # kill as soon as a chunk past the first is running: mid-chunk, mid-batch
        deadline = time.monotonic() + 120
        running = None
        while running is None and time.monotonic() < deadline:
            running = batch.chunks.filter(status="running", index__gt=0).first()
            time.sleep(0.02)
        assert running is not None, stop_worker(first)[-3000:]
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        killed = BatchChunk.objects.get(pk=running.pk)
        batch.refresh_from_db()
        done_at_kill = batch.done
        second = start_worker(queue, name=f"{queue}-b", env=env)
        _wait(batch, 300)
    finally:
        output = stop_worker(second) if second is not None else ""
    chunks = _assert_every_case_counted_once(batch, n)
    assert done_at_kill < n and killed.index > 0  # killed mid-batch
    if killed.status == "running":  # it was cut off mid-chunk: it ran again, once
        assert chunks[killed.index].attempts == 2, output[-3000:]
    assert max(c.attempts for c in chunks) <= 2
