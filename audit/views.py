"""Views: access check → form → one service call → render.

Mutations are POST only (CSRF-protected). Called by htmx they answer with the parts of
the workspace that changed (the node panel, plus out-of-band outline, text, audit panel,
history and header); called without JavaScript they redirect back to the workspace.
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from matching.propose import suggest_id

from . import selectors, services
from .forms import (
    ContractDetailsForm,
    EdgeForm,
    ImportForm,
    InvariantForm,
    NewContractForm,
    NewInvariantForm,
    NewNodeForm,
    NodeForm,
    QueryForm,
    SpanForm,
)
from .models import Edge, Invariant, Node, NodeType, Query, Span
from .permissions import (
    EDIT,
    IMPORT,
    REVIEW,
    VIEW,
    can_create,
    contract_for,
    has_role,
    project_for,
)


def _is_htmx(request) -> bool:
    return request.headers.get("HX-Request") == "true"


def _workspace_url(contract, node: Node | None = None) -> str:
    url = reverse("audit:workspace", args=[contract.pk])
    return f"{url}?node={node.node_id}" if node is not None else url


def _context(
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
    rows = selectors.load_contract_rows(contract)
    audit = selectors.audit_rows(rows)
    counts = selectors.status_counts(rows)
    selected = selectors.find_node(rows, selected_id)
    writable = not contract.is_read_only and has_role(membership.role, EDIT)
    detail = selectors.node_detail(rows, selected) if selected else None
    node_pks = {n.node_id: n.pk for n in rows.nodes}
    if query_form is None:
        query_form = QueryForm(intents=selectors.intent_choices(rows))
    if preview is None:
        preview = selectors.query_preview(rows, [], {})
    return {
        "contract": contract,
        "project": contract.project,
        "membership": membership,
        "rows": rows,
        "outline": selectors.outline(rows),
        "segments": selectors.segments(rows),
        "audit": audit,
        "findings": [
            (kind, f, node_pks.get(f.node or ""))
            for kind, group in (("error", audit.errors), ("warning", audit.warnings))
            for f in group
        ],
        "coverage_pct": round(audit.coverage * 100, 1),
        "counts": counts,
        "records": selectors.history(contract),
        "legend": [*NodeType.choices, ("invariant", "Invariant")],
        "run": selectors.latest_proposal_run(contract),
        "versions": selectors.contract_versions(contract),
        "can_edit": writable,
        "can_review": has_role(membership.role, REVIEW),
        "can_mark_audited": selectors.can_mark_audited(contract, audit, counts),
        "selected": selected,
        "detail": detail,
        "panel": panel,
        "form": form,
        "edge_form": EdgeForm(contract=contract, node=selected) if detail and writable else None,
        "error": error,
        "query_form": query_form,
        "preview": preview,
        "edit_invariant": edit_invariant,
        "details_form": ContractDetailsForm(
            initial={
                "title": contract.title,
                "domain": contract.domain,
                "media_type": contract.artifact.media_type,
            },
            current=contract.artifact.media_type,
        )
        if writable
        else None,
    }


def _respond(request, contract, membership, *, node=None, error="", status=200, **extra):
    """After a change: the updated workspace parts (htmx) or a redirect."""
    if not _is_htmx(request):
        if error:
            messages.error(request, error)
        return redirect(_workspace_url(contract, node))
    ctx = _context(
        request,
        contract,
        membership,
        selected_id=node.node_id if node else None,
        error=error,
        **extra,
    )
    return render(request, "audit/_update.html", ctx, status=status)


# ---------------------------------------------------------------------------- pages


@login_required
@require_GET
def project_list(request):
    projects = selectors.projects_for_user(request.user)
    if len(projects) == 1:
        return redirect("audit:project_detail", slug=projects[0].slug)
    return render(request, "audit/project_list.html", {"projects": projects})


@login_required
@require_GET
def project_detail(request, slug):
    project, membership = project_for(request.user, slug)
    return render(
        request,
        "audit/project_detail.html",
        {
            "project": project,
            "membership": membership,
            "contracts": selectors.project_contracts(project),
            "can_import": has_role(membership.role, IMPORT),
            "can_create": can_create(membership.role),
            "import_form": ImportForm(),
        },
    )


def _form_errors(form) -> str:
    """Every error of ``form`` in one line, each named by its field's label."""
    parts = []
    for name, errors in form.errors.items():
        label = form[name].label if name in form.fields else ""
        parts += [f"{label}: {e}" if label else str(e) for e in errors]
    return "; ".join(parts)


