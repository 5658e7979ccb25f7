"""Conformance runs: create one from an upload, evaluate it (the Celery task calls
:func:`run_execute`), retry a failed one.

A run is created synchronously (input parsed, rendered, validated: a bad input raises
:class:`ServiceError` with the engine's message and stores nothing), then evaluated by a
Celery task queued when the transaction commits. The same inputs (contract version,
query, canonical observed document, mode, extractor) are the same run: :func:`run_create`
returns the existing one instead of a duplicate. The model name and agent version describe
the agent, not the report's inputs: the existing run keeps the ones it was created with.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, InterfaceError, OperationalError, transaction
from django.utils import timezone

from matching.conditioning import Expected, condition
from matching.errors import ContractEvalError
from matching.extractors import Extractor
from matching.formats import Contract as ContractDoc
from matching.formats import Observed
from matching.llm.client import LLMClient, LLMError
from matching.llm.config import LLMConfig
from matching.llm.extractor import LLMExtractor
from matching.outcomes import obligation_outcomes
from matching.uploads import PreparedInput, prepare_input

from .. import enqueue
from ..models import (
    AuditRecord,
    Contract,
    ContractStatus,
    ExtractorName,
    Project,
    Query,
    Run,
    RunMode,
    RunOutcome,
    RunStatus,
)
from ..permissions import RUN, authorize
from ..selectors.assessments import project_thresholds
from ..selectors.contracts import contract_document
from ..selectors.teaching import taught_enactments
from .common import (
    LLMRetry,
    ServiceError,
    actor,
    add_usage,
    input_limits,
    llm_config,
    refused,
    require_semantic_model,
)
from .webhooks import run_notify

if TYPE_CHECKING:
    from matching.pair_model import Thresholds
    from matching.pipeline import InvariantJudge

logger = logging.getLogger(__name__)

NO_LLM_FOR_INVARIANTS = (
    "no LLM endpoint configured (set CONTRACTEVAL_LLM_API_KEY or OPENAI_API_KEY): invariants"
    " without a machine check cannot be judged, and stay unjudged"
)


# Per process: the document of an audited contract version, its digest and the
# engine's contract, by (pk, revision). An audited version is never edited through the
# services, and every change that can reach its export (the admin's too) counts the
# revision; rebuilding the document from its rows twice and auditing it again were
# half the CPU of creating a run.
_AUDITED: dict[tuple[int, Any], tuple[str, ContractDoc]] = {}


def _document_and_contract(contract: Contract) -> tuple[str, ContractDoc]:
    """The digest of ``contract``'s document and the engine's (audited) contract; a
    failing audit raises ContractEvalError."""
    key = (contract.pk, contract.revision)
    cached = _AUDITED.get(key) if contract.status == ContractStatus.AUDITED else None
    if cached is None:
        document = contract_document(contract)
        canonical = json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        from matching.validate import load_contract  # the engine loads with the first run

        cached = (digest, load_contract(document))
        if contract.status == ContractStatus.AUDITED:
            if len(_AUDITED) > 128:
                _AUDITED.clear()
            _AUDITED[key] = cached
    return cached


def input_hash(
    contract: Contract,
    query_key: str,
    observed: Mapping[str, Any],
    mode,
    extractor,
    judge_invariants: bool = False,
    llm: Mapping[str, str] | None = None,
):
    canonical = json.dumps(observed, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    # The report is computed from the contract document rebuilt from its rows, so the
    # document itself (not only its pk and version) is part of what makes runs equal.
    document_digest, _ = _document_and_contract(contract)
    h = hashlib.sha256()
    parts = [
        f"contract:{contract.pk}:{contract.key}:v{contract.version}",
        f"document:{document_digest}",
        f"query:{query_key}",
        f"mode:{mode}",
        f"extractor:{extractor}",
    ]
    if judge_invariants:  # only then, so the runs stored before keep their hash
        parts.append("judge-invariants")
    if llm:  # another model or endpoint gives other answers: another run
        parts.append(f"llm:{llm['model']}@{llm['endpoint']}")
    taught = taught_enactments(contract) if mode == RunMode.SEMANTIC else {}
    if taught:  # enactments taught since are new inputs of a semantic run
        parts.append("enactments:" + json.dumps(taught, sort_keys=True, ensure_ascii=False))
    for part in (*parts, canonical):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


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
    agent_version: str = "",
    judge_invariants: bool = False,
    select: str = "",
    output: str = "",
) -> tuple[Run, bool]:
    """A run of ``contract`` (audited) on one input, queued; ``(run, created)``.

    The same inputs give the existing run (``created`` is False), never a duplicate;
    when an LLM takes part, its model and endpoint are inputs too. ``judge_invariants``:
    the LLM judges invariants with no machine check and no score in the document.
    ``select`` (``task_id=…,trial=…``) chooses the trajectory of a τ-bench results file.
    ``output``: the agent's final output, for an input that does not end with it.
    """
    authorize(user, contract.project_id, RUN)
    query = _runnable_query(contract, query_key, mode, extractor, judge_invariants)
    prepared = _prepared(
        contract,
        query_key,
        kind=kind,
        data=data,
        source_kind=source_kind,
        extractor=extractor,
        mode=mode,
        select=select or None,
        output=output or None,
    )
    llm = _llm_fingerprint(judge_invariants or prepared.extractor == ExtractorName.LLM)
    digest = input_hash(
        contract, query_key, prepared.observed, mode, prepared.extractor, judge_invariants, llm
    )
    existing = Run.objects.filter(input_hash=digest).first()
    if existing is not None:
        return existing, False
    run = Run(
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
        agent_version=(agent_version or "").strip()[:200],
        judge_invariants=judge_invariants,
        created_by=actor(user),
    )
    return _store_new_run(run)


def _prepared(contract: Contract, query_key: str, **options: Any) -> PreparedInput:
    """The input parsed and checked against ``contract`` and its query (conditioned), or
    a :class:`ServiceError` naming what is wrong."""
    limits = input_limits()
    try:
        prepared = prepare_input(
            contract_key=contract.key, query_key=query_key, limits=limits, **options
        )
        limits.check_json(prepared.observed, what="the input")  # NUL, unpaired surrogates
        condition(_document_and_contract(contract)[1], query_key)
    except ContractEvalError as exc:
        raise refused(exc) from exc
    return prepared


def _llm_fingerprint(uses_llm: bool) -> dict[str, str] | None:
    """The model and endpoint a run's LLM calls go to (None when it makes none)."""
    config = llm_config() if uses_llm else None
    return config.fingerprint() if config is not None and config.configured else None


