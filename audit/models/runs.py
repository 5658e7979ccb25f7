"""Conformance runs of an agent's trace against an audited contract, reviewer verdicts
on them, and suite batches."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Case, F, Q, Value, When

from matching.formats import METRICS

from .contracts import Contract, Query
from .projects import Project


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class RunMode(models.TextChoices):
    ORACLE = "oracle", "Oracle (gold labels)"
    TOKEN = "token", "Token matching"
    SEMANTIC = "semantic", "Semantic matching (sentence embeddings)"


class ExtractorName(models.TextChoices):
    NONE = "none", "None (use the observed nodes)"
    HEURISTIC = "heuristic", "Heuristic"
    BEHAVIOUR = "behaviour", "Behaviour (speech acts)"
    LLM = "llm", "LLM"


class InputKind(models.TextChoices):
    OBSERVED = "observed", "Observed document"
    TEXT = "text", "Pasted response or trace"
    OPENAI = "openai", "OpenAI chat transcript"
    OPENAI_RESPONSES = "openai_responses", "OpenAI Responses API items"
    ANTHROPIC = "anthropic", "Anthropic Messages"
    LANGCHAIN = "langchain", "LangChain message dump"
    OTEL = "otel", "OpenTelemetry GenAI spans"
    TAU_BENCH_RESULTS = "tau_bench_results", "τ-bench results file"
    TAU_BENCH = "tau_bench", "τ-bench action list"


class Assessment(models.TextChoices):
    """A semantic run's three-way verdict: its P(violation) read with the project's
    thresholds (:attr:`Project.review_clean_below`, :attr:`Project.review_violation_from`).
    Token and oracle runs have none ("")."""

    NONE = "", "None"
    CLEAN = "clean", "Clean"
    NEEDS_REVIEW = "needs_review", "Needs review"
    VIOLATION = "violation", "Violation"


# The inbox lists the runs a reviewer should read first first: needs review, then
# violation, then clean, then runs without an assessment (token and oracle modes). The
# index run_inbox_assessment is built on this very expression, so the inbox reads a
# page in index order instead of sorting every failed run of the project.
ASSESSMENT_RANK = Case(
    When(assessment=Assessment.NEEDS_REVIEW, then=Value(0)),
    When(assessment=Assessment.VIOLATION, then=Value(1)),
    When(assessment=Assessment.CLEAN, then=Value(2)),
    default=Value(3),
    output_field=models.IntegerField(),
)

FAMILY_FIELDS = {
    "wrong_branch": "n_wrong_branch",
    "omission": "n_omission",
    "ordering": "n_ordering",
    "extra_action": "n_extra_action",
    "invariant_violation": "n_invariant_violation",
    "output_contract": "n_output_contract",
}
METRIC_FIELDS = METRICS  # one column per report metric, named as in the report
# What a reading of a run sets: the report, its overlay and every column derived from
# them. A reviewer's correction replaces them all; the automatic values are kept aside.
READING_FIELDS = (
    "report",
    "overlay",
    "verdict",
    "assessment",
    "p_violation",
    "failure_count",
    *FAMILY_FIELDS.values(),
    *METRIC_FIELDS,
)


class Run(models.Model):
    """One conformance check: an audited contract version, a query, an observed document.

    ``input_hash`` covers everything the report depends on (contract version, query,
    canonical observed document, mode, extractor), so the same inputs are one run.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="runs")
    contract = models.ForeignKey(Contract, on_delete=models.CASCADE, related_name="runs")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="runs")
    query_key = models.CharField("query id", max_length=128, db_index=True)
    input_kind = models.CharField(max_length=20, choices=InputKind.choices)
    observed = models.JSONField(help_text="the contracteval.observed/v1 document as submitted")
    input_hash = models.CharField(max_length=64, unique=True, editable=False)
    mode = models.CharField(max_length=10, choices=RunMode.choices, default=RunMode.TOKEN)
    extractor = models.CharField(
        max_length=20, choices=ExtractorName.choices, default=ExtractorName.NONE
    )
    model_name = models.CharField(
        "model",
        max_length=200,
        blank=True,
        default="",
        db_index=True,
        help_text="the agent or model that produced the trace",
    )
    agent_version = models.CharField(
        "agent version",
        max_length=200,
        blank=True,
        default="",
        db_index=True,
        help_text="the version of the agent that produced the trace (a release, a commit)",
    )
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.QUEUED)
    error = models.TextField(blank=True, default="")
    warnings = models.JSONField(default=list, blank=True)
    report = models.JSONField(null=True, blank=True)
    overlay = models.JSONField(null=True, blank=True)
    verdict = models.CharField(max_length=20, blank=True, default="", db_index=True)
    assessment = models.CharField(
        max_length=20,
        choices=Assessment.choices,
        blank=True,
        default="",
        db_index=True,
        help_text="semantic mode: clean, needs_review or violation, from p_violation and"
        " the project's thresholds",
    )
    p_violation = models.FloatField(
        "P(violation)", null=True, blank=True, help_text="semantic mode: P(violation)"
    )
    failure_count = models.PositiveIntegerField(default=0)
    n_wrong_branch = models.PositiveIntegerField(default=0)
    n_omission = models.PositiveIntegerField(default=0)
    n_ordering = models.PositiveIntegerField(default=0)
    n_extra_action = models.PositiveIntegerField(default=0)
    n_invariant_violation = models.PositiveIntegerField(default=0)
    n_output_contract = models.PositiveIntegerField(default=0)
    required_recall = models.FloatField(null=True, blank=True)
    observed_precision = models.FloatField(null=True, blank=True)
    edge_conformance = models.FloatField(null=True, blank=True)
    branch_correctness = models.FloatField(null=True, blank=True)
    invariant_score = models.FloatField(null=True, blank=True)
    output_validity = models.FloatField(null=True, blank=True)
    # Invariants without a machine check, scored by the LLM invariant judge on request.
    judge_invariants = models.BooleanField(default=False)
    judged_invariants = models.JSONField(
        null=True, blank=True, help_text="{id: score} from the LLM"
    )
    llm_model = models.CharField("LLM model", max_length=200, blank=True, default="")
    llm_usage = models.JSONField(null=True, blank=True)
    automatic = models.JSONField(
        null=True,
        blank=True,
        help_text="the engine's own reading (report, overlay, verdict, counts) while a "
        "reviewer's corrected reading is the run's; null when the run is not corrected",
    )
    extraction = models.JSONField(
        null=True,
        blank=True,
        help_text="the LLM extractor's quote counts: quotes, kept, discarded, reasons,"
        " unreliable, and the discarded nodes",
    )
    attempts = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        # The runs list, the inbox and the API read a project's newest runs first: these
        # serve the filter and the order, so a page reads 50 rows, not the project.
        indexes = [
            models.Index(fields=["project", "-created_at", "-id"], name="run_project_recent"),
            models.Index(
                fields=["project", "status", "verdict", "-created_at", "-id"], name="run_inbox"
            ),
            models.Index(fields=["status", "started_at"], name="run_stale"),
            models.Index(
                F("project"),
                F("status"),
                F("verdict"),
                ASSESSMENT_RANK,
                F("created_at").desc(),
                F("id").desc(),
                name="run_inbox_assessment",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=RunStatus.values), name="run_status_valid"
            ),
            models.CheckConstraint(condition=Q(mode__in=RunMode.values), name="run_mode_valid"),
            models.CheckConstraint(
                condition=Q(extractor__in=ExtractorName.values), name="run_extractor_valid"
            ),
            models.CheckConstraint(
                condition=Q(input_kind__in=InputKind.values), name="run_input_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(verdict__in=["", "clean", "non_clean"]), name="run_verdict_valid"
            ),
            models.CheckConstraint(
                condition=Q(assessment__in=Assessment.values), name="run_assessment_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} · {self.contract} · {self.query_key} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (RunStatus.DONE, RunStatus.FAILED)

    @property
    def families(self) -> list[str]:
        return [f for f, col in FAMILY_FIELDS.items() if getattr(self, col)]

    @property
    def metrics(self) -> dict[str, float | None]:
        return {m: getattr(self, m) for m in METRIC_FIELDS}

    @property
    def is_corrected(self) -> bool:
        return self.automatic is not None

    def read(self, report: dict[str, Any], overlay: dict[str, Any] | None) -> None:
        """Make ``report`` and its overlay the run's reading: the verdict, the counts per
        family and the metrics follow it. Not saved."""
        self.report, self.overlay = report, overlay
        self.verdict = report["verdict"]
        self.failure_count = len(report["failures"])
        for family, col in FAMILY_FIELDS.items():
            setattr(self, col, sum(1 for f in report["failures"] if f["family"] == family))
        for m in METRIC_FIELDS:
            setattr(self, m, report["metrics"].get(m))

    def set_assessment(self, assessed: dict[str, Any] | None) -> None:
        """P(violation) and its three-way reading (semantic mode), or none. Not saved."""
        if assessed is None:
            self.p_violation, self.assessment = None, Assessment.NONE
        else:
            self.p_violation, self.assessment = assessed["p_violation"], assessed["verdict"]

    def keep_automatic(self) -> None:
        """Set the engine's own reading aside before the first correction replaces it."""
        if self.automatic is None:
            self.automatic = {f: getattr(self, f) for f in READING_FIELDS}

    def restore_automatic(self) -> None:
        """Make the engine's own reading the run's again. Not saved."""
        if self.automatic is not None:
            for f in READING_FIELDS:
                setattr(self, f, self.automatic[f])
            self.automatic = None


class RunOutcome(models.Model):
    """A finished run as compliance analytics read it: what filters it, whether it was
    clean, and its outcome per obligation (``matching.outcomes``), in a narrow row.

    Analytics read every finished run of a contract; a run's own row carries its report,
    overlay and input (~15 kB of JSON), which SQLite stores before any column added
    later, so reading even one small column of 100,000 runs walked 1.6 GB. Kept in step
    with the run's reading by ``audit.services.runs.run_outcome_record``.
    """

    run = models.OneToOneField(
        Run, primary_key=True, on_delete=models.CASCADE, related_name="outcome"
    )
    contract = models.ForeignKey(Contract, on_delete=models.CASCADE, related_name="+")
    day = models.DateField(help_text="the run's creation day (the project's time zone)")
    agent_version = models.CharField(max_length=200, blank=True, default="")
    model_name = models.CharField(max_length=200, blank=True, default="")
    is_clean = models.BooleanField()
    obligations = models.JSONField(
        default=dict,
        help_text="node id -> m (met), o (out of order) or x (missed); absent: not applicable",
    )

    class Meta:
        indexes = [
            models.Index(fields=["contract", "day"], name="run_outcome_day"),
            models.Index(fields=["contract", "agent_version", "day"], name="run_outcome_version"),
            models.Index(fields=["contract", "model_name", "day"], name="run_outcome_model"),
        ]

    def __str__(self) -> str:
        return f"outcome of run {self.run_id}"


class ReviewVerdict(models.Model):
    """A reviewer's judgement of a run's report: agrees or disagrees, with a note."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="verdicts")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    agrees = models.BooleanField()
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{'agrees' if self.agrees else 'disagrees'} · run {self.run_id}"


class JudgeKind(models.TextChoices):
    """The LLM judge baselines (``matching.llm.judge.JUDGES``)."""

    OUTPUT = "output", "LLM judge: output only"
    TRACE = "trace", "LLM judge: trace-aware"
    TRACE_CHECKLIST = "trace-checklist", "LLM judge: trace-aware with a label-only checklist"
    EXPECTED = "expected", "LLM judge: expected graph"


# What scores a batch: the engine itself, or one of the judge baselines (the form's
# choices and the API's ``evaluator`` field; ``audit.services.batches.judge_of`` reads them).
CONTRACTEVAL = "contracteval"
EVALUATORS = [
    (CONTRACTEVAL, "ContractEval (the engine: mode and extractor below)"),
    *((f"judge-{v}", label) for v, label in JudgeKind.choices),
]


class BatchSource(models.TextChoices):
    FIXTURES = "fixtures", "Fixture suite"
    UPLOAD = "upload", "Uploaded suite"


class Batch(models.Model):
    """A whole suite (FORMAT.md §7) run as one job; ``scores`` holds ALGORITHMS.md §6."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="batches")
    source = models.CharField(max_length=20, choices=BatchSource.choices)
    name = models.CharField(max_length=300)
    archive = models.BinaryField(null=True, blank=True, editable=False)
    archive_hash = models.CharField(max_length=64, blank=True, default="")
    mode = models.CharField(max_length=10, choices=RunMode.choices, default=RunMode.ORACLE)
    extractor = models.CharField(
        max_length=20, choices=ExtractorName.choices, default=ExtractorName.NONE
    )
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.QUEUED)
    error = models.TextField(blank=True, default="")
    warnings = models.JSONField(default=list, blank=True)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    scores = models.JSONField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True)
    # An LLM judge baseline (ALGORITHMS.md §7) instead of the engine: "" = ContractEval.
    judge = models.CharField(max_length=20, choices=JudgeKind.choices, blank=True, default="")
    llm_model = models.CharField("LLM model", max_length=200, blank=True, default="")
    llm_usage = models.JSONField(null=True, blank=True)
    verdicts = models.JSONField(null=True, blank=True, help_text="a judge's verdict per case")
    # The suite's contract documents, audited by the worker (batch_prepare), so a chunk
    # reads no archive.
    contracts = models.JSONField(default=dict, blank=True, editable=False)
    attempts = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name_plural = "batches"
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=RunStatus.values), name="batch_status_valid"
            ),
            models.CheckConstraint(condition=Q(done__lte=F("total")), name="batch_done_le_total"),
            models.CheckConstraint(
                condition=Q(judge__in=["", *JudgeKind.values]), name="batch_judge_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"batch {self.pk} · {self.name} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (RunStatus.DONE, RunStatus.FAILED)

    @property
    def is_preparing(self) -> bool:
        """Queued, its suite not read yet: no cases counted (a read suite has some)."""
        return not self.is_finished and self.total == 0

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 0
