"""One chunk of a suite batch: its cases read, evaluated (engine or LLM judge), stored once.

A batch is cut into chunks (:func:`chunk_size`: ``BATCH_CHUNKS`` of them, of at most
``BATCH_CHUNK_CASES`` cases) by the worker's first task (``batches.batch_prepare``);
each chunk is one task that any worker can take. The suite's contracts are audited once
(when the batch is prepared) and kept on the batch; a chunk reads only its own case
lines. Storing a chunk
locks its batch, finds it already done if another delivery got there first, and the
chunk that finishes last computes the batch's scores (:func:`batches.batch_finalize`).
"""

from __future__ import annotations

import json
import logging
import time
import warnings
import zlib
from typing import TYPE_CHECKING, Any, cast

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone

from matching.errors import ContractEvalError
from matching.formats import read_case, read_contract
from matching.llm.client import LLMClient, LLMError, usage_of
from matching.llm.config import LLMConfig

from ..models import Batch, BatchChunk, ExtractorName, RunStatus
from .common import LLMRetry, ServiceError, add_usage, input_limits, llm_config

if TYPE_CHECKING:
    from matching.suite import CaseResult, Suite

logger = logging.getLogger(__name__)

# A judge chunk whose first cases all fail at the endpoint stops there (the endpoint is
# down or refuses us): the chunk fails, or is retried when the failures were transient.
JUDGE_ABORT_AFTER = 3
# Contracts loaded (and audited) by this worker process, by batch and id: a worker
# takes many chunks of the same batch.
_CONTRACTS: dict[tuple[int, str], Any] = {}


# A chunk smaller than this costs more in its task's fixed work (start, store, the
# batch's contracts read) than its cases take to evaluate.
MIN_CHUNK_CASES = 20


