"""Runs: the run list and the new-run form, a run's report page, its status poll,
downloads, the reviewer's verdict and retrying a failed run."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from matching.model import FAMILIES

from .. import services
from ..fields import form_status
from ..filters import RunListFilter, filter_values
from ..forms import RunForm, VerdictForm
from ..models import METRIC_FIELDS, Assessment, RunStatus
from ..permissions import RUN, TEACH, VERDICT, has_role, project_for, run_for
from ..selectors import exports
from ..selectors import runs as run_reads
from ..selectors import teaching as teaching_reads
from ..selectors import trace as trace_reads
from ..services.jobs import run_is_stale
from .common import LimitFirstPage, attachment, poll

METRIC_NAMES = {
    "required_recall": "Required recall",
    "observed_precision": "Observed precision",
    "edge_conformance": "Edge conformance",
    "branch_correctness": "Branch correctness",
    "invariant_score": "Invariants",
    "output_validity": "Output validity",
}


# every family reads as its name: "wrong_branch" is "Wrong branch"
FAMILY_NAMES = {f: f.replace("_", " ").capitalize() for f in FAMILIES}


# The filter's choices: a run's three-way assessment (semantic mode).
ASSESSMENTS = [(v, label) for v, label in Assessment.choices if v]


def _failure_rows(report):
    """The report's failures for the page: the family's name, and in semantic mode the
    failure's probability as a percent (None otherwise)."""
    return [
        {
            **f,
            "index": i,
            "name": FAMILY_NAMES.get(f["family"], f["family"]),
            "percent": None if f.get("probability") is None else round(100 * f["probability"]),
        }
        for i, f in enumerate(report.get("failures", []))
    ]


def _runs_context(project, membership, request, form=None, error=""):
    contracts = run_reads.runnable_contracts(project)
    qs = run_reads.list_rows(RunListFilter(request.GET, queryset=project.runs.all()).qs)
    params = filter_values(RunListFilter, request.GET)
    page = LimitFirstPage(qs, request.GET.get("page"))
    return {
        "project": project,
        "membership": membership,
        "form": form or RunForm(contracts=contracts),
        "has_contracts": bool(contracts),
        "page": page,
        "params": params,
        "error": error,
        "statuses": RunStatus.choices,
        "assessments": ASSESSMENTS,
    }


@login_required
@require_GET
def run_list(request, slug):
    project, membership = project_for(request.user, slug, RUN)
    return render(request, "audit/runs.html", _runs_context(project, membership, request))


@login_required
@require_POST
def run_create(request, slug):
    project, membership = project_for(request.user, slug, RUN)
    contracts = run_reads.runnable_contracts(project)
    form = RunForm(request.POST, request.FILES, contracts=contracts)
    error, status = "", form_status(form)
    if form.is_valid():
        d = form.cleaned_data
        contract = next((c for c in contracts if c.pk == d["contract_pk"]), None)
        if contract is None:
            error = "choose an audited contract of this project"
        else:
            try:
                run, created = services.run_create(
                    contract=contract,
                    user=request.user,
                    query_key=d["query_key"],
                    kind=d["input_kind"],
                    data=d["payload"],
                    source_kind=d["source_kind"],
                    mode=d["mode"],
                    extractor=d["extractor"],
                    model_name=d["model_name"],
                    agent_version=d.get("agent_version") or "",
                    judge_invariants=bool(d.get("judge_invariants")),
                    select=d.get("select") or "",
                    output=d.get("output") or "",
                )
            except services.ServiceError as exc:
                error, status = str(exc), exc.status or status
            else:
                if not created:
                    messages.info(
                        request, f"The same inputs were already run: this is run {run.pk}."
                    )
                return redirect("audit:run_detail", pk=run.pk)
    ctx = _runs_context(project, membership, request, form=form, error=error)
    return render(request, "audit/runs.html", ctx, status=status)


