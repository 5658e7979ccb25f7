"""Compliance analytics of a contract: the rates per obligation and the clean-run trend,
two agent versions or models compared, and their CSV and SVG downloads. Any member of
the contract's project may read them."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from .. import charts
from ..filters import AnalyticsFilter, analytics_runs, filter_values
from ..forms import CompareForm, TrendForm
from ..forms.analytics import BUCKET_CHOICES
from ..permissions import VIEW, contract_for
from ..selectors import analytics
from .common import attachment

DOWNLOADS = {("obligations", "csv"), ("obligations", "svg"), ("trend", "csv"), ("trend", "svg")}
DOWNLOADS |= {("compare", "csv"), ("compare", "svg")}


def _inputs(request, contract) -> dict[str, Any]:
    """The filtered runs, the trend's period, the comparison asked for (if any) and
    every error in the parameters."""
    runs, errors = analytics_runs(request.GET, analytics.finished_runs(contract))
    trend = TrendForm(request.GET)
    bucket = trend.cleaned_data["bucket"] if trend.is_valid() else "day"
    errors |= trend.errors
    compare = CompareForm(request.GET) if "a" in request.GET or "b" in request.GET else None
    if compare is not None and not compare.is_valid():
        errors |= compare.errors
        compare = None
    return {"runs": runs, "bucket": bucket, "compare": compare, "errors": errors}


def _title(contract, what: str) -> str:
    return f"{what} · {contract.display_title} v{contract.version}"


def _context(request, contract, membership) -> dict[str, Any]:
    got = _inputs(request, contract)
    rates = analytics.obligation_rates(contract, got["runs"])
    trend = analytics.clean_trend(got["runs"], got["bucket"])
    return {
        "project": contract.project,
        "contract": contract,
        "membership": membership,
        "rates": rates,
        "trend": trend,
        "bucket": got["bucket"],
        "bucket_choices": BUCKET_CHOICES,
        "bucket_label": dict(BUCKET_CHOICES)[got["bucket"]],
        "errors": got["errors"],
        "params": filter_values(AnalyticsFilter, request.GET),
        "choices": analytics.filter_choices(contract),
        # built from escaped text only (audit.charts)
        "trend_svg": mark_safe(charts.trend_svg(trend, _title(contract, "Clean runs"))),  # noqa: S308
        "obligations_svg": mark_safe(  # noqa: S308
            charts.obligations_svg(rates, _title(contract, "Obligations"))
        ),
    }


@login_required
@vary_on_headers("HX-Request")
@require_GET
def analytics_page(request, pk):
    contract, membership = contract_for(request.user, pk, VIEW)
    ctx = _context(request, contract, membership)
    template = "audit/analytics.html#results" if request.htmx else "audit/analytics.html"
    return render(request, template, ctx, status=400 if ctx["errors"] else 200)


def _compare_context(request, contract, membership) -> dict[str, Any]:
    got = _inputs(request, contract)
    form, result, svg = got["compare"], None, ""
    if form is not None:
        d = form.cleaned_data
        result = analytics.compare(contract, got["runs"], d["by"], d["a"], d["b"])
        svg = mark_safe(charts.compare_svg(result, _title(contract, "Missed rate, B − A")))  # noqa: S308
    return {
        "project": contract.project,
        "contract": contract,
        "membership": membership,
        "form": form or CompareForm(initial={"by": request.GET.get("by") or "agent_version"}),
        "result": result,
        "compare_svg": svg,
        "errors": got["errors"],
        "params": filter_values(AnalyticsFilter, request.GET),
        "choices": analytics.filter_choices(contract),
    }


@login_required
@vary_on_headers("HX-Request")
@require_GET
def analytics_compare(request, pk):
    contract, membership = contract_for(request.user, pk, VIEW)
    ctx = _compare_context(request, contract, membership)
    page = "audit/analytics_compare.html"
    template = f"{page}#comparison" if request.htmx else page
    return render(request, template, ctx, status=400 if ctx["errors"] else 200)


@login_required
@require_GET
def analytics_download(request, pk, part, fmt):
    if (part, fmt) not in DOWNLOADS:
        raise Http404("download obligations, trend or compare as .csv or .svg")
    contract, _ = contract_for(request.user, pk, VIEW)
    got = _inputs(request, contract)
    if got["errors"] or (part == "compare" and got["compare"] is None):
        raise Http404("no such table: check the parameters")
    body = _download(contract, part, fmt, got)
    kind = "text/csv; charset=utf-8" if fmt == "csv" else "image/svg+xml; charset=utf-8"
    return attachment(body, kind, f"contract-{contract.pk}-{part}.{fmt}")


def _download(contract, part: str, fmt: str, got: dict[str, Any]) -> str:
    runs = got["runs"]
    if part == "trend":
        trend = analytics.clean_trend(runs, got["bucket"])
        return (
            analytics.trend_csv(trend)
            if fmt == "csv"
            else charts.trend_svg(trend, _title(contract, "Clean runs"))
        )
    if part == "obligations":
        rates = analytics.obligation_rates(contract, runs)
        return (
            analytics.rates_csv(rates)
            if fmt == "csv"
            else charts.obligations_svg(rates, _title(contract, "Obligations"))
        )
    d = got["compare"].cleaned_data
    result = analytics.compare(contract, runs, d["by"], d["a"], d["b"])
    return (
        analytics.compare_csv(result)
        if fmt == "csv"
        else charts.compare_svg(result, _title(contract, "Missed rate, B − A"))
    )
