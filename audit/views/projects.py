"""Pages of a project: the project list, a project's contracts, starting or importing a
contract, its review thresholds."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from .. import services
from ..fields import form_status
from ..forms import ImportForm, NewContractForm, ReviewThresholdsForm
from ..permissions import IMPORT, THRESHOLDS, VIEW, can_create, has_role, project_for
from ..selectors import assessments as assessment_reads
from ..selectors import contracts as contract_reads


@login_required
@require_GET
def project_list(request):
    projects = contract_reads.projects_for_user(request.user)
    if len(projects) == 1:
        return redirect("audit:project_detail", slug=projects[0].slug)
    return render(request, "audit/project_list.html", {"projects": projects})


def _detail_context(project, membership, **extra):
    can_set = has_role(membership.role, THRESHOLDS)
    thresholds = assessment_reads.thresholds_view(project) if can_set else None
    initial = {"clean_below": project.review_clean_below}
    initial["violation_from"] = project.review_violation_from
    return {
        "project": project,
        "membership": membership,
        "contracts": contract_reads.project_contracts(project),
        "can_import": has_role(membership.role, IMPORT),
        "can_create": can_create(membership.role),
        "import_form": ImportForm(),
        "can_set_thresholds": can_set,
        "thresholds": thresholds,
        "thresholds_form": ReviewThresholdsForm(initial=initial),
        **extra,
    }


@login_required
@require_GET
def project_detail(request, slug):
    project, membership = project_for(request.user, slug)
    return render(request, "audit/project_detail.html", _detail_context(project, membership))


@login_required
@require_POST
def review_thresholds(request, slug):
    """Set the project's review thresholds (admins); its semantic runs are read again.
    htmx swaps the settings card (422 with the error beside the field)."""
    project, membership = project_for(request.user, slug, THRESHOLDS)
    form = ReviewThresholdsForm(request.POST)
    saved = None
    if form.is_valid():
        try:
            saved = services.review_thresholds_set(
                project=project, user=request.user, **form.cleaned_data
            )
        except services.ThresholdError as exc:
            form.add_error(exc.field, str(exc))
    if saved is not None and not request.htmx:
        messages.success(request, f"Review thresholds saved: {saved} semantic run(s) read again.")
        return redirect(reverse("audit:project_detail", args=[slug]) + "#review-thresholds")
    ctx = _detail_context(project, membership, thresholds_form=form, thresholds_saved=saved)
    if request.htmx:
        return render(
            request,
            "audit/project_detail.html#thresholds",
            ctx,
            status=422 if saved is None else 200,
        )
    return render(request, "audit/project_detail.html", ctx, status=400)


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
                status = exc.status or 400
            else:
                messages.success(request, f"Started {contract.key} v1.{_proposal_note(contract)}")
                return redirect("audit:workspace", pk=contract.pk)
        else:
            status = form_status(form)
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
    error, status = "", form_status(form)
    if form.is_valid():
        try:
            contract = services.contract_import(
                project=project,
                user=request.user,
                source=form.cleaned_data["source"],
                file=form.cleaned_data["filename"],
            )
        except services.ServiceError as exc:
            error, status = str(exc), exc.status or status
        else:
            messages.success(request, f"Imported {contract.key} v{contract.version}.")
            return redirect("audit:workspace", pk=contract.pk)
    ctx = _detail_context(project, membership, import_form=form, import_error=error)
    return render(request, "audit/project_detail.html", ctx, status=status)
