"""Edges between two nodes of a contract."""

from __future__ import annotations

from django.db import transaction

from ..models import Contract, Edge, EdgeKind, Node
from ..selectors.contracts import edge_problem
from .common import ServiceError, next_position, record, touch
from .concurrency import check_version, locked_contract, retry_on_lock


@retry_on_lock
def edge_create(
    *,
    contract: Contract,
    user,
    source: Node,
    target: Node,
    kind: str,
    node: Node,
    expected_version: int | None,
) -> Edge:
    """An edge drawn from the panel of ``node`` (one of its ends), as the user saw that
    node at ``expected_version``."""
    if source.contract_id != contract.pk or target.contract_id != contract.pk:
        raise ServiceError("both ends must be nodes of this contract")
    if source.pk == target.pk:
        raise ServiceError("an edge needs two different nodes")
    if kind not in EdgeKind.values:
        raise ServiceError(f"unknown edge kind {kind!r}")
    with transaction.atomic():
        contract = locked_contract(contract.pk)
        current = Node.objects.filter(pk=node.pk).values_list("version", flat=True).first()
        check_version(
            current or 0,
            expected_version,
            contract_id=contract.pk,
            object_type="node",
            object_id=node.node_id,
        )
        problem = edge_problem(contract, source, target, kind)
        if problem:
            raise ServiceError(problem)
        edge = Edge.objects.create(
            contract=contract,
            source=source,
            target=target,
            kind=kind,
            position=next_position(contract.edges),
        )
        record(
            contract,
            user,
            "create",
            "edge",
            f"{source.node_id}->{target.node_id}",
            after={"source": source.node_id, "target": target.node_id, "kind": kind},
        )
        touch(contract)
    return edge


@retry_on_lock
def edge_delete(*, edge: Edge, user, expected_version: int | None) -> None:
    with transaction.atomic():
        contract = locked_contract(edge.contract_id)
        current = Edge.objects.select_for_update(of=("self",)).filter(pk=edge.pk).first()
        if current is None:
            raise ServiceError(
                f"the edge {edge.source.node_id} -{edge.kind}-> {edge.target.node_id} was"
                " deleted meanwhile"
            )
        check_version(
            current.version,
            expected_version,
            contract_id=contract.pk,
            object_type="edge",
            object_id=f"{edge.source.node_id}->{edge.target.node_id}",
        )
        before = {"source": edge.source.node_id, "target": edge.target.node_id, "kind": edge.kind}
        edge.delete()
        record(
            contract,
            user,
            "delete",
            "edge",
            f"{before['source']}->{before['target']}",
            before=before,
        )
        touch(contract)
