"""Conformance runs, suite batches and reviewer verdicts (issue 5): services and reads.

A run is created synchronously (input parsed, rendered, validated: a bad input raises
:class:`~audit.services.ServiceError` with the engine's message and stores nothing),
then evaluated by a Celery task queued when the transaction commits. The same inputs
(contract version, query, canonical observed document, mode, extractor) are the same
run: :func:`run_create` returns the existing one instead of a duplicate.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import stat
import tempfile
import time
import warnings
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, transaction
from django.db.models import Exists, OuterRef, QuerySet, Subquery
from django.http import Http404
from django.utils import timezone

from matching.conditioning import condition
from matching.errors import ContractEvalError
from matching.evaluate import evaluate_detailed
from matching.extractors import reextract
from matching.formats import OBSERVED, observed_from_data, read_observed
from matching.importers import detect_kind, render
from matching.llm.client import LLMClient, LLMError
from matching.llm.config import LLMConfig
from matching.llm.judge import JUDGES, judge_invariants, judge_suite
from matching.suite import load_suite, run_suite, score
from matching.validate import load_contract

from .models import (
    FAMILY_FIELDS,
    METRIC_FIELDS,
    AuditRecord,
    Batch,
    BatchSource,
    Contract,
    ContractStatus,
    ExtractorName,
    InputKind,
    JudgeKind,
    Membership,
    Project,
    Query,
    ReviewVerdict,
    Role,
    Run,
    RunMode,
    RunStatus,
)
from .permissions import _check
from .selectors import contract_document
from .services import ServiceError

# What each action needs, at least (the roles of audit/permissions.py).
RUN = Role.ANNOTATOR  # start a run, see runs
BATCH = Role.REVIEWER  # start a suite batch
VERDICT = Role.REVIEWER  # record a verdict

SOURCE_KINDS = ("response", "trace")
_EVENT = re.compile(r"^\[(?:system|user|assistant|tool|result)\] ", re.MULTILINE)
PROGRESS_EVERY_SECONDS = 0.5
NO_LLM_FOR_JUDGES = (
    "no LLM endpoint configured (set CONTRACTEVAL_LLM_API_KEY or OPENAI_API_KEY): the LLM"
    " judge baselines need one, and there is no offline judge"
)
NO_LLM_FOR_INVARIANTS = (
    "no LLM endpoint configured (set CONTRACTEVAL_LLM_API_KEY or OPENAI_API_KEY): invariants"
    " without a machine check cannot be judged, and stay unjudged"
)
# A judge batch whose first cases all fail at the endpoint stops there (the endpoint is
# down or refuses us): the batch fails, or is retried when the failures were transient.
JUDGE_ABORT_AFTER = 3


class LLMRetry(Exception):
    """A transient LLM failure (rate limit, 5xx, timeout) of a run or judge batch that
    outlived the client's own retries: the job is queued again and the Celery task
    retries it; on the task's last attempt the job fails with the reason instead."""


def llm_config() -> LLMConfig:
    """The LLM settings of the environment (a malformed number is a ServiceError)."""
    try:
        return LLMConfig.from_env()
    except ValueError as exc:
        raise ServiceError(f"LLM settings: {exc}") from None


