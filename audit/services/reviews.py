"""Review decisions on many nodes at once: confirm, reject, and undo.

A decision moves nodes from one status to another; it never overwrites a decision it
was not asked to change. It acts only on the nodes whose current status is one the call
names (``from_states``: *proposed* unless the caller picked more), so confirming the
outline as shown leaves a rejected node rejected. Undo puts each node back to the status
it had before the decision it undoes, as that decision's audit record saw it.

Every call names each node with the version the reviewer saw, so a key pressed while the
page was still showing another node (or a copy someone else changed meanwhile) changes
nothing. One call is one transaction with one audit record per changed node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from ..models import AuditRecord, Contract, Node, ReviewStatus
from ..permissions import EDIT, authorize
from ..selectors.contracts import node_snapshot
from .adjudication import guard_shared_nodes
from .common import ServiceError, actor, touch
from .concurrency import ConflictError, check_version, locked_contract, retry_on_lock

DECISIONS = {"confirm": ReviewStatus.CONFIRMED, "reject": ReviewStatus.REJECTED}
UNDO = "undo"
# A node named on its own (a key pressed on the panel) is a deliberate choice whatever
# its status; a bulk decision moves *proposed* nodes unless the reviewer picked others.
ANY_STATE: tuple[str, ...] = tuple(ReviewStatus.values)
DEFAULT_FROM: tuple[str, ...] = (ReviewStatus.PROPOSED,)
PAST = {"confirm": "Confirmed", "reject": "Rejected"}


class StaleReview(ConflictError):
    """A node changed after the reviewer's copy of it was rendered (HTTP 409)."""


@dataclass(frozen=True)
class ReviewOutcome:
    """What a review call did: ``changed`` is ``(node with its new version, status
    before)`` per node it moved; ``skipped`` counts, per status, the nodes it was sent
    and left as they were."""

    action: str
    changed: list[tuple[Node, str]]
    skipped: dict[str, int]

    @property
    def moved(self) -> dict[str, int]:
        """How many nodes left each status."""
        return _in_order(Counter(before for _, before in self.changed))

    @property
    def summary(self) -> str:
        """One sentence for the reviewer, e.g. "Confirmed 9 proposed; 2 rejected left as
        they were." """
        if self.action == UNDO:
            back = Counter(n.review_status for n, _ in self.changed)
            return "Undone: " + _counted(_in_order(back), "back to ") + "."
        done = (
            f"{PAST[self.action]} {_counted(self.moved)}"
            if self.changed
            else f"Nothing to {self.action}"
        )
        left = f"; {_counted(self.skipped)} left as they were" if self.skipped else ""
        return done + left + "."


def _in_order(counts: Counter[str]) -> dict[str, int]:
    return {s: counts[s] for s in ReviewStatus.values if counts[s]}


def _counted(counts: dict[str, int], prefix: str = "") -> str:
    return ", ".join(f"{n} {prefix}{status}" for status, n in counts.items())


@retry_on_lock
def nodes_review(
    *,
    contract: Contract,
    user,
    action: str,
    nodes: Sequence[tuple[int, int]],
    from_states: Collection[str] = DEFAULT_FROM,
) -> ReviewOutcome:
    """Apply ``action`` to the nodes of ``nodes`` (``(pk, version seen)``).

    *confirm* and *reject* move the nodes whose status is in ``from_states`` and leave
    the others as they are; *undo* gives each node the status it had before the review
    decision that brought it to the version seen (and a new version).

    All or nothing: if any node is not of ``contract``, its version is not the one seen,
    or (for undo) its last change was not a review decision, :class:`StaleReview` (or
    :class:`ServiceError`) is raised and nothing changes.
    """
    authorize(user, contract.project_id, EDIT)
    if action != UNDO and action not in DECISIONS:
        raise ServiceError(f"unknown review action {action!r}")
    unknown = sorted(set(from_states) - set(ANY_STATE))
    if unknown or not from_states:
        raise ServiceError(f"unknown status to review from: {', '.join(unknown) or 'none'}")
    seen = dict(nodes)
    if not seen:
        raise ServiceError("no nodes to review")
    # while a double annotation is blind, decisions go to each annotator's own copy
    guard_shared_nodes(contract, user)
    with transaction.atomic():
        # editable under the lock; the revision counts only changes the export shows
        contract = locked_contract(contract.pk, revised=False)
        rows = _locked_nodes(contract, seen)
        if action == UNDO:
            targets = _undone(contract, rows)
        else:
            status = DECISIONS[action]
            targets = {
                n.pk: status
                for n in rows
                if n.review_status in from_states and n.review_status != status
            }
        changed = _apply(contract, user, action, rows, targets)
        if changed:
            # the export leaves rejected nodes out: only a move into or out of
            # *rejected* changes it (and so the cached audit), and only by which nodes
            # it leaves out (so the cached export base still holds)
            shown = any(ReviewStatus.REJECTED in (b, n.review_status) for n, b in changed)
            touch(contract, revise=shown, content=False)
    skipped = Counter(n.review_status for n in rows if n.pk not in targets)
    return ReviewOutcome(action=action, changed=changed, skipped=_in_order(skipped))


def _locked_nodes(contract: Contract, seen: dict[int, int]) -> list[Node]:
    """The nodes of ``seen``, locked, each at the version seen (else nothing changes)."""
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
    return rows


def _undone(contract: Contract, rows: list[Node]) -> dict[int, str]:
    """pk -> the status each node had before the review decision that made its current
    version; refused for a node whose last change was anything else (an edit, a
    curation, another undo): undo takes back a decision, not whatever came last."""
    last = dict(
        AuditRecord.objects.filter(
            contract=contract, object_type="node", object_id__in=[n.node_id for n in rows]
        )
        .order_by()
        .values("object_id")
        .annotate(last=Max("pk"))
        .values_list("object_id", "last")
    )
    records = AuditRecord.objects.in_bulk(list(last.values()))
    out: dict[int, str] = {}
    for n in rows:
        rec = records.get(last.get(n.node_id, 0))
        after, before = (rec.after or {}, rec.before or {}) if rec else ({}, {})
        made_now = (after.get("version"), after.get("review_status")) == (
            n.version,
            n.review_status,
        )
        if rec is None or rec.action not in DECISIONS or not made_now:
            raise ServiceError(
                f"Nothing was changed: the last change of {n.node_id} was not a review"
                " decision, so there is no decision to undo."
            )
        out[n.pk] = before["review_status"]
    return out


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


def _apply(
    contract: Contract, user, action: str, rows: list[Node], targets: dict[int, str]
) -> list[tuple[Node, str]]:
    """Give each node of ``rows`` named in ``targets`` its status there and a new
    version (versions only go up, an undo too), with one audit record each."""
    now = timezone.now()
    records: list[AuditRecord] = []
    changed: list[tuple[Node, str]] = []
    todo = [n for n in rows if n.pk in targets]
    for n in todo:
        before = node_snapshot(n)
        changed.append((n, n.review_status))
        n.review_status, n.version, n.updated_at = targets[n.pk], n.version + 1, now
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
