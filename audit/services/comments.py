"""Comments on a contract, its nodes, edges and invariants, and on runs: @mentions of
project members (each mentioned member gets a notification on their home page),
resolve and reopen. Open comments block *audited*."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from ..models import Comment, CommentTarget, Contract, Edge, Invariant, Node, Notification, Run
from ..permissions import COMMENT, require
from .common import ServiceError, record

MENTION = re.compile(r"(?<![\w@])@([\w.+-]+)")
MAX_BODY = 5000
TARGET_MODELS: dict[str, Any] = {
    CommentTarget.NODE: Node,
    CommentTarget.EDGE: Edge,
    CommentTarget.INVARIANT: Invariant,
    CommentTarget.RUN: Run,
}


def mentioned_members(contract: Contract, body: str) -> list[Any]:
    """The project members named ``@username`` in ``body`` (other names are plain text:
    whether such a user exists elsewhere is not revealed)."""
    names = {m.rstrip(".") for m in MENTION.findall(body)}
    if not names:
        return []
    return list(
        get_user_model()
        .objects.filter(username__in=names, memberships__project_id=contract.project_id)
        .distinct()
    )


def comment_create(
    *, contract: Contract, user, body: str, target: str = "contract", obj: Any = None
) -> Comment:
    """A comment on ``contract`` itself or on ``obj`` (a node, edge, invariant or run of
    it), with its @mentions."""
    require(user, contract.project_id, COMMENT)
    body = (body or "").strip()
    if not body:
        raise ServiceError("the comment is empty")
    if len(body) > MAX_BODY:
        raise ServiceError(f"a comment has at most {MAX_BODY} characters")
    if target not in CommentTarget.values:
        raise ServiceError(f"unknown comment target {target!r}")
    if target != CommentTarget.CONTRACT:
        model = TARGET_MODELS[target]
        if not isinstance(obj, model) or obj.contract_id != contract.pk:
            raise ServiceError(f"the {target} is not part of this contract")
    with transaction.atomic():
        comment = Comment.objects.create(
            contract=contract,
            target=target,
            author=user,
            body=body,
            **({target: obj} if target != CommentTarget.CONTRACT else {}),
        )
        mentions = mentioned_members(contract, body)
        comment.mentions.set(mentions)
        Notification.objects.bulk_create(
            Notification(user=u, comment=comment) for u in mentions if u.pk != user.pk
        )
        after = {
            "target": comment.target_label,
            "body": body,
            "mentions": sorted(u.get_username() for u in mentions),
        }
        record(contract, user, "comment", "comment", str(comment.pk), after=after)
    return comment


def comment_set_resolved(*, comment: Comment, user, resolved: bool) -> Comment:
    """Resolve (or reopen) ``comment``; any member who may comment may do either."""
    require(user, comment.contract.project_id, COMMENT)
    with transaction.atomic():
        comment = Comment.objects.select_for_update().get(pk=comment.pk)
        if comment.resolved == resolved:
            return comment
        comment.resolved = resolved
        comment.resolved_by = user if resolved else None
        comment.resolved_at = timezone.now() if resolved else None
        comment.save(update_fields=["resolved", "resolved_by", "resolved_at"])
        record(
            comment.contract,
            user,
            "resolve" if resolved else "reopen",
            "comment",
            str(comment.pk),
            before={"resolved": not resolved},
            after={"resolved": resolved},
        )
    return comment


def notification_mark_read(*, notification: Notification, user) -> Notification:
    """``user`` has read their own ``notification``: it leaves their home page."""
    if notification.user_id != user.pk:
        raise ServiceError("this notification is someone else's")
    with transaction.atomic():
        if notification.read_at is None:
            notification.read_at = timezone.now()
            notification.save(update_fields=["read_at"])
    return notification
