"""A project's webhook endpoints (admins) and the events they receive.

An endpoint's secret is generated (or given by the admin, for a receiver that already
has one) and shown once. Events are stored as deliveries with their body fixed, then
sent by a Celery task queued on commit (:mod:`audit.services.deliveries`).

Which event a finished run raises: a semantic run reads by its assessment (the
project's thresholds on P(violation)): ``run.needs_review`` or ``run.violation``; a
token or oracle run, which has no assessment, raises ``run.violation`` when its verdict
is not clean. A semantic run read as clean raises nothing even when its raw verdict
lists a failure: the thresholds are the project's own word on what needs a person.

A finished suite batch raises ``batch.regression`` when it reads at least
:data:`REGRESSION_DROP` fewer of its cases clean than the last finished batch of the
same suite (project, suite name, source, mode, extractor and evaluator).
"""

from __future__ import annotations

import logging
import re
import secrets
import uuid
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from .. import enqueue
from ..models import (
    FAMILY_FIELDS,
    SUBSCRIBABLE,
    Assessment,
    Batch,
    Project,
    Run,
    RunStatus,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
from ..permissions import WEBHOOKS, authorize
from .chunks import case_results
from .common import ServiceError, actor
from .deliveries import url_problem

logger = logging.getLogger(__name__)

SECRET_PREFIX = "whsec_"
SECRET_CHARS = re.compile(r"^[\x21-\x7e]{16,200}$")  # printable ASCII, no spaces
HEADLINES = {  # the first words of a run event's chat line
    WebhookEvent.RUN_VIOLATION: "Violation",
    WebhookEvent.RUN_NEEDS_REVIEW: "Needs review",
}


def webhook_create(
    *, project: Project, user, name: str, url: str, events: list[str], secret: str = ""
) -> tuple[WebhookEndpoint, str]:
    """A new endpoint of ``project``: ``(endpoint, secret)``. The page shows the secret
    once; a bad name, URL, event list or secret stores nothing."""
    authorize(user, project.pk, WEBHOOKS)
    name, url, secret = (name or "").strip(), (url or "").strip(), (secret or "").strip()
    if not name:
        raise ServiceError("name the endpoint (the channel or service it posts to)")
    if len(url) > 2000:
        raise ServiceError("the URL is longer than 2000 characters")
    problem = url_problem(url, resolve=False)
    if problem:
        raise ServiceError(f"URL refused: {problem}")
    wanted = set(events or ())
    chosen = [e for e in SUBSCRIBABLE if e in wanted]
    if not chosen or len(chosen) != len(wanted):
        raise ServiceError("choose at least one event: " + ", ".join(SUBSCRIBABLE))
    if secret and not SECRET_CHARS.match(secret):
        raise ServiceError("a secret is 16 to 200 printable characters without spaces")
    secret = secret or SECRET_PREFIX + secrets.token_urlsafe(32)
    endpoint = WebhookEndpoint.objects.create(
        project=project,
        name=name[:100],
        url=url,
        secret=secret,
        events=chosen,
        created_by=actor(user),
    )
    logger.info("webhook %s created in %s", endpoint.pk, project.slug)
    return endpoint, secret


def webhook_new_secret(*, endpoint: WebhookEndpoint, user) -> tuple[WebhookEndpoint, str]:
    """A new generated secret for ``endpoint``: ``(endpoint, secret)``, shown once. The
    attempts made from now on are signed with it, retries of earlier events too."""
    authorize(user, endpoint.project_id, WEBHOOKS)
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(secret=secret)
    endpoint.secret = secret
    logger.info("webhook %s has a new secret", endpoint.pk)
    return endpoint, secret


def webhook_delete(*, endpoint: WebhookEndpoint, user) -> None:
    """Delete ``endpoint`` with its deliveries and their log; a queued attempt finds
    nothing to send."""
    authorize(user, endpoint.project_id, WEBHOOKS)
    with transaction.atomic():
        WebhookEndpoint.objects.filter(pk=endpoint.pk).delete()
    logger.info("webhook %s deleted", endpoint.pk)


def webhook_send_test(*, endpoint: WebhookEndpoint, user) -> WebhookDelivery:
    """Queue a ``test`` event to ``endpoint``, signed as any other."""
    authorize(user, endpoint.project_id, WEBHOOKS)
    project = endpoint.project
    text = f"ContractEval test event from {project.name}: this endpoint receives its webhooks."
    body = {
        "event": WebhookEvent.TEST.value,
        "text": chat_escape(text),
        "project": {"slug": project.slug, "name": project.name},
        "endpoint": endpoint.name,
    }
    with transaction.atomic():
        return _queue(endpoint, WebhookEvent.TEST, body, run=None)


def _queue(
    endpoint: WebhookEndpoint, event: str, body: dict[str, Any], run: Run | None
) -> WebhookDelivery:
    """Store one delivery (its id in the body too) and send it once the caller commits."""
    uid = uuid.uuid4()
    payload = {**body, "delivery": str(uid), "occurred_at": timezone.now().isoformat()}
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint, uid=uid, event=event, run=run, payload=payload
    )
    enqueue.webhook_on_commit(delivery.pk)
    return delivery


