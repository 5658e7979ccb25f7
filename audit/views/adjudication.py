"""Double annotation pages: an annotator's blind view, the curator's adjudication."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from .. import services
from ..models import Node
from ..permissions import CURATE, EDIT, contract_for
from ..selectors import team as team_reads
from ..selectors.contracts import load_contract_rows
from ..team_forms import CurationForm, DecisionForm
from .common import form_errors


def _back(request, name: str, contract, error: str | None = None, anchor: str = ""):
    if error:
        messages.error(request, error)
    return redirect(reverse(name, args=[contract.pk]) + anchor)


@login_required
@require_GET
def annotate(request, pk):
    """The annotator's own copy: every node with their decision, nobody else's."""
    contract, membership = contract_for(request.user, pk, EDIT)
    rows = load_contract_rows(contract)
    mine = team_reads.own_decisions(contract, request.user)
    items = [
        {
            "node": n,
            "quotes": [rows.text[s.start : s.end] for s in rows.spans.get(n.pk, [])],
            "decision": mine.get(n.pk),
        }
        for n in rows.nodes
    ]
    ctx = {
        "contract": contract,
        "project": contract.project,
        "membership": membership,
        "team": team_reads.team_of(contract),
        "items": items,
        "progress": team_reads.contract_progress(contract, request.user),
        "form": DecisionForm(),
    }
    return render(request, "audit/team/annotate.html", ctx)


@login_required
@require_POST
def decide(request, pk, node_pk):
    contract, _ = contract_for(request.user, pk, EDIT)
    node = get_object_or_404(
        Node.objects.select_related("contract__artifact"), pk=node_pk, contract=contract
    )
    form = DecisionForm(request.POST)
    if not form.is_valid():
        return _back(request, "audit:annotate", contract, form_errors(form), f"#n-{node.pk}")
    data = form.cleaned_data
    try:
        services.decision_record(
            node=node,
            user=request.user,
            action=data["action"],
            fields=data["fields"],
            expected_version=data.get("expected_version"),
        )
    except services.ServiceError as exc:
        return _back(request, "audit:annotate", contract, str(exc), f"#n-{node.pk}")
    return _back(request, "audit:annotate", contract, anchor=f"#n-{node.pk}")


@login_required
@require_GET
def adjudicate(request, pk):
    """The curator's side-by-side view: disagreements first, path-changing at the top."""
    contract, membership = contract_for(request.user, pk, CURATE)
    if not team_reads.may_see_all(contract, request.user, membership):
        raise PermissionDenied("an annotator of this contract cannot adjudicate it")
    team = team_reads.team_of(contract)
    decisions: dict[int, dict[str, object]] = {}
    for d in team_reads.visible_decisions(contract, request.user, membership):
        decisions.setdefault(d.node_id, {})[d.user.get_username()] = d
    rows = team_reads.adjudication_rows(contract)
    ctx = {
        "contract": contract,
        "project": contract.project,
        "membership": membership,
        "team": team,
        "rows": [(r, decisions.get(r.node.pk, {})) for r in rows],
        "agreement": team_reads.agreement_of(contract) if team else None,
        "open_comments": team_reads.open_comment_count(contract),
        "form": CurationForm(),
    }
    return render(request, "audit/team/adjudicate.html", ctx)


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
@require_POST
def curate(request, pk, node_pk):
    contract, _ = contract_for(request.user, pk, CURATE)
    node = get_object_or_404(
        Node.objects.select_related("contract__artifact"), pk=node_pk, contract=contract
    )
    form = CurationForm(request.POST)
    if not form.is_valid():
        return _back(request, "audit:adjudicate", contract, form_errors(form), f"#n-{node.pk}")
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
        return _back(request, "audit:adjudicate", contract, str(exc), f"#n-{node.pk}")
    return _back(request, "audit:adjudicate", contract, anchor=f"#n-{node.pk}")


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
