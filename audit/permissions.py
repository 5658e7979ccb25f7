"""Who may do what: every view resolves its object through these helpers.

A user who is not a member of the object's project gets a 404 (the object's existence is
not revealed); a member whose role is too low gets a 403.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404

from .models import Contract, Membership, Project, Role

RANK = {Role.ANNOTATOR: 1, Role.REVIEWER: 2, Role.ADMIN: 3}

# What each action needs, at least.
VIEW = Role.ANNOTATOR
EDIT = Role.ANNOTATOR  # propose, confirm, reject, edit, queries, new version
REVIEW = Role.REVIEWER  # mark audited
IMPORT = Role.REVIEWER
# Starting a contract from a new artifact is annotation work: annotators and admins
# (a reviewer-only member reviews what others start).
CREATE_ROLES = frozenset({Role.ANNOTATOR, Role.ADMIN})


def can_create(role: str) -> bool:
    return role in CREATE_ROLES


def has_role(role: str, minimum: str) -> bool:
    return RANK[Role(role)] >= RANK[Role(minimum)]


def _check(membership: Membership | None, minimum: str) -> Membership:
    if membership is None:
        raise Http404("no such object")
    if not has_role(membership.role, minimum):
        raise PermissionDenied(f"this needs the {minimum} role")
    return membership


def project_for(user, slug: str, minimum: str = VIEW) -> tuple[Project, Membership]:
    """The project ``slug`` and the user's membership in it (404 for non-members)."""
    if not user.is_authenticated:
        raise Http404("no such project")
    membership = (
        Membership.objects.select_related("project").filter(project__slug=slug, user=user).first()
    )
    membership = _check(membership, minimum)
    return membership.project, membership


def contract_for(user, pk: int, minimum: str = VIEW) -> tuple[Contract, Membership]:
    """Contract ``pk`` with its project and artifact, and the user's membership."""
    if not user.is_authenticated:
        raise Http404("no such contract")
    contract = Contract.objects.select_related("project", "artifact").filter(pk=pk).first()
    if contract is None:
        raise Http404("no such contract")
    membership = Membership.objects.filter(project_id=contract.project_id, user=user).first()
    return contract, _check(membership, minimum)
