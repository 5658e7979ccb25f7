"""Who may do what: every view, API view and service resolves its object through here.

A user who is not a member of the object's project gets a 404 (the object's existence is
not revealed); a member whose role is too low gets a 403. The same rule serves the HTML
views (``project_for``, ``contract_for``, ``run_for``, ``batch_for``), the services
(``require``) and the REST API (the DRF permission classes at the end).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import Http404
from rest_framework.permissions import BasePermission

from .models import (
    AnnotatorDecision,
    Assignment,
    AssignmentRole,
    Batch,
    Comment,
    Contract,
    IngestedTrace,
    IngestToken,
    Membership,
    Notification,
    Project,
    Role,
    RoutingRule,
    Run,
    TeamPhase,
    WebhookEndpoint,
)

RANK = {Role.ANNOTATOR: 1, Role.REVIEWER: 2, Role.ADMIN: 3}

# What each action needs, at least.
VIEW = Role.ANNOTATOR
EDIT = Role.ANNOTATOR  # propose, confirm, reject, edit, queries, new version
REVIEW = Role.REVIEWER  # mark audited
IMPORT = Role.REVIEWER
RUN = Role.ANNOTATOR  # start a run, see runs
BATCH = Role.REVIEWER  # start a suite batch
VERDICT = Role.REVIEWER  # record a verdict on a run
TEACH = Role.REVIEWER  # pair or unpair a run's steps (teaches enactments)
UNTEACH = Role.ANNOTATOR  # remove a taught enactment from a contract
# Starting a contract from a new artifact is annotation work: annotators and admins
# (a reviewer-only member reviews what others start).
CREATE_ROLES = frozenset({Role.ANNOTATOR, Role.ADMIN})
ASSIGN = Role.ADMIN  # assign work, switch double annotation on or off
CURATE = Role.REVIEWER  # adjudicate a double-annotated contract
COMMENT = Role.ANNOTATOR  # write, resolve and reopen comments
THRESHOLDS = Role.ADMIN  # set the P(violation) thresholds of a project's review
# Ingest tokens are credentials and routing rules decide what runs: admins only. The
# live traces and their queue are runs in the making: whoever sees runs sees them,
# and whoever starts runs may route a queued trace again.
INGEST = Role.ADMIN
# A webhook's URL can itself be a credential (a chat tool's incoming-webhook URL), and
# its deliveries leave the site: admins only, the page included.
WEBHOOKS = Role.ADMIN


def can_create(role: str) -> bool:
    return role in CREATE_ROLES


def has_role(role: str, minimum: str) -> bool:
    return RANK[Role(role)] >= RANK[Role(minimum)]


def check(membership: Membership | None, minimum: str) -> Membership:
    """``membership`` if it has at least ``minimum``: 404 without one, 403 below it."""
    if membership is None:
        raise Http404("no such object")
    if not has_role(membership.role, minimum):
        raise PermissionDenied(f"this needs the {minimum} role")
    return membership


def membership_of(user: Any, project_id: int) -> Membership | None:
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(project_id=project_id, user=user).first()


def require(user: Any, project_id: int, minimum: str) -> Membership:
    """The user's membership of project ``project_id``, if it has at least ``minimum``."""
    return check(membership_of(user, project_id), minimum)


def roles_of(user: Any) -> dict[int, str]:
    """Project id -> the user's role, for every project the user is a member of."""
    if not user.is_authenticated:
        return {}
    return dict(Membership.objects.filter(user=user).values_list("project_id", "role"))


def project_for(user: Any, slug: str, minimum: str = VIEW) -> tuple[Project, Membership]:
    """The project ``slug`` and the user's membership in it (404 for non-members)."""
    if not user.is_authenticated:
        raise Http404("no such project")
    membership = (
        Membership.objects.select_related("project").filter(project__slug=slug, user=user).first()
    )
    membership = check(membership, minimum)
    return membership.project, membership


def contract_for(user: Any, pk: int, minimum: str = VIEW) -> tuple[Contract, Membership]:
    """Contract ``pk`` with its project and artifact, and the user's membership."""
    if not user.is_authenticated:
        raise Http404("no such contract")
    contract = Contract.objects.select_related("project", "artifact").filter(pk=pk).first()
    if contract is None:
        raise Http404("no such contract")
    return contract, require(user, contract.project_id, minimum)


def run_for(
    user: Any, pk: int, minimum: str = RUN, *, only: tuple[str, ...] = ()
) -> tuple[Run, Membership]:
    """Run ``pk`` with its contract and project, and the user's membership (404 outside).

    ``only``: just these fields of the run (a status poll needs no report, overlay or
    input, which are most of a run's bytes)."""
    if not user.is_authenticated:
        raise Http404("no such run")
    qs = Run.objects.filter(pk=pk)
    qs = (
        qs.only("project_id", *only)
        if only
        else qs.select_related("project", "contract", "created_by")
    )
    run = qs.first()
    if run is None:
        raise Http404("no such run")
    return run, require(user, run.project_id, minimum)


def batch_for(user: Any, pk: int, minimum: str = RUN) -> tuple[Batch, Membership]:
    """Batch ``pk`` (without its archive) and the user's membership (404 outside)."""
    if not user.is_authenticated:
        raise Http404("no such batch")
    batch = Batch.objects.select_related("project").defer("archive").filter(pk=pk).first()
    if batch is None:
        raise Http404("no such batch")
    return batch, require(user, batch.project_id, minimum)


