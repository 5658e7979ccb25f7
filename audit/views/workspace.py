"""The contract workspace: access check -> form -> one service call -> render.

Mutations are POST only (CSRF-protected). Called by htmx they answer with the parts of
the workspace that changed (the node panel, plus out-of-band outline, text, audit panel,
history and header); called without JavaScript they redirect back to the workspace.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from matching.propose import suggest_id, suggest_type

from .. import services
from ..forms import (
    EDGE_VERBS,
    ContractDetailsForm,
    EdgeForm,
    EvidenceForm,
    NewNodeForm,
    NodeForm,
    QueryForm,
    SpanForm,
    VersionForm,
)
from ..models import Edge, Node, NodeType, ReviewStatus, Span
from ..permissions import EDIT, REVIEW, UNTEACH, VIEW, contract_for, has_role
from ..selectors import audits as audit_reads
from ..selectors import contracts as contract_reads
from ..selectors import teaching as teaching_reads
from ..selectors import team as team_reads
from ..selectors import workspace as ws
from .common import error_status, form_errors, workspace_url


def panel_context(
    contract,
    membership,
    rows,
    selected,
    *,
    panel="view",
    form=None,
    error="",
    edge_form=None,
    edge_error="",
):
    """What the node panel needs, and nothing of the rest of the workspace."""
    writable = not contract.is_read_only and has_role(membership.role, EDIT)
    detail = ws.node_detail(rows, selected) if selected else None
    if detail and writable and edge_form is None:
        edge_form = EdgeForm(
            contract=contract, node=selected, initial={"version": selected.version}
        )
    return {
        "contract": contract,
        "project": contract.project,
        "membership": membership,
        "can_edit": writable,
        "selected": selected,
        "detail": detail,
        "panel": panel,
        "form": form,
        "edge_form": edge_form if detail and writable else None,
        "edge_error": edge_error,
        "edge_verbs": EDGE_VERBS,
        "panel_base": reverse("audit:node_panel", args=[contract.pk, 0]).removesuffix("0/"),
        "error": error,
    }


def header_context(contract, membership, audit, counts, node_pks):
    """The header (status, tally, actions) and the audit tab; ``counts`` are the nodes
    per review status, ``node_pks`` the pk of each node id."""
    writable = not contract.is_read_only and has_role(membership.role, EDIT)
    return {
        "audit": audit,
        "findings": _findings(audit, node_pks),
        "coverage_pct": round(audit.coverage * 100, 1),
        "counts": counts,
        "run": ws.latest_proposal_run(contract),
        "versions": ws.contract_versions(contract),
        "can_review": has_role(membership.role, REVIEW),
        "enactments": teaching_reads.enactment_list(contract),
        "can_unteach": has_role(membership.role, UNTEACH),
        "can_mark_audited": ws.can_mark_audited(contract, audit, counts),
        "details_form": _details_form(contract) if writable else None,
    }


def _details_form(contract) -> ContractDetailsForm:
    artifact = contract.artifact
    initial = {
        "title": contract.title,
        "domain": contract.domain,
        "media_type": artifact.media_type,
        "version": contract.details_version,
    }
    return ContractDetailsForm(initial=initial, current=artifact.media_type)


def _findings(audit, node_pks) -> list[tuple[str, Any, int | None]]:
    """The audit's errors and warnings, each with the pk of the node it names."""
    return [
        (kind, f, node_pks.get(f.node or ""))
        for kind, group in (("error", audit.errors), ("warning", audit.warnings))
        for f in group
    ]


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
    with_queries=False,
    **panel_extra,
):
    """Everything the workspace page shows. The Queries tab (a second outline, the
    engine's conditioning) is only built when asked for or ``with_queries``; the page
    loads it when the tab is opened."""
    rows = contract_reads.load_contract_rows(contract)
    audit = audit_reads.audit_rows(rows)
    selected = ws.find_node(rows, selected_id)
    ctx = panel_context(
        contract, membership, rows, selected, panel=panel, form=form, error=error, **panel_extra
    )
    counts = ws.status_counts(n.review_status for n in rows.nodes)
    node_pks = {n.node_id: n.pk for n in rows.nodes}
    ctx.update(header_context(contract, membership, audit, counts, node_pks))
    if query_form is None and with_queries:
        query_form = QueryForm(intents=ws.intent_choices(rows), initial={"version": 0})
    if preview is None and with_queries:
        preview = ws.query_preview(rows, [], {})
    ctx.update(
        rows=rows,
        outline=ws.outline(rows),
        segments=ws.segments(rows),
        records=ws.history(contract),
        legend=[*NodeType.choices, ("invariant", "Invariant")],
        query_form=query_form,
        preview=preview,
        edit_invariant=edit_invariant,
        node_types=NodeType.choices,
        statuses=ReviewStatus.choices,
    )
    return ctx


