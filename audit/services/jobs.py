"""Jobs whose worker went away: failed with a reason, or queued again by the sweep.

``*_fail`` are called by a task's ``on_failure`` (the task gave up: retries exhausted,
hard time limit, a bug) so that no row stays "running". :func:`sweep_stale` runs every
minute (Celery beat): a run or batch chunk RUNNING with a heartbeat older than
``JOB_STALE_AFTER`` lost its worker (killed, machine gone); it is queued again, or
failed after ``JOB_MAX_ATTEMPTS`` attempts, and a batch whose chunks are all finished
but which was never scored is scored.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .. import enqueue
from ..models import Batch, BatchChunk, ProposalRun, Run, RunStatus

logger = logging.getLogger(__name__)
ACTIVE = [RunStatus.QUEUED, RunStatus.RUNNING]


def run_fail(run_id: int, reason: str) -> None:
    """Fail a run that is still queued or running (a finished one is kept)."""
    Run.objects.filter(pk=run_id, status__in=ACTIVE).update(
        status=RunStatus.FAILED, error=reason, finished_at=timezone.now()
    )


def proposal_fail(run_id: int, reason: str) -> None:
    ProposalRun.objects.filter(pk=run_id, status__in=ACTIVE).update(
        status=RunStatus.FAILED, error=reason, finished_at=timezone.now()
    )


def batch_fail(batch_id: int, reason: str) -> None:
    Batch.objects.filter(pk=batch_id, status__in=ACTIVE).update(
        status=RunStatus.FAILED, error=reason, finished_at=timezone.now()
    )


def chunk_fail(chunk_id: int, reason: str) -> None:
    """Fail a chunk that is not finished, and with it its batch."""
    chunk = BatchChunk.objects.filter(pk=chunk_id).only("batch_id", "index").first()
    if chunk is None:
        return
    BatchChunk.objects.filter(pk=chunk_id, status__in=ACTIVE).update(
        status=RunStatus.FAILED, error=reason
    )
    batch_fail(chunk.batch_id, f"cases of chunk {chunk.index + 1}: {reason}")


def stale_before():
    return timezone.now() - timedelta(seconds=settings.JOB_STALE_AFTER)


def _sweep_runs(before) -> tuple[int, int]:
    requeued = failed = 0
    for run_id in Run.objects.filter(status=RunStatus.RUNNING, started_at__lt=before).values_list(
        "pk", flat=True
    ):
        with transaction.atomic():
            run = (
                Run.objects.select_for_update()
                .filter(pk=run_id, status=RunStatus.RUNNING, started_at__lt=before)
                .first()
            )
            if run is None:
                continue
            if run.attempts >= settings.JOB_MAX_ATTEMPTS:
                run_fail(run.pk, f"no answer from its worker after {run.attempts} attempts")
                failed += 1
            else:
                Run.objects.filter(pk=run.pk).update(status=RunStatus.QUEUED)
                enqueue.run_on_commit(run.pk)
                requeued += 1
    return requeued, failed


def _sweep_chunks(before) -> tuple[int, int]:
    requeued = failed = 0
    stale = BatchChunk.objects.filter(status=RunStatus.RUNNING, heartbeat__lt=before)
    for chunk_id in stale.values_list("pk", flat=True):
        with transaction.atomic():
            chunk = (
                BatchChunk.objects.select_for_update()
                .filter(pk=chunk_id, status=RunStatus.RUNNING, heartbeat__lt=before)
                .first()
            )
            if chunk is None:
                continue
            if chunk.attempts >= settings.JOB_MAX_ATTEMPTS:
                chunk_fail(chunk.pk, f"no answer from its worker after {chunk.attempts} attempts")
                failed += 1
            else:
                BatchChunk.objects.filter(pk=chunk.pk).update(status=RunStatus.QUEUED)
                transaction.on_commit(partial(enqueue.enqueue_chunk, chunk.pk))
                requeued += 1
    return requeued, failed


def _finish_complete_batches() -> int:
    """Score batches left unscored when the worker that stored their last chunk died."""
    from .batches import batch_finalize

    waiting = (
        Batch.objects.filter(status__in=ACTIVE)
        .exclude(chunks__status__in=ACTIVE)
        .filter(chunks__isnull=False)
    )
    done = 0
    for batch_id in waiting.values_list("pk", flat=True).distinct():
        done += batch_finalize(batch_id=batch_id).is_finished
    return done


def sweep_stale() -> dict[str, int]:
    """Requeue or fail stale runs and chunks; score complete batches. Counts, by kind."""
    before = stale_before()
    runs_requeued, runs_failed = _sweep_runs(before)
    chunks_requeued, chunks_failed = _sweep_chunks(before)
    out = {
        "runs_requeued": runs_requeued,
        "runs_failed": runs_failed,
        "chunks_requeued": chunks_requeued,
        "chunks_failed": chunks_failed,
        "batches_scored": _finish_complete_batches(),
    }
    if any(out.values()):
        logger.warning("stale jobs swept: %s", out)
    return out


def run_is_stale(run: Run) -> bool:
    """A run RUNNING without an answer for longer than ``JOB_STALE_AFTER``."""
    return (
        run.status == RunStatus.RUNNING
        and run.started_at is not None
        and run.started_at < stale_before()
    )