def _in_project(obj: Any, slug: str, user: Any, minimum: str) -> Membership:
    if obj is None or obj.project.slug != slug:
        raise Http404("no such object")
    return require(user, obj.project_id, minimum)


def ingest_token_for(user: Any, slug: str, pk: int, minimum: str = INGEST) -> IngestToken:
    """Ingest token ``pk`` of project ``slug`` (404 outside it, 403 below ``minimum``)."""
    token = IngestToken.objects.select_related("project").filter(pk=pk).first()
    _in_project(token, slug, user, minimum)
    return token  # type: ignore[return-value]


def routing_rule_for(user: Any, slug: str, pk: int, minimum: str = INGEST) -> RoutingRule:
    """Routing rule ``pk`` of project ``slug`` (404 outside it, 403 below ``minimum``)."""
    rule = RoutingRule.objects.select_related("project").filter(pk=pk).first()
    _in_project(rule, slug, user, minimum)
    return rule  # type: ignore[return-value]


def ingested_trace_for(user: Any, slug: str, pk: int, minimum: str = RUN) -> IngestedTrace:
    """Ingested trace ``pk`` of project ``slug`` (404 outside it, 403 below ``minimum``)."""
    trace = IngestedTrace.objects.select_related("project").filter(pk=pk).first()
    _in_project(trace, slug, user, minimum)
    return trace  # type: ignore[return-value]


def webhook_for(user: Any, slug: str, pk: int, minimum: str = WEBHOOKS) -> WebhookEndpoint:
    """Webhook endpoint ``pk`` of project ``slug`` (404 outside it, 403 below ``minimum``)."""
    endpoint = WebhookEndpoint.objects.select_related("project").filter(pk=pk).first()
    _in_project(endpoint, slug, user, minimum)
    return endpoint  # type: ignore[return-value]


# ---------------------------------------------------------------------------- team work


def comment_for(user: Any, pk: int, minimum: str = VIEW) -> tuple[Comment, Membership]:
    """Comment ``pk`` with its contract, and the user's membership (404 outside)."""
    if not user.is_authenticated:
        raise Http404("no such comment")
    comment = Comment.objects.select_related("contract").filter(pk=pk).first()
    if comment is None:
        raise Http404("no such comment")
    return comment, require(user, comment.contract.project_id, minimum)


def notification_for(user: Any, pk: int) -> Notification:
    """Notification ``pk`` if it is ``user``'s own, of a project they are still a member
    of (anything else is a 404: a user never learns that another's exists, and a former
    member reads no more of the project's comments)."""
    if not user.is_authenticated:
        raise Http404("no such notification")
    notification = (
        Notification.objects.filter(
            pk=pk, user=user, comment__contract__project__memberships__user=user
        )
        .distinct()
        .first()
    )
    if notification is None:
        raise Http404("no such notification")
    return notification


def assigned(user: Any, contract: Contract, role: str = AssignmentRole.ANNOTATOR) -> bool:
    """``user`` is assigned ``role`` on ``contract`` or on its whole project."""
    return (
        Assignment.objects.filter(user=user, role=role, project_id=contract.project_id)
        .filter(models.Q(contract=contract) | models.Q(contract__isnull=True))
        .exists()
    )


def annotated(user: Any, contract: Contract) -> bool:
    """``user`` has own decisions on ``contract`` (then they may not adjudicate it)."""
    return AnnotatorDecision.objects.filter(contract=contract, user=user).exists()


def decisions_visible(user: Any, membership: Membership, contract: Contract, owner: Any) -> bool:
    """May ``user`` read ``owner``'s blind decisions on ``contract``?

    Their own, always. Anyone else's only once adjudication has started (the
    decisions are then final), and before that only a curator (reviewer or admin) who
    neither annotates nor is assigned to annotate this contract.
    """
    if getattr(owner, "pk", owner) == user.pk:
        return True
    team = getattr(contract, "double_annotation", None)
    if team is not None and team.phase != TeamPhase.ANNOTATING:
        return True
    if not has_role(membership.role, CURATE):
        return False
    return not annotated(user, contract) and not assigned(user, contract)


# ---------------------------------------------------------------------------- REST API


class ProjectRole(BasePermission):
    """DRF object permission: the request's user has the view's role on the object's
    project. A view names the role per action in ``required_roles`` (``{"create":
    RUN, "verdicts:POST": VERDICT}``); any other action needs :data:`VIEW`. Objects
    of projects the user is not a member of are 404s, as in the UI."""

    def has_object_permission(self, request: Any, view: Any, obj: Any) -> bool:
        require(request.user, project_id_of(obj), required_role(view, request))
        return True


def project_id_of(obj: Any) -> int:
    """The project an object belongs to (a project, or a row with a project or contract)."""
    if isinstance(obj, Project):
        return obj.pk
    if hasattr(obj, "project_id"):
        return obj.project_id
    return obj.contract.project_id


def required_role(view: Any, request: Any) -> str:
    """The role ``view`` asks for on this request (see :class:`ProjectRole`)."""
    roles: dict[str, str] = getattr(view, "required_roles", {})
    action = getattr(view, "action", None) or ""
    return roles.get(f"{action}:{request.method}") or roles.get(action) or VIEW


def authorize(user: Any, project_id: int, minimum: str) -> None:
    """A service's own check that ``user`` may act on project ``project_id``: the views
    and the API check first, this keeps a service safe from any other caller. ``None``
    is the system (a task, a management command) and may act."""
    if user is not None:
        require(user, project_id, minimum)
