"""Celery tasks: thin wrappers that take ids and call a service.

They are queued through :mod:`audit.enqueue` once the transaction commits. The
services store a failure on the row; an exception that escapes a service (a database
that stays down, a bug, the hard time limit) is logged here with its traceback and
``on_failure`` marks the row failed with the reason, so nothing stays "running".
Every task has the soft and hard time limits of the settings
(``CELERY_TASK_SOFT_TIME_LIMIT``, ``CELERY_TASK_TIME_LIMIT``).
"""

import logging

from celery import Task, shared_task
from celery.utils.time import get_exponential_backoff_interval
from django.conf import settings
from django.db import InterfaceError, OperationalError

# The project's Celery app, configured from the settings, becomes the current app
# here, before a task is sent: the senders import this module when they run, and
# nothing imports the app at start-up (see contracteval_site/__init__.py).
from contracteval_site.celery import app as app

from .services import batches, chunks, deliveries, jobs, proposals, runs, traces
from .services.common import LLMRetry
from .services.proposals import ProposalRetry

logger = logging.getLogger(__name__)


class JobTask(Task):
    """A task about one row (its first argument): a final failure fails the row."""

    #: the service that marks the row failed: ``fail(pk, reason)``
    fail = None

    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        logger.error("task %s %s failed: %s\n%s", self.name, list(args), exc, einfo.traceback)
        if self.fail is not None and args:
            type(self).fail(args[0], f"the worker gave up: {type(exc).__name__}: {exc}")


# Transient failures a task retries with backoff (1, 2, 4 ... s, capped at 60 s): the
# database, and an LLM endpoint's rate limit, server error or timeout that outlived the
# client's own retries (ProposalRetry for proposals, LLMRetry for runs and batches).
def _retrying_task(transient: type[Exception], fail=None, **options):
    return shared_task(
        bind=True,
        base=type("Job", (JobTask,), {"fail": staticmethod(fail) if fail else None}),
        autoretry_for=(OperationalError, InterfaceError, transient),
        retry_backoff=True,
        retry_backoff_max=60,
        max_retries=5,
        **options,
    )


def _eager_or_retry(task, call, transient: type[Exception] = LLMRetry):
    """Run ``call(final_attempt)``; a transient LLM failure (``transient``) retries.

    With a broker the task raises and Celery's ``autoretry_for`` brings it back with
    backoff; eagerly (the tests) there is no broker to come back through, so it
    retries here, at once.
    """
    limit = task.max_retries or 0
    try:
        if not task.request.is_eager:
            return call(task.request.retries >= limit)
        for attempt in range(limit + 1):
            try:
                return call(attempt >= limit)
            except transient:
                continue
    except (transient, OperationalError, InterfaceError) as exc:
        # retried by Celery (the service stored why); on_failure logs the last one
        logger.warning("task %s %s will be retried: %s", task.name, task.request.args, exc)
        raise
    except Exception:
        logger.exception("task %s %s failed", task.name, task.request.args)
        raise
    raise AssertionError("unreachable: the last attempt is final")  # pragma: no cover


@_retrying_task(ProposalRetry, fail=jobs.proposal_fail)
def run_proposals(self, run_id: int) -> dict:
    """Run proposal run ``run_id`` (queued by ``services.contract_request_proposals``).

    A transient LLM failure raises ``ProposalRetry`` and the worker retries the task
    later; on the last attempt the run fails with the reason instead.
    """
    run = _eager_or_retry(
        self,
        lambda final: proposals.proposal_run_execute(run_id=run_id, final_attempt=final),
        ProposalRetry,
    )
    return {"run": run.pk, "status": run.status, "nodes": run.created_nodes}


@_retrying_task(LLMRetry, fail=jobs.run_fail)
def execute_run(self, run_id: int) -> dict:
    """Evaluate conformance run ``run_id`` (queued by ``services.run_create``)."""
    run = _eager_or_retry(self, lambda final: runs.run_execute(run_id=run_id, final_attempt=final))
    return {"run": run.pk, "status": run.status, "verdict": run.verdict}