def _add_usage(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> dict[str, Any]:
    """Usage totals of two attempts added up."""
    out = dict(after)
    for k, v in (before or {}).items():
        if isinstance(v, int | float) and isinstance(out.get(k), int | float):
            out[k] = round(out[k] + v, 3) if isinstance(v, float) else out[k] + v
    return out


# ---------------------------------------------------------------------------- access


def run_for(user, pk: int, minimum: str = RUN) -> tuple[Run, Membership]:
    """Run ``pk`` with its contract and project, and the user's membership (404 outside)."""
    if not user.is_authenticated:
        raise Http404("no such run")
    run = Run.objects.select_related("project", "contract", "created_by").filter(pk=pk).first()
    if run is None:
        raise Http404("no such run")
    membership = Membership.objects.filter(project_id=run.project_id, user=user).first()
    return run, _check(membership, minimum)


def batch_for(user, pk: int, minimum: str = RUN) -> tuple[Batch, Membership]:
    if not user.is_authenticated:
        raise Http404("no such batch")
    batch = Batch.objects.select_related("project").defer("archive").filter(pk=pk).first()
    if batch is None:
        raise Http404("no such batch")
    membership = Membership.objects.filter(project_id=batch.project_id, user=user).first()
    return batch, _check(membership, minimum)


def runnable_contracts(project: Project) -> list[Contract]:
    """The audited contract versions of ``project`` with their queries (newest first)."""
    return list(
        Contract.objects.filter(project=project, status=ContractStatus.AUDITED)
        .prefetch_related("queries")
        .order_by("key", "-version")
    )


# ---------------------------------------------------------------------------- inputs


@dataclass
class PreparedInput:
    kind: str  # an InputKind
    observed: dict[str, Any]  # a contracteval.observed/v1 document
    extractor: str


def _parse_json(raw: str | bytes) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ContractEvalError(
            f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", rule="json"
        ) from None
    except UnicodeDecodeError:
        raise ContractEvalError("not UTF-8 text", rule="json") from None


def prepare_input(
    *,
    kind: str,
    data: Any,
    contract_key: str,
    query_key: str,
    source_kind: str = "auto",
    extractor: str = "none",
    mode: str = "token",
) -> PreparedInput:
    """Parse, render and validate one input; raises :class:`ContractEvalError`.

    ``kind`` is an :class:`InputKind` or ``auto`` (JSON that is an observed document, a
    chat transcript or an action list is recognised; anything else is pasted text).
    ``data`` is text (``str``/``bytes``) or already-parsed JSON.
    """
    if mode not in RunMode.values:
        raise ContractEvalError(f"unknown mode {mode!r}: expected oracle or token", rule="mode")
    if extractor not in ExtractorName.values:
        raise ContractEvalError(
            f"unknown extractor {extractor!r}: expected none, heuristic or llm", rule="extractor"
        )
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ContractEvalError("not UTF-8 text", rule="text") from None
    if kind == "auto":
        parsed = None
        if isinstance(data, str):
            stripped = data.strip()
            if stripped[:1] in ("{", "["):
                try:
                    parsed = json.loads(stripped)
                except json.JSONDecodeError as exc:
                    # Text that opens like JSON is almost always a broken upload, not an
                    # agent's answer: say so rather than evaluate it as prose.
                    raise ContractEvalError(
                        f"this looks like JSON but is not valid JSON ({exc.msg} at line"
                        f" {exc.lineno} column {exc.colno}); fix it, or choose the input kind"
                        " 'Pasted response or trace' to evaluate it as text",
                        rule="json",
                    ) from None
        else:
            parsed = data
        if parsed is None:
            kind = InputKind.TEXT
        else:
            kind, data = detect_kind(parsed), parsed
    if kind not in InputKind.values:
        raise ContractEvalError(
            f"unknown input kind {kind!r}: expected observed, text, openai or tau_bench",
            rule="input-kind",
        )
    if kind == InputKind.OBSERVED:
        if isinstance(data, str):
            data = _parse_json(data)
        read_observed(data)  # schema, ids and steps: the engine's message on failure
        doc = dict(data)
        return PreparedInput(kind=kind, observed=doc, extractor=extractor)
    if kind != InputKind.TEXT and isinstance(data, str):
        data = _parse_json(data)
    text = render(kind, data)
    if source_kind == "auto":
        source_kind = "trace" if kind != InputKind.TEXT or _EVENT.search(text) else "response"
    if source_kind not in SOURCE_KINDS:
        raise ContractEvalError(
            f"unknown source kind {source_kind!r}: expected response or trace", rule="source-kind"
        )
    if mode == RunMode.ORACLE:
        raise ContractEvalError(
            "oracle mode needs an observed document with gold labels; rendered text is"
            " extracted, so use token mode",
            rule="mode",
        )
    if extractor == ExtractorName.NONE:
        extractor = ExtractorName.HEURISTIC  # text has no nodes until it is extracted
    doc = {
        "format": OBSERVED,
        "contract": contract_key,
        "query": query_key,
        "source": {"kind": source_kind, "text": text},
        "nodes": [],
    }
    output = _final_output(kind, data, text, source_kind)
    if output:
        doc["output"] = output
    read_observed(doc)
    return PreparedInput(kind=kind, observed=doc, extractor=extractor)


def _final_output(kind: str, data: Any, text: str, source_kind: str) -> str | None:
    """The agent's final answer, checked against output requirements: the last assistant
    message of a transcript, the last ``respond`` of an action list, or a pasted response."""
    if kind == InputKind.TEXT:
        return text.strip() if source_kind == "response" else None
    items = (
        data.get("messages" if kind == InputKind.OPENAI else "actions")
        if isinstance(data, Mapping)
        else data
    )
    for item in reversed(list(items or [])):
        if not isinstance(item, Mapping):
            continue
        if kind == InputKind.OPENAI and item.get("role") == "assistant":
            content = item.get("content")
            if isinstance(content, list):
                content = "\n".join(
                    p.get("text", "") if isinstance(p, Mapping) else str(p) for p in content
                )
            if isinstance(content, str) and content.strip():
                return content.strip()
        if kind == InputKind.TAU_BENCH and item.get("name") == "respond":
            kwargs = item.get("kwargs") or item.get("arguments") or {}
            content = kwargs.get("content") if isinstance(kwargs, Mapping) else None
            if isinstance(content, str) and content.strip():
                return content.strip()
    return None


def input_hash(
    contract: Contract,
    query_key: str,
    observed: Mapping[str, Any],
    mode,
    extractor,
    judge_invariants: bool = False,
):
    canonical = json.dumps(observed, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    h = hashlib.sha256()
    parts = [
        f"contract:{contract.pk}:{contract.key}:v{contract.version}",
        f"query:{query_key}",
        f"mode:{mode}",
        f"extractor:{extractor}",
    ]
    if judge_invariants:  # only then, so the runs stored before keep their hash
        parts.append("judge-invariants")
    for part in (*parts, canonical):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


# ---------------------------------------------------------------------------- runs


def enqueue_run(run_id: int) -> None:
    """Send the evaluation of run ``run_id`` to the workers (in-process when eager)."""
    from .tasks import execute_run

    execute_run.delay(run_id)


def enqueue_batch(batch_id: int) -> None:
    from .tasks import execute_batch

    execute_batch.delay(batch_id)


def run_create(
    *,
    contract: Contract,
    user,
    query_key: str,
    kind: str,
    data: Any,
    source_kind: str = "auto",
    mode: str = RunMode.TOKEN,
    extractor: str = ExtractorName.NONE,
    model_name: str = "",
    judge_invariants: bool = False,
) -> tuple[Run, bool]:
    """A run of ``contract`` (audited) on one input, queued; ``(run, created)``.

    The same inputs give the existing run (``created`` is False), never a duplicate.
    ``judge_invariants``: score the invariants that have no machine check and no score
    in the observed document with the LLM invariant judge (an LLM must be configured).
    """
    if judge_invariants and not llm_config().configured:
        raise ServiceError(NO_LLM_FOR_INVARIANTS)
    if contract.status != ContractStatus.AUDITED:
        raise ServiceError(
            f"{contract.key} v{contract.version} is not audited: runs use audited contracts only"
        )
    if mode == RunMode.ORACLE and extractor != ExtractorName.NONE:
        raise ServiceError("oracle mode uses the gold labels: choose the extractor 'none'")
    query = Query.objects.filter(contract=contract, query_id=query_key).first()
    if query is None:
        raise ServiceError(f"{contract.key} v{contract.version} has no query {query_key!r}")
    try:
        prepared = prepare_input(
            kind=kind,
            data=data,
            contract_key=contract.key,
            query_key=query_key,
            source_kind=source_kind,
            extractor=extractor,
            mode=mode,
        )
        condition(load_contract(contract_document(contract)), query_key)
    except ContractEvalError as exc:
        raise ServiceError(str(exc)) from exc
    digest = input_hash(
        contract, query_key, prepared.observed, mode, prepared.extractor, judge_invariants
    )
    existing = Run.objects.filter(input_hash=digest).first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            run = Run.objects.create(
                project_id=contract.project_id,
                contract=contract,
                query=query,
                query_key=query_key,
                input_kind=prepared.kind,
                observed=prepared.observed,
                input_hash=digest,
                mode=mode,
                extractor=prepared.extractor,
                model_name=(model_name or "").strip()[:200],
                judge_invariants=judge_invariants,
                created_by=user if user is not None and user.is_authenticated else None,
            )
            AuditRecord.objects.create(
                contract=contract,
                user=run.created_by,
                action="run",
                object_type="run",
                object_id=str(run.pk),
                after={
                    "query": query_key,
                    "input": prepared.kind,
                    "mode": mode,
                    "extractor": prepared.extractor,
                    "model": run.model_name,
                    "judge_invariants": judge_invariants,
                },
            )
            transaction.on_commit(lambda: enqueue_run(run.pk))
    except IntegrityError:
        # a concurrent request stored the same inputs first
        return Run.objects.get(input_hash=digest), False
    return run, True


def _evaluate(run: Run) -> tuple[dict[str, Any], dict[str, Any] | None, list[str]]:
    """The report, the overlay payload and warnings of ``run`` (engine only, no writes)."""
    contract = load_contract(contract_document(run.contract))
    expected = condition(contract, run.query_key)
    observed = observed_from_data(run.observed)
    caught: list[str] = []
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        if run.extractor != ExtractorName.NONE:
            observed = reextract(observed, run.extractor)
    caught = [str(w.message) for w in seen]
    if run.judge_invariants:
        caught.extend(_judge_unchecked(run, expected, observed))
    evaluation = evaluate_detailed(expected, observed, mode=run.mode)
    overlay = None
    try:  # the node-level overlay (matching/overlay.py)
        from matching.overlay import overlay_payload
    except ImportError:  # pragma: no cover - the overlay module is optional
        overlay_payload = None
    if overlay_payload is not None:
        overlay = overlay_payload(evaluation, observed)
    return evaluation.report(), overlay, caught


def _judge_unchecked(run: Run, expected, observed) -> list[str]:
    """Score the invariants of G_E without a check and without a score in ``observed``
    with the LLM invariant judge, merged into ``observed.invariants``; records the
    model, the scores and the usage on ``run``. Returns warnings. An :class:`LLMError`
    (after the client's retries) propagates."""
    config = llm_config()
    if not config.configured:  # the key went away after the run was queued
        return [NO_LLM_FOR_INVARIANTS]
    client = LLMClient(config)
    run.llm_model = config.model
    try:
        scores = judge_invariants(client, expected, observed)
    finally:
        run.llm_usage = _add_usage(run.llm_usage, client.usage())
    observed.invariants.update(scores)
    run.judged_invariants = scores
    return []


def run_execute(*, run_id: int, final_attempt: bool = True) -> Run:
    """Evaluate a queued run (called by the Celery task); idempotent once finished.

    A transient LLM failure of the invariant judge raises :class:`LLMRetry` with the
    run queued again, unless ``final_attempt``: then the run fails with the reason.
    """
    with transaction.atomic():
        run = Run.objects.select_for_update(of=("self",)).select_related("contract").get(pk=run_id)
        if run.is_finished:
            return run
        run.status, run.started_at = RunStatus.RUNNING, timezone.now()
        run.attempts += 1
        run.save(update_fields=["status", "started_at", "attempts"])
    try:
        report, overlay, caught = _evaluate(run)
    except (OperationalError, InterfaceError):
        raise  # transient: the task retries
    except LLMError as exc:
        if exc.transient and not final_attempt:
            run.status, run.error = RunStatus.QUEUED, ""
            run.save(update_fields=["status", "error", "llm_model", "llm_usage"])
            raise LLMRetry(exc.reason) from exc
        where = LLMConfig.from_env().describe()
        run.status, run.error = RunStatus.FAILED, f"{where}: {exc.reason}"
    except (ContractEvalError, ValueError) as exc:
        run.status, run.error = RunStatus.FAILED, str(exc)
    except Exception as exc:  # noqa: BLE001 - any engine crash is shown on the run
        run.status, run.error = RunStatus.FAILED, f"internal error: {type(exc).__name__}: {exc}"
    else:
        run.status, run.error = RunStatus.DONE, ""
        run.report, run.overlay, run.warnings = report, overlay, caught
        run.verdict = report["verdict"]
        run.failure_count = len(report["failures"])
        for family, col in FAMILY_FIELDS.items():
            setattr(run, col, sum(1 for f in report["failures"] if f["family"] == family))
        for m in METRIC_FIELDS:
            setattr(run, m, report["metrics"].get(m))
    run.finished_at = timezone.now()
    run.save()
    return run


def run_retry(*, run: Run, user) -> Run:
    """Queue a failed run again (its inputs are unchanged, so it stays the same run)."""
    if run.status != RunStatus.FAILED:
        raise ServiceError("only a failed run can be retried")
    with transaction.atomic():
        Run.objects.filter(pk=run.pk).update(status=RunStatus.QUEUED, error="", finished_at=None)
        AuditRecord.objects.create(
            contract=run.contract,
            user=user if user.is_authenticated else None,
            action="retry",
            object_type="run",
            object_id=str(run.pk),
        )
        transaction.on_commit(lambda: enqueue_run(run.pk))
    run.refresh_from_db()
    return run


def verdict_record(*, run: Run, user, agrees: bool, note: str = "") -> ReviewVerdict:
    """A reviewer's verdict on a finished run, kept in the contract's audit record."""
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


# ---------------------------------------------------------------------------- reads


def annotate_latest_verdict(qs: QuerySet[Run]) -> QuerySet[Run]:
    latest = ReviewVerdict.objects.filter(run=OuterRef("pk")).order_by("-created_at", "-pk")
    return qs.annotate(
        latest_agrees=Subquery(latest.values("agrees")[:1]),
        latest_note=Subquery(latest.values("note")[:1]),
        latest_reviewer=Subquery(latest.values("reviewer__username")[:1]),
        has_verdict=Exists(latest),
    )


def filter_runs(qs: QuerySet[Run], params: Mapping[str, Any]) -> QuerySet[Run]:
    """Filters shared by the inbox, the run list and the API (unknown values match none)."""
    if params.get("contract"):
        qs = qs.filter(contract__key=params["contract"])
    if params.get("query"):
        qs = qs.filter(query_key=params["query"])
    if params.get("model"):
        qs = qs.filter(model_name=params["model"])
    if params.get("status"):
        qs = qs.filter(status=params["status"])
    if params.get("verdict"):
        qs = qs.filter(verdict=params["verdict"])
    family = params.get("family")
    if family:
        col = FAMILY_FIELDS.get(family)
        qs = qs.filter(**{f"{col}__gt": 0}) if col else qs.none()
    reviewed = params.get("reviewed")
    if reviewed in ("yes", "no"):
        qs = annotate_latest_verdict(qs).filter(has_verdict=reviewed == "yes")
    return qs


def inbox(project: Project, params: Mapping[str, Any] | None = None) -> QuerySet[Run]:
    """Failed (non_clean) finished runs of ``project``, with their latest verdict."""
    qs = Run.objects.filter(project=project, status=RunStatus.DONE, verdict="non_clean")
    qs = filter_runs(qs, params or {})
    return annotate_latest_verdict(qs.select_related("contract")).defer(
        "observed", "overlay", "report"
    )


def inbox_choices(project: Project) -> dict[str, list[str]]:
    """The values the inbox filters offer."""
    base = Run.objects.filter(project=project, status=RunStatus.DONE, verdict="non_clean")
    return {
        "contract": sorted(set(base.values_list("contract__key", flat=True))),
        "query": sorted(set(base.values_list("query_key", flat=True))),
        "model": sorted({m for m in base.values_list("model_name", flat=True) if m}),
        "family": list(FAMILY_FIELDS),
    }


def run_row(run: Run) -> dict[str, Any]:
    """One run as a flat export row (JSON and CSV)."""
    row: dict[str, Any] = {
        "run": run.pk,
        "contract": run.contract.key,
        "contract_version": run.contract.version,
        "query": run.query_key,
        "model": run.model_name,
        "input_kind": run.input_kind,
        "mode": run.mode,
        "extractor": run.extractor,
        "status": run.status,
        "verdict": run.verdict,
        "failures": run.failure_count,
        "families": " ".join(run.families),
    }
    row.update({m: getattr(run, m) for m in METRIC_FIELDS})
    if hasattr(run, "latest_agrees"):
        agrees = run.latest_agrees
        row["review"] = "" if agrees is None else ("agrees" if agrees else "disagrees")
        row["review_note"] = run.latest_note or ""
        row["reviewer"] = run.latest_reviewer or ""
    row["created_at"] = run.created_at.isoformat()
    return row


def rows_csv(rows: Iterable[Mapping[str, Any]], fields: list[str] | None = None) -> str:
    rows = list(rows)
    buf = io.StringIO()
    names = fields or (list(rows[0]) if rows else ["run"])
    writer = csv.DictWriter(buf, fieldnames=names, extrasaction="ignore")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in r.items()})
    return buf.getvalue()


