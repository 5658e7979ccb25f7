"""Pages of a project: the project list, a project's contracts, starting or importing a contract."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from .. import services
from ..forms import ImportForm, NewContractForm
from ..permissions import IMPORT, VIEW, can_create, has_role, project_for
from ..selectors import contracts as contract_reads


@login_required
@require_GET
def project_list(request):
    projects = contract_reads.projects_for_user(request.user)
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
            "contracts": contract_reads.project_contracts(project),
            "can_import": has_role(membership.role, IMPORT),
            "can_create": can_create(membership.role),
            "import_form": ImportForm(),
        },
    )


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
        "contracts": contract_reads.project_contracts(project),
        "can_import": True,
        "can_create": can_create(membership.role),
        "import_form": form,
        "import_error": error,
    }
    return render(request, "audit/project_detail.html", ctx, status=400)
