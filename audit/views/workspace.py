"""The contract workspace: access check -> form -> one service call -> render.

Mutations are POST only (CSRF-protected). Called by htmx they answer with the parts of
the workspace that changed (the node panel, plus out-of-band outline, text, audit panel,
history and header); called without JavaScript they redirect back to the workspace.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from matching.propose import suggest_id

from .. import services
from ..forms import ContractDetailsForm, EdgeForm, NewNodeForm, NodeForm, QueryForm, SpanForm
from ..models import Edge, Node, NodeType, Span
from ..permissions import EDIT, REVIEW, UNTEACH, VIEW, contract_for, has_role
from ..selectors import contracts as contract_reads
from ..selectors import teaching as teaching_reads
from ..selectors import workspace as ws
from .common import workspace_url


def workspace_context(
    request,
    contract,
    membership,
    *,
    selected_id=None,
    panel="view",
    form=None,
    error="",
    query_form=None,
    preview=None,
    edit_invariant=None,
):
    rows = contract_reads.load_contract_rows(contract)
    audit = ws.audit_rows(rows)
    counts = ws.status_counts(rows)
    selected = ws.find_node(rows, selected_id)
    writable = not contract.is_read_only and has_role(membership.role, EDIT)
    detail = ws.node_detail(rows, selected) if selected else None
    if query_form is None:
        query_form = QueryForm(intents=ws.intent_choices(rows))
    if preview is None:
        preview = ws.query_preview(rows, [], {})
    return {
        "contract": contract,
        "project": contract.project,
        "membership": membership,
        "rows": rows,
        "outline": ws.outline(rows),
        "segments": ws.segments(rows),
        "audit": audit,
        "findings": _findings(audit, rows),
        "coverage_pct": round(audit.coverage * 100, 1),
        "counts": counts,
        "records": ws.history(contract),
        "legend": [*NodeType.choices, ("invariant", "Invariant")],
        "run": ws.latest_proposal_run(contract),
        "versions": ws.contract_versions(contract),
        "can_edit": writable,
        "can_review": has_role(membership.role, REVIEW),
        "enactments": teaching_reads.enactment_list(contract),
        "can_unteach": has_role(membership.role, UNTEACH),
        "can_mark_audited": ws.can_mark_audited(contract, audit, counts),
        "selected": selected,
        "detail": detail,
        "panel": panel,
        "form": form,
        "edge_form": EdgeForm(contract=contract, node=selected) if detail and writable else None,
        "error": error,
        "query_form": query_form,
        "preview": preview,
        "edit_invariant": edit_invariant,
        "details_form": _details_form(contract) if writable else None,
    }


def _details_form(contract) -> ContractDetailsForm:
    artifact = contract.artifact
    initial = {
        "title": contract.title,
        "domain": contract.domain,
        "media_type": artifact.media_type,
    }
    return ContractDetailsForm(initial=initial, current=artifact.media_type)


def _findings(audit, rows) -> list[tuple[str, Any, int | None]]:
    """The audit's errors and warnings, each with the pk of the node it names."""
    node_pks = {n.node_id: n.pk for n in rows.nodes}
    return [
        (kind, f, node_pks.get(f.node or ""))
        for kind, group in (("error", audit.errors), ("warning", audit.warnings))
        for f in group
    ]


def respond(request, contract, membership, *, node=None, error="", status=200, **extra):
    """After a change: the updated workspace parts (htmx) or a redirect."""
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect(workspace_url(contract, node))
    ctx = workspace_context(
        request,
        contract,
        membership,
        selected_id=node.node_id if node else None,
        error=error,
        **extra,
    )
    return render(request, "audit/_update.html", ctx, status=status)


@login_required
@require_GET
def workspace(request, pk):
    contract, membership = contract_for(request.user, pk, VIEW)
    ctx = workspace_context(request, contract, membership, selected_id=request.GET.get("node"))
    return render(request, "audit/workspace.html", ctx)


@login_required
@vary_on_headers("HX-Request")
@require_GET
def node_panel(request, pk, node_pk):
    contract, membership = contract_for(request.user, pk, VIEW)
    node = get_object_or_404(Node, pk=node_pk, contract=contract)
    if not request.htmx:
        return redirect(workspace_url(contract, node))
    ctx = workspace_context(request, contract, membership, selected_id=node.node_id)
    return render(request, "audit/workspace.html#detail", ctx)