def chunk_size(cases: int) -> int:
    """Cases per chunk: at most ``BATCH_CHUNK_CASES``, and small enough that a batch
    has ``BATCH_CHUNKS`` chunks when it can (never under :data:`MIN_CHUNK_CASES`).

    Worker processes share a batch chunk by chunk, so a batch of few chunks leaves
    processes idle at its end: 7 chunks on 2 processes take 4 rounds where 3.5 would
    do. With the defaults (200, 16): 1,400 cases are 16 chunks of 88, 16,800 are 84
    of 200, 100 are 5 of 20.
    """
    most = max(1, settings.BATCH_CHUNK_CASES)
    even = -(-cases // max(1, settings.BATCH_CHUNKS))
    return min(most, max(MIN_CHUNK_CASES, even))


def chunk_rows(lines: list[list[Any]]) -> list[BatchChunk]:
    """Unsaved chunks of :func:`chunk_size` case lines each, in order, the lines packed
    (:func:`chunk_lines` reads them)."""
    size = chunk_size(len(lines))
    parts = [lines[i : i + size] for i in range(0, len(lines), size)]
    return [
        BatchChunk(index=k, packed=_pack(part), total=len(part)) for k, part in enumerate(parts)
    ]


def _pack(lines: list[list[Any]]) -> bytes:
    # zlib level 1: ~7x smaller for JSON lines, and as fast as encoding them
    return zlib.compress(json.dumps(lines, ensure_ascii=False).encode("utf-8"), 1)


def chunk_lines(chunk: BatchChunk) -> list[list[Any]]:
    """The chunk's case lines: ``[line number, text or None, error or None]``."""
    if chunk.packed is not None:
        return cast(list[list[Any]], json.loads(zlib.decompress(bytes(chunk.packed))))
    return chunk.cases


def _contract(batch: Batch, key: str):
    # Read, not audited again: the batch keeps only contracts audited when it was
    # prepared, and the audit of the suite's ten contracts cost each worker process
    # ~0.4 s of CPU before its first chunk (serial work that did not divide).
    if (batch.pk, key) not in _CONTRACTS:
        if len(_CONTRACTS) > 256:
            _CONTRACTS.clear()
        _CONTRACTS[(batch.pk, key)] = read_contract(batch.contracts[key], file=f"{key}.json")
    return _CONTRACTS[(batch.pk, key)]


def chunk_suite(batch: Batch, chunk: BatchChunk) -> Suite:
    """The chunk's cases as a :class:`Suite`; unreadable lines are its ``errors``."""
    from matching.suite import Suite  # the engine loads in the worker, not at start-up

    suite = Suite({}, [])
    limits = input_limits()
    for lineno, text, error in chunk_lines(chunk):
        where = f"cases.jsonl:{lineno}"
        if text is None:
            suite.errors.append({"id": where, "error": error})
            continue
        try:
            case = read_case(text, file=where)
            # a case's page draws its trace as a run's page does: the same limits
            limits.check_trace(case.observed.text, case.observed.output)
            limits.check_count(
                "trace_events", len(case.observed.nodes), what="the case", unit="nodes"
            )
            if case.contract not in batch.contracts:
                raise ContractEvalError(
                    f"unknown contract {case.contract!r}",
                    file=where,
                    path="$.contract",
                    rule="unknown-id",
                )
            suite.contracts[case.contract] = _contract(batch, case.contract)
            suite.cases.append(case)
        except ContractEvalError as exc:
            suite.errors.append({"id": where, "error": str(exc)})
    return suite


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


def _judge(batch: Batch, chunk: BatchChunk, suite: Suite, progress) -> tuple[list, list]:
    """Run ``batch.judge`` over the chunk: ``(results, verdicts)``; usage on ``chunk``.

    Per-case LLM failures count as wrong, as ``judge_suite`` reports them; but when the
    first cases all fail at the endpoint, the last :class:`LLMError` is raised.
    """
    from matching.llm.judge import judge_suite

    config = llm_config()
    if not config.configured:  # the key went away after the batch was queued
        from .batches import NO_LLM_FOR_JUDGES

        raise ServiceError(NO_LLM_FOR_JUDGES)
    client = LLMClient(config)
    watched = _WatchedClient(client)
    give_up = min(JUDGE_ABORT_AFTER, len(suite.cases))

    def watch(done: int, total: int) -> None:
        if watched.answers == 0 and len(watched.failures) >= give_up:
            raise watched.failures[-1]
        progress(done, total)

    try:
        # the watcher stands in for the client: it has the one method the judges call
        return judge_suite(suite, batch.judge, cast(LLMClient, watched), progress=watch)
    finally:
        chunk.llm_usage = add_usage(chunk.llm_usage, client.usage())


def _evaluate(batch: Batch, chunk: BatchChunk, progress) -> None:
    """Evaluate the chunk's cases into ``chunk.results`` (and verdicts, warnings)."""
    from matching.suite import run_suite

    suite = chunk_suite(batch, chunk)
    if batch.judge:
        results, chunk.verdicts = _judge(batch, chunk, suite, progress)
    else:
        client = _extractor_client(batch.extractor)
        first = len(client.calls) if client is not None else 0
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            results = run_suite(
                suite, mode=batch.mode, extractor=batch.extractor, progress=progress
            )
        chunk.warnings = sorted({str(w.message) for w in seen})
        if client is not None:  # the LLM extractor's calls are the chunk's usage
            chunk.llm_usage = add_usage(chunk.llm_usage, usage_of(client.calls[first:]))
    chunk.results = [
        [r.id, r.clean, r.family, r.location, r.verdict, r.failures, r.error] for r in results
    ]


def _extractor_client(extractor: str) -> LLMClient | None:
    """The shared client the LLM extractor of ``run_suite`` calls through, if any."""
    if extractor != ExtractorName.LLM:
        return None
    config = llm_config()
    return LLMClient.shared(config) if config.configured else None


def case_results(chunk: BatchChunk) -> list[CaseResult]:
    """The stored results of a chunk, as the engine's :class:`CaseResult` rows."""
    from matching.suite import CaseResult

    return [
        CaseResult(i, clean, fam, loc, verdict, [tuple(f) for f in fails], error)
        for i, clean, fam, loc, verdict, fails, error in chunk.results or []
    ]


def _start(chunk_id: int) -> tuple[BatchChunk | None, Batch]:
    """Mark the chunk running (None when it, or its batch, is already finished)."""
    with transaction.atomic():
        chunk = BatchChunk.objects.select_for_update().get(pk=chunk_id)
        batch = Batch.objects.defer("archive").get(pk=chunk.batch_id)
        if chunk.is_finished or batch.is_finished:
            return None, batch
        now = timezone.now()
        chunk.status, chunk.heartbeat, chunk.error = RunStatus.RUNNING, now, ""
        chunk.attempts += 1
        chunk.save(update_fields=["status", "heartbeat", "error", "attempts"])
        Batch.objects.filter(pk=batch.pk, status=RunStatus.QUEUED).update(
            status=RunStatus.RUNNING, started_at=now
        )
    return chunk, batch


def chunk_execute(*, chunk_id: int, final_attempt: bool = True) -> tuple[BatchChunk, bool]:
    """Evaluate a queued chunk and store it once; ``(chunk, batch now complete)``.

    A transient LLM failure of a judge raises :class:`LLMRetry` with the chunk queued
    again, unless ``final_attempt``: then the chunk (and so the batch) fails.
    """
    from celery.exceptions import SoftTimeLimitExceeded  # chunks run in workers only

    from . import batches

    chunk, batch = _start(chunk_id)
    if chunk is None:
        return BatchChunk.objects.get(pk=chunk_id), False
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= batches.PROGRESS_EVERY_SECONDS or done >= total:
            last[0] = now
            batches.chunk_progress(chunk, done)

    t0 = time.perf_counter()
    try:
        _evaluate(batch, chunk, progress)
    except (OperationalError, InterfaceError):
        raise  # transient: the task retries
    except LLMError as exc:
        where = LLMConfig.from_env().describe()
        if exc.transient and not final_attempt:
            BatchChunk.objects.filter(pk=chunk.pk).update(
                status=RunStatus.QUEUED, llm_usage=chunk.llm_usage
            )
            raise LLMRetry(exc.reason) from exc
        logger.warning("batch %s chunk %s failed at %s: %s", batch.pk, chunk.index, where, exc)
        chunk.status, chunk.error = RunStatus.FAILED, f"{where}: {exc.reason}"
    except SoftTimeLimitExceeded:
        limit = settings.CELERY_TASK_SOFT_TIME_LIMIT
        chunk.status, chunk.error = RunStatus.FAILED, f"took longer than the {limit} s time limit"
    except (ContractEvalError, ServiceError, ValueError) as exc:
        chunk.status, chunk.error = RunStatus.FAILED, str(exc)
    except Exception as exc:  # noqa: BLE001 - any engine crash is shown on the batch
        logger.exception("batch %s chunk %s failed with an internal error", batch.pk, chunk.index)
        chunk.status, chunk.error = RunStatus.FAILED, f"internal error: {type(exc).__name__}: {exc}"
    else:
        chunk.status, chunk.done = RunStatus.DONE, chunk.total
    chunk.seconds = round(time.perf_counter() - t0, 3)
    return batches.chunk_store(chunk)
