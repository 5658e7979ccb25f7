"""Nodes of a contract (and their evidence spans): review, edit, create."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction

from ..models import Contract, Invariant, Node, ReviewStatus, Span
from ..selectors.contracts import invariant_snapshot, node_snapshot
from .common import ServiceError, check_span, editable, next_position, record, touch


def _review(node: Node, user, status: str, action: str) -> Node:
    editable(node.contract)
    with transaction.atomic():
        before = node_snapshot(node)
        node.review_status = status
        node.version += 1
        node.save(update_fields=["review_status", "version", "updated_at"])
        record(
            node.contract,
            user,
            action,
            "node",
            node.node_id,
            before=before,
            after=node_snapshot(node),
        )
        touch(node.contract)
    return node


def node_confirm(*, node: Node, user) -> Node:
    return _review(node, user, ReviewStatus.CONFIRMED, "confirm")


def node_reject(*, node: Node, user) -> Node:
    return _review(node, user, ReviewStatus.REJECTED, "reject")


def _would_cycle(node: Node, parent: Node | None) -> bool:
    parents = dict(node.contract.nodes.values_list("pk", "parent_id"))
    seen = set()
    current = parent.pk if parent else None
    while current is not None and current not in seen:
        if current == node.pk:
            return True
        seen.add(current)
        current = parents.get(current)
    return False


def node_update(*, node: Node, user, data: Mapping[str, Any], expected_version: int) -> Node:
    """Edit a node's fields (``data``: the cleaned form). Marks it *edited*."""
    editable(node.contract)
    with transaction.atomic():
        node = (
            Node.objects.select_for_update(of=("self",))
            .select_related("contract__artifact")
            .get(pk=node.pk)
        )
        if node.version != expected_version:
            raise ServiceError(
                f"{node.node_id} was changed by someone else meanwhile (now version"
                f" {node.version}); reload it and edit again"
            )
        parent = data.get("parent")
        if parent is not None and parent.contract_id != node.contract_id:
            raise ServiceError("the parent must be a node of the same contract")
        if _would_cycle(node, parent):
            raise ServiceError(f"{parent.node_id} is below {node.node_id}: that makes a cycle")
        new_id = data.get("node_id", node.node_id)
        if new_id != node.node_id and node.contract.nodes.filter(node_id=new_id).exists():
            raise ServiceError(f"the id {new_id!r} is already taken in this contract")
        before = node_snapshot(node)
        for field in ("type", "label", "description", "required", "explicit", "combine", "meta"):
            if field in data:
                setattr(node, field, data[field])
        node.node_id = new_id
        node.parent = parent
        node.review_status = ReviewStatus.EDITED
        node.version += 1
        try:
            node.save()
        except IntegrityError as exc:
            raise ServiceError(f"the change breaks a constraint: {exc}") from exc
        record(
            node.contract,
            user,
            "edit",
            "node",
            node.node_id,
            before=before,
            after=node_snapshot(node),
        )
        touch(node.contract)
    return node


def node_create(*, contract: Contract, user, data: Mapping[str, Any], start: int, end: int) -> Node:
    """A node written by a person, evidenced by ``[start, end)``; it is *confirmed*."""
    editable(contract)
    start, end = check_span(contract, start, end)
    with transaction.atomic():
        parent = data.get("parent")
        if parent is not None and parent.contract_id != contract.pk:
            raise ServiceError("the parent must be a node of the same contract")
        node_id = data["node_id"]
        if contract.nodes.filter(node_id=node_id).exists():
            raise ServiceError(f"the id {node_id!r} is already taken in this contract")
        node = Node.objects.create(
            contract=contract,
            node_id=node_id,
            type=data["type"],
            label=data["label"],
            description=data.get("description", ""),
            required=data.get("required", True),
            explicit=data.get("explicit", False),
            combine=data.get("combine", "all"),
            parent=parent,
            meta=data.get("meta") or {},
            position=next_position(contract.nodes),
            review_status=ReviewStatus.CONFIRMED,
            proposer=f"annotator:{user.get_username()}",
        )
        Span.objects.create(node=node, start=start, end=end)
        record(contract, user, "create", "node", node.node_id, after=node_snapshot(node))
        touch(contract)
    return node


def node_add_evidence(*, node: Node, user, start: int, end: int) -> Span:
    editable(node.contract)
    start, end = check_span(node.contract, start, end)
    with transaction.atomic():
        before = node_snapshot(node)
        span = Span.objects.create(
            node=node, start=start, end=end, position=next_position(node.spans)
        )
        if node.review_status == ReviewStatus.CONFIRMED:
            node.review_status = ReviewStatus.EDITED
        node.version += 1
        node.save(update_fields=["review_status", "version", "updated_at"])
        record(
            node.contract,
            user,
            "add_evidence",
            "node",
            node.node_id,
            before=before,
            after=node_snapshot(node),
        )
        touch(node.contract)
    return span


def span_delete(*, span: Span, user) -> None:
    """Remove one evidence span (a node keeps at least one)."""
    owner: Node | Invariant = span.node or span.invariant  # type: ignore[assignment]
    contract = owner.contract
    editable(contract)
    with transaction.atomic():
        if owner.spans.count() <= 1:
            raise ServiceError("every node and invariant needs at least one evidence span")
        if isinstance(owner, Node):
            before = node_snapshot(owner)
            span.delete()
            owner.version += 1
            owner.save(update_fields=["version", "updated_at"])
            record(
                contract,
                user,
                "remove_evidence",
                "node",
                owner.node_id,
                before=before,
                after=node_snapshot(owner),
            )
        else:
            before = invariant_snapshot(owner)
            span.delete()
            record(
                contract,
                user,
                "remove_evidence",
                "invariant",
                owner.inv_id,
                before=before,
                after=invariant_snapshot(owner),
            )
        touch(contract)
