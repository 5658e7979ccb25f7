"""Suite batches: every case of the fixture suite or an uploaded suite archive, scored
by the engine or by an LLM judge baseline (the Celery task calls :func:`batch_execute`)."""

from __future__ import annotations

import hashlib
import logging
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone

from matching.errors import ContractEvalError
from matching.llm.client import LLMClient, LLMError, usage_of
from matching.llm.config import LLMConfig
from matching.llm.judge import JUDGES, judge_suite
from matching.suite import load_suite, run_suite, score
from matching.suite_archive import SuiteArchiveError, extract_suite_zip

from .. import enqueue
from ..models import Batch, BatchSource, ExtractorName, JudgeKind, Project, RunMode, RunStatus
from .common import LLMRetry, ServiceError, actor, add_usage, llm_config

logger = logging.getLogger(__name__)

PROGRESS_EVERY_SECONDS = 0.5
NO_LLM_FOR_JUDGES = (
    "no LLM endpoint configured (set CONTRACTEVAL_LLM_API_KEY or OPENAI_API_KEY): the LLM"
    " judge baselines need one, and there is no offline judge"
)
# A judge batch whose first cases all fail at the endpoint stops there (the endpoint is
# down or refuses us): the batch fails, or is retried when the failures were transient.
JUDGE_ABORT_AFTER = 3


def fixture_suite_dir() -> Path:
    """fixtures/suite when it has been built, else fixtures/clean."""
    base = Path(settings.BASE_DIR) / "fixtures"
    suite = base / "suite"
    return suite if (suite / "cases.jsonl").is_file() else base / "clean"


def unpack_suite(archive: bytes, dest: Path) -> Path:
    """:func:`matching.suite_archive.extract_suite_zip` with this site's size limits."""
    try:
        return extract_suite_zip(
            archive,
            dest,
            max_bytes=settings.SUITE_UPLOAD_MAX_BYTES,
            max_unpacked=settings.SUITE_UNPACKED_MAX_BYTES,
        )
    except SuiteArchiveError as exc:
        raise ServiceError(str(exc)) from None


def _check_suite(folder: Path) -> int:
    """Load (and audit) a suite folder; the number of cases, or the engine's message."""
    try:
        suite = load_suite(folder)
    except ContractEvalError as exc:
        raise ServiceError(str(exc)) from exc
    if not suite.cases and not suite.errors:
        raise ServiceError("the suite has no cases")
    return len(suite.cases) + len(suite.errors)


def _check_options(mode: str, extractor: str) -> None:
    if mode not in RunMode.values:
        raise ServiceError(f"unknown mode {mode!r}: expected oracle or token")
    if extractor not in ExtractorName.values:
        raise ServiceError(f"unknown extractor {extractor!r}: expected none, heuristic or llm")
    if mode == RunMode.ORACLE and extractor != ExtractorName.NONE:
        raise ServiceError("oracle mode uses the gold labels: choose the extractor 'none'")


CONTRACTEVAL = "contracteval"
EVALUATORS = [
    (CONTRACTEVAL, "ContractEval (the engine: mode and extractor below)"),
    *((f"judge-{v}", label) for v, label in JudgeKind.choices),
]


def judge_of(evaluator: str) -> str:
    """The judge kind of an evaluator choice (``""`` for ContractEval itself)."""
    if evaluator in ("", CONTRACTEVAL):
        return ""
    if evaluator.startswith("judge-") and evaluator[6:] in JUDGES:
        return evaluator[6:]
    names = ", ".join(v for v, _ in EVALUATORS)
    raise ServiceError(f"unknown evaluator {evaluator!r}: expected one of {names}")


