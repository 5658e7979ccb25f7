"""Contracts and their parts: artifacts, nodes, spans, edges, invariants, queries,
proposal runs and the audit history.

Every field of a ``contracteval.contract/v1`` node, invariant and query is stored here,
so that export rebuilds exactly the document that was imported. Writes that span
several rows live in ``audit/services/``; these classes keep single-row behaviour.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from .projects import Project

ID_REGEX = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"


class Artifact(models.Model):
    """The instruction text a contract is written against (an SOP, a system prompt …)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="artifacts")
    text = models.TextField()
    media_type = models.CharField(max_length=100, blank=True, default="")
    content_hash = models.CharField(max_length=64, db_index=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"artifact {self.content_hash[:10]}"

    def save(self, *args, **kwargs):
        self.content_hash = self.hash_text(self.text)
        super().save(*args, **kwargs)

    @staticmethod
    def hash_text(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ContractStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    IN_REVIEW = "in_review", "In review"
    AUDITED = "audited", "Audited"


class Contract(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="contracts")
    artifact = models.ForeignKey(Artifact, on_delete=models.PROTECT, related_name="contracts")
    key = models.CharField("contract id", max_length=128)
    title = models.CharField(max_length=300, blank=True, default="")
    domain = models.CharField(max_length=200, blank=True, default="")
    version = models.PositiveIntegerField(default=1)
    status = models.CharField(
        max_length=20, choices=ContractStatus.choices, default=ContractStatus.DRAFT
    )
    previous = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="next_versions"
    )
    # The agent's declared tools, canonical OpenAI form (``matching.tools``); exported in
    # the first root node's ``meta.tools`` because the format has no contract-level meta.
    tool_catalogue = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # ``version`` numbers the contract's versions; this one counts edits of the title,
    # domain and media type, so that a stale edit of them is refused.
    details_version = models.PositiveIntegerField(default=1)
    # Counts changes of what the contract exports (nodes, spans, edges, invariants,
    # queries, details, tools): derived reads such as the engine's audit are cached under
    # it. Bumped under the contract's lock by every service that may change the export.
    revision = models.PositiveBigIntegerField(default=0, editable=False)
    # How many of those changes were reviews (a node moved into or out of *rejected*,
    # nothing else): ``revision - review_revision`` then counts the changes of the
    # content, and the export base read at one such count holds for every review after
    # it (``audit.selectors.audits``). Counted this way, a writer that knows only
    # ``revision`` (the admin, an older process during a deploy) changes the content
    # count too, so it can never leave a stale base in use.
    review_revision = models.PositiveBigIntegerField(default=0, editable=False)

    class Meta:
        ordering = ["key", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "key", "version"], name="contract_unique_version"
            ),
            models.CheckConstraint(condition=Q(version__gte=1), name="contract_version_positive"),
            models.CheckConstraint(
                condition=Q(status__in=ContractStatus.values), name="contract_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} v{self.version}"

    @property
    def is_read_only(self) -> bool:
        return self.status == ContractStatus.AUDITED

    @property
    def display_title(self) -> str:
        return self.title or self.key


class NodeType(models.TextChoices):
    INTENT = "intent", "Intent"
    ACTION = "action", "Action"
    DECISION = "decision", "Decision"
    BRANCH_CONDITION = "branch_condition", "Branch condition"
    OUTPUT_REQUIREMENT = "output_requirement", "Output requirement"
    REFUSAL = "refusal", "Refusal"
    VALIDATION = "validation", "Validation"


class ReviewStatus(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    CONFIRMED = "confirmed", "Confirmed"
    EDITED = "edited", "Edited"
    REJECTED = "rejected", "Rejected"


class Combine(models.TextChoices):
    ALL = "all", "all"
    ANY = "any", "any"


class Node(models.Model):
    contract = models.ForeignKey(Contract, on_delete=models.CASCADE, related_name="nodes")
    node_id = models.CharField("id", max_length=128)
    type = models.CharField(max_length=30, choices=NodeType.choices)
    label = models.CharField(max_length=500)
    description = models.TextField(blank=True, default="")
    required = models.BooleanField(default=True)
    explicit = models.BooleanField(default=False)
    combine = models.CharField(max_length=3, choices=Combine.choices, default=Combine.ALL)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    meta = models.JSONField(default=dict, blank=True)
    position = models.PositiveIntegerField(default=0)
    review_status = models.CharField(
        max_length=20, choices=ReviewStatus.choices, default=ReviewStatus.PROPOSED
    )
    proposer = models.CharField(max_length=200, blank=True, default="")
    score = models.FloatField(null=True, blank=True)
    justification = models.TextField(blank=True, default="")
    version = models.PositiveIntegerField(default=1)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["position", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["contract", "node_id"], name="node_unique_id"),
            models.CheckConstraint(condition=Q(type__in=NodeType.values), name="node_type_valid"),
            models.CheckConstraint(
                condition=Q(review_status__in=ReviewStatus.values), name="node_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(combine__in=Combine.values), name="node_combine_valid"
            ),
            models.CheckConstraint(condition=~Q(parent=F("pk")), name="node_not_own_parent"),
        ]

    def __str__(self) -> str:
        return self.node_id

    @property
    def is_rejected(self) -> bool:
        return self.review_status == ReviewStatus.REJECTED


class Invariant(models.Model):
    contract = models.ForeignKey(Contract, on_delete=models.CASCADE, related_name="invariants")
    inv_id = models.CharField("id", max_length=128)
    label = models.CharField(max_length=500)
    description = models.TextField(blank=True, default="")
    applies_to = models.ManyToManyField(Node, blank=True, related_name="invariants")
    machine_check = models.JSONField("check", null=True, blank=True)
    position = models.PositiveIntegerField(default=0)
    version = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["position", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["contract", "inv_id"], name="invariant_unique_id"),
        ]

    def __str__(self) -> str:
        return self.inv_id