def run_csv(run: Run) -> str:
    """A run as CSV: one line per failure (family, location, detail), plus its metrics."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(
        ["run", "contract", "query", "model", "verdict", "family", "location", "detail"]
    )
    failures = (run.report or {}).get("failures", [])
    for f in failures or [{"family": "", "location": "", "detail": ""}]:
        writer.writerow(
            [
                run.pk,
                run.contract.key,
                run.query_key,
                run.model_name,
                run.verdict,
                f["family"],
                f["location"],
                f["detail"],
            ]
        )
    writer.writerow([])
    writer.writerow(["metric", "value"])
    for m in METRIC_FIELDS:
        v = getattr(run, m)
        writer.writerow([m, "" if v is None else v])
    return buf.getvalue()


def run_export(run: Run) -> dict[str, Any]:
    """A run as one JSON document: its inputs, status, report and verdicts."""
    return {
        "run": run.pk,
        "contract": {"id": run.contract.key, "version": run.contract.version},
        "query": run.query_key,
        "model": run.model_name,
        "input_kind": run.input_kind,
        "mode": run.mode,
        "extractor": run.extractor,
        "status": run.status,
        "error": run.error,
        "warnings": run.warnings,
        "report": run.report,
        "observed": run.observed,
        "verdicts": [
            {
                "reviewer": v.reviewer.get_username() if v.reviewer else None,
                "agrees": v.agrees,
                "note": v.note,
                "at": v.created_at.isoformat(),
            }
            for v in run.verdicts.select_related("reviewer")
        ],
        "created_at": run.created_at.isoformat(),
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }


# ---------------------------------------------------------------------------- batches


def fixture_suite_dir() -> Path:
    """fixtures/suite when it has been built, else fixtures/clean."""
    base = Path(settings.BASE_DIR) / "fixtures"
    suite = base / "suite"
    return suite if (suite / "cases.jsonl").is_file() else base / "clean"


def _member_path(info: zipfile.ZipInfo) -> PurePosixPath:
    name = info.filename
    if "\\" in name or name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise ServiceError(f"unsafe path in the archive: {name!r}")
    path = PurePosixPath(name)
    if any(part in ("..", "") for part in path.parts) or path.is_absolute():
        raise ServiceError(f"unsafe path in the archive: {name!r}")
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise ServiceError(f"the archive contains a symbolic link: {name!r}")
    return path


def extract_suite_zip(archive: bytes, dest: Path) -> Path:
    """Unpack the suite files of ``archive`` into ``dest``; returns the suite folder.

    Zip-slip safe (no absolute paths, ``..``, links), size-limited (the archive, each
    member and the total unpacked), and only ``contracts/*.json`` and ``cases.jsonl``
    (at the top or under one folder) are written.
    """
    if len(archive) > settings.SUITE_UPLOAD_MAX_BYTES:
        raise ServiceError(
            f"the archive is {len(archive):,} bytes; the limit is"
            f" {settings.SUITE_UPLOAD_MAX_BYTES:,}"
        )
    try:
        zf = zipfile.ZipFile(io.BytesIO(archive))
    except zipfile.BadZipFile:
        raise ServiceError("not a zip archive") from None
    limit = settings.SUITE_UNPACKED_MAX_BYTES
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > 10_000:
            raise ServiceError("the archive has more than 10,000 files")
        paths = [(_member_path(i), i) for i in infos]
        roots = {p.parent for p, _ in paths if p.name == "cases.jsonl"}
        if len(roots) != 1:
            raise ServiceError(
                "the archive must hold one suite: contracts/<id>.json and cases.jsonl"
                " (FORMAT.md §7), at the top or in one folder"
            )
        root = roots.pop()
        wanted = []
        for p, info in paths:
            rel = p.relative_to(root) if p.is_relative_to(root) else None
            if rel is None:
                continue
            if rel == PurePosixPath("cases.jsonl") or (
                len(rel.parts) == 2 and rel.parts[0] == "contracts" and rel.suffix == ".json"
            ):
                wanted.append((rel, info))
        if not any(rel.parts[0] == "contracts" for rel, _ in wanted):
            raise ServiceError("the archive has no contracts/<id>.json")
        total = 0
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "contracts").mkdir(exist_ok=True)
        for rel, info in wanted:
            if info.file_size > limit - total:
                raise ServiceError(f"the archive unpacks to more than {limit:,} bytes")
            target = dest.joinpath(*rel.parts)
            with zf.open(info) as src, open(target, "wb") as out:
                while chunk := src.read(1 << 20):
                    total += len(chunk)
                    if total > limit:
                        raise ServiceError(f"the archive unpacks to more than {limit:,} bytes")
                    out.write(chunk)
    return dest


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
            total = _check_suite(extract_suite_zip(archive, Path(tmp) / "suite"))
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
            created_by=user if user is not None and user.is_authenticated else None,
        )
        transaction.on_commit(lambda: enqueue_batch(batch.pk))
    return batch


class _WatchedClient:
    """The judge's LLM client, counting answers and failures as they happen."""

    def __init__(self, client: LLMClient) -> None:
        self.client, self.answers, self.failures = client, 0, []

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
        results, verdicts = judge_suite(suite, batch.judge, watched, progress=watch)
    finally:
        batch.llm_usage = _add_usage(batch.llm_usage, client.usage())
    return score(results, locations=False), verdicts, client


def batch_execute(*, batch_id: int, final_attempt: bool = True) -> Batch:
    """Run every case of a queued batch, saving progress (throttled) and the scores.

    A judge batch (``batch.judge``) runs the LLM judge instead of the engine and
    records the model and the usage; when its endpoint fails transiently it raises
    :class:`LLMRetry` with the batch queued again, unless ``final_attempt``: then the
    batch fails with the reason.
    """
    with transaction.atomic():
        batch = Batch.objects.select_for_update(of=("self",)).get(pk=batch_id)
        if batch.is_finished:
            return batch
        batch.status, batch.started_at, batch.done = RunStatus.RUNNING, timezone.now(), 0
        batch.attempts += 1
        batch.save(update_fields=["status", "started_at", "done", "attempts"])
    last = [0.0]
    retry: LLMRetry | None = None
    verdicts = None

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY_SECONDS or done >= total:
            last[0] = now
            Batch.objects.filter(pk=batch.pk).update(done=min(done, batch.total), total=total)

    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="ce-batch-") as tmp:
            if batch.source == BatchSource.UPLOAD:
                folder = extract_suite_zip(bytes(batch.archive or b""), Path(tmp) / "suite")
            else:
                folder = fixture_suite_dir()
            suite = load_suite(folder)
            total = len(suite.cases) + len(suite.errors)
            Batch.objects.filter(pk=batch.pk).update(total=total)
            batch.total = total
            if batch.judge:
                config = _check_judge(batch.judge)  # the key may have gone since
                batch.llm_model = config.model
                scores, verdicts, _ = _judge(batch, suite, progress, config)
                caught = []
            else:
                with warnings.catch_warnings(record=True) as seen:
                    warnings.simplefilter("always")
                    results = run_suite(
                        suite, mode=batch.mode, extractor=batch.extractor, progress=progress
                    )
                caught = sorted({str(w.message) for w in seen})
                scores = score(results)
    except (OperationalError, InterfaceError):
        raise
    except LLMError as exc:
        where = LLMConfig.from_env().describe()
        if exc.transient and not final_attempt:
            batch.status, batch.error = RunStatus.QUEUED, ""
            retry = LLMRetry(exc.reason)
        else:
            batch.status, batch.error = RunStatus.FAILED, f"{where}: {exc.reason}"
    except (ContractEvalError, ServiceError, ValueError) as exc:
        batch.status, batch.error = RunStatus.FAILED, str(exc)
    except Exception as exc:  # noqa: BLE001
        batch.status, batch.error = RunStatus.FAILED, f"internal error: {type(exc).__name__}: {exc}"
    else:
        batch.status, batch.warnings = RunStatus.DONE, caught
        batch.scores = {
            **scores,
            "mode": batch.mode,
            "extractor": batch.extractor,
            "seconds": round(time.perf_counter() - t0, 3),
        }
        if batch.judge:
            batch.scores.update(judge=batch.judge, model=batch.llm_model, llm=batch.llm_usage)
            batch.verdicts = verdicts
        batch.done = batch.total = scores["cases"]
    batch.seconds = round(time.perf_counter() - t0, 3)
    batch.finished_at = None if retry is not None else timezone.now()
    batch.save(
        update_fields=[
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
    )
    if retry is not None:
        raise retry
    return batch


@dataclass
class FamilyBar:
    name: str
    cases: int
    detection: float | None
    localization: float | None
    exact: float | None


def family_rows(scores: Mapping[str, Any]) -> list[FamilyBar]:
    """The per-family table (ALGORITHMS.md §6), the clean row last, for the page."""
    rows = [
        FamilyBar(
            fam, r["cases"], r["detection"], r.get("localization"), r.get("exact_localization")
        )
        for fam, r in scores.get("per_family", {}).items()
    ]
    clean = scores.get("clean") or {}
    if clean.get("cases"):
        rows.append(
            FamilyBar("clean (specificity)", clean["cases"], clean["specificity"], None, None)
        )
    return rows