def run_event(run: Run) -> str | None:
    """The event a finished run raises, or None (see the module's docstring)."""
    if run.status != RunStatus.DONE:
        return None
    if run.assessment == Assessment.NEEDS_REVIEW:
        return WebhookEvent.RUN_NEEDS_REVIEW
    if run.assessment == Assessment.VIOLATION:
        return WebhookEvent.RUN_VIOLATION
    if not run.assessment and run.verdict == "non_clean":
        return WebhookEvent.RUN_VIOLATION
    return None


def run_notify(*, run: Run) -> list[WebhookDelivery]:
    """Queue ``run``'s event (if it raises one) to every endpoint of its project that
    subscribes to it; called when a run finishes. An endpoint receives a run's event
    once, however often this is called. A failure here is logged, never raised: a
    webhook must not fail the run it reports."""
    event = run_event(run)
    if event is None:
        return []
    try:
        with transaction.atomic():
            endpoints = _subscribed(run.project_id, event)
            if not endpoints:
                return []
            body = run_body(run, event)
            return [d for e in endpoints if (d := _queue_once(e, event, body, run)) is not None]
    except Exception:
        logger.exception("the webhooks of run %s could not be queued", run.pk)
        return []


def _subscribed(project_id: int, event: str) -> list[WebhookEndpoint]:
    return [e for e in WebhookEndpoint.objects.filter(project_id=project_id) if event in e.events]


def _queue_once(
    endpoint: WebhookEndpoint, event: str, body: dict[str, Any], run: Run
) -> WebhookDelivery | None:
    """Queue ``run``'s event to ``endpoint`` unless it already was."""
    if WebhookDelivery.objects.filter(endpoint=endpoint, run=run, event=event).exists():
        return None
    try:
        with transaction.atomic():
            return _queue(endpoint, event, body, run=run)
    except IntegrityError:  # a concurrent call queued it first
        return None


def run_url(run: Run) -> str:
    return settings.SITE_URL + reverse("audit:run_detail", args=[run.pk])


