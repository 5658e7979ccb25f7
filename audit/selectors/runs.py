"""Reads of runs and batches: what may be run, the run list and inbox filters, the
reviewer inbox, a run's trace cut into pieces, and a batch's per-family table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from django.core.cache import cache
from django.db.models import Exists, OuterRef, QuerySet, Subquery

from ..models import (
    ASSESSMENT_RANK,
    FAMILY_FIELDS,
    Contract,
    ContractStatus,
    Project,
    ReviewVerdict,
    Run,
    RunStatus,
)
from .workspace import cut_text


def runnable_contracts(project: Project) -> list[Contract]:
    """The audited contract versions of ``project`` with their queries (newest first)."""
    return list(
        Contract.objects.filter(project=project, status=ContractStatus.AUDITED)
        .prefetch_related("queries")
        .order_by("key", "-version")
    )


def annotate_latest_verdict(qs: QuerySet[Run]) -> QuerySet[Run]:
    """Each run with its latest verdict: ``latest_agrees`` (None without a verdict; a
    verdict's ``agrees`` is never null), ``latest_note``, ``latest_reviewer``.

    Scalar subqueries only, evaluated for the rows a page returns. An ``EXISTS`` in the
    select list would let PostgreSQL hash every verdict of the database first (15 ms
    per inbox page at 20,000 verdicts); whether a run has a verdict is
    ``latest_agrees is not None``, and the filter uses :func:`reviewed`.
    """
    latest = ReviewVerdict.objects.filter(run=OuterRef("pk")).order_by("-created_at", "-pk")
    return qs.annotate(
        latest_agrees=Subquery(latest.values("agrees")[:1]),
        latest_note=Subquery(latest.values("note")[:1]),
        latest_reviewer=Subquery(latest.values("reviewer__username")[:1]),
    )


def reviewed(qs: QuerySet[Run], yes: bool) -> QuerySet[Run]:
    """The runs of ``qs`` that have (``yes``) or have not any reviewer verdict: a semi-
    or anti-join the planner reads in index order, stopping after a page."""
    has = Exists(ReviewVerdict.objects.filter(run=OuterRef("pk")))
    return qs.filter(has if yes else ~has)


# What a row of the runs list or the inbox shows: a page of 50 runs reads these and
# no JSON column (a run's warnings, usage and extraction were decoded for nothing).
LIST_FIELDS = (
    *("contract__key", "contract__version", "query_key", "model_name", "status"),
    *("verdict", "assessment", "p_violation", "mode", "extractor", "created_at"),
    "required_recall",
    *("observed_precision", *FAMILY_FIELDS.values()),
)


def list_rows(qs: QuerySet[Run]) -> QuerySet[Run]:
    """``qs`` reading only what a list row shows (:data:`LIST_FIELDS`)."""
    return qs.select_related("contract").only(*LIST_FIELDS)


def inbox(project: Project) -> QuerySet[Run]:
    """Failed (non_clean) finished runs of ``project``, with their latest verdict: those
    that need review first, then violations, then clean ones (by P(violation) and the
    project's thresholds), then runs without an assessment; newest first within each."""
    qs = Run.objects.filter(project=project, status=RunStatus.DONE, verdict="non_clean")
    qs = qs.order_by(ASSESSMENT_RANK, "-created_at", "-pk")
    return annotate_latest_verdict(qs.select_related("contract")).defer(
        "observed", "overlay", "report"
    )


def inbox_choices(project: Project) -> dict[str, list[str]]:
    """The values the inbox filters offer, kept a minute (each is a scan of the inbox;
    with a shared cache, CACHE_URL, one web process computes them for all) under the
    newest run of the inbox, so that a run that just finished is offered at once (the
    newest is the first entry of the inbox's index: one cheap lookup)."""
    newest = (
        Run.objects.filter(project=project, status=RunStatus.DONE, verdict="non_clean")
        .order_by("-created_at", "-id")
        .values_list("pk", flat=True)
        .first()
    )
    choices = cache.get_or_set(
        f"inbox-choices-{project.pk}-{newest}", lambda: _inbox_choices(project), timeout=60
    )
    return cast(dict[str, list[str]], choices)


def _inbox_choices(project: Project) -> dict[str, list[str]]:
    # One scan of the inbox, the distinct combinations picked by the database: a scan
    # per field cost ~500 ms at 100,000 runs, fetching the rows into Python ~100 ms of
    # CPU per page.
    combos = list(
        Run.objects.filter(project=project, status=RunStatus.DONE, verdict="non_clean")
        .order_by()
        .values_list("contract_id", "query_key", "model_name")
        .distinct()
    )
    contracts = Contract.objects.filter(pk__in={c for c, _, _ in combos})
    return {
        "contract": sorted(set(contracts.values_list("key", flat=True))),
        "query": sorted({q for _, q, _ in combos}),
        "model": sorted({m for _, _, m in combos if m}),
        "family": list(FAMILY_FIELDS),
    }


# What a run's page carries of each observed step beside the trace itself: the step's
# text is in the trace (its evidence span), so the label and description repeat it, and a
# trace of a thousand steps would carry its text twice more without this cut.
STEP_TEXT_SHOWN = 160
# Failures listed in the page's text view (the overlay lists every one, the report
# download has them all): an extra action per step of a long trace is a long list.
FAILURES_LISTED = 100


def _cut(text: Any, limit: int = STEP_TEXT_SHOWN) -> Any:
    if not isinstance(text, str) or len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "\u2026"


def page_payload(
    overlay: Mapping[str, Any], trace_in_page: bool, *, in_parts: bool = False
) -> dict[str, Any]:
    """The overlay as the run's page embeds it for the viewer: each step's label and
    description cut to :data:`STEP_TEXT_SHOWN` characters and, with ``trace_in_page``,
    without the trace text, which the viewer reads from the page's own ``<pre>``
    (``data-trace-text``) so that the page carries the trace once.

    The text stays in the payload when the HTML parser would not give it back as it
    is: a carriage return becomes a line feed, a leading line feed of a ``<pre>`` is
    dropped, and either would shift every span after it. A trace the page loads in
    parts (``in_parts``, audit/selectors/trace.py) is always left out: each part is
    an element of its own and carries a carriage return as a character reference.
    """
    trace = dict(overlay.get("trace") or {})
    text = trace.get("text") or ""
    if in_parts or (trace_in_page and "\r" not in text and not text.startswith("\n")):
        trace["text"] = None
    observed = [
        {**o, "label": _cut(o.get("label")), "description": _cut(o.get("description"))}
        for o in overlay.get("observed", [])
    ]
    return {**overlay, "trace": trace, "observed": observed}


def trace_segments(text: str, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The trace cut at every observed span boundary: ``[{text, ids, status}]``."""
    marks: list[tuple[int, int, str, str]] = []
    for o in nodes:
        for sp in o.get("spans") or o.get("evidence") or []:
            start, end = int(sp["start"]), int(sp["end"])
            if 0 <= start < end <= len(text):
                marks.append((start, end, o["id"], o.get("status", "")))
    return [
        {
            "text": text[a:b],
            "ids": " ".join(marks[i][2] for i in inside),
            "status": marks[inside[0]][3] if inside else "",
        }
        for a, b, inside in cut_text(text, [(m[0], m[1]) for m in marks])
    ]


@dataclass
class FamilyBar:
    name: str
    cases: int
    detection: float | None
    localization: float | None
    exact: float | None
    key: str = ""  # the family, or "clean": what its case list is named by


def family_rows(scores: Mapping[str, Any]) -> list[FamilyBar]:
    """The per-family table (ALGORITHMS.md §6), the clean row last, for the page."""
    rows = [
        FamilyBar(
            fam,
            r["cases"],
            r["detection"],
            r.get("localization"),
            r.get("exact_localization"),
            fam,
        )
        for fam, r in scores.get("per_family", {}).items()
    ]
    clean = scores.get("clean") or {}
    if clean.get("cases"):
        rows.append(
            FamilyBar(
                "clean (specificity)", clean["cases"], clean["specificity"], None, None, "clean"
            )
        )
    return rows


def next_unreviewed(run: Run) -> int | None:
    """The pk of the first other inbox run of ``run``'s project without a verdict, in the
    inbox's order (needs review first, then newest first).

    An anti-join on the inbox index that stops at the first match (0.2 ms at 100,000
    runs); the join ``verdicts__isnull=True`` was estimated at one row, so PostgreSQL
    sorted every failed run of the project to find it (740 ms).
    """
    qs = Run.objects.filter(project_id=run.project_id, status=RunStatus.DONE, verdict="non_clean")
    qs = reviewed(qs, yes=False).exclude(pk=run.pk)
    qs = qs.order_by(ASSESSMENT_RANK, "-created_at", "-pk")
    return qs.values_list("pk", flat=True).first()
