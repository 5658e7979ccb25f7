"""Reads of a contract's tool catalogue: the tools, their bindings and suggestions."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from matching.tools import BINDABLE_TYPES, NodeText, Tool, parse_tools, suggest_bindings

from ..models import Contract, Node, ReviewStatus

logger = logging.getLogger(__name__)


@dataclass
class ToolRow:
    tool: Tool
    bound_to: list[str]  # node ids whose meta.tool names it


@dataclass
class SuggestionRow:
    node: Node
    tool: str
    score: float


def _encoder() -> Any:
    """The sentence encoder when its model is installed; suggestions never need it."""
    from matching.embed import ModelMissing, encoder  # numpy: loaded on use

    try:
        return encoder()
    except ModelMissing:
        return None


def _bound_names(meta: Any) -> list[str]:
    tool = (meta or {}).get("tool")
    if isinstance(tool, str):
        return [tool]
    return [t for t in tool if isinstance(t, str)] if isinstance(tool, list) else []


def tool_rows(contract: Contract, nodes: list[Node]) -> list[ToolRow]:
    tools = parse_tools(contract.tool_catalogue or [], limits=None)
    return [ToolRow(t, [n.node_id for n in nodes if t.name in _bound_names(n.meta)]) for t in tools]


def tool_suggestions(
    contract: Contract, nodes: list[Node], *, semantic: bool = True
) -> list[SuggestionRow]:
    """A suggested tool for each unbound, unrejected action or validation node."""
    tools = parse_tools(contract.tool_catalogue or [], limits=None)
    open_nodes = [
        n
        for n in nodes
        if n.type in BINDABLE_TYPES
        and not _bound_names(n.meta)
        and n.review_status != ReviewStatus.REJECTED
    ]
    by_id = {n.node_id: n for n in open_nodes}
    texts = [NodeText(n.node_id, n.type, n.label, n.description) for n in open_nodes]
    found = suggest_bindings(texts, tools, encoder=_encoder() if semantic else None)
    return [SuggestionRow(by_id[s.node_id], s.tool, s.score) for s in found]


def contract_nodes(contract: Contract) -> list[Node]:
    return list(contract.nodes.order_by("position", "pk"))