class Span(models.Model):
    """One evidence span, ``[start, end)`` in code points of the artifact text."""

    node = models.ForeignKey(
        Node, null=True, blank=True, on_delete=models.CASCADE, related_name="spans"
    )
    invariant = models.ForeignKey(
        Invariant, null=True, blank=True, on_delete=models.CASCADE, related_name="spans"
    )
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "pk"]
        constraints = [
            models.CheckConstraint(condition=Q(start__lt=F("end")), name="span_start_before_end"),
            models.CheckConstraint(
                condition=(Q(node__isnull=False) & Q(invariant__isnull=True))
                | (Q(node__isnull=True) & Q(invariant__isnull=False)),
                name="span_has_one_owner",
            ),
        ]

    def __str__(self) -> str:
        return f"[{self.start}, {self.end})"


class EdgeKind(models.TextChoices):
    REQUIRES = "requires", "requires"
    ENABLES = "enables", "enables"
    BRANCHES_TO = "branches_to", "branches_to"
    PRODUCES = "produces", "produces"


class Edge(models.Model):
    contract = models.ForeignKey(Contract, on_delete=models.CASCADE, related_name="edges")
    source = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="out_edges")
    target = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="in_edges")
    kind = models.CharField(max_length=20, choices=EdgeKind.choices)
    position = models.PositiveIntegerField(default=0)
    proposer = models.CharField(max_length=200, blank=True, default="")
    version = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["position", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["contract", "source", "target", "kind"], name="edge_unique"
            ),
            models.CheckConstraint(condition=Q(kind__in=EdgeKind.values), name="edge_kind_valid"),
            models.CheckConstraint(condition=~Q(source=F("target")), name="edge_not_self_loop"),
        ]

    def __str__(self) -> str:
        return f"{self.source_id} -{self.kind}-> {self.target_id}"


class Query(models.Model):
    contract = models.ForeignKey(Contract, on_delete=models.CASCADE, related_name="queries")
    query_id = models.CharField("id", max_length=128)
    text = models.TextField()
    intents = models.JSONField(default=list, blank=True)
    branches = models.JSONField(default=dict, blank=True)
    position = models.PositiveIntegerField(default=0)
    version = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["position", "pk"]
        verbose_name_plural = "queries"
        constraints = [
            models.UniqueConstraint(fields=["contract", "query_id"], name="query_unique_id"),
        ]

    def __str__(self) -> str:
        return self.query_id


class ProposalRunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class ProposalRun(models.Model):
    """One request to a proposer; the Celery task moves it from queued to done."""

    contract = models.ForeignKey(Contract, on_delete=models.CASCADE, related_name="proposal_runs")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    proposer = models.CharField(max_length=100, default="heuristic")
    status = models.CharField(
        max_length=20, choices=ProposalRunStatus.choices, default=ProposalRunStatus.QUEUED
    )
    created_nodes = models.PositiveIntegerField(default=0)
    created_edges = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # What actually ran (``Proposals.proposer``): "heuristic" or "llm:<model>". A run
    # that asked for "llm" without a configured endpoint says "heuristic" here.
    used_proposer = models.CharField(max_length=200, blank=True, default="")
    model_name = models.CharField("model", max_length=200, blank=True, default="")
    notice = models.TextField(blank=True, default="", help_text="e.g. the fallback warning")
    # [{what, label, reason}]: LLM proposals not kept (a quote not in the artifact ...).
    discarded = models.JSONField(default=list, blank=True)
    # Totals over the LLM calls: calls, failed_calls, prompt/completion tokens, seconds.
    usage = models.JSONField(default=dict, blank=True)
    llm_calls = models.JSONField("LLM calls", default=list, blank=True)
    attempts = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.proposer} run on {self.contract} ({self.status})"

    @property
    def fell_back(self) -> bool:
        """An LLM was asked for, the offline heuristic ran."""
        return self.proposer == "llm" and self.used_proposer == "heuristic"


class AuditRecordQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise TypeError("audit records are append-only")

    def delete(self):
        raise TypeError("audit records are append-only")


class AuditRecord(models.Model):
    """Append-only: who changed what, when, with the values before and after."""

    # PROTECT: a contract with a history cannot be deleted, or its history with it.
    contract = models.ForeignKey(Contract, on_delete=models.PROTECT, related_name="records")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    action = models.CharField(max_length=50)
    object_type = models.CharField(max_length=30)
    object_id = models.CharField(max_length=128, blank=True, default="")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    # Set on the records the history page shows (audit.selectors.workspace.history).
    verb: str
    changes: list[tuple[str, Any, Any]]
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects = AuditRecordQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.action} {self.object_type} {self.object_id}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise TypeError("audit records are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise TypeError("audit records are append-only")
