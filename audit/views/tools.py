"""The tool catalogue page of a contract: import a tools list, confirm suggested
``meta.tool`` bindings, declare read-only tools as permitted lookups.

Access check -> form -> one service call -> render. Called by htmx, a change answers
with the page's ``panel`` partial (a refusal with 422, the status htmx swaps in place);
without JavaScript it redirects back to the page, or shows the page with the refusal:
413 past a size limit, 400 otherwise.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from .. import services
from ..fields import form_status
from ..forms.tools import ReadOnlyToolsForm, ToolBindForm, ToolImportForm, first_error
from ..models import Node
from ..permissions import EDIT, VIEW, contract_for, has_role
from ..selectors import tools as tool_reads


def _context(contract, membership, *, error: str = "", form=None) -> dict:
    nodes = tool_reads.contract_nodes(contract)
    writable = not contract.is_read_only and has_role(membership.role, EDIT)
    rows = tool_reads.tool_rows(contract, nodes)
    return {
        "contract": contract,
        "project": contract.project,
        "tools": rows,
        "suggestions": tool_reads.tool_suggestions(contract, nodes) if writable else [],
        "can_edit": writable,
        "import_form": form or ToolImportForm(),
        "error": error,
    }


def _done(request, contract, membership, *, error: str = "", form=None, status: int = 400):
    if not request.htmx and not error:
        return redirect(reverse("audit:tools", args=[contract.pk]))
    contract.refresh_from_db()  # the service wrote through its own locked copy
    ctx = _context(contract, membership, error=error, form=form)
    if not request.htmx:
        return render(request, "audit/tools.html", ctx, status=status)
    return render(request, "audit/tools.html#panel", ctx, status=422 if error else 200)


@login_required
@vary_on_headers("HX-Request")
@require_GET
def tools_page(request, pk):
    contract, membership = contract_for(request.user, pk, VIEW)
    template = "audit/tools.html#panel" if request.htmx else "audit/tools.html"
    return render(request, template, _context(contract, membership))


@login_required
@vary_on_headers("HX-Request")
@require_POST
def tools_import(request, pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    form = ToolImportForm(request.POST, request.FILES)
    if not form.is_valid():
        error, status = first_error(form), form_status(form)
        return _done(request, contract, membership, error=error, form=form, status=status)
    try:
        services.tool_catalogue_import(
            contract=contract, user=request.user, source=form.cleaned_data["source"]
        )
    except services.ServiceError as exc:
        status = exc.status or 400
        return _done(request, contract, membership, error=str(exc), form=form, status=status)
    return _done(request, contract, membership)


@login_required
@vary_on_headers("HX-Request")
@require_POST
def tool_bind(request, pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    form = ToolBindForm(request.POST)
    if not form.is_valid():
        return _done(request, contract, membership, error=first_error(form))
    node = get_object_or_404(Node, pk=form.cleaned_data["node"], contract=contract)
    try:
        services.tool_binding_confirm(
            node=node,
            user=request.user,
            tool=form.cleaned_data["tool"],
            expected_version=form.cleaned_data["version"],
        )
    except services.ServiceError as exc:
        return _done(request, contract, membership, error=str(exc))
    return _done(request, contract, membership)


@login_required
@vary_on_headers("HX-Request")
@require_POST
def tools_read_only(request, pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    names = [t.tool.name for t in tool_reads.tool_rows(contract, [])]
    form = ReadOnlyToolsForm(request.POST, names=names)
    if not form.is_valid():
        return _done(request, contract, membership, error=first_error(form))
    try:
        services.tools_declare_read_only(
            contract=contract, user=request.user, names=form.cleaned_data["names"]
        )
    except services.ServiceError as exc:
        return _done(request, contract, membership, error=str(exc))
    return _done(request, contract, membership)
