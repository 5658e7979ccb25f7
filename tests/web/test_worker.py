"""A real Celery worker process (Redis broker) runs a proposal task on the test database."""

from __future__ import annotations

import pytest

from audit import services
from audit.models import ProposalRun

from .conftest import require_service
from .workers import REDIS_URL, new_queue, redis_up, start_worker, stop_worker, wait_for

pytestmark = [pytest.mark.worker]


def test_a_celery_worker_process_completes_a_proposal_run(
    transactional_db, project, users, refund_doc
):
    from celery import Celery

    require_service(redis_up(), f"Redis is not reachable at {REDIS_URL}")
    contract = services.contract_create(
        project=project,
        user=users["annotator"],
        key="draft",
        text=refund_doc["artifact"]["text"],
    )
    run = ProposalRun.objects.create(contract=contract, requested_by=users["annotator"])
    queue = new_queue()
    worker = start_worker(queue)
    try:
        sender = Celery(broker=REDIS_URL, set_as_current=False)  # the app stays current
        sender.send_task("audit.tasks.run_proposals", args=[run.pk], queue=queue)
        wait_for(run, worker, 60)
    finally:
        output = stop_worker(worker)
    assert run.status == "done", f"run is {run.status!r}; worker said:\n{output[-3000:]}"
    assert "run_proposals" in output and "succeeded" in output
    assert run.created_nodes == contract.nodes.filter(review_status="proposed").count() > 5