@login_required
@vary_on_headers("HX-Request")
def node_edit(request, pk, node_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    node = get_object_or_404(Node, pk=node_pk, contract=contract)
    if request.method == "POST":
        form = NodeForm(request.POST, contract=contract, node=node)
        if form.is_valid():
            try:
                node = services.node_update(
                    node=node,
                    user=request.user,
                    data=form.cleaned_data,
                    expected_version=form.cleaned_data["version"] or node.version,
                )
            except services.ServiceError as exc:
                return respond(
                    request,
                    contract,
                    membership,
                    node=node,
                    error=str(exc),
                    status=422,
                    panel="edit",
                    form=form,
                )
            return respond(request, contract, membership, node=node)
        return respond(
            request, contract, membership, node=node, status=422, panel="edit", form=form
        )
    form = NodeForm(initial=NodeForm.initial_for(node), contract=contract, node=node)
    if not request.htmx:
        return redirect(workspace_url(contract, node))
    ctx = workspace_context(
        request, contract, membership, selected_id=node.node_id, panel="edit", form=form
    )
    return render(request, "audit/workspace.html#detail", ctx)


@login_required
@vary_on_headers("HX-Request")
@require_POST
def node_review(request, pk, node_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    node = get_object_or_404(Node, pk=node_pk, contract=contract)
    action = {"confirm": services.node_confirm, "reject": services.node_reject}.get(
        request.POST.get("action", "")
    )
    if action is None:
        return respond(request, contract, membership, node=node, error="unknown action", status=422)
    try:
        action(node=node, user=request.user)
    except services.ServiceError as exc:
        return respond(request, contract, membership, node=node, error=str(exc), status=422)
    return respond(request, contract, membership, node=node)


@login_required
@vary_on_headers("HX-Request")
def node_new(request, pk):
    """A new node evidenced by the selected text (GET: the form; POST: create)."""
    contract, membership = contract_for(request.user, pk, EDIT)
    if request.method == "POST":
        form = NewNodeForm(request.POST, contract=contract)
        if form.is_valid():
            data = form.cleaned_data
            try:
                node = services.node_create(
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
                    panel="new",
                    form=form,
                )
            return respond(request, contract, membership, node=node)
        return respond(request, contract, membership, status=422, panel="new", form=form)
    span = SpanForm(request.GET)
    if not span.is_valid() or not request.htmx:
        return redirect(workspace_url(contract))
    start, end = span.cleaned_data["start"], span.cleaned_data["end"]
    quote = contract.artifact.text[start:end]
    initial = {
        "start": start,
        "end": end,
        "label": " ".join(quote.split())[:120],
        "node_id": suggest_id(quote),
        "required": True,
        "combine": "all",
        "type": "action",
        "parent": request.GET.get("parent") or None,
    }
    form = NewNodeForm(initial=initial, contract=contract)
    ctx = workspace_context(request, contract, membership, panel="new", form=form)
    ctx["quote"] = quote
    return render(request, "audit/workspace.html#detail", ctx)


@login_required
@vary_on_headers("HX-Request")
@require_POST
def node_evidence(request, pk, node_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    node = get_object_or_404(Node, pk=node_pk, contract=contract)
    form = SpanForm(request.POST)
    if not form.is_valid():
        return respond(
            request, contract, membership, node=node, error="select some text first", status=422
        )
    try:
        services.node_add_evidence(node=node, user=request.user, **form.cleaned_data)
    except services.ServiceError as exc:
        return respond(request, contract, membership, node=node, error=str(exc), status=422)
    return respond(request, contract, membership, node=node)


@login_required
@vary_on_headers("HX-Request")
@require_POST
def span_delete(request, pk, span_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    span = get_object_or_404(
        Span.objects.select_related("node", "invariant"),
        pk=span_pk,
    )
    owner = span.node or span.invariant
    if owner is None or owner.contract_id != contract.pk:
        return HttpResponse(status=404)
    try:
        services.span_delete(span=span, user=request.user)
    except services.ServiceError as exc:
        return respond(request, contract, membership, node=span.node, error=str(exc), status=422)
    return respond(request, contract, membership, node=span.node)


@login_required
@vary_on_headers("HX-Request")
@require_POST
def edge_create(request, pk, node_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    node = get_object_or_404(Node, pk=node_pk, contract=contract)
    form = EdgeForm(request.POST, contract=contract, node=node)
    if not form.is_valid():
        return respond(
            request, contract, membership, node=node, error="choose a node and a kind", status=422
        )
    other, kind = form.cleaned_data["other"], form.cleaned_data["kind"]
    source, target = (node, other) if form.cleaned_data["direction"] == "out" else (other, node)
    try:
        services.edge_create(
            contract=contract, user=request.user, source=source, target=target, kind=kind
        )
    except services.ServiceError as exc:
        return respond(request, contract, membership, node=node, error=str(exc), status=422)
    return respond(request, contract, membership, node=node)


@login_required
@vary_on_headers("HX-Request")
@require_POST
def edge_delete(request, pk, edge_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    edge = get_object_or_404(
        Edge.objects.select_related("source", "target"), pk=edge_pk, contract=contract
    )
    node = get_object_or_404(Node, pk=request.POST.get("node") or edge.source_id, contract=contract)
    try:
        services.edge_delete(edge=edge, user=request.user)
    except services.ServiceError as exc:
        return respond(request, contract, membership, node=node, error=str(exc), status=422)
    return respond(request, contract, membership, node=node)
