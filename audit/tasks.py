"""Celery tasks: thin wrappers that take ids and call a service."""

from celery import shared_task
from django.db import InterfaceError, OperationalError

from . import services
from .runs import LLMRetry


def _eager_or_retry(task, call):
    """Run ``call(final_attempt)``; a transient LLM failure (:class:`LLMRetry`) retries.

    With a broker the task raises and Celery's ``autoretry_for`` brings it back with
    backoff; eagerly (tests, ``make run`` without Redis) there is no broker to come
    back through, so it retries here, at once.
    """
    limit = task.max_retries or 0
    if not task.request.is_eager:
        return call(task.request.retries >= limit)
    for attempt in range(limit + 1):
        try:
            return call(attempt >= limit)
        except LLMRetry:
            continue
    raise AssertionError("unreachable: the last attempt is final")  # pragma: no cover


@shared_task(
    bind=True,
    # ProposalRetry: a rate limit, server error or timeout of the LLM endpoint that
    # outlived the client's own retries; backoff 1, 2, 4 ... s (capped at 60 s).
    autoretry_for=(OperationalError, InterfaceError, services.ProposalRetry),
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=5,
)
def run_proposals(self, run_id: int) -> dict:
    """Run proposal run ``run_id`` (queued by ``services.contract_request_proposals``).

    A transient LLM failure raises ``ProposalRetry`` and the worker retries the task
    later; on the last attempt the run fails with the reason instead.
    """
    limit = self.max_retries or 0
    if self.request.is_eager:
        # No broker to come back through (tests, `make run` without Redis), and an
        # eager Retry would propagate into the request: retry here, at once.
        for attempt in range(limit + 1):
            try:
                run = services.proposal_run_execute(run_id=run_id, final_attempt=attempt >= limit)
            except services.ProposalRetry:
                continue
            break
    else:
        final = self.request.retries >= limit
        run = services.proposal_run_execute(run_id=run_id, final_attempt=final)
    return {"run": run.pk, "status": run.status, "nodes": run.created_nodes}


@shared_task(
    bind=True,
    # LLMRetry: the LLM invariant judge failed transiently (rate limit, 5xx, timeout).
    autoretry_for=(OperationalError, InterfaceError, LLMRetry),
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=5,
)
def execute_run(self, run_id: int) -> dict:
    """Evaluate conformance run ``run_id`` (queued by ``audit.runs.run_create``)."""
    from . import runs

    run = _eager_or_retry(self, lambda final: runs.run_execute(run_id=run_id, final_attempt=final))
    return {"run": run.pk, "status": run.status, "verdict": run.verdict}


@shared_task(
    bind=True,
    # LLMRetry: a judge batch's endpoint failed transiently (rate limit, 5xx, timeout).
    autoretry_for=(OperationalError, InterfaceError, LLMRetry),
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=5,
)
def execute_batch(self, batch_id: int) -> dict:
    """Run every case of suite batch ``batch_id`` (queued by ``audit.runs.batch_create``)."""
    from . import runs

    batch = _eager_or_retry(
        self, lambda final: runs.batch_execute(batch_id=batch_id, final_attempt=final)
    )
    return {"batch": batch.pk, "status": batch.status, "cases": batch.total}
