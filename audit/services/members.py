"""A project's members: add one, change a role, remove one (admins only). A project
always keeps an admin: the last one can neither leave nor be demoted."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction

from ..models import Assignment, Membership, Project, Role
from ..permissions import ASSIGN, require
from .common import ServiceError


def _check_role(role: str) -> None:
    if role not in Role.values:
        raise ServiceError(f"unknown role {role!r} (annotator, reviewer or admin)")


def _keeps_an_admin(membership: Membership) -> None:
    """Raise when ``membership`` is the project's last admin."""
    if membership.role != Role.ADMIN:
        return
    admins = Membership.objects.select_for_update().filter(
        project_id=membership.project_id, role=Role.ADMIN
    )
    if admins.count() <= 1:
        raise ServiceError("a project keeps at least one admin: make another member admin first")


def membership_create(*, project: Project, username: str, role: str, by) -> Membership:
    """Make the user ``username`` a member of ``project`` with ``role``."""
    require(by, project.pk, ASSIGN)
    _check_role(role)
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ServiceError(f"no user named {username!r}")
    with transaction.atomic():
        if Membership.objects.filter(project=project, user=user).exists():
            raise ServiceError(f"{username} is already a member of {project.name}")
        return Membership.objects.create(project=project, user=user, role=role)


def membership_set_role(*, membership: Membership, role: str, by) -> Membership:
    """Give a member another role (the last admin stays admin)."""
    require(by, membership.project_id, ASSIGN)
    _check_role(role)
    with transaction.atomic():
        if role != membership.role:
            _keeps_an_admin(membership)
            membership.role = role
            membership.save(update_fields=["role"])
    return membership


def membership_delete(*, membership: Membership, by) -> None:
    """Remove a member and their assignments in the project (not the last admin)."""
    require(by, membership.project_id, ASSIGN)
    with transaction.atomic():
        _keeps_an_admin(membership)
        Assignment.objects.filter(project_id=membership.project_id, user=membership.user).delete()
        membership.delete()
