"""Celery tasks: thin wrappers that take ids and call a service."""

from celery import shared_task
from django.db import InterfaceError, OperationalError

from . import services
from .runs import LLMRetry


# Transient failures a task retries with backoff (1, 2, 4 ... s, capped at 60 s): the
# database, and an LLM endpoint's rate limit, server error or timeout that outlived the
# client's own retries (ProposalRetry for proposals, LLMRetry for runs and batches).
def _retrying_task(transient: type[Exception]):
    return shared_task(
        bind=True,
        autoretry_for=(OperationalError, InterfaceError, transient),
        retry_backoff=True,
        retry_backoff_max=60,
        max_retries=5,
    )


def _eager_or_retry(task, call, transient: type[Exception] = LLMRetry):
    """Run ``call(final_attempt)``; a transient LLM failure (``transient``) retries.

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
        except transient:
            continue
    raise AssertionError("unreachable: the last attempt is final")  # pragma: no cover


@_retrying_task(services.ProposalRetry)
def run_proposals(self, run_id: int) -> dict:
    """Run proposal run ``run_id`` (queued by ``services.contract_request_proposals``).

    A transient LLM failure raises ``ProposalRetry`` and the worker retries the task
    later; on the last attempt the run fails with the reason instead.
    """
    run = _eager_or_retry(
        self,
        lambda final: services.proposal_run_execute(run_id=run_id, final_attempt=final),
        services.ProposalRetry,
    )
    return {"run": run.pk, "status": run.status, "nodes": run.created_nodes}


@_retrying_task(LLMRetry)
def execute_run(self, run_id: int) -> dict:
    """Evaluate conformance run ``run_id`` (queued by ``audit.runs.run_create``)."""
    from . import runs

    run = _eager_or_retry(self, lambda final: runs.run_execute(run_id=run_id, final_attempt=final))
    return {"run": run.pk, "status": run.status, "verdict": run.verdict}


@_retrying_task(LLMRetry)
def execute_batch(self, batch_id: int) -> dict:
    """Run every case of suite batch ``batch_id`` (queued by ``audit.runs.batch_create``)."""
    from . import runs

    batch = _eager_or_retry(
        self, lambda final: runs.batch_execute(batch_id=batch_id, final_attempt=final)
    )
    return {"batch": batch.pk, "status": batch.status, "cases": batch.total}
