"""A contract as a whole: export, proposals, status changes, new version, details."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect

from .. import services
from ..forms import ContractDetailsForm
from ..permissions import EDIT, REVIEW, VIEW, contract_for
from ..selectors import team as team_reads
from ..selectors import workspace as ws
from .common import error_status, form_errors, workspace_url
from .workspace import respond


@login_required
@require_GET
def contract_export(request, pk):
    contract, _ = contract_for(request.user, pk, VIEW)
    body = json.dumps(team_reads.export_document(contract), indent=1, ensure_ascii=False)
    response = HttpResponse(body + "\n", content_type="application/json; charset=utf-8")
    filename = f"{contract.key}-v{contract.version}.json"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@vary_on_headers("HX-Request")
@require_POST
def propose(request, pk):
    contract, membership = contract_for(request.user, pk, EDIT)
    try:
        services.contract_request_proposals(
            contract=contract, user=request.user, proposer=request.POST.get("proposer", "heuristic")
        )
    except services.ServiceError as exc:
        return respond(request, contract, membership, error=str(exc), status=422)
    return respond(request, contract, membership)


@login_required
@vary_on_headers("HX-Request")
@require_GET
def proposal_status(request, pk):
    contract, membership = contract_for(request.user, pk, VIEW)
    run = ws.latest_proposal_run(contract)
    if not request.htmx:
        return redirect(workspace_url(contract))
    if run is not None and run.status in ("queued", "running"):
        return render(request, "audit/workspace.html#run", {"contract": contract, "run": run})
    response = respond(request, contract, membership, node=None)
    response["HX-Retarget"], response["HX-Reswap"] = "#ws-detail", "outerHTML"
    return response


@login_required
@vary_on_headers("HX-Request")
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
    return respond(request, contract, membership, error=error, status=422 if error else 200)


@login_required
@vary_on_headers("HX-Request")
@require_POST
def contract_new_version(request, pk):
    contract, _ = contract_for(request.user, pk, EDIT)
    try:
        new = services.contract_new_version(contract=contract, user=request.user)
    except services.ServiceError as exc:
        messages.error(request, str(exc))
        new = contract
    url = workspace_url(new)
    if request.htmx:
        return HttpResponseClientRedirect(url, status=204)  # nothing to swap
    return redirect(url)


@login_required
@vary_on_headers("HX-Request")
@require_POST
def contract_details(request, pk):
    """Change the contract's title, domain and media type (not once it is audited)."""
    contract, membership = contract_for(request.user, pk, EDIT)
    form = ContractDetailsForm(request.POST, current=contract.artifact.media_type)
    if not form.is_valid():
        return respond(request, contract, membership, error=form_errors(form), status=422)
    data = form.cleaned_data
    try:
        contract = services.contract_update_details(
            contract=contract,
            user=request.user,
            title=data["title"],
            domain=data["domain"],
            media_type=data["media_type"],
            expected_version=data["version"],
        )
    except services.ServiceError as exc:
        return respond(request, contract, membership, error=str(exc), status=error_status(exc))
    return respond(request, contract, membership)
