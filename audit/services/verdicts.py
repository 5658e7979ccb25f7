"""Reviewer verdicts on finished runs, kept in the contract's audit record."""

from __future__ import annotations

from django.db import transaction

from ..models import AuditRecord, ReviewVerdict, Run, RunStatus
from ..permissions import VERDICT, authorize
from .common import ServiceError


def verdict_record(*, run: Run, user, agrees: bool, note: str = "") -> ReviewVerdict:
    """A reviewer's verdict on a finished run, kept in the contract's audit record."""
    authorize(user, run.project_id, VERDICT)
    if run.status != RunStatus.DONE:
        raise ServiceError("a verdict needs a finished run with a report")
    note = (note or "").strip()
    if not agrees and not note:
        raise ServiceError("say why you disagree with the report (a note is required)")
    with transaction.atomic():
        verdict = ReviewVerdict.objects.create(run=run, reviewer=user, agrees=agrees, note=note)
        AuditRecord.objects.create(
            contract=run.contract,
            user=user,
            action="verdict",
            object_type="run",
            object_id=str(run.pk),
            after={
                "agrees": agrees,
                "note": note,
                "report_verdict": run.verdict,
                "families": run.families,
            },
        )
    return verdict
