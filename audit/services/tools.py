"""A contract's tool catalogue: import it, bind a tool to a node, declare read-only tools.

Bindings and declared tools go through the node services, so node versions and the
audit history stay as for any other edit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from django.db import transaction

from matching.input_limits import InputRefused
from matching.tools import BINDABLE_TYPES, Tool, catalogue_document, parse_tools

from ..models import Contract, Node, NodeType, ReviewStatus
from ..permissions import EDIT, authorize
from .common import ServiceError, editable, input_limits, record, refused, touch
from .nodes import node_create, node_update


def catalogue_tools(contract: Contract) -> list[Tool]:
    """The contract's stored catalogue as :class:`~matching.tools.Tool` records (read
    afresh: the caller's instance may predate an import)."""
    stored = Contract.objects.values_list("tool_catalogue", flat=True).get(pk=contract.pk)
    return parse_tools(stored or [], limits=None)  # accepted when it was imported


def tool_catalogue_import(*, contract: Contract, user, source: Any) -> list[Tool]:
    """Replace the catalogue with an OpenAI ``tools`` list (within the input limits);
    bad input stores nothing."""
    authorize(user, contract.project_id, EDIT)
    editable(contract)
    try:
        tools = parse_tools(source, limits=input_limits())
    except InputRefused as exc:
        raise refused(exc) from exc
    except ValueError as exc:
        raise ServiceError(getattr(exc, "message", str(exc))) from exc
    with transaction.atomic():
        contract = Contract.objects.select_for_update(of=("self",)).get(pk=contract.pk)
        before = [t["function"]["name"] for t in contract.tool_catalogue or []]
        contract.tool_catalogue = catalogue_document(tools)
        contract.save(update_fields=["tool_catalogue", "updated_at"])
        record(
            contract,
            user,
            "import_tools",
            "contract",
            contract.key,
            before={"tools": before},
            after={"tools": [t.name for t in tools]},
        )
    return tools


def _known(contract: Contract, name: str) -> Tool:
    for tool in catalogue_tools(contract):
        if tool.name == name:
            return tool
    raise ServiceError(f"{name!r} is not a tool of this contract's catalogue")


def tool_binding_confirm(*, node: Node, user, tool: str, expected_version: int) -> Node:
    """Set ``meta.tool`` of an action or validation node to a catalogue tool."""
    authorize(user, node.contract.project_id, EDIT)
    editable(node.contract)
    _known(node.contract, tool)
    if node.type not in BINDABLE_TYPES:
        raise ServiceError(
            f"{node.node_id} is a {node.type}; only actions and validations call tools"
        )
    meta = {**(node.meta or {}), "tool": tool}
    return node_update(node=node, user=user, data={"meta": meta}, expected_version=expected_version)


def root_intent(contract: Contract) -> Node:
    """The first top-level intent that is not rejected: where permitted lookups hang."""
    root = (
        contract.nodes.filter(parent=None, type=NodeType.INTENT)
        .exclude(review_status=ReviewStatus.REJECTED)
        .order_by("position", "pk")
        .first()
    )
    if root is None:
        raise ServiceError("the contract has no top-level intent to declare tools under")
    return root


def _node_id(name: str, taken: set[str]) -> str:
    base = "tool_" + re.sub(r"[^A-Za-z0-9_.:-]", "_", name)
    candidate, n = base[:128], 2
    while candidate in taken:
        candidate, n = f"{base[:120]}_{n}", n + 1
    taken.add(candidate)
    return candidate


def tools_declare_read_only(*, contract: Contract, user, names: Sequence[str]) -> list[Node]:
    """Non-required actions under the root intent, each bound to one read-only tool.

    A matched call of such a tool pairs with its node (so it is not an extra action), and
    a run that never calls it has no omission (the node is not required).
    """
    authorize(user, contract.project_id, EDIT)
    editable(contract)
    if not names:
        raise ServiceError("choose at least one tool")
    tools = [_known(contract, n) for n in dict.fromkeys(names)]
    root = root_intent(contract)
    span = root.spans.order_by("position", "pk").first()
    if span is None:
        raise ServiceError(f"{root.node_id} has no evidence span to cite")
    bound = {n.meta.get("tool") for n in contract.nodes.filter(parent=root) if n.meta}
    taken = set(contract.nodes.values_list("node_id", flat=True))
    created = []
    with transaction.atomic():
        for tool in tools:
            if tool.name in bound:
                raise ServiceError(f"{tool.name} is already declared under {root.node_id}")
            data = {
                "node_id": _node_id(tool.name, taken),
                "type": NodeType.ACTION,
                "label": (tool.description or tool.words)[:300],
                "required": False,
                "parent": root,
                "meta": {"tool": tool.name},
            }
            created.append(
                node_create(contract=contract, user=user, data=data, start=span.start, end=span.end)
            )
        touch(contract)
    return created
