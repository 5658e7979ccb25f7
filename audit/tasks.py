"""Celery tasks: thin wrappers that take ids and call a service."""

from celery import shared_task
from django.db import InterfaceError, OperationalError

from . import services


@shared_task(
    bind=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=5,
)
def run_proposals(self, run_id: int) -> dict:
    """Run proposal run ``run_id`` (queued by ``services.contract_request_proposals``)."""
    run = services.proposal_run_execute(run_id=run_id)
    return {"run": run.pk, "status": run.status, "nodes": run.created_nodes}
