"""Celery tasks: thin wrappers that take ids and call a service."""

from celery import shared_task
from django.db import InterfaceError, OperationalError

from . import services


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

    On the last attempt a transient LLM failure fails the run with the reason.
    """
    final = self.max_retries is not None and self.request.retries >= self.max_retries
    run = services.proposal_run_execute(run_id=run_id, final_attempt=final)
    return {"run": run.pk, "status": run.status, "nodes": run.created_nodes}


@shared_task(
    bind=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=5,
)
def execute_run(self, run_id: int) -> dict:
    """Evaluate conformance run ``run_id`` (queued by ``audit.runs.run_create``)."""
    from . import runs

    run = runs.run_execute(run_id=run_id)
    return {"run": run.pk, "status": run.status, "verdict": run.verdict}


@shared_task(
    bind=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=5,
)
def execute_batch(self, batch_id: int) -> dict:
    """Run every case of suite batch ``batch_id`` (queued by ``audit.runs.batch_create``)."""
    from . import runs

    batch = runs.batch_execute(batch_id=batch_id)
    return {"batch": batch.pk, "status": batch.status, "cases": batch.total}