def respond(
    request, contract, membership, *, node=None, error="", status=200, light=False, **extra
):
    """After a change: the updated workspace parts (htmx) or a redirect. ``light``: the
    change moved no span and no node (an edge): the outline and the text stay."""
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
    template = "audit/_update_light.html" if light else "audit/_update.html"
    return render(request, template, ctx, status=status)


@login_required
@require_GET
def workspace(request, pk):
    contract, membership = contract_for(request.user, pk, VIEW)
    ctx = workspace_context(request, contract, membership, selected_id=request.GET.get("node"))
    ctx["annotate_blind"] = team_reads.may_decide(contract, request.user)
    return render(request, "audit/workspace.html", ctx)


@login_required
@vary_on_headers("HX-Request")
@require_GET
def node_panel(request, pk, node_pk):
    contract, membership = contract_for(request.user, pk, VIEW)
    node = get_object_or_404(Node, pk=node_pk, contract=contract)
    if not request.htmx:
        return redirect(workspace_url(contract, node))
    rows = contract_reads.node_rows(contract, node.pk, node.parent_id)
    ctx = panel_context(contract, membership, rows, rows.by_pk[node.pk])
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
                    expected_version=form.cleaned_data["version"],
                )
            except services.ServiceError as exc:
                return respond(
                    request,
                    contract,
                    membership,
                    node=node,
                    error=str(exc),
                    status=error_status(exc),
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
    rows = contract_reads.load_contract_rows(contract)
    ctx = panel_context(
        contract, membership, rows, rows.by_pk.get(node.pk), panel="edit", form=form
    )
    return render(request, "audit/workspace.html#detail", ctx)


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
        return respond(
            request,
            contract,
            membership,
            status=422,
            panel="new",
            form=form,
            error=form_errors(form),
        )
    span = SpanForm(request.GET)
    if not span.is_valid() or not request.htmx:
        return redirect(workspace_url(contract))
    start, end = span.cleaned_data["start"], span.cleaned_data["end"]
    quote = contract.artifact.text[start:end]
    kind = suggest_type(quote)
    enclosing = contract_reads.enclosing_node(contract, start, end)
    initial = {
        "start": start,
        "end": end,
        "label": " ".join(quote.split())[:120],
        "node_id": suggest_id(quote),
        "required": True,
        "combine": "all",
        "type": "action" if kind == "invariant" else kind,
        "parent": request.GET.get("parent") or (enclosing.pk if enclosing else None),
    }
    form = NewNodeForm(initial=initial, contract=contract)
    rows = contract_reads.load_contract_rows(contract)
    ctx = panel_context(contract, membership, rows, None, panel="new", form=form)
    ctx["quote"] = quote
    ctx["reads_as_invariant"] = kind == "invariant"
    return render(request, "audit/workspace.html#detail", ctx)


@login_required
@vary_on_headers("HX-Request")
@require_POST
def node_evidence(request, pk, node_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    node = get_object_or_404(Node, pk=node_pk, contract=contract)
    form = EvidenceForm(request.POST)
    if not form.is_valid():
        return respond(
            request, contract, membership, node=node, error=form_errors(form), status=422
        )
    data = form.cleaned_data
    try:
        services.node_add_evidence(
            node=node,
            user=request.user,
            start=data["start"],
            end=data["end"],
            expected_version=data["version"],
        )
    except services.ServiceError as exc:
        status = error_status(exc)
        return respond(request, contract, membership, node=node, error=str(exc), status=status)
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
    form = VersionForm(request.POST)
    if not form.is_valid():
        error = form_errors(form)
        return respond(request, contract, membership, node=span.node, error=error, status=422)
    try:
        services.span_delete(
            span=span, user=request.user, expected_version=form.cleaned_data["version"]
        )
    except services.ServiceError as exc:
        status = error_status(exc)
        return respond(request, contract, membership, node=span.node, error=str(exc), status=status)
    return respond(request, contract, membership, node=span.node)


@login_required
@vary_on_headers("HX-Request")
@require_POST
def edge_create(request, pk, node_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    node = get_object_or_404(Node, pk=node_pk, contract=contract)
    form = EdgeForm(request.POST, contract=contract, node=node)
    fail = {"node": node, "status": 422, "light": True, "edge_form": form}
    if not form.is_valid():
        return respond(request, contract, membership, edge_error=form_errors(form), **fail)
    other, kind = form.cleaned_data["other"], form.cleaned_data["kind"]
    source, target = (node, other) if form.cleaned_data["direction"] == "out" else (other, node)
    try:
        services.edge_create(
            contract=contract,
            user=request.user,
            source=source,
            target=target,
            kind=kind,
            node=node,
            expected_version=form.cleaned_data["version"],
        )
    except services.ServiceError as exc:
        fail["status"] = error_status(exc)
        return respond(request, contract, membership, edge_error=str(exc), **fail)
    return respond(request, contract, membership, node=node, light=True)


@login_required
@vary_on_headers("HX-Request")
@require_GET
def edge_check(request, pk, node_pk):
    """The sentence an edge would state, or why it cannot be added, before saving."""
    contract, membership = contract_for(request.user, pk, VIEW)
    node = get_object_or_404(Node, pk=node_pk, contract=contract)
    form = EdgeForm(request.GET, contract=contract, node=node)
    form.fields["version"].required = False  # a check writes nothing
    ctx = {"edge_error": "", "edge_ok": ""}
    if request.GET.get("other", "").strip() and form.is_valid():
        other, kind = form.cleaned_data["other"], form.cleaned_data["kind"]
        out = form.cleaned_data["direction"] == "out"
        source, target = (node, other) if out else (other, node)
        ctx["edge_error"] = contract_reads.edge_problem(contract, source, target, kind)
        ctx["edge_ok"] = f"{source.label} {EDGE_VERBS[kind]} {target.label}"
    elif request.GET.get("other", "").strip():
        ctx["edge_error"] = form_errors(form)
    return render(request, "audit/workspace.html#edge_check", ctx)


@login_required
@vary_on_headers("HX-Request")
@require_POST
def edge_delete(request, pk, edge_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    edge = get_object_or_404(
        Edge.objects.select_related("source", "target"), pk=edge_pk, contract=contract
    )
    node_pk = request.POST.get("node") or str(edge.source_id)
    if not node_pk.isdigit():
        raise Http404("no such node")
    node = get_object_or_404(Node, pk=int(node_pk), contract=contract)
    form = VersionForm(request.POST)
    if not form.is_valid():
        return respond(
            request, contract, membership, node=node, error=form_errors(form), status=422
        )
    try:
        services.edge_delete(
            edge=edge, user=request.user, expected_version=form.cleaned_data["version"]
        )
    except services.ServiceError as exc:
        return respond(
            request,
            contract,
            membership,
            node=node,
            error=str(exc),
            status=error_status(exc),
            light=True,
        )
    return respond(request, contract, membership, node=node, light=True)
