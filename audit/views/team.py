"""Team pages: my queue, a contract's team page (assignments, double annotation,
agreement, comments), comments, agreement reports."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from .. import services
from ..models import Assignment, Contract
from ..permissions import (
    ASSIGN,
    COMMENT,
    CURATE,
    VIEW,
    comment_for,
    contract_for,
    has_role,
    project_for,
)
from ..selectors import team as team_reads
from ..selectors.exports import rows_csv
from ..team_forms import AssignmentForm, CommentForm, DoubleAnnotationForm, ResolveForm
from .common import attachment, form_errors


def team_url(contract: Contract) -> str:
    return reverse("audit:team", args=[contract.pk])


def _done(request, contract: Contract, error: str | None = None, ok: str | None = None):
    if error:
        messages.error(request, error)
    elif ok:
        messages.success(request, ok)
    return redirect(request.POST.get("next") or team_url(contract))


@login_required
@require_GET
def my_queue(request):
    items = team_reads.my_queue(request.user)
    return render(request, "audit/team/queue.html", {"items": items})


@login_required
@require_GET
def team_page(request, pk):
    contract, membership = contract_for(request.user, pk, VIEW)
    team = team_reads.team_of(contract)
    sees_all = team is not None and team_reads.may_see_all(contract, request.user, membership)
    ctx = {
        "contract": contract,
        "project": contract.project,
        "membership": membership,
        "team": team,
        "assignments": Assignment.objects.filter(contract=contract).select_related("user"),
        "progress": team_reads.contract_progress(contract),
        "mine": team_reads.contract_progress(contract, request.user),
        "can_decide": team is not None and team_reads.may_decide(contract, request.user),
        "agreement": team_reads.agreement_of(contract) if sees_all else None,
        "comments": team_reads.comments_of(contract),
        "can_assign": has_role(membership.role, ASSIGN),
        "can_curate": has_role(membership.role, CURATE),
        "assign_form": AssignmentForm(),
        "double_form": DoubleAnnotationForm(
            initial={
                "enabled": team is not None,
                "annotators_needed": getattr(team, "annotators_needed", 2),
            }
        ),
        "comment_options": team_reads.comment_options(contract),
    }
    return render(request, "audit/team/team.html", ctx)


@login_required
@require_POST
def assign(request, pk):
    contract, _ = contract_for(request.user, pk, ASSIGN)
    form = AssignmentForm(request.POST)
    if not form.is_valid():
        return _done(request, contract, error=form_errors(form))
    user = get_user_model().objects.filter(username=form.cleaned_data["username"]).first()
    if user is None:
        return _done(request, contract, error="no member of that name in this project")
    whole = form.cleaned_data["whole_project"]
    try:
        services.assignment_create(
            project=contract.project,
            contract=None if whole else contract,
            user=user,
            by=request.user,
            role=form.cleaned_data["role"],
        )
    except services.ServiceError as exc:
        return _done(request, contract, error=str(exc))
    return _done(request, contract, ok=f"{user.get_username()} assigned")


@login_required
@require_POST
def unassign(request, pk, assignment_pk):
    contract, _ = contract_for(request.user, pk, ASSIGN)
    assignment = get_object_or_404(Assignment, pk=assignment_pk, contract=contract)
    services.assignment_delete(assignment=assignment, by=request.user)
    return _done(request, contract, ok="assignment removed")


@login_required
@require_POST
def double_annotation(request, pk):
    contract, _ = contract_for(request.user, pk, ASSIGN)
    form = DoubleAnnotationForm(request.POST)
    if not form.is_valid():
        return _done(request, contract, error=form_errors(form))
    try:
        services.double_annotation_set(
            contract=contract,
            by=request.user,
            enabled=form.cleaned_data["enabled"],
            annotators_needed=form.cleaned_data["annotators_needed"],
        )
    except services.ServiceError as exc:
        return _done(request, contract, error=str(exc))
    return _done(request, contract, ok="double annotation setting saved")


@login_required
@require_POST
def comment_new(request, pk):
    contract, _ = contract_for(request.user, pk, COMMENT)
    form = CommentForm(request.POST)
    if not form.is_valid():
        return _done(request, contract, error=form_errors(form))
    data = form.cleaned_data
    obj = team_reads.comment_target(contract, data["target"], data.get("target_id"))
    try:
        services.comment_create(
            contract=contract, user=request.user, body=data["body"], target=data["target"], obj=obj
        )
    except services.ServiceError as exc:
        return _done(request, contract, error=str(exc))
    return _done(request, contract, ok="comment added")


@login_required
@require_POST
def comment_resolve(request, pk):
    comment, _ = comment_for(request.user, pk, COMMENT)
    form = ResolveForm(request.POST)
    form.is_valid()
    resolved = bool(form.cleaned_data.get("resolved"))
    services.comment_set_resolved(comment=comment, user=request.user, resolved=resolved)
    return _done(request, comment.contract, ok="resolved" if resolved else "reopened")


@login_required
@require_GET
def agreement_report(request, pk, fmt):
    """The agreement of one contract: JSON (with every disagreement) or a CSV row."""
    contract, membership = contract_for(request.user, pk, VIEW)
    if fmt not in ("json", "csv"):
        raise Http404("json or csv")
    if not team_reads.may_see_all(contract, request.user, membership):
        raise PermissionDenied("the agreement is hidden until adjudication starts")
    agreement = team_reads.agreement_of(contract)
    if agreement is None:
        raise Http404("no agreement yet: two annotators must have decided")
    name = f"{contract.key}-v{contract.version}-agreement.{fmt}"
    if fmt == "json":
        body = json.dumps({"contract": contract.key, "version": contract.version, **agreement})
        return attachment(body, "application/json", name)
    return attachment(rows_csv([team_reads.agreement_row(contract, agreement)]), "text/csv", name)


@login_required
@require_GET
def project_agreement(request, slug, fmt):
    """Per contract agreement rows and a pooled project row (see
    :func:`audit.selectors.team.project_agreement_rows`)."""
    project, membership = project_for(request.user, slug, VIEW)
    if fmt not in ("json", "csv"):
        raise Http404("json or csv")
    rows = team_reads.project_agreement_rows(project, request.user, membership)
    name = f"{project.slug}-agreement.{fmt}"
    if fmt == "json":
        return attachment(json.dumps(rows), "application/json", name)
    return attachment(rows_csv(rows, team_reads.AGREEMENT_FIELDS), "text/csv", name)
