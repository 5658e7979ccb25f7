"""A real Celery worker (Redis broker) delivers a webhook and retries a 500 through the
broker, after the backoff's countdown, as it does in production (the in-process tests
retry at once)."""

from __future__ import annotations

import time

import pytest

from audit import enqueue, services
from audit.models import DeliveryStatus, WebhookAttempt, WebhookDelivery

from .conftest import require_service
from .test_webhooks import Receiver, _verify
from .workers import REDIS_URL, new_queue, redis_up, start_worker, stop_worker

pytestmark = [pytest.mark.worker]


@pytest.fixture
def worker(transactional_db, monkeypatch):
    """A worker on a private queue, allowed to post to 127.0.0.1; webhook deliveries
    are sent to it."""
    from celery import Celery

    require_service(redis_up(), f"Redis is not reachable at {REDIS_URL}")
    queue = new_queue()
    proc = start_worker(queue, env={"WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "1"})
    sender = Celery(broker=REDIS_URL, set_as_current=False)  # the app stays current
    monkeypatch.setattr(
        enqueue,
        "enqueue_webhook",
        lambda pk: sender.send_task("audit.tasks.deliver_webhook", args=[pk], queue=queue),
    )
    yield proc
    stop_worker(proc)


def test_a_worker_retries_a_500_after_the_backoff_and_delivers(worker, project, users, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    receiver = Receiver()
    receiver.statuses = [500]
    try:
        endpoint, secret = services.webhook_create(
            project=project,
            user=users["admin"],
            name="alerts",
            url=receiver.url,
            events=["run.violation"],
        )
        delivery = services.webhook_send_test(endpoint=endpoint, user=users["admin"])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and worker.poll() is None:
            delivery.refresh_from_db()
            if delivery.status != DeliveryStatus.PENDING:
                break
            time.sleep(0.2)
    finally:
        receiver.stop()
    assert delivery.status == DeliveryStatus.DELIVERED, WebhookDelivery.objects.values()
    attempts = list(WebhookAttempt.objects.order_by("number"))
    assert [(a.number, a.status_code) for a in attempts] == [(1, 500), (2, 200)]
    # the second attempt waited for the countdown (2 s) in the broker
    assert (attempts[1].created_at - attempts[0].created_at).total_seconds() >= 1.5
    assert all(_verify(h, body, secret) for h, body in receiver.requests)