def _store_new_run(run: Run) -> tuple[Run, bool]:
    """Store and queue ``run``; the stored run instead if a concurrent request stored the
    same inputs first."""
    try:
        with transaction.atomic():
            run.save(force_insert=True)
            _record_run(run)
            enqueue.run_on_commit(run.pk)
    except IntegrityError:
        return Run.objects.get(input_hash=run.input_hash), False
    logger.info(
        "run %s created: %s v%s %s", run.pk, run.contract.key, run.contract.version, run.query_key
    )
    return run, True


def _runnable_query(
    contract: Contract, query_key: str, mode: str, extractor: str, judge_invariants: bool
) -> Query:
    """The query to run, once the contract and the options allow a run."""
    if judge_invariants and not llm_config().configured:
        raise ServiceError(NO_LLM_FOR_INVARIANTS)
    if contract.status != ContractStatus.AUDITED:
        raise ServiceError(
            f"{contract.key} v{contract.version} is not audited: runs use audited contracts only"
        )
    if mode == RunMode.ORACLE and extractor != ExtractorName.NONE:
        raise ServiceError("oracle mode uses the gold labels: choose the extractor 'none'")
    require_semantic_model(mode)
    query = Query.objects.filter(contract=contract, query_id=query_key).first()
    if query is None:
        raise ServiceError(f"{contract.key} v{contract.version} has no query {query_key!r}")
    return query


def _record_run(run: Run) -> None:
    AuditRecord.objects.create(
        contract=run.contract,
        user=run.created_by,
        action="run",
        object_type="run",
        object_id=str(run.pk),
        after={
            "query": run.query_key,
            "input": run.input_kind,
            "mode": run.mode,
            "extractor": run.extractor,
            "model": run.model_name,
            "agent_version": run.agent_version,
            "judge_invariants": run.judge_invariants,
        },
    )


def run_contract(run: Run) -> ContractDoc:
    """The contract a run is judged against, read from its rows as they are now."""
    from matching.validate import load_contract

    return load_contract(contract_document(run.contract))


def run_enactments(run: Run) -> dict[str, list[str]] | None:
    """The enactments reviewers taught for ``run``'s contract, when its mode reads them."""
    from matching.pipeline import reads_enactments

    return taught_enactments(run.contract) if reads_enactments(run.mode) else None


def _evaluate(run: Run) -> tuple[dict[str, Any], dict[str, Any] | None, list[str]]:
    """The report, the overlay payload and warnings of ``run`` (engine only; the LLM's
    model, usage, quote counts and judged invariants are set on ``run``, which the
    caller saves)."""
    from matching.pipeline import Options, judge_trace

    client = _run_client(run)
    extract_with = _llm_extractor(run, client) if run.extractor == ExtractorName.LLM else None
    judge = _invariant_judge(run, client) if run.judge_invariants else None
    options = Options(
        mode=run.mode,
        extractor=run.extractor,
        limits=input_limits(),
        thresholds=run_thresholds(run),
        overlay=True,
        record_warnings=True,
    )
    try:
        outcome = judge_trace(
            run_contract(run),
            run.query_key,
            run.observed,
            options,
            enactments=run_enactments(run),
            extract_with=extract_with,
            judge_with=judge,
        )
    finally:
        if client is not None:  # every call of the run, the failed attempts' too
            run.llm_model = client.model
            run.llm_usage = add_usage(run.llm_usage, client.usage())
    caught = list(outcome.warnings)
    if run.judge_invariants and judge is None:  # the key went away after the run was queued
        caught.append(NO_LLM_FOR_INVARIANTS)
    run.set_assessment(outcome.assessment)
    return outcome.report, outcome.overlay, caught


