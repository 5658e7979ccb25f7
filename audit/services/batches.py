"""Suite batches: every case of the fixture suite or an uploaded suite archive, scored
by the engine or by an LLM judge baseline.

The upload's shape is checked here, in the request; the worker then audits its
contracts once and cuts its case lines into chunks (:func:`batch_prepare`,
:mod:`.chunks`), one task each, so any number of workers share a batch.
Progress is the sum of the chunks'; the chunk that finishes last scores the batch
(:func:`batch_finalize`). :func:`batch_execute` runs every chunk in this process
(the tests, where tasks run eagerly)."""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Sum, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from matching.errors import ContractEvalError
from matching.llm.config import LLMConfig
from matching.suite_archive import SuiteArchiveError, check_suite_zip, extract_suite_zip

from .. import enqueue
from ..models import (
    CONTRACTEVAL,
    EVALUATORS,
    Batch,
    BatchChunk,
    BatchSource,
    ExtractorName,
    JudgeKind,
    Project,
    RunMode,
    RunStatus,
)
from ..permissions import BATCH, authorize
from .chunks import case_results, chunk_execute, chunk_rows
from .common import (
    ServiceError,
    actor,
    add_usage,
    input_limits,
    llm_config,
    require_semantic_model,
)
from .webhooks import batch_notify

if TYPE_CHECKING:
    from matching.suite import CaseResult

logger = logging.getLogger(__name__)

PROGRESS_EVERY_SECONDS = 0.5
NO_LLM_FOR_JUDGES = (
    "no LLM endpoint configured (set CONTRACTEVAL_LLM_API_KEY or OPENAI_API_KEY): the LLM"
    " judge baselines need one, and there is no offline judge"
)


def fixture_suite_dir() -> Path:
    """fixtures/suite when it has been built, else fixtures/clean."""
    base = Path(settings.BASE_DIR) / "fixtures"
    suite = base / "suite"
    return suite if (suite / "cases.jsonl").is_file() else base / "clean"


def unpack_suite(archive: bytes, dest: Path) -> Path:
    """:func:`matching.suite_archive.extract_suite_zip` with this site's size limits."""
    try:
        return extract_suite_zip(archive, dest, limits=input_limits())
    except SuiteArchiveError as exc:
        raise _archive_error(exc) from None


def _archive_error(exc: SuiteArchiveError) -> ServiceError:
    error = ServiceError(str(exc))
    error.status = exc.status
    return error


def _read_suite(folder: Path) -> tuple[dict[str, Any], list[list[Any]]]:
    """The audited contract documents and the case lines of a suite folder.

    Contracts are read and audited here, once (a bad one fails the batch, with the
    reason); case lines are only split, and each chunk reads its own: ``[line number, text, None]``,
    or ``[line number, None, why]`` for a line that is not UTF-8.
    """
    cdir, cases_file = folder / "contracts", folder / "cases.jsonl"
    if not cdir.is_dir() or not cases_file.is_file():
        raise ServiceError(f"not a suite folder: {cdir.name}/ or {cases_file.name} is missing")
    contracts: dict[str, Any] = {}
    from matching.validate import load_contract  # the engine loads with the first batch

    limits = input_limits()
    try:
        for f in sorted(cdir.glob("*.json")):
            c = load_contract(f, file=f.name)
            limits.check_count("contract_nodes", len(c.nodes), what=f.name, unit="nodes")
            if c.id in contracts:
                raise ServiceError(f"{f.name}: duplicate contract id {c.id!r}")
            contracts[c.id] = json.loads(f.read_bytes())
    except ContractEvalError as exc:
        raise ServiceError(str(exc)) from exc
    lines: list[list[Any]] = []
    for lineno, raw in enumerate(cases_file.read_bytes().splitlines(), 1):
        if len(raw) > limits.upload_bytes:  # a case is one run's input
            why = (
                f"cases.jsonl:{lineno}: the case is {len(raw):,} bytes; the limit is"
                f" {limits.upload_bytes:,} (INPUT_LIMITS upload_bytes)"
            )
            lines.append([lineno, None, why])
            continue
        try:
            text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            lines.append([lineno, None, f"cases.jsonl:{lineno}: not UTF-8 ({exc.reason})"])
            continue
        if text.strip():
            lines.append([lineno, text, None])
    if not lines:
        raise ServiceError("the suite has no cases")
    return contracts, lines


