"""Queries in the workspace: the live preview of a query's expected graph, save, delete."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from .. import services
from ..forms import QueryForm, VersionForm
from ..models import Query
from ..permissions import EDIT, VIEW, contract_for
from ..selectors import contracts as contract_reads
from ..selectors import workspace as ws
from .common import error_status, form_errors, workspace_url
from .workspace import workspace_context


def _query_state(request, contract, data):
    rows = contract_reads.load_contract_rows(contract)
    # No parameters (the Queries tab loading): a new, unbound form whose version is 0;
    # bound to the empty data it would render a blank version and every save would fail.
    form = QueryForm(data or None, intents=ws.intent_choices(rows), initial={"version": 0})
    intents = data.getlist("intents") if data else []
    preview = ws.query_preview(rows, intents, form.branches() if data else {})
    return form, preview


@login_required
@vary_on_headers("HX-Request")
@require_GET
def query_preview(request, pk):
    contract, membership = contract_for(request.user, pk, VIEW)
    data = request.GET.copy()
    if "load" in data:
        if not data["load"].isdigit():
            raise Http404("no such query")
        query = get_object_or_404(Query, pk=int(data["load"]), contract=contract)
        data = _query_data(query)
    form, preview = _query_state(request, contract, data)
    ctx = workspace_context(request, contract, membership, query_form=form, preview=preview)
    if not request.htmx:  # a plain link: the whole workspace, queries tab open
        return render(request, "audit/workspace.html", {**ctx, "open_tab": "queries"})
    return render(request, "audit/workspace.html#queries", ctx)


def _query_data(query: Query):

    data = QueryDict(mutable=True)
    data["query_id"], data["text"] = query.query_id, query.text
    data["version"] = str(query.version)
    data.setlist("intents", query.intents)
    for decision, outcome in query.branches.items():
        data[f"{QueryForm.BRANCH_PREFIX}{decision}"] = outcome
    return data


@login_required
@vary_on_headers("HX-Request")
@require_POST
def query_save(request, pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    form, preview = _query_state(request, contract, request.POST)
    error, status = "", 422
    if not form.is_valid():
        error = form_errors(form)
    elif preview.expected is None:
        error = preview.error or "choose an outcome for every active decision"
    else:
        document = services.query_document(
            form.cleaned_data["query_id"],
            form.cleaned_data["text"],
            form.cleaned_data["intents"],
            preview.branches,
        )
        try:
            saved = services.query_save(
                contract=contract,
                user=request.user,
                document=document,
                expected_version=form.cleaned_data["version"],
            )
        except services.ServiceError as exc:
            error, status = str(exc), error_status(exc)
        else:  # the form stays open on the saved query, now at its new version
            form, preview = _query_state(request, contract, _query_data(saved))
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect(workspace_url(contract))
    ctx = workspace_context(request, contract, membership, query_form=form, preview=preview)
    ctx["query_error"], ctx["query_saved"] = error, not error
    return render(request, "audit/_update_queries.html", ctx, status=status if error else 200)


@login_required
@vary_on_headers("HX-Request")
@require_POST
def query_delete(request, pk, query_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    query = get_object_or_404(Query, pk=query_pk, contract=contract)
    form, error, status = VersionForm(request.POST), "", 200
    if not form.is_valid():
        error, status = form_errors(form), 422
    else:
        try:
            services.query_delete(
                query=query, user=request.user, expected_version=form.cleaned_data["version"]
            )
        except services.ServiceError as exc:
            error, status = str(exc), error_status(exc)
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect(workspace_url(contract))
    ctx = workspace_context(request, contract, membership, with_queries=True)
    ctx["query_error"] = error
    return render(request, "audit/_update_queries.html", ctx, status=status)
