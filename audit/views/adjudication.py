"""The curator's adjudication of a double-annotated contract (the annotators' blind
view is :mod:`audit.views.blind`)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from .. import services
from ..models import Node
from ..permissions import CURATE, contract_for
from ..selectors import team as team_reads
from ..selectors.evidence import adjudication_table
from ..team_forms import CurationForm
from .common import form_errors


def _back(request, name: str, contract, error: str | None = None, anchor: str = ""):
    if error:
        messages.error(request, error)
    return redirect(reverse(name, args=[contract.pk]) + anchor)


def _context(contract, membership, user) -> dict:
    """The adjudication table and what is around it."""
    team = team_reads.team_of(contract)
    decisions: dict[int, dict[str, object]] = {}
    for d in team_reads.visible_decisions(contract, user, membership):
        decisions.setdefault(d.node_id, {})[d.user.get_username()] = d
    agreement = team_reads.agreement_of(contract) if team else None
    names = (agreement or {}).get("annotators") or team_reads.annotator_names(contract)
    rows = team_reads.adjudication_rows(contract)
    return {
        "contract": contract,
        "project": contract.project,
        "membership": membership,
        "team": team,
        "names": names,
        "rows": adjudication_table(contract, rows, decisions, names),
        "agreement": agreement,
        "open_comments": team_reads.open_comment_count(contract),
        "form": CurationForm(),
    }


@login_required
@require_GET
def adjudicate(request, pk):
    """The curator's side-by-side view: disagreements first, path-changing at the top."""
    contract, membership = contract_for(request.user, pk, CURATE)
    if not team_reads.may_see_all(contract, request.user, membership):
        raise PermissionDenied("an annotator of this contract cannot adjudicate it")
    ctx = _context(contract, membership, request.user)
    return render(request, "audit/team/adjudicate.html", ctx)


def _row(request, contract, membership, node, error: str = ""):
    """After a choice: the node's row of the table (htmx), else back to the page."""
    if not request.htmx:
        return _back(request, "audit:adjudicate", contract, error, f"#n-{node.pk}")
    ctx = _context(contract, membership, request.user)
    ctx["t"] = next(t for t in ctx["rows"] if t.row.node.pk == node.pk)
    ctx["row_error"] = error
    status = 422 if error else 200
    return render(request, "audit/team/adjudicate.html#row", ctx, status=status)


@login_required
@require_POST
def adjudication_start(request, pk):
    contract, _ = contract_for(request.user, pk, CURATE)
    try:
        services.adjudication_start(contract=contract, user=request.user)
    except services.ServiceError as exc:
        return _back(request, "audit:adjudicate", contract, str(exc))
    return _back(request, "audit:adjudicate", contract)


@login_required
@vary_on_headers("HX-Request")
@require_POST
def curate(request, pk, node_pk):
    contract, membership = contract_for(request.user, pk, CURATE)
    node = get_object_or_404(
        Node.objects.select_related("contract__artifact"), pk=node_pk, contract=contract
    )
    form = CurationForm(request.POST)
    if not form.is_valid():
        return _row(request, contract, membership, node, form_errors(form))
    data = form.cleaned_data
    try:
        services.curation_choose(
            node=node,
            user=request.user,
            pick=data.get("pick") or None,
            action=data.get("action") or None,
            fields=data["fields"],
        )
    except services.ServiceError as exc:
        return _row(request, contract, membership, node, str(exc))
    return _row(request, contract, membership, node)


@login_required
@require_POST
def mark_audited(request, pk):
    """Mark the curated contract audited from the adjudication page."""
    contract, _ = contract_for(request.user, pk, CURATE)
    try:
        services.contract_mark_audited(contract=contract, user=request.user)
    except services.ServiceError as exc:
        return _back(request, "audit:adjudicate", contract, str(exc))
    messages.success(request, f"{contract.key} v{contract.version} is audited")
    return _back(request, "audit:team", contract)