def _check_options(mode: str, extractor: str) -> None:
    if mode not in RunMode.values:
        raise ServiceError(f"unknown mode {mode!r}: expected {', '.join(RunMode.values)}")
    if extractor not in ExtractorName.values:
        raise ServiceError(
            f"unknown extractor {extractor!r}: expected {', '.join(ExtractorName.values)}"
        )
    if mode == RunMode.ORACLE and extractor != ExtractorName.NONE:
        raise ServiceError("oracle mode uses the gold labels: choose the extractor 'none'")
    require_semantic_model(mode)


def judge_of(evaluator: str) -> str:
    """The judge kind of an evaluator choice (``""`` for ContractEval itself)."""
    if evaluator in ("", CONTRACTEVAL):
        return ""
    if evaluator.startswith("judge-") and evaluator[6:] in JudgeKind.values:
        return evaluator[6:]
    names = ", ".join(v for v, _ in EVALUATORS)
    raise ServiceError(f"unknown evaluator {evaluator!r}: expected one of {names}")


def _check_judge(judge: str) -> LLMConfig | None:
    """The LLM settings for a judge batch (None for a ContractEval batch)."""
    if not judge:
        return None
    if judge not in JudgeKind.values:
        names = ", ".join(JudgeKind.values)
        raise ServiceError(f"unknown judge {judge!r}: expected one of {names}")
    config = llm_config()
    if not config.configured:
        raise ServiceError(NO_LLM_FOR_JUDGES)
    return config


def batch_create(
    *,
    project: Project,
    user,
    mode: str = RunMode.ORACLE,
    extractor: str = ExtractorName.NONE,
    archive: bytes | None = None,
    name: str = "",
    judge: str = "",
) -> Batch:
    """Queue a batch over the fixture suite (``archive`` None) or an uploaded suite zip.

    ``judge`` (one of ``matching.llm.judge.JUDGES``) runs that LLM judge baseline over
    the suite instead of the engine (``mode`` and ``extractor`` then do not apply); it
    needs a configured LLM endpoint.
    """
    authorize(user, project.pk, BATCH)
    config = _check_judge(judge)
    if config is not None:
        mode, extractor = RunMode.ORACLE, ExtractorName.NONE  # not used by a judge
    _check_options(mode, extractor)
    # Only what needs no reading of the suite happens here, so the request answers at
    # once: the worker unpacks it, audits its contracts and cuts its cases into chunks
    # (batch_prepare) while the batch page shows "Preparing".
    if archive is None:
        folder = fixture_suite_dir()
        if not (folder / "cases.jsonl").is_file():
            raise ServiceError("no fixture suite here (fixtures/suite or fixtures/clean)")
        source, label, digest = BatchSource.FIXTURES, f"fixtures/{folder.name}", ""
    else:
        try:
            check_suite_zip(archive, limits=input_limits())
        except SuiteArchiveError as exc:
            raise _archive_error(exc) from None
        source, label = BatchSource.UPLOAD, (name or "uploaded suite")[:300]
        digest = hashlib.sha256(archive).hexdigest()
    with transaction.atomic():
        batch = Batch.objects.create(
            project=project,
            source=source,
            name=label,
            archive=archive,
            archive_hash=digest,
            mode=mode,
            extractor=extractor,
            judge=judge,
            llm_model=_llm_model(config, extractor),
            created_by=actor(user),
        )
        enqueue.batch_on_commit(batch.pk)
    logger.info("batch %s queued: %s", batch.pk, label)
    return batch


