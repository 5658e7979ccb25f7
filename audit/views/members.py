"""A project's members page (add, change a role, remove: admins; the list: every
member) and the notifications a member reads on their home page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from .. import services
from ..models import Membership, Role
from ..permissions import ASSIGN, VIEW, has_role, notification_for, project_for
from ..team_forms import MemberForm, RoleForm
from .common import form_errors


def _back(request, project, error: str = "", ok: str = ""):
    if error:
        messages.error(request, error)
    elif ok:
        messages.success(request, ok)
    return redirect(reverse("audit:members", args=[project.slug]))


def _member(project, pk: int) -> Membership:
    return get_object_or_404(Membership.objects.select_related("user"), pk=pk, project=project)


@login_required
@require_GET
def members(request, slug):
    project, membership = project_for(request.user, slug, VIEW)
    rows = Membership.objects.filter(project=project).select_related("user")
    ctx = {
        "project": project,
        "membership": membership,
        "members": rows.order_by("user__username"),
        "can_manage": has_role(membership.role, ASSIGN),
        "add_form": MemberForm(),
        "role_choices": Role.choices,
    }
    return render(request, "audit/members.html", ctx)


@login_required
@require_POST
def member_add(request, slug):
    project, _ = project_for(request.user, slug, ASSIGN)
    form = MemberForm(request.POST)
    if not form.is_valid():
        return _back(request, project, error=form_errors(form))
    data = form.cleaned_data
    try:
        services.membership_create(
            project=project, username=data["username"], role=data["role"], by=request.user
        )
    except services.ServiceError as exc:
        return _back(request, project, error=str(exc))
    return _back(request, project, ok=f"{data['username']} added as {data['role']}")


@login_required
@require_POST
def member_role(request, slug, member_pk):
    project, _ = project_for(request.user, slug, ASSIGN)
    member = _member(project, member_pk)
    form = RoleForm(request.POST)
    if not form.is_valid():
        return _back(request, project, error=form_errors(form))
    try:
        services.membership_set_role(
            membership=member, role=form.cleaned_data["role"], by=request.user
        )
    except services.ServiceError as exc:
        return _back(request, project, error=str(exc))
    return _back(request, project, ok=f"{member.user.get_username()} is now {member.role}")


@login_required
@require_POST
def member_remove(request, slug, member_pk):
    project, _ = project_for(request.user, slug, ASSIGN)
    member = _member(project, member_pk)
    try:
        services.membership_delete(membership=member, by=request.user)
    except services.ServiceError as exc:
        return _back(request, project, error=str(exc))
    return _back(request, project, ok=f"{member.user.get_username()} removed")


@login_required
@require_POST
def notification_read(request, pk):
    """Mark one of your own notifications read (anyone else's is a 404)."""
    notification = notification_for(request.user, pk)
    services.notification_mark_read(notification=notification, user=request.user)
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, {request.get_host()}):
        back = reverse("audit:project_list")
    return redirect(back)
