"""A reviewer corrects a run's pairings; each confirmed pairing teaches an enactment.

A correction re-runs the engine with the reviewer's forced and refused pairs and the
steps read as commentary (:mod:`matching.corrections`); the corrected reading becomes the
run's (headline, counts, metrics, inbox, API, exports), and the engine's own is kept in
``Run.automatic`` for comparison until the corrections are reverted.
A forced pair (obligation, step) also keeps the step's words as an enactment example of
that obligation for the contract: semantic-mode runs read it, the audited nodes are
not edited, and an annotator can remove it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction

from matching.corrections import Corrections
from matching.errors import ContractEvalError
from matching.formats import observed_from_data

from ..models import (
    AuditRecord,
    Enactment,
    ExtractorName,
    Run,
    RunCorrection,
    RunStatus,
)
from ..models.runs import READING_FIELDS
from ..permissions import TEACH, UNTEACH, require
from ..selectors.teaching import latest_correction, step_text
from .common import ServiceError, actor
from .concurrency import retry_on_lock
from .runs import run_contract, run_enactments, run_outcome_record, run_thresholds


@retry_on_lock
def run_correct(
    *,
    run: Run,
    user,
    pair: Sequence[tuple[str, str]] = (),
    unpair: Sequence[str] = (),
    commentary: Sequence[str] = (),
) -> RunCorrection:
    """Apply a reviewer's decisions to ``run`` at once: ``pair`` (obligation, step)
    pairs, ``unpair`` obligations (their current pairing is refused) and steps read as
    ``commentary``. The corrected reading becomes the run's report everywhere (verdict,
    counts, metrics, assessment); the engine's own stays in ``run.automatic``. Each
    forced pair keeps the step's words as an enactment of the obligation."""
    _check_correctable(run, user)
    with transaction.atomic():
        run = _locked_run(run.pk)
        latest = latest_correction(run)
        current = Corrections.from_data(latest.corrections if latest else None)
        refused = [(e, _paired_step(run, e)) for e in unpair]
        more = Corrections(pair=list(pair), unpair=refused, commentary=list(commentary))
        if not more:
            raise ServiceError("choose a step and an obligation to pair, or a step to unpair")
        row = _store(run, user, current.merged(more), more)
    return row


def run_pair(*, run: Run, user, expected_id: str, observed_id: str) -> RunCorrection:
    """Pair observed step ``observed_id`` with obligation ``expected_id`` on ``run``."""
    return run_correct(run=run, user=user, pair=[(expected_id, observed_id)])


def run_unpair(*, run: Run, user, expected_id: str) -> RunCorrection:
    """Refuse the current pairing of obligation ``expected_id`` on ``run``."""
    return run_correct(run=run, user=user, unpair=[expected_id])


@retry_on_lock
def run_revert(*, run: Run, user) -> Run:
    """Drop every correction of ``run``: the engine's own reading is the run's again.
    The corrections stay in the history; enactments they taught stay until an annotator
    removes them."""
    _check_correctable(run, user)
    with transaction.atomic():
        run = _locked_run(run.pk)
        if not run.is_corrected:
            raise ServiceError("this run has no correction to revert")
        run.restore_automatic()
        run.save(update_fields=[*READING_FIELDS, "automatic"])
        run_outcome_record(run=run)
        RunCorrection.objects.create(
            run=run,
            corrections=Corrections().to_data(),
            report=run.report,
            overlay=run.overlay,
            verdict=run.verdict,
            reviewer=actor(user),
        )
        _record(run, user, "revert", {"verdict": run.verdict})
    return run


