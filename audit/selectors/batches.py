"""Reads of a finished batch's cases: one family's cases with their outcome (ALGORITHMS.md
§6, the definitions of :func:`matching.suite.score`), and one case evaluated again for
its overlay.

The engine's suite scoring and evaluation (numpy, networkx) are imported by the
functions that use them: the URLconf imports this module when the web app starts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.http import Http404

from matching.errors import ContractEvalError
from matching.model import FAMILIES, Case

from ..models import Batch, BatchChunk, ExtractorName
from .runs import page_payload

if TYPE_CHECKING:
    from matching.suite import CaseResult

CLEAN = "clean"
# The drill-down "families": the perturbation families and the clean cases flagged.
DRILL_FAMILIES = (*FAMILIES, CLEAN)
OUTCOMES = ("localised", "detected", "missed")


@dataclass
class CaseRow:
    id: str
    outcome: str
    verdict: str | None
    location: str | None
    failures: list[tuple[str, str]]
    error: str | None


@dataclass
class FamilyCases:
    family: str
    rows: list[CaseRow]
    counts: dict[str, int] = field(default_factory=dict)


def _results(batch: Batch):
    from ..services.chunks import case_results

    for chunk in BatchChunk.objects.filter(batch=batch).only("index", "results"):
        yield from case_results(chunk)


def _clean_outcome(r: CaseResult) -> str | None:
    """A clean case the evaluator did not pass: ``"flagged"``, ``"errored"`` or None."""
    from matching.suite import detected

    if r.verdict is None:
        return "errored"
    return "flagged" if detected(r) else None


def batch_family_cases(batch: Batch, family: str) -> FamilyCases:
    """The cases of ``family`` (every outcome), or the clean cases not passed (``"clean"``).

    Raises Http404 for a name that is neither a family nor ``"clean"``.
    """
    from matching.suite import outcome

    if family not in DRILL_FAMILIES:
        raise Http404("no such family")
    locations = not batch.judge
    rows: list[CaseRow] = []
    for r in _results(batch):
        if family == CLEAN:
            label = _clean_outcome(r) if r.clean else None
        elif not r.clean and r.family == family:
            label = outcome(r, locations=locations)
        else:
            label = None
        if label is not None:
            rows.append(CaseRow(r.id, label, r.verdict, r.location, r.failures, r.error))
    return FamilyCases(family, rows, dict(Counter(row.outcome for row in rows)))


@dataclass
class CaseView:
    case: Case
    result: CaseResult
    payload: dict[str, Any] | None
    error: str = ""
    note: str = ""


def _find(batch: Batch, case_id: str) -> tuple[Case, CaseResult, Any]:
    """The case, its stored result and its (audited) contract."""
    from ..services.chunks import case_results, chunk_suite

    for chunk in BatchChunk.objects.filter(batch=batch).only("index", "results", "cases", "packed"):
        hit = next((r for r in case_results(chunk) if r.id == case_id), None)
        if hit is None:
            continue
        suite = chunk_suite(batch, chunk)
        case = next((c for c in suite.cases if c.id == case_id), None)
        if case is not None:
            return case, hit, suite.contracts[case.contract]
    raise Http404("no such case")


def batch_case_view(batch: Batch, case_id: str) -> CaseView:
    """Case ``case_id`` of ``batch`` evaluated as the batch did (mode and extractor), with
    the overlay payload of that evaluation; Http404 when the batch has no such case."""
    from matching.pipeline import Options, judge_trace

    case, result, contract = _find(batch, case_id)
    note = ""
    extractor = batch.extractor
    if batch.judge:
        note = "The batch asked an LLM judge; shown here: the engine's evaluation of the case."
        extractor = ExtractorName.NONE
    elif extractor == ExtractorName.LLM:
        # Calling the LLM again from a page would cost a request per view and may answer
        # differently: the case's own graph stands in for the extraction.
        note = "The LLM extraction is not stored; shown here: the case's own observed graph."
        extractor = ExtractorName.NONE
    # warnings (an extractor's fallback) are the batch's to report, not this page's
    options = Options(mode=batch.mode, extractor=extractor, overlay=True, record_warnings=True)
    try:
        outcome = judge_trace(contract, case.query, case.observed, options)
    except (ContractEvalError, ValueError) as exc:
        return CaseView(case, result, None, error=str(exc), note=note)
    payload = page_payload(outcome.overlay or {}, trace_in_page=False)
    return CaseView(case, result, payload, note=note)
