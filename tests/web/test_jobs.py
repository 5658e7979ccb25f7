"""Jobs whose worker went away: the sweep queues stale runs and chunks again (or fails
them after too many attempts), scores batches left unscored, and a stuck run can be
retried from the page and the API; a task that gives up marks its row failed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from audit import enqueue
from audit.models import Batch, BatchChunk, Run
from audit.services import batches, jobs, runs

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):
    """What would have gone to the broker: (kind, id), nothing run."""
    out: list[tuple[str, int]] = []
    monkeypatch.setattr(enqueue, "enqueue_run", lambda pk: out.append(("run", pk)))
    monkeypatch.setattr(enqueue, "enqueue_chunk", lambda pk: out.append(("chunk", pk)))
    monkeypatch.setattr(enqueue, "enqueue_batch", lambda pk: out.append(("batch", pk)))
    return out


@pytest.fixture
def stuck_run(audited, users, observed_doc, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        run, _ = runs.run_create(
            contract=audited, user=users["reviewer"], query_key="q1", kind="auto", data=observed_doc
        )
    long_ago = timezone.now() - timedelta(hours=1)
    Run.objects.filter(pk=run.pk).update(status="running", started_at=long_ago, attempts=1)
    sent.clear()
    run.refresh_from_db()
    return run


def test_the_sweep_queues_a_stale_run_again_then_fails_it(
    stuck_run, sent, settings, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs.sweep_stale()["runs_requeued"] == 1
    stuck_run.refresh_from_db()
    assert stuck_run.status == "queued" and sent == [("run", stuck_run.pk)]
    Run.objects.filter(pk=stuck_run.pk).update(status="running", attempts=settings.JOB_MAX_ATTEMPTS)
    assert jobs.sweep_stale()["runs_failed"] == 1
    stuck_run.refresh_from_db()
    assert stuck_run.status == "failed" and "no answer from its worker" in stuck_run.error


def test_a_recent_running_run_is_left_alone_and_cannot_be_retried(stuck_run, users):
    Run.objects.filter(pk=stuck_run.pk).update(started_at=timezone.now())
    assert jobs.sweep_stale()["runs_requeued"] == 0
    stuck_run.refresh_from_db()
    with pytest.raises(runs.ServiceError, match="stuck running"):
        runs.run_retry(run=stuck_run, user=users["reviewer"])


def test_a_stuck_run_is_retried_from_the_page_and_the_api(
    stuck_run, users, login, sent, django_capture_on_commit_callbacks
):
    page = login("reviewer").get(f"/r/{stuck_run.pk}/").content.decode()
    assert 'data-testid="run-stale"' in page and f"/r/{stuck_run.pk}/retry/" in page
    with django_capture_on_commit_callbacks(execute=True):
        r = login("reviewer").post(f"/r/{stuck_run.pk}/retry/")
    assert r.status_code == 302 and sent == [("run", stuck_run.pk)]
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=users['reviewer'])}")
    again = api.post(f"/api/runs/{stuck_run.pk}/retry/")
    assert again.status_code == 409 and "can be retried" in again.json()["detail"]
    Run.objects.filter(pk=stuck_run.pk).update(status="failed")
    with django_capture_on_commit_callbacks(execute=True):
        ok = api.post(f"/api/runs/{stuck_run.pk}/retry/")
    assert ok.status_code == 200 and ok.json()["status"] == "queued"
    outsider = APIClient()
    outsider.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=users['outsider'])}")
    assert outsider.post(f"/api/runs/{stuck_run.pk}/retry/").status_code == 404


def test_a_stale_chunk_is_queued_again_and_a_complete_batch_is_scored(
    project, users, fixture_suite, sent, settings, django_capture_on_commit_callbacks
):
    settings.BATCH_CHUNK_CASES = 500
    batch = batches.batch_create(project=project, user=users["reviewer"])
    batch = batches.batch_prepare(batch_id=batch.pk)
    chunks = list(batch.chunks.order_by("index"))
    assert len(chunks) == -(-batch.total // 500) and sum(c.total for c in chunks) == batch.total
    for c in chunks:
        batches.chunk_execute(chunk_id=c.pk)
    # the worker that stored the last chunk died before scoring the batch
    Batch.objects.filter(pk=batch.pk).update(status="running", scores=None, finished_at=None)
    long_ago = timezone.now() - timedelta(hours=1)
    BatchChunk.objects.filter(pk=chunks[0].pk).update(status="running", heartbeat=long_ago)
    with django_capture_on_commit_callbacks(execute=True):
        swept = jobs.sweep_stale()
    assert swept["chunks_requeued"] == 1 and sent == [("chunk", chunks[0].pk)]
    batches.chunk_execute(chunk_id=chunks[0].pk)  # what the worker does with it
    assert jobs.sweep_stale()["batches_scored"] == 1
    batch.refresh_from_db()
    assert batch.status == "done" and batch.done == batch.total == batch.scores["cases"]


def test_a_task_that_gives_up_fails_its_row_with_the_reason(stuck_run):
    from audit.tasks import execute_run

    execute_run.on_failure(RuntimeError("boom"), "id", [stuck_run.pk], {}, _Info())
    stuck_run.refresh_from_db()
    assert stuck_run.status == "failed" and "RuntimeError: boom" in stuck_run.error


class _Info:
    traceback = "Traceback (most recent call last): ..."