@login_required
def contract_new(request, slug):
    """A draft contract from a new instruction artifact (GET: the form; POST: create)."""
    project, membership = project_for(request.user, slug, VIEW)
    if not can_create(membership.role):
        raise PermissionDenied("starting a contract needs the annotator or admin role")
    status = 200
    if request.method == "POST":
        form = NewContractForm(request.POST, request.FILES, project=project)
        if form.is_valid():
            data = form.cleaned_data
            try:
                contract = services.contract_start(
                    project=project,
                    user=request.user,
                    key=data["key"],
                    text=data["artifact"],
                    title=data["title"],
                    domain=data["domain"],
                    media_type=data["media_type"],
                    proposer=data["proposer"],
                )
            except services.ServiceError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"Started {contract.key} v1.{_proposal_note(contract)}")
                return redirect("audit:workspace", pk=contract.pk)
        status = 400
    elif request.method == "GET":
        form = NewContractForm(project=project)
    else:
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    ctx = {"project": project, "membership": membership, "form": form}
    return render(request, "audit/contract_new.html", ctx, status=status)


def _proposal_note(contract) -> str:
    """What the banner says of the proposals: done already (tasks in-process) or queued."""
    run = contract.proposal_runs.order_by("-pk").first()
    if run is None:
        return ""
    if run.status == "done":
        return f" {run.created_nodes} obligation(s) proposed: confirm or reject them."
    if run.status == "failed":
        return f" Proposing obligations failed: {run.error}"
    return " Proposing obligations… they appear in the outline when the worker is done."


@login_required
@require_POST
def contract_import(request, slug):
    project, membership = project_for(request.user, slug, IMPORT)
    form = ImportForm(request.POST, request.FILES)
    error = ""
    if form.is_valid():
        try:
            contract = services.contract_import(
                project=project,
                user=request.user,
                source=form.cleaned_data["source"],
                file=form.cleaned_data["filename"],
            )
        except services.ServiceError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Imported {contract.key} v{contract.version}.")
            return redirect("audit:workspace", pk=contract.pk)
    ctx = {
        "project": project,
        "membership": membership,
        "contracts": selectors.project_contracts(project),
        "can_import": True,
        "can_create": can_create(membership.role),
        "import_form": form,
        "import_error": error,
    }
    return render(request, "audit/project_detail.html", ctx, status=400)


@login_required
@require_GET
def workspace(request, pk):
    contract, membership = contract_for(request.user, pk, VIEW)
    ctx = _context(request, contract, membership, selected_id=request.GET.get("node"))
    return render(request, "audit/workspace.html", ctx)


@login_required
@require_GET
def contract_export(request, pk):
    contract, _ = contract_for(request.user, pk, VIEW)
    body = json.dumps(selectors.contract_document(contract), indent=1, ensure_ascii=False)
    response = HttpResponse(body + "\n", content_type="application/json; charset=utf-8")
    filename = f"{contract.key}-v{contract.version}.json"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# ---------------------------------------------------------------------------- node panel


@login_required
@require_GET
def node_panel(request, pk, node_pk):
    contract, membership = contract_for(request.user, pk, VIEW)
    node = get_object_or_404(Node, pk=node_pk, contract=contract)
    if not _is_htmx(request):
        return redirect(_workspace_url(contract, node))
    ctx = _context(request, contract, membership, selected_id=node.node_id)
    return render(request, "audit/workspace.html#detail", ctx)


@login_required
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
                return _respond(
                    request,
                    contract,
                    membership,
                    node=node,
                    error=str(exc),
                    status=422,
                    panel="edit",
                    form=form,
                )
            return _respond(request, contract, membership, node=node)
        return _respond(
            request, contract, membership, node=node, status=422, panel="edit", form=form
        )
    form = NodeForm(initial=NodeForm.initial_for(node), contract=contract, node=node)
    if not _is_htmx(request):
        return redirect(_workspace_url(contract, node))
    ctx = _context(request, contract, membership, selected_id=node.node_id, panel="edit", form=form)
    return render(request, "audit/workspace.html#detail", ctx)


