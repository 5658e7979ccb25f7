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
from ..permissions import EDIT, authorize
from ..selectors.contracts import node_snapshot
from .adjudication import guard_shared_nodes
from .common import ServiceError, actor, touch
from .concurrency import ConflictError, check_version, locked_contract, retry_on_lock

REVIEW_STATUS = {
    "confirm": ReviewStatus.CONFIRMED,
    "reject": ReviewStatus.REJECTED,
    "undo": ReviewStatus.PROPOSED,
}


class StaleReview(ConflictError):
    """A node changed after the reviewer's copy of it was rendered (HTTP 409)."""


@retry_on_lock
def nodes_review(
    *, contract: Contract, user, action: str, nodes: Sequence[tuple[int, int]]
) -> list[tuple[Node, str]]:
    """Give each node of ``nodes`` (``(pk, version seen)``) the status of ``action``.

    All or nothing: if any node is not of ``contract`` or its version is not the one
    seen, :class:`StaleReview` (or :class:`ServiceError`) is raised and nothing changes.
    Nodes already in the status are left alone. Returns ``(node, previous status)`` for
    each node that changed, with its new version.
    """
    authorize(user, contract.project_id, EDIT)
    status = REVIEW_STATUS.get(action)
    if status is None:
        raise ServiceError(f"unknown review action {action!r}")
    seen = dict(nodes)
    if not seen:
        raise ServiceError("no nodes to review")
    # while a double annotation is blind, decisions go to each annotator's own copy
    guard_shared_nodes(contract, user)
    with transaction.atomic():
        # editable under the lock; the revision counts only changes the export shows
        contract = locked_contract(contract.pk, revised=False)
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
            _refuse_stale(contract, stale, seen)
        changed = _apply(
            contract, user, action, status, [n for n in rows if n.review_status != status]
        )
        if changed:
            # the export leaves rejected nodes out: only a move into or out of
            # *rejected* changes it (and so the cached audit), and only by which nodes
            # it leaves out (so the cached export base still holds)
            shown = any(ReviewStatus.REJECTED in (before, status) for _, before in changed)
            touch(contract, revise=shown, content=False)
    return changed


def _refuse_stale(contract: Contract, stale: list[Node], seen: dict[int, int]) -> None:
    """Raise :class:`StaleReview` naming who changed the first stale node, and how."""
    first = stale[0]
    try:
        check_version(
            first.version,
            seen[first.pk],
            contract_id=contract.pk,
            object_type="node",
            object_id=first.node_id,
        )
    except ConflictError as exc:
        more = f" ({len(stale) - 1} more besides {first.node_id}.)" if len(stale) > 1 else ""
        raise StaleReview(
            f"Nothing was changed: {len(stale)} of these nodes changed meanwhile. {exc}{more}",
            current_version=first.version,
        ) from None


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