def run_context(run, membership, verdict_form=None, verdict_error=""):
    report = run.report or {}
    overlay = run.overlay
    trace_text, observed_nodes = trace_reads.run_trace(run)
    part = trace_reads.trace_part(trace_text, observed_nodes, 0)
    assert part is not None  # every trace, the empty one too, has a first part
    payload = None
    if overlay is not None:
        payload = run_reads.page_payload(overlay, trace_in_page=True, in_parts=part.count > 1)
    metrics = [
        (
            METRIC_NAMES[m],
            getattr(run, m),
            None if getattr(run, m) is None else round(getattr(run, m) * 100),
        )
        for m in METRIC_FIELDS
    ]
    failures = _failure_rows(report)
    return {
        "project": run.project,
        "membership": membership,
        "run": run,
        "stale": run_is_stale(run),
        "report": report,
        "failures": failures[: run_reads.FAILURES_LISTED],
        "failures_more": max(0, len(failures) - run_reads.FAILURES_LISTED),
        "metrics": metrics,
        "payload": payload,
        "overlay_url": None
        if payload is None or trace_reads.overlay_inline(payload)
        else reverse("audit:run_overlay", args=[run.pk]),
        "part": part,
        "observed_nodes": observed_nodes,
        "verdicts": list(run.verdicts.select_related("reviewer")),
        "can_verdict": has_role(membership.role, VERDICT),
        "verdict_form": verdict_form or VerdictForm(),
        "verdict_error": verdict_error,
        **teaching_reads.correction_context(run, has_role(membership.role, TEACH)),
        "next_unreviewed": run_reads.next_unreviewed(run),
    }


@login_required
@require_GET
def run_detail(request, pk):
    run, membership = run_for(request.user, pk)
    return render(request, "audit/run.html", run_context(run, membership))


@login_required
@require_GET
def run_trace_part(request, pk, index):
    """One part of a long trace (the page inlines the first): the next part's link
    follows it, as the page's script and htmx load them."""
    run, _ = run_for(request.user, pk, only=trace_reads.TRACE_FIELDS)
    part = trace_reads.trace_part(*trace_reads.run_trace(run), index)
    if part is None:
        raise Http404("no such part of the trace")
    return render(request, "audit/run.html#trace_part", {"run": run, "part": part})


@login_required
@require_GET
def run_overlay(request, pk):
    """The overlay's payload of a run whose page does not inline it (a long one)."""
    run, _ = run_for(request.user, pk, only=trace_reads.TRACE_FIELDS)
    if run.overlay is None:
        raise Http404("this run has no overlay")
    first = trace_reads.trace_part(*trace_reads.run_trace(run), 0)
    in_parts = first is not None and first.count > 1
    payload = run_reads.page_payload(run.overlay, trace_in_page=True, in_parts=in_parts)
    return JsonResponse(payload, json_dumps_params={"ensure_ascii": False})


@login_required
@vary_on_headers("HX-Request")
@require_GET
def run_status(request, pk):
    """Polled by htmx while the run is queued or running; then the page reloads."""
    run, _ = run_for(request.user, pk, only=("status",))
    return poll(request, run, "audit:run_detail", "audit/run.html#status", {"run": run})


@login_required
@require_GET
def run_report(request, pk):
    run, _ = run_for(request.user, pk)
    if run.report is None:
        raise Http404("this run has no report yet")
    body = json.dumps(run.report, indent=1, ensure_ascii=False) + "\n"
    return attachment(body, "application/json; charset=utf-8", f"run-{run.pk}-report.json")


@login_required
@require_GET
def run_export(request, pk, fmt):
    if fmt not in ("json", "csv"):
        raise Http404("export as .json or .csv")
    run, _ = run_for(request.user, pk)
    if fmt == "csv":
        return attachment(exports.run_csv(run), "text/csv; charset=utf-8", f"run-{run.pk}.csv")
    body = json.dumps(exports.run_export(run), indent=1, ensure_ascii=False) + "\n"
    return attachment(body, "application/json; charset=utf-8", f"run-{run.pk}.json")


@login_required
@require_POST
def run_verdict(request, pk):
    run, membership = run_for(request.user, pk, VERDICT)
    form = VerdictForm(request.POST)
    error = ""
    if form.is_valid():
        try:
            services.verdict_record(
                run=run,
                user=request.user,
                agrees=form.cleaned_data["agrees"],
                note=form.cleaned_data["note"],
            )
        except services.ServiceError as exc:
            error = str(exc)
        else:
            if request.htmx:  # the verdict bar again, with the new verdict on top
                ctx = run_context(run, membership)
                return render(request, "audit/run.html#verdict_bar", ctx)
            messages.success(request, f"Verdict recorded on run {run.pk}.")
            return redirect(f"{reverse('audit:run_detail', args=[run.pk])}#verdicts")
    else:
        error = "choose whether you agree with the report"
    ctx = run_context(run, membership, verdict_form=form, verdict_error=error)
    if request.htmx:  # the error beside the form, where the reviewer is looking
        return render(request, "audit/run.html#verdict_bar", ctx, status=422)
    return render(request, "audit/run.html", ctx, status=400)


@login_required
@require_POST
def run_retry(request, pk):
    run, _ = run_for(request.user, pk, RUN)
    try:
        services.run_retry(run=run, user=request.user)
    except services.ServiceError as exc:
        messages.error(request, str(exc))
    return redirect("audit:run_detail", pk=run.pk)