def run_thresholds(run: Run) -> Thresholds | None:
    """The project's own thresholds for the three-way verdict (None: the model's)."""
    project = Project.objects.only("review_clean_below", "review_violation_from").get(
        pk=run.project_id
    )
    return project_thresholds(project)


def _run_client(run: Run) -> LLMClient | None:
    """One client for every LLM call of a run (extractor and invariant judge), so its
    usage is the run's; None when the run uses no LLM or none is configured."""
    if run.extractor != ExtractorName.LLM and not run.judge_invariants:
        return None
    config = llm_config()
    return LLMClient(config) if config.configured else None


def _invariant_judge(run: Run, client: LLMClient | None) -> InvariantJudge | None:
    """The LLM invariant judge on the run's client, recording its scores in
    ``run.judged_invariants``; None without a client. An :class:`LLMError` (after the
    client's retries) propagates."""
    if client is None:
        return None
    from matching.llm.judge import judge_invariants

    def judge(expected: Expected, observed: Observed) -> dict[str, float]:
        run.judged_invariants = judge_invariants(client, expected, observed)
        return run.judged_invariants

    return judge


def _llm_extractor(run: Run, client: LLMClient | None) -> Extractor | None:
    """The LLM extractor on the run's client, recording its quote counts in
    ``run.extraction`` (None without a client: the registry's fallback then runs)."""
    if client is None:
        return None
    extractor = LLMExtractor(client=client)

    def extract(text: str, *, kind: str) -> Observed:
        try:
            return extractor(text, kind=kind)
        finally:
            run.extraction = {
                **extractor.report.to_dict(),
                "summary": extractor.report.summary(),
                "dropped": [d.to_dict() for d in extractor.dropped[:100]],
            }

    return extract


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
            run.save(update_fields=["status", "error", "llm_model", "llm_usage", "extraction"])
            raise LLMRetry(exc.reason) from exc
        where = LLMConfig.from_env().describe()
        logger.warning("run %s failed at the LLM endpoint %s: %s", run.pk, where, exc.reason)
        run.status, run.error = RunStatus.FAILED, f"{where}: {exc.reason}"
    except (ContractEvalError, ValueError) as exc:
        run.status, run.error = RunStatus.FAILED, str(exc)
    except Exception as exc:  # noqa: BLE001 - any engine crash is shown on the run
        logger.exception("run %s failed with an internal error", run.pk)
        run.status, run.error = RunStatus.FAILED, f"internal error: {type(exc).__name__}: {exc}"
    else:
        run.status, run.error = RunStatus.DONE, ""
        run.warnings = caught
        run.read(report, overlay)
    run.finished_at = timezone.now()
    with transaction.atomic():
        run.save()
        run_outcome_record(run=run)
    run_notify(run=run)  # a violation or a run needing review goes to the webhooks
    return run


def run_outcome_record(*, run: Run) -> None:
    """Keep ``run``'s row of the analytics table (:class:`RunOutcome`) in step with its
    reading: written when it is done, corrected or reverted, removed otherwise."""
    if run.status != RunStatus.DONE or run.overlay is None:
        RunOutcome.objects.filter(run_id=run.pk).delete()
        return
    RunOutcome.objects.update_or_create(
        run_id=run.pk,
        defaults={
            "contract_id": run.contract_id,
            "day": timezone.localdate(run.created_at),
            "agent_version": run.agent_version,
            "model_name": run.model_name,
            "is_clean": run.verdict == "clean",
            "obligations": obligation_outcomes(run.overlay),
        },
    )


def run_retry(*, run: Run, user) -> Run:
    """Queue a failed run again (its inputs are unchanged, so it stays the same run).

    A run stuck RUNNING longer than ``JOB_STALE_AFTER`` (its worker died) can be
    retried too; a run running normally cannot, so it is never evaluated twice at once.
    """
    authorize(user, run.project_id, RUN)
    from .jobs import run_is_stale

    if run.status != RunStatus.FAILED and not run_is_stale(run):
        raise ServiceError("only a failed run, or one stuck running, can be retried")
    with transaction.atomic():
        updated = Run.objects.filter(pk=run.pk, status=run.status).update(
            status=RunStatus.QUEUED, error="", finished_at=None
        )
        if not updated:
            raise ServiceError("the run changed meanwhile: reload the page")
        AuditRecord.objects.create(
            contract=run.contract,
            user=actor(user),
            action="retry",
            object_type="run",
            object_id=str(run.pk),
        )
        enqueue.run_on_commit(run.pk)
    run.refresh_from_db()
    return run