@login_required
@require_POST
def node_review(request, pk, node_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    node = get_object_or_404(Node, pk=node_pk, contract=contract)
    action = {"confirm": services.node_confirm, "reject": services.node_reject}.get(
        request.POST.get("action", "")
    )
    if action is None:
        return _respond(
            request, contract, membership, node=node, error="unknown action", status=422
        )
    try:
        action(node=node, user=request.user)
    except services.ServiceError as exc:
        return _respond(request, contract, membership, node=node, error=str(exc), status=422)
    return _respond(request, contract, membership, node=node)


@login_required
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
                return _respond(
                    request,
                    contract,
                    membership,
                    error=str(exc),
                    status=422,
                    panel="new",
                    form=form,
                )
            return _respond(request, contract, membership, node=node)
        return _respond(request, contract, membership, status=422, panel="new", form=form)
    span = SpanForm(request.GET)
    if not span.is_valid() or not _is_htmx(request):
        return redirect(_workspace_url(contract))
    start, end = span.cleaned_data["start"], span.cleaned_data["end"]
    quote = contract.artifact.text[start:end]
    initial = {
        "start": start,
        "end": end,
        "label": " ".join(quote.split())[:120],
        "node_id": _suggest_id(quote),
        "required": True,
        "combine": "all",
        "type": "action",
        "parent": request.GET.get("parent") or None,
    }
    form = NewNodeForm(initial=initial, contract=contract)
    ctx = _context(request, contract, membership, panel="new", form=form)
    ctx["quote"] = quote
    return render(request, "audit/workspace.html#detail", ctx)


def _suggest_id(quote: str) -> str:
    return suggest_id(quote)


@login_required
@require_POST
def node_evidence(request, pk, node_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    node = get_object_or_404(Node, pk=node_pk, contract=contract)
    form = SpanForm(request.POST)
    if not form.is_valid():
        return _respond(
            request, contract, membership, node=node, error="select some text first", status=422
        )
    try:
        services.node_add_evidence(node=node, user=request.user, **form.cleaned_data)
    except services.ServiceError as exc:
        return _respond(request, contract, membership, node=node, error=str(exc), status=422)
    return _respond(request, contract, membership, node=node)


@login_required
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
        return _respond(request, contract, membership, node=span.node, error=str(exc), status=422)
    return _respond(request, contract, membership, node=span.node)


# ---------------------------------------------------------------------------- edges


@login_required
@require_POST
def edge_create(request, pk, node_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    node = get_object_or_404(Node, pk=node_pk, contract=contract)
    form = EdgeForm(request.POST, contract=contract, node=node)
    if not form.is_valid():
        return _respond(
            request, contract, membership, node=node, error="choose a node and a kind", status=422
        )
    other, kind = form.cleaned_data["other"], form.cleaned_data["kind"]
    source, target = (node, other) if form.cleaned_data["direction"] == "out" else (other, node)
    try:
        services.edge_create(
            contract=contract, user=request.user, source=source, target=target, kind=kind
        )
    except services.ServiceError as exc:
        return _respond(request, contract, membership, node=node, error=str(exc), status=422)
    return _respond(request, contract, membership, node=node)


@login_required
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
        return _respond(request, contract, membership, node=node, error=str(exc), status=422)
    return _respond(request, contract, membership, node=node)


# ---------------------------------------------------------------------------- invariants


@login_required
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
                return _respond(
                    request,
                    contract,
                    membership,
                    error=str(exc),
                    status=422,
                    panel="new_invariant",
                    form=form,
                )
            return _respond(request, contract, membership)
        return _respond(request, contract, membership, status=422, panel="new_invariant", form=form)
    span = SpanForm(request.GET)
    if not span.is_valid() or not _is_htmx(request):
        return redirect(_workspace_url(contract))
    start, end = span.cleaned_data["start"], span.cleaned_data["end"]
    quote = contract.artifact.text[start:end]
    form = NewInvariantForm(
        initial={
            "start": start,
            "end": end,
            "label": " ".join(quote.split())[:120],
            "inv_id": _suggest_id(quote),
        },
        contract=contract,
    )
    ctx = _context(request, contract, membership, panel="new_invariant", form=form)
    ctx["quote"] = quote
    return render(request, "audit/workspace.html#detail", ctx)


@login_required
def invariant_edit(request, pk, inv_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    invariant = get_object_or_404(Invariant, pk=inv_pk, contract=contract)
    if request.method == "POST":
        form = InvariantForm(request.POST, contract=contract)
        if form.is_valid():
            try:
                services.invariant_update(
                    invariant=invariant, user=request.user, data=form.cleaned_data
                )
            except services.ServiceError as exc:
                return _respond(
                    request,
                    contract,
                    membership,
                    error=str(exc),
                    status=422,
                    panel="edit_invariant",
                    form=form,
                    edit_invariant=invariant,
                )
            return _respond(request, contract, membership)
        return _respond(
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
        },
        contract=contract,
    )
    ctx = _context(
        request, contract, membership, panel="edit_invariant", form=form, edit_invariant=invariant
    )
    # a plain link renders the whole workspace with the form in the detail panel
    return render(request, "audit/workspace.html" + ("#detail" if _is_htmx(request) else ""), ctx)


@login_required
@require_POST
def invariant_delete(request, pk, inv_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    invariant = get_object_or_404(Invariant, pk=inv_pk, contract=contract)
    try:
        services.invariant_delete(invariant=invariant, user=request.user)
    except services.ServiceError as exc:
        return _respond(request, contract, membership, error=str(exc), status=422)
    return _respond(request, contract, membership)


# ---------------------------------------------------------------------------- queries


def _query_state(request, contract, data):
    rows = selectors.load_contract_rows(contract)
    form = QueryForm(data, intents=selectors.intent_choices(rows))
    intents = data.getlist("intents") if data else []
    preview = selectors.query_preview(rows, intents, form.branches() if data else {})
    return form, preview


@login_required
@require_GET
def query_preview(request, pk):
    contract, membership = contract_for(request.user, pk, VIEW)
    data = request.GET.copy()
    if "load" in data:
        query = get_object_or_404(Query, pk=data["load"], contract=contract)
        data = _query_data(query)
    form, preview = _query_state(request, contract, data)
    ctx = _context(request, contract, membership, query_form=form, preview=preview)
    if not _is_htmx(request):  # a plain link: the whole workspace, queries tab open
        return render(request, "audit/workspace.html", {**ctx, "open_tab": "queries"})
    return render(request, "audit/workspace.html#queries", ctx)


def _query_data(query: Query):
    from django.http import QueryDict

    data = QueryDict(mutable=True)
    data["query_id"], data["text"] = query.query_id, query.text
    data.setlist("intents", query.intents)
    for decision, outcome in query.branches.items():
        data[f"{QueryForm.BRANCH_PREFIX}{decision}"] = outcome
    return data


@login_required
@require_POST
def query_save(request, pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    form, preview = _query_state(request, contract, request.POST)
    error = ""
    if not form.is_valid():
        error = "give the query an id and a text"
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
            services.query_save(contract=contract, user=request.user, document=document)
        except services.ServiceError as exc:
            error = str(exc)
    if not _is_htmx(request):
        if error:
            messages.error(request, error)
        return redirect(_workspace_url(contract))
    ctx = _context(request, contract, membership, query_form=form, preview=preview)
    ctx["query_error"], ctx["query_saved"] = error, not error
    return render(request, "audit/_update_queries.html", ctx, status=422 if error else 200)


@login_required
@require_POST
def query_delete(request, pk, query_pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    query = get_object_or_404(Query, pk=query_pk, contract=contract)
    try:
        services.query_delete(query=query, user=request.user)
    except services.ServiceError as exc:
        messages.error(request, str(exc))
    if not _is_htmx(request):
        return redirect(_workspace_url(contract))
    ctx = _context(request, contract, membership)
    return render(request, "audit/_update_queries.html", ctx)


# ---------------------------------------------------------------------------- contract


@login_required
@require_POST
def propose(request, pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    try:
        services.contract_request_proposals(
            contract=contract, user=request.user, proposer=request.POST.get("proposer", "heuristic")
        )
    except services.ServiceError as exc:
        return _respond(request, contract, membership, error=str(exc), status=422)
    return _respond(request, contract, membership)


@login_required
@require_GET
def proposal_status(request, pk):
    contract, membership = contract_for(request.user, pk, VIEW)
    run = selectors.latest_proposal_run(contract)
    if not _is_htmx(request):
        return redirect(_workspace_url(contract))
    if run is not None and run.status in ("queued", "running"):
        return render(request, "audit/workspace.html#run", {"contract": contract, "run": run})
    response = _respond(request, contract, membership, node=None)
    response["HX-Retarget"], response["HX-Reswap"] = "#ws-detail", "outerHTML"
    return response


@login_required
@require_POST
def contract_status(request, pk):
    action = request.POST.get("action")
    minimum = REVIEW if action == "audited" else EDIT
    contract, membership = contract_for(request.user, pk, minimum)
    service = {
        "submit": services.contract_submit_for_review,
        "audited": services.contract_mark_audited,
    }.get(action or "")
    error = "unknown action" if service is None else ""
    if service is not None:
        try:
            contract = service(contract=contract, user=request.user)
        except services.ServiceError as exc:
            error = str(exc)
    return _respond(request, contract, membership, error=error, status=422 if error else 200)


@login_required
@require_POST
def contract_new_version(request, pk):
    contract, _ = contract_for(request.user, pk, EDIT)
    try:
        new = services.contract_new_version(contract=contract, user=request.user)
    except services.ServiceError as exc:
        messages.error(request, str(exc))
        new = contract
    url = _workspace_url(new)
    if _is_htmx(request):
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


@login_required
@require_POST
def contract_details(request, pk):
    """Change the contract's title, domain and media type (not once it is audited)."""
    contract, membership = contract_for(request.user, pk, EDIT)
    form = ContractDetailsForm(request.POST, current=contract.artifact.media_type)
    if not form.is_valid():
        return _respond(request, contract, membership, error=_form_errors(form), status=422)
    try:
        contract = services.contract_update_details(
            contract=contract, user=request.user, **form.cleaned_data
        )
    except services.ServiceError as exc:
        return _respond(request, contract, membership, error=str(exc), status=422)
    return _respond(request, contract, membership)