def batch_prepare(*, batch_id: int) -> Batch:
    """Read a queued batch's suite: audit its contracts, cut its cases into chunks.

    Runs in the worker, first thing of the batch's task; a batch that has its chunks
    already is left as it is (the task delivered again). A suite that cannot be read (a
    contract that fails its audit, no cases, a bad archive) fails the batch with the
    reason, which its page shows.
    """
    batch = Batch.objects.defer("archive", "contracts").get(pk=batch_id)
    if batch.is_finished or batch.chunks.exists():
        return batch
    try:
        if batch.source == BatchSource.FIXTURES:
            contracts, lines = _read_suite(fixture_suite_dir())
        else:
            archive = Batch.objects.values_list("archive", flat=True).get(pk=batch_id)
            if archive is None:
                raise ServiceError("the uploaded archive is missing")
            with tempfile.TemporaryDirectory(prefix="ce-suite-") as tmp:
                contracts, lines = _read_suite(unpack_suite(bytes(archive), Path(tmp) / "suite"))
    except ServiceError as exc:
        Batch.objects.filter(pk=batch_id, status=RunStatus.QUEUED).update(
            status=RunStatus.FAILED, error=str(exc), finished_at=timezone.now()
        )
        logger.warning("batch %s refused its suite: %s", batch_id, exc)
        return Batch.objects.get(pk=batch_id)
    with transaction.atomic():
        batch = Batch.objects.select_for_update().defer("archive").get(pk=batch_id)
        if batch.is_finished or batch.chunks.exists():
            return batch
        batch.contracts, batch.total = contracts, len(lines)
        batch.save(update_fields=["contracts", "total"])
        chunks = chunk_rows(lines)
        for chunk in chunks:
            chunk.batch = batch
        # One INSERT per chunk: several rows go in as arrays (UNNEST), and psycopg
        # escapes a JSON array element in Python (1.2 s for the 1,400-case suite); one
        # row's JSON is escaped by libpq.
        BatchChunk.objects.bulk_create(chunks, batch_size=1)
    logger.info("batch %s prepared: %s cases in %s chunks", batch_id, len(lines), len(chunks))
    return batch


# What storing a finished chunk writes (never its case lines again).
CHUNK_RESULT_FIELDS = [
    *("status", "done", "results", "verdicts", "warnings", "llm_usage", "error", "seconds")
]


def _llm_model(judge_config: LLMConfig | None, extractor: str) -> str:
    """The model a batch calls: its judge's, or the LLM extractor's; "" for none."""
    if judge_config is not None:
        return judge_config.model
    return llm_config().model if extractor == ExtractorName.LLM else ""


def batch_pending_chunks(*, batch_id: int) -> list[int]:
    """The chunks of a batch still to run, in order (what the fan-out task sends)."""
    return list(
        BatchChunk.objects.filter(batch_id=batch_id)
        .exclude(status__in=[RunStatus.DONE, RunStatus.FAILED])
        .values_list("pk", flat=True)
    )


def batch_execute(*, batch_id: int, final_attempt: bool = True) -> Batch:
    """Run every unfinished chunk of a batch here, in order, then score it.

    For the tests (tasks run in-process) and for a batch whose chunk tasks were lost.
    A transient LLM failure raises :class:`LLMRetry` with the remaining chunks queued.
    """
    if batch_prepare(batch_id=batch_id).is_finished:
        return Batch.objects.get(pk=batch_id)
    for chunk_id in batch_pending_chunks(batch_id=batch_id):
        chunk_execute(chunk_id=chunk_id, final_attempt=final_attempt)
    return batch_finalize(batch_id=batch_id)


def chunk_progress(chunk: BatchChunk, done: int) -> None:
    """Store a chunk's progress and its heartbeat; the batch's ``done`` is their sum.

    Both only move forward: a chunk run again after its worker died does not take
    back what the first run reported.
    """
    BatchChunk.objects.filter(pk=chunk.pk).update(
        done=Greatest(F("done"), Value(done)), heartbeat=timezone.now()
    )
    total = BatchChunk.objects.filter(batch_id=chunk.batch_id).aggregate(s=Sum("done"))["s"] or 0
    Batch.objects.filter(pk=chunk.batch_id, done__lt=total).update(done=total)