def runs_correct_similar(*, source: Run, user, chosen: Sequence[str]) -> tuple[int, list[str]]:
    """Apply the suggestions a reviewer ticked (values of
    :class:`audit.selectors.similar.Suggestion`: ``run|kind|obligation|step``) to other
    runs of ``source``'s contract, one correction per run, each run on its own (a run
    that cannot take its correction is named in the returned messages, the others are
    corrected). Returns (runs corrected, messages)."""
    require(user, source.project_id, TEACH)
    by_run: dict[int, dict[str, list[Any]]] = {}
    for value in chosen:
        run_id, kind, expected, step = _parsed(value)
        d = by_run.setdefault(run_id, {"pair": [], "commentary": []})
        d[kind].append((expected, step) if kind == "pair" else step)
    done, problems = 0, []
    for run_id, d in sorted(by_run.items()):
        run = Run.objects.filter(pk=run_id, contract_id=source.contract_id).first()
        if run is None:
            problems.append(f"run {run_id} is not a run of this contract: not corrected")
            continue
        try:
            run_correct(run=run, user=user, pair=d["pair"], commentary=d["commentary"])
        except ServiceError as exc:
            problems.append(f"run {run_id}: {exc}")
        else:
            done += 1
    return done, problems


def _parsed(value: str) -> tuple[int, str, str, str]:
    parts = value.split("|", 3)
    if len(parts) != 4 or not parts[0].isdigit() or parts[1] not in ("pair", "commentary"):
        raise ServiceError(f"{value!r} is not a suggestion of this page")
    return int(parts[0]), parts[1], parts[2], parts[3]


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


def _locked_run(pk: int) -> Run:
    """Run ``pk``, locked until the transaction ends, so that two reviewers correcting it
    at once apply their decisions one after the other, each on top of the other's (on
    SQLite every transaction takes the write lock as it starts: settings.py)."""
    return Run.objects.select_for_update(of=("self",)).get(pk=pk)


def _paired_step(run: Run, expected_id: str) -> str:
    """The step obligation ``expected_id`` is paired with in the run's reading now."""
    for a in (run.report or {}).get("alignment", []):
        if a["expected"] == expected_id:
            return str(a["observed"])
    raise ServiceError(f"{expected_id!r} is not paired on this run: nothing to unpair")


def _corrected(run: Run, corrections: Corrections):
    """The report, overlay and assessment of ``run`` with ``corrections`` applied (the
    invariant scores the LLM judged for the run are reused, never asked for again)."""
    from matching.pipeline import Options, judge_trace  # loads the engine on first use

    observed = observed_from_data(run.observed)
    observed.invariants.update(run.judged_invariants or {})
    options = Options(
        mode=run.mode,
        extractor=run.extractor,
        corrections=corrections,
        thresholds=run_thresholds(run),
        overlay=True,
    )
    try:
        outcome = judge_trace(
            run_contract(run), run.query_key, observed, options, enactments=run_enactments(run)
        )
    except (ContractEvalError, ValueError) as exc:
        raise ServiceError(str(exc)) from exc
    assert outcome.overlay is not None
    return outcome.report, outcome.overlay, outcome.assessment


def _store(run: Run, user, c: Corrections, more: Corrections) -> RunCorrection:
    """Store the corrected reading as the run's (inside the caller's transaction)."""
    report, overlay, assessed = _corrected(run, c)
    # the engine's own overlay keeps every step, commentary included
    shown = (run.automatic or {}).get("overlay") or run.overlay or {}
    texts = {o: step_text(shown, o) for _, o in more.pair}
    run.keep_automatic()
    run.read(report, overlay)
    run.set_assessment(assessed)
    run.save(update_fields=[*READING_FIELDS, "automatic"])
    run_outcome_record(run=run)
    row = RunCorrection.objects.create(
        run=run,
        corrections=c.to_data(),
        report=report,
        overlay=overlay,
        verdict=report["verdict"],
        reviewer=actor(user),
    )
    for e, o in more.pair:
        if texts[o]:
            Enactment.objects.get_or_create(
                contract=run.contract,
                node_id=e,
                text=texts[o],
                defaults={"run": run, "step_id": o, "reviewer": actor(user)},
            )
    kinds = [k for k, v in more.to_data().items() if v]
    action = kinds[0] if len(kinds) == 1 else "correct"  # pair, unpair, commentary
    _record(run, user, action, {**more.to_data(), "verdict": row.verdict})
    return row


def _record(run: Run, user, action: str, after: dict[str, Any]) -> None:
    AuditRecord.objects.create(
        contract=run.contract,
        user=actor(user),
        action=action,
        object_type="run",
        object_id=str(run.pk),
        after=after,
    )
