"""Invariants in the workspace: create from a selection, edit, delete."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from matching.propose import suggest_id

from .. import services
from ..forms import InvariantForm, NewInvariantForm, SpanForm, VersionForm
from ..models import Invariant
from ..permissions import EDIT, contract_for
from .common import error_status, form_errors, workspace_url
from .workspace import respond, workspace_context


@login_required
@vary_on_headers("HX-Request")
def invariant_new(request, pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    if request.method == "POST":
        form = NewInvariantForm(request.POST, contract=contract)
        if form.is_valid():
            data = form.cleaned_data
            try:
                services.invariant_create(
                    contract=contract,
                    user=request.user,
                    data=data,
                    start=data["start"],
                    end=data["end"],
                )
            except services.ServiceError as exc:
                return respond(
                    request,
                    contract,
                    membership,
                    error=str(exc),
                    status=422,
                    panel="new_invariant",
                    form=form,
                )
            return respond(request, contract, membership)
        return respond(
            request,
            contract,
            membership,
            status=422,
            panel="new_invariant",
            form=form,
            error=form_errors(form),
        )
    span = SpanForm(request.GET)
    if not span.is_valid() or not request.htmx:
        return redirect(workspace_url(contract))
    start, end = span.cleaned_data["start"], span.cleaned_data["end"]
    quote = contract.artifact.text[start:end]
    form = NewInvariantForm(
        initial={
            "start": start,
            "end": end,
            "label": " ".join(quote.split())[:120],
            "inv_id": suggest_id(quote),
        },
        contract=contract,
    )
    ctx = workspace_context(request, contract, membership, panel="new_invariant", form=form)
    ctx["quote"] = quote
    return render(request, "audit/workspace.html#detail", ctx)


@login_required
@vary_on_headers("HX-Request")
def invariant_edit(request, pk, inv_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    invariant = get_object_or_404(Invariant, pk=inv_pk, contract=contract)
    if request.method == "POST":
        form = InvariantForm(request.POST, contract=contract)
        if form.is_valid():
            try:
                services.invariant_update(
                    invariant=invariant,
                    user=request.user,
                    data=form.cleaned_data,
                    expected_version=form.cleaned_data["version"],
                )
            except services.ServiceError as exc:
                return respond(
                    request,
                    contract,
                    membership,
                    error=str(exc),
                    status=error_status(exc),
                    panel="edit_invariant",
                    form=form,
                    edit_invariant=invariant,
                )
            return respond(request, contract, membership)
        return respond(
            request,
            contract,
            membership,
            status=422,
            panel="edit_invariant",
            form=form,
            edit_invariant=invariant,
        )
    form = InvariantForm(
        initial={
            "inv_id": invariant.inv_id,
            "label": invariant.label,
            "description": invariant.description,
            "check": invariant.machine_check,
            "applies_to": list(invariant.applies_to.values_list("pk", flat=True)),
            "version": invariant.version,
        },
        contract=contract,
    )
    ctx = workspace_context(
        request, contract, membership, panel="edit_invariant", form=form, edit_invariant=invariant
    )
    # a plain link renders the whole workspace with the form in the detail panel
    return render(request, "audit/workspace.html" + ("#detail" if request.htmx else ""), ctx)


@login_required
@vary_on_headers("HX-Request")
@require_POST
def invariant_delete(request, pk, inv_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    invariant = get_object_or_404(Invariant, pk=inv_pk, contract=contract)
    form = VersionForm(request.POST)
    if not form.is_valid():
        return respond(request, contract, membership, error=form_errors(form), status=422)
    try:
        services.invariant_delete(
            invariant=invariant, user=request.user, expected_version=form.cleaned_data["version"]
        )
    except services.ServiceError as exc:
        return respond(request, contract, membership, error=str(exc), status=error_status(exc))
    return respond(request, contract, membership)
