"""Live ingestion over OTLP/HTTP: a project's ingest tokens, its routing rules, and the
traces its agents send (spans grouped by trace id until the trace is complete)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from .contracts import Contract
from .projects import Project
from .runs import Run, RunMode


class IngestToken(models.Model):
    """A bearer token an agent's exporter sends. Only its SHA-256 digest is stored: the
    token is shown once, when it is created, and a leaked database gives no token."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="ingest_tokens")
    name = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=16, editable=False, help_text="to tell tokens apart")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class QuerySource(models.TextChoices):
    FIXED = "fixed", "this query id"
    ATTRIBUTE = "attribute", "the query id in this attribute"
    FIRST_USER_MESSAGE = "first_user_message", "the query whose text is the first user message"


class RoutingRule(models.Model):
    """Traces whose ``attribute`` (of a span or of its resource) equals ``value`` run
    against the latest audited version of ``contract_key``; the query comes from
    ``query_from``. The first matching rule (by position) wins."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="routing_rules")
    position = models.PositiveIntegerField(default=0)
    attribute = models.CharField(max_length=200, help_text="e.g. gen_ai.agent.name, service.name")
    value = models.CharField(max_length=500)
    contract_key = models.CharField("contract id", max_length=128)
    query_from = models.CharField(
        max_length=20, choices=QuerySource.choices, default=QuerySource.FIXED
    )
    query_value = models.CharField(
        max_length=200, blank=True, default="", help_text="the query id, or the attribute"
    )
    mode = models.CharField(max_length=10, choices=RunMode.choices, default=RunMode.TOKEN)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["position", "pk"]

    def __str__(self) -> str:
        return f"{self.attribute} = {self.value} → {self.contract_key}"


class TraceStatus(models.TextChoices):
    OPEN = "open", "receiving spans"
    COMPLETE = "complete", "complete, routing"
    RUN = "run", "run created"
    UNROUTED = "unrouted", "unrouted"
    IGNORED = "ignored", "no GenAI spans"


class IngestedTrace(models.Model):
    """The spans of one trace id, as they arrive (keyed by span id, so a span sent twice
    is stored once), until the trace is complete and routed to a run or to the queue."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="ingested_traces")
    trace_id = models.CharField(max_length=32)
    spans = models.JSONField(default=dict, help_text="span id -> span")
    status = models.CharField(max_length=10, choices=TraceStatus.choices, default=TraceStatus.OPEN)
    root_ended = models.BooleanField(default=False)
    received_at = models.DateTimeField(auto_now_add=True)
    last_span_at = models.DateTimeField()
    agent_name = models.CharField(max_length=200, blank=True, default="")
    model_name = models.CharField(max_length=200, blank=True, default="")
    service_name = models.CharField(max_length=200, blank=True, default="")
    contract = models.ForeignKey(
        Contract, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    query_key = models.CharField(max_length=128, blank=True, default="")
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="ingested_traces"
    )
    reason = models.TextField(blank=True, default="", help_text="why it is unrouted")
    token = models.ForeignKey(
        IngestToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-last_span_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["project", "trace_id"], name="ingested_trace_unique"),
            models.CheckConstraint(
                condition=Q(status__in=TraceStatus.values), name="ingested_trace_status_valid"
            ),
        ]
        indexes = [models.Index(fields=["status", "last_span_at"], name="ingested_trace_quiet")]

    def __str__(self) -> str:
        return f"trace {self.trace_id} ({self.status})"