def _check_judge(judge: str) -> LLMConfig | None:
    """The LLM settings for a judge batch (None for a ContractEval batch)."""
    if not judge:
        return None
    if judge not in JUDGES:
        raise ServiceError(f"unknown judge {judge!r}: expected one of {', '.join(JUDGES)}")
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
    config = _check_judge(judge)
    if config is not None:
        mode, extractor = RunMode.ORACLE, ExtractorName.NONE  # not used by a judge
    _check_options(mode, extractor)
    if archive is None:
        folder = fixture_suite_dir()
        if not (folder / "cases.jsonl").is_file():
            raise ServiceError("no fixture suite here (fixtures/suite or fixtures/clean)")
        total = _check_suite(folder)
        source, label, digest = BatchSource.FIXTURES, f"fixtures/{folder.name}", ""
    else:
        with tempfile.TemporaryDirectory(prefix="ce-suite-") as tmp:
            total = _check_suite(unpack_suite(archive, Path(tmp) / "suite"))
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
            llm_model=config.model if config is not None else "",
            total=total,
            created_by=actor(user),
        )
        enqueue.batch_on_commit(batch.pk)
    logger.info("batch %s created: %s, %s cases", batch.pk, label, total)
    return batch


class _WatchedClient:
    """The judge's LLM client, counting answers and failures as they happen."""

    def __init__(self, client: LLMClient) -> None:
        self.client, self.answers = client, 0
        self.failures: list[LLMError] = []

    def complete_json(self, **kwargs: Any) -> Any:
        try:
            out = self.client.complete_json(**kwargs)
        except LLMError as exc:
            self.failures.append(exc)
            raise
        self.answers += 1
        return out


def _judge(batch: Batch, suite, progress, config: LLMConfig):
    """Run ``batch.judge`` over ``suite``: ``(scores, verdicts, client)``.

    Per-case LLM failures count as wrong and are listed (``scores["errors"]``), as
    ``judge_suite`` reports them; but when the first cases all fail at the endpoint,
    the last :class:`LLMError` is raised (the endpoint is down or refuses us).
    """
    client = LLMClient(config)
    watched = _WatchedClient(client)
    n = len(suite.cases)
    give_up = min(JUDGE_ABORT_AFTER, n)

    def watch(done: int, total: int) -> None:
        if watched.answers == 0 and len(watched.failures) >= give_up:
            raise watched.failures[-1]
        progress(done, total)

    try:
        # the watcher stands in for the client: it has the one method the judges call
        results, verdicts = judge_suite(
            suite, batch.judge, cast(LLMClient, watched), progress=watch
        )
    finally:
        batch.llm_usage = add_usage(batch.llm_usage, client.usage())
    return score(results, locations=False), verdicts, client


def batch_execute(*, batch_id: int, final_attempt: bool = True) -> Batch:
    """Run every case of a queued batch, saving progress (throttled) and the scores.

    A judge batch (``batch.judge``) runs the LLM judge instead of the engine and
    records the model and the usage; when its endpoint fails transiently it raises
    :class:`LLMRetry` with the batch queued again, unless ``final_attempt``: then the
    batch fails with the reason.
    """
    batch = _claim(batch_id)
    if batch.status != RunStatus.RUNNING:
        return batch  # finished already: the task ran twice
    retry: LLMRetry | None = None
    t0 = time.perf_counter()
    try:
        scores, verdicts, caught = _score_suite(batch)
    except (OperationalError, InterfaceError):
        raise
    except LLMError as exc:
        where = LLMConfig.from_env().describe()
        if exc.transient and not final_attempt:
            batch.status, batch.error = RunStatus.QUEUED, ""
            retry = LLMRetry(exc.reason)
        else:
            logger.warning(
                "batch %s failed at the LLM endpoint %s: %s", batch.pk, where, exc.reason
            )
            batch.status, batch.error = RunStatus.FAILED, f"{where}: {exc.reason}"
    except (ContractEvalError, ServiceError, ValueError) as exc:
        batch.status, batch.error = RunStatus.FAILED, str(exc)
    except Exception as exc:  # noqa: BLE001 - any engine crash is shown on the batch
        logger.exception("batch %s failed with an internal error", batch.pk)
        batch.status, batch.error = RunStatus.FAILED, f"internal error: {type(exc).__name__}: {exc}"
    else:
        _keep_scores(batch, scores, verdicts, caught, time.perf_counter() - t0)
    batch.seconds = round(time.perf_counter() - t0, 3)
    batch.finished_at = None if retry is not None else timezone.now()
    batch.save(update_fields=OUTCOME_FIELDS)
    if retry is not None:
        raise retry
    return batch


