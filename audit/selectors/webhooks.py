"""Reads of a project's webhooks page: its endpoints and the latest delivery attempts."""

from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, Subquery

from ..models import DeliveryStatus, Project, WebhookAttempt, WebhookDelivery, WebhookEndpoint

LOG_SIZE = 50


def webhooks_page(project: Project) -> dict[str, Any]:
    """The endpoints of ``project``, its latest :data:`LOG_SIZE` delivery attempts, and
    whether a delivery is still pending (then the page's log polls)."""
    log = (
        WebhookAttempt.objects.filter(delivery__endpoint__project=project)
        .select_related("delivery__endpoint")
        .defer("delivery__payload")
        .order_by("-created_at", "-pk")[:LOG_SIZE]
    )
    return {
        "endpoints": list(_with_last_delivery(WebhookEndpoint.objects.filter(project=project))),
        "log": list(log),
        "pending": WebhookDelivery.objects.filter(
            endpoint__project=project, status=DeliveryStatus.PENDING
        ).exists(),
    }


def _with_last_delivery(endpoints):
    """Each endpoint with the status and time of its latest delivery (None without)."""
    last = WebhookDelivery.objects.filter(endpoint=OuterRef("pk")).order_by("-created_at", "-pk")
    return endpoints.annotate(
        last_status=Subquery(last.values("status")[:1]),
        last_at=Subquery(last.values("created_at")[:1]),
    )
