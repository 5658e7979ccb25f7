"""Team annotation data: assignments, double annotation, blind decisions, curation,
comments.

Blind double annotation keeps each annotator's decisions in :class:`AnnotatorDecision`
rows, never in the contract's shared nodes or its history: the shared nodes stay
*proposed* until the curator adjudicates, so nothing on the workspace reveals one
annotator's choices to the other.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

USER = settings.AUTH_USER_MODEL


class AssignmentRole(models.TextChoices):
    ANNOTATOR = "annotator", "Annotator"
    REVIEWER = "reviewer", "Reviewer (curator)"


class Assignment(models.Model):
    """Work given to a member: one contract, or (``contract`` empty) a whole project."""

    project = models.ForeignKey("audit.Project", on_delete=models.CASCADE, related_name="+")
    contract = models.ForeignKey(
        "audit.Contract",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="assignments",
    )
    user = models.ForeignKey(USER, on_delete=models.CASCADE, related_name="assignments")
    role = models.CharField(max_length=20, choices=AssignmentRole.choices)
    created_by = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "contract_id", "role", "user_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["contract", "user", "role"],
                condition=Q(contract__isnull=False),
                name="assignment_unique_contract",
            ),
            models.UniqueConstraint(
                fields=["project", "user", "role"],
                condition=Q(contract__isnull=True),
                name="assignment_unique_project",
            ),
            models.CheckConstraint(
                condition=Q(role__in=AssignmentRole.values), name="assignment_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} · {self.role} · {self.contract or self.project}"


class TeamPhase(models.TextChoices):
    ANNOTATING = "annotating", "Annotating (blind)"
    ADJUDICATING = "adjudicating", "Adjudicating"
    ADJUDICATED = "adjudicated", "Adjudicated"


class DoubleAnnotation(models.Model):
    """A contract that needs independent audits before a curator adjudicates them."""

    contract = models.OneToOneField(
        "audit.Contract", on_delete=models.CASCADE, related_name="double_annotation"
    )
    annotators_needed = models.PositiveSmallIntegerField(default=2)
    phase = models.CharField(max_length=20, choices=TeamPhase.choices, default=TeamPhase.ANNOTATING)
    curator = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Frozen when adjudication starts: the version everyone annotated and the figures.
    base_document = models.JSONField(null=True, blank=True)
    agreement = models.JSONField(null=True, blank=True)
    created_by = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    adjudication_started_at = models.DateTimeField(null=True, blank=True)
    adjudicated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(annotators_needed__gte=2), name="double_annotation_two_or_more"
            ),
            models.CheckConstraint(
                condition=Q(phase__in=TeamPhase.values), name="double_annotation_phase_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"double annotation of {self.contract} ({self.phase})"

    @property
    def is_blind(self) -> bool:
        return self.phase == TeamPhase.ANNOTATING


class DecisionAction(models.TextChoices):
    CONFIRM = "confirm", "Confirm"
    REJECT = "reject", "Reject"
    EDIT = "edit", "Edit"


class AnnotatorDecision(models.Model):
    """One annotator's own decision on one proposed node (their blind copy)."""

    contract = models.ForeignKey(
        "audit.Contract", on_delete=models.CASCADE, related_name="annotator_decisions"
    )
    node = models.ForeignKey("audit.Node", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(USER, on_delete=models.CASCADE, related_name="+")
    action = models.CharField(max_length=10, choices=DecisionAction.choices)
    # For an edit: the edited fields (type, label, ..., evidence as [[start, end], ...]).
    fields = models.JSONField(default=dict, blank=True)
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["node__position", "node_id", "user_id"]
        constraints = [
            models.UniqueConstraint(fields=["node", "user"], name="decision_unique_per_user"),
            models.CheckConstraint(
                condition=Q(action__in=DecisionAction.values), name="decision_action_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} {self.action}s {self.node_id}"

    def as_decision(self) -> dict:
        """The engine's decision shape (``matching.agreement``)."""
        out: dict = {"action": self.action}
        if self.action == DecisionAction.EDIT:
            out["fields"] = self.fields
        return out

    def evidence_or(self, proposed: list[list[int]]) -> list[list[int]]:
        """The evidence this copy gives its node: its edit's spans, else ``proposed``."""
        if self.action == DecisionAction.EDIT and "evidence" in self.fields:
            return [list(s) for s in self.fields["evidence"]]
        return proposed


class CurationChoice(models.Model):
    """The curator's final choice on a node: one annotator's version, or an own edit."""

    contract = models.ForeignKey(
        "audit.Contract", on_delete=models.CASCADE, related_name="curation_choices"
    )
    node = models.OneToOneField("audit.Node", on_delete=models.CASCADE, related_name="+")
    curator = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    picked = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # "agreed" (all annotators agreed), "pick" (one annotator's version) or "edit".
    source = models.CharField(max_length=10)
    result = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(source__in=["agreed", "pick", "edit"]), name="curation_source_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source} on {self.node_id}"


class CommentTarget(models.TextChoices):
    CONTRACT = "contract", "Contract"
    NODE = "node", "Node"
    EDGE = "edge", "Edge"
    INVARIANT = "invariant", "Invariant"
    RUN = "run", "Run"


class Comment(models.Model):
    """A note on a contract, node, edge, invariant or run; open ones block *audited*."""

    contract = models.ForeignKey(
        "audit.Contract", on_delete=models.CASCADE, related_name="comments"
    )
    target = models.CharField(max_length=20, choices=CommentTarget.choices)
    node = models.ForeignKey(
        "audit.Node", null=True, blank=True, on_delete=models.CASCADE, related_name="comments"
    )
    edge = models.ForeignKey(
        "audit.Edge", null=True, blank=True, on_delete=models.CASCADE, related_name="comments"
    )
    invariant = models.ForeignKey(
        "audit.Invariant", null=True, blank=True, on_delete=models.CASCADE, related_name="comments"
    )
    run = models.ForeignKey(
        "audit.Run", null=True, blank=True, on_delete=models.CASCADE, related_name="comments"
    )
    author = models.ForeignKey(USER, null=True, on_delete=models.SET_NULL, related_name="+")
    body = models.TextField()
    mentions: models.ManyToManyField[Any, Any] = models.ManyToManyField(
        USER, blank=True, related_name="mentioned_in"
    )
    resolved = models.BooleanField(default=False)
    resolved_by = models.ForeignKey(
        USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(target__in=CommentTarget.values), name="comment_target_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"comment {self.pk} on {self.target}"

    @property
    def target_label(self) -> str:
        obj = getattr(self, self.target, None) if self.target != "contract" else None
        if obj is None:
            return "the contract"
        if self.target == "run":
            return f"run {obj.pk}"
        if self.target == "edge":
            return f"{obj.source.node_id} -{obj.kind}-> {obj.target.node_id}"
        return f"{self.target} {getattr(obj, 'node_id', None) or getattr(obj, 'inv_id', '')}"


class Notification(models.Model):
    """A note on one user's home page: a comment that mentions them. Read ones stay
    (``read_at`` set) but are no longer shown."""

    user = models.ForeignKey(USER, on_delete=models.CASCADE, related_name="notifications")
    comment = models.ForeignKey(
        "audit.Comment", on_delete=models.CASCADE, related_name="notifications"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["user", "comment"], name="notification_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} mentioned in comment {self.comment_id}"
