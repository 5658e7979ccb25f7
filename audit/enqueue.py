"""The one way work reaches the Celery workers: after the transaction commits.

Services call ``*_on_commit`` so that a worker never looks for a row that is not
committed yet (or never will be). The senders (``enqueue_*``) import the tasks when
they run: the tasks call the services, and the services never import the tasks.
"""

from __future__ import annotations

import logging

from django.db import transaction

logger = logging.getLogger(__name__)


def enqueue_run(run_id: int) -> None:
    """Send the evaluation of run ``run_id`` to the workers (in-process when eager)."""
    from .tasks import execute_run

    execute_run.delay(run_id)
    logger.info("queued run %s", run_id)


def enqueue_batch(batch_id: int) -> None:
    """Send suite batch ``batch_id`` to the workers (in-process when eager): its task
    sends one task per chunk, to the queue it came from."""
    from .tasks import execute_batch

    execute_batch.delay(batch_id)
    logger.info("queued batch %s", batch_id)


def enqueue_chunk(chunk_id: int) -> None:
    """Send one batch chunk to the workers again (the sweep of stale chunks)."""
    from .tasks import execute_chunk

    execute_chunk.delay(chunk_id)


def enqueue_proposals(run_id: int) -> None:
    """Send proposal run ``run_id`` to the workers (in-process when eager)."""
    from .tasks import run_proposals

    run_proposals.delay(run_id)
    logger.info("queued proposal run %s", run_id)


def enqueue_ingested_trace(trace_id: int) -> None:
    """Send the routing of complete live trace ``trace_id`` to the workers."""
    from .tasks import route_ingested_trace

    route_ingested_trace.delay(trace_id)
    logger.info("queued live trace %s", trace_id)


def enqueue_webhook(delivery_id: int) -> None:
    """Send webhook delivery ``delivery_id`` to the workers (its first attempt)."""
    from .tasks import deliver_webhook

    deliver_webhook.delay(delivery_id)
    logger.info("queued webhook delivery %s", delivery_id)


# The lambdas look the senders up when the transaction commits, so a test (or a
# deployment) can replace a sender on this module.
def run_on_commit(run_id: int) -> None:
    transaction.on_commit(lambda: enqueue_run(run_id))


def batch_on_commit(batch_id: int) -> None:
    transaction.on_commit(lambda: enqueue_batch(batch_id))


def proposals_on_commit(run_id: int) -> None:
    transaction.on_commit(lambda: enqueue_proposals(run_id))


def ingested_trace_on_commit(trace_id: int) -> None:
    transaction.on_commit(lambda: enqueue_ingested_trace(trace_id))


def webhook_on_commit(delivery_id: int) -> None:
    transaction.on_commit(lambda: enqueue_webhook(delivery_id))
