"""A reviewer corrects a run's pairings; each confirmed pairing teaches an enactment.

A correction re-runs the engine with the reviewer's forced and refused pairs
(:mod:`matching.corrections`) and stores the corrected report beside the automatic one.
A forced pair (obligation, step) also keeps the step's words as an enactment example of
that obligation for the contract: semantic-mode runs read it, the audited nodes are
not edited, and an annotator can remove it.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from matching.corrections import Corrections
from matching.errors import ContractEvalError
from matching.formats import observed_from_data
from matching.pipeline import Options, judge_trace

from ..models import AuditRecord, Enactment, ExtractorName, Run, RunCorrection, RunStatus
from ..permissions import TEACH, UNTEACH, require
from ..selectors.teaching import latest_correction, step_text
from .common import ServiceError, actor
from .runs import run_contract, run_enactments


def run_pair(*, run: Run, user, expected_id: str, observed_id: str) -> RunCorrection:
    """Pair observed step ``observed_id`` with obligation ``expected_id`` on ``run``,
    store the corrected report and keep the step's words as an enactment."""
    _check_correctable(run, user)
    c = _current(run)
    c.pair = [p for p in c.pair if p[0] != expected_id and p[1] != observed_id]
    c.pair.append((expected_id, observed_id))
    c.unpair = [p for p in c.unpair if p != (expected_id, observed_id)]
    return _store(run, user, c, "pair", (expected_id, observed_id))


def run_unpair(*, run: Run, user, expected_id: str) -> RunCorrection:
    """Refuse the current pairing of obligation ``expected_id`` on ``run``."""
    _check_correctable(run, user)
    latest = latest_correction(run)
    report = latest.report if latest else run.report or {}
    observed_id = next(
        (a["observed"] for a in report.get("alignment", []) if a["expected"] == expected_id),
        None,
    )
    if observed_id is None:
        raise ServiceError(f"{expected_id!r} is not paired on this run: nothing to unpair")
    c = _current(run)
    c.pair = [p for p in c.pair if p != (expected_id, observed_id)]
    c.unpair.append((expected_id, observed_id))
    return _store(run, user, c, "unpair", (expected_id, observed_id))


def enactment_delete(*, enactment: Enactment, user) -> None:
    """Remove a taught enactment (an annotator's call); recorded in the audit history."""
    require(user, enactment.contract.project_id, UNTEACH)
    with transaction.atomic():
        AuditRecord.objects.create(
            contract=enactment.contract,
            user=actor(user),
            action="enactment_delete",
            object_type="enactment",
            object_id=str(enactment.pk),
            before={"node": enactment.node_id, "text": enactment.text, "run": enactment.run_id},
        )
        enactment.delete()


def _check_correctable(run: Run, user) -> None:
    require(user, run.project_id, TEACH)
    if run.status != RunStatus.DONE or run.overlay is None:
        raise ServiceError("only a finished run with an overlay can be corrected")
    if run.extractor == ExtractorName.LLM:
        raise ServiceError(
            "a run read by the LLM extractor cannot be re-scored without calling the LLM"
            " again: correct a run of another extractor"
        )


def _current(run: Run) -> Corrections:
    latest = latest_correction(run)
    return Corrections.from_data(latest.corrections if latest else None)


def _corrected(run: Run, corrections: Corrections) -> tuple[dict[str, Any], dict[str, Any]]:
    """The report and overlay of ``run`` with ``corrections`` applied (the invariant
    scores the LLM judged for the run are reused, never asked for again)."""
    observed = observed_from_data(run.observed)
    observed.invariants.update(run.judged_invariants or {})
    options = Options(mode=run.mode, extractor=run.extractor, corrections=corrections, overlay=True)
    try:
        outcome = judge_trace(
            run_contract(run), run.query_key, observed, options, enactments=run_enactments(run)
        )
    except (ContractEvalError, ValueError) as exc:
        raise ServiceError(str(exc)) from exc
    assert outcome.overlay is not None
    return outcome.report, outcome.overlay


def _store(run: Run, user, c: Corrections, action: str, pair: tuple[str, str]) -> RunCorrection:
    report, overlay = _corrected(run, c)
    text = step_text(run.overlay or {}, pair[1])
    with transaction.atomic():
        row = RunCorrection.objects.create(
            run=run,
            corrections=c.to_data(),
            report=report,
            overlay=overlay,
            verdict=report["verdict"],
            reviewer=actor(user),
        )
        if action == "pair" and text:
            Enactment.objects.get_or_create(
                contract=run.contract,
                node_id=pair[0],
                text=text,
                defaults={"run": run, "step_id": pair[1], "reviewer": actor(user)},
            )
        AuditRecord.objects.create(
            contract=run.contract,
            user=actor(user),
            action=action,
            object_type="run",
            object_id=str(run.pk),
            after={"expected": pair[0], "observed": pair[1], "verdict": row.verdict},
        )
    return row