@_retrying_task(LLMRetry, fail=jobs.batch_fail)
def execute_batch(self, batch_id: int) -> dict:
    """Read suite batch ``batch_id`` (its chunks, once), then fan it out: one
    ``execute_chunk`` per unfinished chunk, on the queue this task came from
    (in-process when eager: every chunk, then scores)."""
    if self.request.is_eager:
        batch = _eager_or_retry(
            self, lambda final: batches.batch_execute(batch_id=batch_id, final_attempt=final)
        )
        return {"batch": batch.pk, "status": batch.status, "cases": batch.total}
    queue = (self.request.delivery_info or {}).get("routing_key")
    if batches.batch_prepare(batch_id=batch_id).is_finished:
        return {"batch": batch_id, "chunks": 0}
    pending = batches.batch_pending_chunks(batch_id=batch_id)
    for chunk_id in pending:
        execute_chunk.apply_async(args=[chunk_id], queue=queue)
    return {"batch": batch_id, "chunks": len(pending)}


# A worker that dies mid-chunk (killed, out of memory) sends the chunk back to the
# queue instead of dropping it; the chunk is stored once whichever run finishes first.
@_retrying_task(LLMRetry, fail=jobs.chunk_fail, reject_on_worker_lost=True)
def execute_chunk(self, chunk_id: int) -> dict:
    """Evaluate one chunk of a batch; the chunk that completes the batch scores it."""
    chunk, complete = _eager_or_retry(
        self, lambda final: chunks.chunk_execute(chunk_id=chunk_id, final_attempt=final)
    )
    if complete:
        batches.batch_finalize(batch_id=chunk.batch_id)
    return {"batch": chunk.batch_id, "chunk": chunk.index, "status": chunk.status}


@shared_task
def sweep_stale_jobs() -> dict:
    """Every minute (Celery beat): queue again, or fail, jobs whose worker went away."""
    return jobs.sweep_stale()


@_retrying_task(LLMRetry, fail=traces.ingested_trace_fail)
def route_ingested_trace(self, trace_id: int) -> dict:
    """Route complete live trace ``trace_id`` to a run or to its project's queue
    (queued by ``services.traces``); the run is evaluated by its own task."""
    trace = traces.ingested_trace_route(trace_id=trace_id)
    return {"trace": trace.pk, "status": trace.status, "run": trace.run_id}


@shared_task
def sweep_quiet_traces() -> dict:
    """Every 10 s (Celery beat): live traces quiet for OTLP_QUIET_SECONDS are complete."""
    return traces.ingested_traces_sweep_quiet()


# Seconds before the second attempt of a webhook delivery, doubling after each (2, 4,
# 8 ... s), capped at 10 minutes.
WEBHOOK_BACKOFF_SECONDS = 2
WEBHOOK_BACKOFF_MAX = 600


@shared_task(bind=True, acks_late=True)
def deliver_webhook(self, delivery_id: int) -> dict:
    """One attempt at webhook delivery ``delivery_id`` (queued by ``services.webhooks``);
    a connection error, timeout, 5xx, 408 or 429 retries with exponential backoff until
    ``WEBHOOK_MAX_ATTEMPTS`` attempts (the service counts them on the delivery, so it
    ends the loop eagerly too)."""
    while True:
        try:
            attempt = deliveries.webhook_deliver(delivery_id=delivery_id)
        except deliveries.WebhookRetry as exc:
            if self.request.is_eager:
                continue  # no broker to come back through (the tests): the next attempt now
            countdown = get_exponential_backoff_interval(
                factor=WEBHOOK_BACKOFF_SECONDS,
                retries=self.request.retries,
                maximum=WEBHOOK_BACKOFF_MAX,
                full_jitter=False,
            )
            # the service decides when attempts run out; Celery's own limit backs it up
            raise self.retry(
                exc=exc, countdown=countdown, max_retries=settings.WEBHOOK_MAX_ATTEMPTS
            ) from exc
        break
    if attempt is None:
        return {"delivery": delivery_id, "attempt": None}
    return {"delivery": delivery_id, "attempt": attempt.number, "status": attempt.status_code}


@shared_task
def sweep_unsent_webhooks() -> dict:
    """Every minute (Celery beat): webhook deliveries whose first attempt never came."""
    return {"requeued": deliveries.webhooks_sweep_unsent()}