def chunk_store(chunk: BatchChunk) -> tuple[BatchChunk, bool]:
    """Store a finished chunk once; ``(chunk, every chunk of the batch is finished)``.

    The batch row is locked first, so two chunks finishing together (or the same chunk
    delivered twice) are stored one after the other; a chunk already stored is kept.
    """
    with transaction.atomic():
        Batch.objects.select_for_update().only("pk").get(pk=chunk.batch_id)
        stored = BatchChunk.objects.select_for_update().only("status").get(pk=chunk.pk)
        if stored.is_finished:
            return stored, False
        chunk.heartbeat = timezone.now()
        chunk.save(update_fields=[*CHUNK_RESULT_FIELDS, "heartbeat"])
        if chunk.status == RunStatus.DONE:
            chunk_progress(chunk, chunk.total)
        left = BatchChunk.objects.filter(batch_id=chunk.batch_id).exclude(
            status__in=[RunStatus.DONE, RunStatus.FAILED]
        )
        return chunk, not left.exists()


def _dedupe(results: list[CaseResult]) -> list[CaseResult]:
    """A case id seen before (in any chunk) is an error, as ``load_suite`` has it."""
    from matching.suite import CaseResult

    seen: Counter[str] = Counter()
    out = []
    for r in results:
        seen[r.id] += 1
        if seen[r.id] > 1 and r.verdict is not None:
            r = CaseResult(r.id, r.clean, r.family, r.location, None, [], "duplicate case id")
        out.append(r)
    return out


def _scores(batch: Batch, chunks: list[BatchChunk]) -> None:
    """Score the stored chunks into ``batch`` (status DONE)."""
    from matching.suite import score

    results = _dedupe([r for c in chunks for r in case_results(c)])
    scores = score(results, locations=not batch.judge)
    batch.status, batch.error = RunStatus.DONE, ""
    batch.warnings = sorted({w for c in chunks for w in c.warnings})
    batch.scores = {**scores, "mode": batch.mode, "extractor": batch.extractor}
    if batch.judge or batch.llm_usage:
        batch.scores.update(model=batch.llm_model, llm=batch.llm_usage)
    if batch.judge:
        batch.verdicts = [v for c in chunks for v in c.verdicts or []]
        batch.scores["judge"] = batch.judge
    batch.done = batch.total = scores["cases"]


def batch_finalize(*, batch_id: int) -> Batch:
    """Score a batch whose chunks are all finished (idempotent; else unchanged).

    A failed chunk fails the batch with its reason; otherwise the per-case results of
    every chunk, in order, give the ALGORITHMS.md §6 scores.
    """
    with transaction.atomic():
        # Not the upload nor the case lines (megabytes of JSON): only the results.
        batch = Batch.objects.select_for_update().defer("archive").get(pk=batch_id)
        chunks = list(batch.chunks.defer("cases", "packed").order_by("index"))
        if batch.is_finished or not all(c.is_finished for c in chunks):
            return batch
        for c in chunks:
            batch.llm_usage = add_usage(batch.llm_usage, c.llm_usage or {})
        # tries of the most-tried chunk: what "attempts" meant for a one-task batch
        batch.attempts = max((c.attempts for c in chunks), default=0)
        failed = [c for c in chunks if c.status == RunStatus.FAILED]
        if failed:
            first = failed[0]
            batch.status, batch.error = RunStatus.FAILED, first.error
            logger.warning("batch %s failed in chunk %s: %s", batch.pk, first.index, first.error)
        else:
            _scores(batch, chunks)
        batch.finished_at = timezone.now()
        started = batch.started_at or batch.finished_at
        batch.seconds = round((batch.finished_at - started).total_seconds(), 3)
        if batch.scores is not None:
            batch.scores["seconds"] = batch.seconds
        batch.save()
        batch_notify(batch=batch)  # a drop in the suite's clean rate goes to the webhooks
    return batch