def chat_escape(text: str) -> str:
    """``text`` safe in a Slack or Mattermost message: ``&``, ``<`` and ``>`` are
    control characters there (``<url|label>`` links, ``<!channel>`` pings)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def run_body(run: Run, event: str) -> dict[str, Any]:
    """The body of ``run``'s event: a ``text`` line for chat tools, then the fields."""
    contract = run.contract
    project = Project.objects.only("slug", "name").get(pk=run.project_id)
    failures = {f: getattr(run, col) for f, col in FAMILY_FIELDS.items() if getattr(run, col)}
    url = run_url(run)
    text = (
        f"{HEADLINES[WebhookEvent(event)]} in {project.name}: {contract.key}"
        f" v{contract.version}, query {run.query_key}, run {run.pk}"
    )
    if run.p_violation is not None:
        text += f", P(violation) {run.p_violation:.2f}"
    if failures:
        text += " — " + ", ".join(f"{f.replace('_', ' ')} {n}" for f, n in failures.items())
    return {
        "event": event,
        "text": chat_escape(text) + f" <{url}|open the run>",
        "project": {"slug": project.slug, "name": project.name},
        "contract": {"key": contract.key, "version": contract.version, "title": contract.title},
        "query": run.query_key,
        "run": {
            "id": run.pk,
            "url": url,
            "mode": run.mode,
            "model": run.model_name,
            "verdict": run.verdict,
            "assessment": run.assessment or None,
            "p_violation": run.p_violation,
            "failure_count": run.failure_count,
            "failures": failures,
            "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        },
    }


# A batch is a regression when its clean rate is at least this far (five percentage
# points) below the last finished batch of the same suite: smaller moves are noise
# between runs of a semantic or LLM evaluator.
REGRESSION_DROP = 0.05


def clean_rate(batch: Batch) -> float | None:
    """The share of ``batch``'s cases its evaluator read clean (an errored case is not
    clean); None when it has no stored results."""
    rows = {r.id: r for c in batch.chunks.defer("cases", "packed") for r in case_results(c)}
    if not rows:
        return None
    return sum(1 for r in rows.values() if r.verdict == "clean") / len(rows)


def previous_batch(batch: Batch) -> Batch | None:
    """The last finished batch before ``batch`` of the same suite: the same project,
    suite name and source, mode, extractor and evaluator."""
    return (
        Batch.objects.filter(
            project_id=batch.project_id,
            name=batch.name,
            source=batch.source,
            mode=batch.mode,
            extractor=batch.extractor,
            judge=batch.judge,
            status=RunStatus.DONE,
            pk__lt=batch.pk,
        )
        .defer("archive")
        .order_by("-pk")
        .first()
    )


def batch_notify(*, batch: Batch) -> list[WebhookDelivery]:
    """Queue ``batch.regression`` when ``batch`` (just finished) reads at least
    :data:`REGRESSION_DROP` fewer of its cases clean than the suite's previous batch;
    called when a batch is scored. Logged, never raised, on failure."""
    if batch.status != RunStatus.DONE:
        return []
    event = WebhookEvent.BATCH_REGRESSION
    try:
        with transaction.atomic():
            endpoints = _subscribed(batch.project_id, event)
            before = previous_batch(batch) if endpoints else None
            if before is None:
                return []
            now, then = clean_rate(batch), clean_rate(before)
            if now is None or then is None or then - now < REGRESSION_DROP:
                return []
            body = batch_body(batch, before, now, then)
            return [_queue(e, event, body, run=None) for e in endpoints]
    except Exception:
        logger.exception("the webhooks of batch %s could not be queued", batch.pk)
        return []


def batch_body(batch: Batch, before: Batch, now: float, then: float) -> dict[str, Any]:
    """The body of a ``batch.regression``: the batch, the one it is compared with."""
    project = Project.objects.only("slug", "name").get(pk=batch.project_id)
    url = settings.SITE_URL + reverse("audit:batch_detail", args=[batch.pk])
    text = (
        f"Regression in {project.name}: suite {batch.name} ({batch.mode}) read {now:.0%} of"
        f" its {batch.total} cases clean, down from {then:.0%} in batch {before.pk}"
    )
    return {
        "event": WebhookEvent.BATCH_REGRESSION.value,
        "text": chat_escape(text) + f" <{url}|open the batch>",
        "project": {"slug": project.slug, "name": project.name},
        "batch": {
            "id": batch.pk,
            "url": url,
            "suite": batch.name,
            "mode": batch.mode,
            "extractor": batch.extractor,
            "evaluator": f"judge-{batch.judge}" if batch.judge else "contracteval",
            "cases": batch.total,
            "clean_rate": round(now, 4),
            "detection_accuracy": (batch.scores or {}).get("detection_accuracy"),
        },
        "previous": {
            "id": before.pk,
            "url": settings.SITE_URL + reverse("audit:batch_detail", args=[before.pk]),
            "clean_rate": round(then, 4),
            "detection_accuracy": (before.scores or {}).get("detection_accuracy"),
        },
    }
