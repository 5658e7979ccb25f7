"""A project's review thresholds: how its semantic runs' P(violation) reads as clean,
needs review or violation. Changing them reads every stored P(violation) again; the
engine does not run again."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Case, Value, When

from ..models import Assessment, Project, Run, RunMode
from ..permissions import THRESHOLDS, authorize
from ..selectors.assessments import effective_thresholds
from .common import ServiceError

logger = logging.getLogger(__name__)

LABELS = {"clean_below": "Clean below", "violation_from": "Violation from"}


class ThresholdError(ServiceError):
    """Thresholds that cannot be stored; ``field`` names the one at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _checked(clean_below: float | None, violation_from: float | None) -> tuple[float, float]:
    """The effective pair, or a :class:`ThresholdError` naming the field at fault."""
    for field, value in (("clean_below", clean_below), ("violation_from", violation_from)):
        if value is not None and not 0.0 <= value <= 1.0:
            raise ThresholdError(field, f"{LABELS[field]} must be between 0 and 1, not {value}")
    thresholds = effective_thresholds(clean_below, violation_from)
    if thresholds is None:
        raise ThresholdError(
            "clean_below" if clean_below is None else "violation_from",
            "the shipped thresholds cannot be read (the pair model does not load): set both values",
        )
    if thresholds.clean_below > thresholds.violation_from:
        field = "clean_below" if clean_below is not None else "violation_from"
        shipped = " (the shipped default)" if None in (clean_below, violation_from) else ""
        raise ThresholdError(
            field,
            f"Clean below ({thresholds.clean_below:g}) must not be above Violation from"
            f" ({thresholds.violation_from:g}){shipped}",
        )
    return thresholds.clean_below, thresholds.violation_from


def review_thresholds_set(
    *, project: Project, user, clean_below: float | None, violation_from: float | None
) -> int:
    """Store ``project``'s thresholds (None: the shipped default) and read the
    assessment of its semantic runs again from their stored P(violation); the number
    of runs read. Thresholds out of order or outside [0, 1] store nothing."""
    authorize(user, project.pk, THRESHOLDS)
    low, high = _checked(clean_below, violation_from)
    with transaction.atomic():
        Project.objects.filter(pk=project.pk).update(
            review_clean_below=clean_below, review_violation_from=violation_from
        )
        # Thresholds.verdict, in SQL: one statement however many runs the project has.
        reread = Run.objects.filter(
            project=project, mode=RunMode.SEMANTIC, p_violation__isnull=False
        ).update(
            assessment=Case(
                When(p_violation__lt=low, then=Value(Assessment.CLEAN)),
                When(p_violation__gte=high, then=Value(Assessment.VIOLATION)),
                default=Value(Assessment.NEEDS_REVIEW),
            )
        )
    project.review_clean_below, project.review_violation_from = clean_below, violation_from
    logger.info(
        "project %s review thresholds %s/%s by %s: %d run(s) read again",
        project.slug,
        clean_below,
        violation_from,
        getattr(user, "pk", None),
        reread,
    )
    return reread