OUTCOME_FIELDS = [
    "status",
    "error",
    "warnings",
    "scores",
    "done",
    "total",
    "seconds",
    "finished_at",
    "llm_model",
    "llm_usage",
    "verdicts",
]


def _claim(batch_id: int) -> Batch:
    """The batch, marked running for this attempt (unchanged when it is finished)."""
    with transaction.atomic():
        batch = Batch.objects.select_for_update(of=("self",)).get(pk=batch_id)
        if batch.is_finished:
            return batch
        batch.status, batch.started_at, batch.done = RunStatus.RUNNING, timezone.now(), 0
        batch.attempts += 1
        batch.save(update_fields=["status", "started_at", "done", "attempts"])
    return batch


def _progress_saver(batch: Batch) -> Callable[[int, int], None]:
    """A progress callback that stores ``done`` at most every PROGRESS_EVERY_SECONDS."""
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY_SECONDS or done >= total:
            last[0] = now
            Batch.objects.filter(pk=batch.pk).update(done=min(done, batch.total), total=total)

    return progress


def _score_suite(batch: Batch) -> tuple[dict[str, Any], Any, list[str]]:
    """Run the batch's suite: ``(scores, judge verdicts or None, engine warnings)``."""
    progress = _progress_saver(batch)
    with tempfile.TemporaryDirectory(prefix="ce-batch-") as tmp:
        if batch.source == BatchSource.UPLOAD:
            folder = unpack_suite(bytes(batch.archive or b""), Path(tmp) / "suite")
        else:
            folder = fixture_suite_dir()
        suite = load_suite(folder)
        total = len(suite.cases) + len(suite.errors)
        Batch.objects.filter(pk=batch.pk).update(total=total)
        batch.total = total
        if batch.judge:
            config = _check_judge(batch.judge)  # the key may have gone since
            assert config is not None  # a judge batch has a judge
            batch.llm_model = config.model
            scores, verdicts, _ = _judge(batch, suite, progress, config)
            return scores, verdicts, []
        client = _extractor_client(batch.extractor)
        first = len(client.calls) if client is not None else 0
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            results = run_suite(
                suite, mode=batch.mode, extractor=batch.extractor, progress=progress
            )
        if client is not None:  # the LLM extractor's calls are the batch's usage
            batch.llm_model = client.model
            batch.llm_usage = add_usage(batch.llm_usage, usage_of(client.calls[first:]))
        return score(results), None, sorted({str(w.message) for w in seen})


def _extractor_client(extractor: str) -> LLMClient | None:
    """The shared client the LLM extractor of ``run_suite`` calls through, if any."""
    if extractor != ExtractorName.LLM:
        return None
    config = llm_config()
    return LLMClient.shared(config) if config.configured else None


def _keep_scores(
    batch: Batch, scores: dict[str, Any], verdicts: Any, caught: list[str], seconds: float
) -> None:
    batch.status, batch.warnings = RunStatus.DONE, caught
    batch.scores = {
        **scores,
        "mode": batch.mode,
        "extractor": batch.extractor,
        "seconds": round(seconds, 3),
    }
    if batch.judge or batch.llm_usage:
        batch.scores.update(model=batch.llm_model, llm=batch.llm_usage)
    if batch.judge:
        batch.scores["judge"] = batch.judge
        batch.verdicts = verdicts
    batch.done = batch.total = scores["cases"]
