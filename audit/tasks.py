"""Celery tasks: thin wrappers that take ids and call a service.

They are queued through :mod:`audit.enqueue` once the transaction commits. The
services store a failure on the row; an exception that escapes a service (a database
that stays down, a bug) is logged here with its traceback before the task fails.
"""

import logging

from celery import shared_task
from django.db import InterfaceError, OperationalError

from .services import batches, proposals, runs
from .services.common import LLMRetry
from .services.proposals import ProposalRetry

logger = logging.getLogger(__name__)


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
    try:
        if not task.request.is_eager:
            return call(task.request.retries >= limit)
        for attempt in range(limit + 1):
            try:
                return call(attempt >= limit)
            except transient:
                continue
    except transient:
        raise  # retried by Celery; the service stored why
    except Exception:
        logger.exception("task %s %s failed", task.name, task.request.args)
        raise
    raise AssertionError("unreachable: the last attempt is final")  # pragma: no cover


@_retrying_task(ProposalRetry)
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


@_retrying_task(LLMRetry)
def execute_run(self, run_id: int) -> dict:
    """Evaluate conformance run ``run_id`` (queued by ``services.run_create``)."""
    run = _eager_or_retry(self, lambda final: runs.run_execute(run_id=run_id, final_attempt=final))
    return {"run": run.pk, "status": run.status, "verdict": run.verdict}


@_retrying_task(LLMRetry)
def execute_batch(self, batch_id: int) -> dict:
    """Run every case of suite batch ``batch_id`` (queued by ``services.batch_create``)."""
    batch = _eager_or_retry(
        self, lambda final: batches.batch_execute(batch_id=batch_id, final_attempt=final)
    )
    return {"batch": batch.pk, "status": batch.status, "cases": batch.total}
