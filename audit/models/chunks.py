"""The stored slices of a suite batch: one row per chunk of cases, one task each.

A chunk's results are stored once, keyed by (batch, index): a task delivered twice (a
worker killed after storing, a redelivery after the broker's visibility timeout) finds
the chunk done and changes nothing, so every case counts exactly once.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from .runs import Batch, RunStatus


class BatchChunk(models.Model):
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    cases = models.JSONField(
        default=list, help_text="[line number, cases.jsonl line or null, error or null]"
    )
    # The same lines as zlib-compressed JSON (then ``cases`` is empty): a chunk of the
    # 1,400-case suite is ~1.1 MB of JSON, and parsing, compressing and logging the
    # batch's 7.7 MB as jsonb cost PostgreSQL ~0.3 s of the POST, before any worker
    # could start. Chunks stored before this field read ``cases``.
    packed = models.BinaryField(null=True, blank=True, editable=False)
    total = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.QUEUED)
    done = models.PositiveIntegerField(default=0, help_text="cases evaluated (never goes back)")
    results = models.JSONField(null=True, blank=True, help_text="one CaseResult row per case")
    verdicts = models.JSONField(null=True, blank=True, help_text="a judge's verdict per case")
    warnings = models.JSONField(default=list, blank=True)
    llm_usage = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    heartbeat = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["batch", "index"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "index"], name="batch_chunk_once"),
            models.CheckConstraint(
                condition=Q(status__in=RunStatus.values), name="batch_chunk_status_valid"
            ),
        ]
        indexes = [models.Index(fields=["status", "heartbeat"], name="batch_chunk_stale")]

    def __str__(self) -> str:
        return f"batch {self.batch_id} chunk {self.index} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (RunStatus.DONE, RunStatus.FAILED)
