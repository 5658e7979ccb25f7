"""Blind annotation in the workspace: the outline, the highlighted artifact, the node
panel and the keys of the audit workspace, over the annotator's own copy of a
double-annotated contract. Each decision goes to the team services as that annotator's
blind decision; htmx answers swap the panel, the outline, the text and the header.
Nothing here reads another annotator's decisions."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from .. import services
from ..models import Node, NodeType, TeamPhase
from ..permissions import EDIT, contract_for
from ..selectors import team as team_reads
from ..selectors import workspace as ws
from ..selectors.contracts import load_contract_rows
from ..team_forms import BlindEditForm, BlindSpanForm, DecisionForm
from .common import error_status, form_errors
from .workspace import panel_context


def blind_url(contract, node=None) -> str:
    url = reverse("audit:annotate", args=[contract.pk])
    return f"{url}?node={node.node_id}" if node is not None else url


def _notice(team, can_decide: bool, curator: bool) -> str:
    if team is None:
        return "This contract is not double-annotated: review it in the workspace."
    if team.phase != TeamPhase.ANNOTATING:
        return "Adjudication has started: the annotators' decisions are final."
    if curator:
        return "You curate this contract: the annotators decide; you adjudicate their copies."
    return "" if can_decide else "You are not assigned to annotate this contract."


def _next_undecided(rows, after: Node | None) -> str | None:
    """The node id of the first undecided node after ``after`` in outline order."""
    order = [r.node for r in ws.outline(rows)]
    at = next((i for i, n in enumerate(order) if after and n.pk == after.pk), -1)
    for step in range(1, len(order) + 1):
        node = order[(at + step) % len(order)]
        if node.review_status == "proposed":
            return node.node_id
    return after.node_id if after else None


def blind_context(
    contract, membership, user, *, selected_id=None, advance=False, **panel
) -> dict[str, Any]:
    """The blind workspace of ``user``: their copy only (``advance``: the panel of the
    next undecided node after ``selected_id``)."""
    team = team_reads.team_of(contract)
    mine = team_reads.own_decisions(contract, user)
    rows = team_reads.blind_rows(load_contract_rows(contract), mine)
    selected = ws.find_node(rows, selected_id)
    if advance:
        selected = ws.find_node(rows, _next_undecided(rows, selected))
    ctx = panel_context(contract, membership, rows, selected, **panel)
    can_decide = team_reads.may_decide(contract, user)
    curator = team is not None and team_reads.curates(contract, user, membership)
    base = reverse("audit:blind_panel", args=[contract.pk, 0]).removesuffix("0/")
    ctx.update(
        blind=True,
        can_edit=False,
        edge_form=None,
        team=team,
        can_decide=can_decide,
        notice=_notice(team, can_decide, curator),
        decision=mine.get(selected.pk) if selected else None,
        panel_base=base,
        outline=ws.outline(rows),
        segments=ws.segments(rows),
        counts=ws.status_counts(n.review_status for n in rows.nodes),
        progress=team_reads.Progress(len(mine), len(rows.nodes), 0),
        legend=[*NodeType.choices, ("invariant", "Invariant")],
        node_types=NodeType.choices,
    )
    return ctx


def _answer(request, contract, membership, node, *, error="", status=200, **extra):
    """After a decision: the changed parts of the blind workspace, or a redirect."""
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect(blind_url(contract, node))
    ctx = blind_context(
        contract, membership, request.user, selected_id=node.node_id, error=error, **extra
    )
    return render(request, "audit/team/_blind_update.html", ctx, status=status)


def _node(contract, node_pk) -> Node:
    return get_object_or_404(
        Node.objects.select_related("contract__artifact"), pk=node_pk, contract=contract
    )


@login_required
@require_GET
def annotate(request, pk):
    """The annotator's blind workspace."""
    contract, membership = contract_for(request.user, pk, EDIT)
    selected = request.GET.get("node")
    ctx = blind_context(contract, membership, request.user, selected_id=selected)
    return render(request, "audit/team/blind.html", ctx)


@login_required
@vary_on_headers("HX-Request")
@require_GET
def blind_panel(request, pk, node_pk):
    """One node of the annotator's copy (the panel)."""
    contract, membership = contract_for(request.user, pk, EDIT)
    node = _node(contract, node_pk)
    if not request.htmx:
        return redirect(blind_url(contract, node))
    ctx = blind_context(contract, membership, request.user, selected_id=node.node_id)
    return render(request, "audit/workspace.html#detail", ctx)


@login_required
@vary_on_headers("HX-Request")
@require_POST
def decide(request, pk, node_pk):
    """Confirm, reject or edit a node in the annotator's own copy."""
    contract, membership = contract_for(request.user, pk, EDIT)
    node = _node(contract, node_pk)
    form = DecisionForm(request.POST)
    if not form.is_valid():
        return _answer(request, contract, membership, node, error=form_errors(form), status=422)
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
        return _answer(
            request, contract, membership, node, error=str(exc), status=error_status(exc)
        )
    advance = bool(request.POST.get("advance")) and data["action"] != "edit"
    return _answer(request, contract, membership, node, advance=advance)


@login_required
@vary_on_headers("HX-Request")
def decide_edit(request, pk, node_pk):
    """GET: the edit form of a node of the copy; POST: save it (merged, see the service)."""
    contract, membership = contract_for(request.user, pk, EDIT)
    node = _node(contract, node_pk)
    if request.method != "POST":
        if not request.htmx:
            return redirect(blind_url(contract, node))
        ctx = blind_context(contract, membership, request.user, selected_id=node.node_id)
        ctx.update(
            panel="blind_edit",
            form=BlindEditForm(initial=BlindEditForm.initial_for(ctx["selected"])),
        )
        return render(request, "audit/workspace.html#detail", ctx)
    form = BlindEditForm(request.POST)
    fail = {"panel": "blind_edit", "form": form, "status": 422}
    if not form.is_valid():
        return _answer(request, contract, membership, node, error=form_errors(form), **fail)
    try:
        services.decision_edit(
            node=node,
            user=request.user,
            fields=form.edited_fields(),
            expected_version=form.cleaned_data.get("expected_version"),
        )
    except services.ServiceError as exc:
        fail["status"] = error_status(exc)  # 409 for an edit of a copy changed meanwhile
        return _answer(request, contract, membership, node, error=str(exc), **fail)
    return _answer(request, contract, membership, node)


@login_required
@vary_on_headers("HX-Request")
@require_POST
def decide_evidence(request, pk, node_pk):
    """Add the selected text to (or take a span from) the evidence of the copy."""
    contract, membership = contract_for(request.user, pk, EDIT)
    node = _node(contract, node_pk)
    form = BlindSpanForm(request.POST)
    if not form.is_valid():
        return _answer(request, contract, membership, node, error=form_errors(form), status=422)
    data = form.cleaned_data
    span = (data["start"], data["end"])
    try:
        services.decision_edit(
            node=node,
            user=request.user,
            add_span=None if data["remove"] else span,
            drop_span=span if data["remove"] else None,
            expected_version=data.get("expected_version"),
        )
    except services.ServiceError as exc:
        return _answer(
            request, contract, membership, node, error=str(exc), status=error_status(exc)
        )
    return _answer(request, contract, membership, node)
