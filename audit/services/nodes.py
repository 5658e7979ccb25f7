"""Nodes of a contract (and their evidence spans): review, edit, create."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction

from ..models import Contract, Invariant, Node, ReviewStatus, Span
from ..permissions import EDIT, authorize
from ..selectors.contracts import invariant_snapshot, node_snapshot
from .adjudication import guard_shared_nodes
from .common import ServiceError, check_span, next_position, record, touch
from .concurrency import check_version, locked_contract, retry_on_lock


def locked_node(node: Node, expected_version: int | None) -> Node:
    """``node`` re-read under its contract's lock, at ``expected_version``."""
    contract = locked_contract(node.contract_id)
    node = Node.objects.select_for_update(of=("self",)).get(pk=node.pk)
    node.contract = contract
    check_version(
        node.version,
        expected_version,
        contract_id=contract.pk,
        object_type="node",
        object_id=node.node_id,
    )
    return node


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


@retry_on_lock
def node_update(*, node: Node, user, data: Mapping[str, Any], expected_version: int | None) -> Node:
    """Edit a node's fields (``data``: the cleaned form). Marks it *edited*."""
    authorize(user, node.contract.project_id, EDIT)
    guard_shared_nodes(node.contract, user)
    with transaction.atomic():
        node = locked_node(node, expected_version)
        parent = data.get("parent")
        if parent is not None and parent.contract_id != node.contract_id:
            raise ServiceError("the parent must be a node of the same contract")
        if parent is not None and _would_cycle(node, parent):
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


@retry_on_lock
def node_create(*, contract: Contract, user, data: Mapping[str, Any], start: int, end: int) -> Node:
    """A node written by a person, evidenced by ``[start, end)``; it is *confirmed*."""
    authorize(user, contract.project_id, EDIT)
    with transaction.atomic():
        contract = locked_contract(contract.pk)
        start, end = check_span(contract, start, end)
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


@retry_on_lock
def node_add_evidence(
    *, node: Node, user, start: int, end: int, expected_version: int | None
) -> Span:
    authorize(user, node.contract.project_id, EDIT)
    guard_shared_nodes(node.contract, user)
    with transaction.atomic():
        node = locked_node(node, expected_version)
        start, end = check_span(node.contract, start, end)
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


@retry_on_lock
def span_delete(*, span: Span, user, expected_version: int | None) -> None:
    """Remove one evidence span (a node keeps at least one); ``expected_version`` is
    the version of the node or invariant the span belongs to."""
    owner: Node | Invariant = span.node or span.invariant  # type: ignore[assignment]
    authorize(user, owner.contract.project_id, EDIT)
    with transaction.atomic():
        contract = locked_contract(owner.contract_id)
        owner = type(owner).objects.select_for_update(of=("self",)).get(pk=owner.pk)
        owner.contract = contract
        kind, owner_id = (
            ("node", owner.node_id) if isinstance(owner, Node) else ("invariant", owner.inv_id)
        )
        check_version(
            owner.version,
            expected_version,
            contract_id=contract.pk,
            object_type=kind,
            object_id=owner_id,
        )
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
            owner.version += 1
            owner.save(update_fields=["version"])
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
