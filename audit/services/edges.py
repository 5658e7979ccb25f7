"""Edges between two nodes of a contract."""

from __future__ import annotations

from django.db import transaction

from ..models import Contract, Edge, EdgeKind, Node
from ..selectors.contracts import edge_problem
from .common import ServiceError, editable, next_position, record, touch


def edge_create(*, contract: Contract, user, source: Node, target: Node, kind: str) -> Edge:
    editable(contract)
    if source.contract_id != contract.pk or target.contract_id != contract.pk:
        raise ServiceError("both ends must be nodes of this contract")
    if source.pk == target.pk:
        raise ServiceError("an edge needs two different nodes")
    if kind not in EdgeKind.values:
        raise ServiceError(f"unknown edge kind {kind!r}")
    with transaction.atomic():
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


def edge_delete(*, edge: Edge, user) -> None:
    contract = edge.contract
    editable(contract)
    with transaction.atomic():
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
