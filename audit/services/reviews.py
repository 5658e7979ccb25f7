"""Review decisions on many nodes at once: confirm, reject, and undo back to *proposed*.

Every call names each node with the version the reviewer saw, so a key pressed while the
page was still showing another node (or a copy someone else changed meanwhile) changes
nothing. One call is one transaction with one audit record per changed node.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from ..models import AuditRecord, Contract, Node, ReviewStatus
from ..selectors.contracts import node_snapshot
from .common import ServiceError, actor, editable, touch

REVIEW_STATUS = {
    "confirm": ReviewStatus.CONFIRMED,
    "reject": ReviewStatus.REJECTED,
    "undo": ReviewStatus.PROPOSED,
}


class StaleReview(ServiceError):
    """A node changed after the reviewer's copy of it was rendered."""


def nodes_review(
    *, contract: Contract, user, action: str, nodes: Sequence[tuple[int, int]]
) -> list[tuple[Node, str]]:
    """Give each node of ``nodes`` (``(pk, version seen)``) the status of ``action``.

    All or nothing: if any node is not of ``contract`` or its version is not the one
    seen, :class:`StaleReview` (or :class:`ServiceError`) is raised and nothing changes.
    Nodes already in the status are left alone. Returns ``(node, previous status)`` for
    each node that changed, with its new version.
    """
    status = REVIEW_STATUS.get(action)
    if status is None:
        raise ServiceError(f"unknown review action {action!r}")
    seen = dict(nodes)
    if not seen:
        raise ServiceError("no nodes to review")
    editable(contract)
    with transaction.atomic():
        rows = list(
            Node.objects.select_for_update(of=("self",))
            .filter(contract=contract, pk__in=seen)
            .select_related("parent")
            .prefetch_related("spans")
            .order_by("position", "pk")
        )
        if len(rows) != len(seen):
            raise ServiceError("some of these nodes are not part of this contract")
        stale = [n for n in rows if n.version != seen[n.pk]]
        if stale:
            names = ", ".join(f"{n.node_id} (now v{n.version})" for n in stale[:5])
            raise StaleReview(
                f"changed meanwhile: {names}{' …' if len(stale) > 5 else ''};"
                " nothing was changed, look again and retry"
            )
        changed = _apply(
            contract, user, action, status, [n for n in rows if n.review_status != status]
        )
        if changed:
            touch(contract)
    return changed


def _apply(contract, user, action, status, todo: list[Node]) -> list[tuple[Node, str]]:
    now = timezone.now()
    records, changed = [], []
    for n in todo:
        before = node_snapshot(n)
        changed.append((n, n.review_status))
        n.review_status, n.version, n.updated_at = status, n.version + 1, now
        records.append(
            AuditRecord(
                contract=contract,
                user=actor(user),
                action=action,
                object_type="node",
                object_id=n.node_id,
                before=before,
                after=node_snapshot(n),
            )
        )
    Node.objects.bulk_update(todo, ["review_status", "version", "updated_at"])
    AuditRecord.objects.bulk_create(records)
    return changed
