"""Outgoing webhooks: a project's endpoints, the events queued for them, and every
attempt to deliver one (the delivery log on the project's webhooks page)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from .projects import Project
from .runs import Run


class WebhookEvent(models.TextChoices):
    """What an endpoint may subscribe to. ``test`` is only sent by the page's button."""

    RUN_VIOLATION = "run.violation", "run.violation: a finished run reads as a violation"
    RUN_NEEDS_REVIEW = "run.needs_review", "run.needs_review: a finished run needs review"
    BATCH_REGRESSION = (
        "batch.regression",
        "batch.regression: a suite batch reads fewer cases clean than the suite's last batch",
    )
    TEST = "test", "test: sent by “Send test event”"


SUBSCRIBABLE = (
    WebhookEvent.RUN_VIOLATION,
    WebhookEvent.RUN_NEEDS_REVIEW,
    WebhookEvent.BATCH_REGRESSION,
)


class WebhookEndpoint(models.Model):
    """A URL that receives a project's events, signed with ``secret``.

    The secret is stored as it is, since every delivery is signed with it; it is shown
    once, when the endpoint is created, and never on a page again."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="webhooks")
    name = models.CharField(max_length=100)
    url = models.URLField("URL", max_length=2000)
    secret = models.CharField(max_length=200, editable=False)
    events = models.JSONField(default=list, help_text="the event names it receives")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "pk"]

    def __str__(self) -> str:
        return f"{self.name} ({self.url})"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "pending"
    DELIVERED = "delivered", "delivered"
    FAILED = "failed", "failed"


class WebhookDelivery(models.Model):
    """One event for one endpoint. ``uid`` is the delivery id the receiver sees on every
    attempt (the same on a retry, so it can drop a repeat); ``payload`` is the body,
    fixed when the event happens, so every attempt sends the same bytes."""

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    event = models.CharField(max_length=40, choices=WebhookEvent.choices)
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    payload = models.JSONField()
    status = models.CharField(
        max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            # a run's event goes to an endpoint once, however often its task runs
            models.UniqueConstraint(
                fields=["endpoint", "run", "event"],
                condition=Q(run__isnull=False),
                name="webhook_delivery_once_per_run",
            ),
            models.CheckConstraint(
                condition=Q(status__in=DeliveryStatus.values), name="webhook_delivery_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} → {self.endpoint.name} ({self.status})"


class WebhookAttempt(models.Model):
    """One POST of a delivery: the answer's status code (None: no answer), how long it
    took, and the error when it failed."""

    delivery = models.ForeignKey(
        WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log"
    )
    number = models.PositiveIntegerField()
    status_code = models.PositiveIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    will_retry = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.delivery_id}: {self.status_code or self.error}"
