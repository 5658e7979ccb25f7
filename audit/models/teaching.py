"""What reviewers teach the engine from runs: corrected reports and enactment examples."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from .contracts import Contract
from .runs import Run


class RunCorrection(models.Model):
    """A reviewer's corrected reading of a run: the forced and refused pairs so far and
    the report and overlay the engine gives with them. The automatic report stays on the
    run; each correction adds a row, so the history says who changed what and when."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="corrections")
    corrections = models.JSONField(help_text='{"pair": [[e, o]], "unpair": [[e, o]]}')
    report = models.JSONField()
    overlay = models.JSONField(null=True, blank=True)
    verdict = models.CharField(max_length=20)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"correction {self.pk} of run {self.run_id}"


class Enactment(models.Model):
    """How an agent enacted an obligation, confirmed by a reviewer on a run. Kept beside
    the contract, never in its audited nodes; semantic-mode runs read it as the node's
    ``meta.enactment`` and the contract export lists it there."""

    contract = models.ForeignKey(Contract, on_delete=models.CASCADE, related_name="enactments")
    node_id = models.CharField("obligation", max_length=128)
    text = models.TextField()
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="enactments"
    )
    step_id = models.CharField("observed step", max_length=128, blank=True, default="")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["node_id", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["contract", "node_id", "text"], name="enactment_unique_text"
            )
        ]

    def __str__(self) -> str:
        return f"{self.node_id}: {self.text[:40]}"
