"""Projects and who belongs to them with which role."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q


class Role(models.TextChoices):
    ANNOTATOR = "annotator", "Annotator"
    REVIEWER = "reviewer", "Reviewer"
    ADMIN = "admin", "Admin"


class Project(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="projects"
    )
    # How a semantic run's P(violation) reads: clean below the first, violation from the
    # second, needs review between. Null: the shipped pair model's threshold.
    review_clean_below = models.FloatField(
        "clean below", null=True, blank=True, help_text="P(violation) below this reads clean"
    )
    review_violation_from = models.FloatField(
        "violation from",
        null=True,
        blank=True,
        help_text="P(violation) from this reads as a violation",
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(review_clean_below__isnull=True)
                    | Q(review_clean_below__gte=0, review_clean_below__lte=1)
                )
                & (
                    Q(review_violation_from__isnull=True)
                    | Q(review_violation_from__gte=0, review_violation_from__lte=1)
                )
                & (
                    Q(review_clean_below__isnull=True)
                    | Q(review_violation_from__isnull=True)
                    | Q(review_clean_below__lte=F("review_violation_from"))
                ),
                name="project_review_thresholds_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=20, choices=Role.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique_user"),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="membership_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user} · {self.role} · {self.project}"
