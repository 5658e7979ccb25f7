"""A contract's tool catalogue: parse an OpenAI ``tools`` list and suggest bindings.

An agent's tools are declared in the OpenAI function-calling format,
``[{"type": "function", "function": {"name", "description", "parameters"}}]``; the
bare list of function objects is accepted too. :func:`parse_tools` checks such a list
and returns :class:`Tool` records (or raises :class:`ToolCatalogueError` naming what is
wrong); :func:`catalogue_document` writes them back in the canonical wrapped form. A
list as sent is first held to the input limits of every upload
(:class:`~matching.input_limits.Limits`: ``tools_bytes``, ``tool_count``, UTF-8, no NUL,
``json_depth``, ``parameters`` included), which raise
:class:`~matching.input_limits.InputRefused`.

:func:`suggest_bindings` proposes a ``meta.tool`` for action and validation nodes by
comparing the node's label and description with the tool's name and description, with
the token similarity of ALGORITHMS.md §2 or, when an encoder is passed, semantic mode's
blend of that and the cosine of their sentence embeddings.

>>> tools = parse_tools('[{"name": "lookup_order", "description": "Find an order by id"}]')
>>> [(t.name, t.words) for t in tools]
[('lookup_order', 'lookup order Find an order by id')]
>>> catalogue_document(tools)[0]["function"]["name"]
'lookup_order'
>>> nodes = [NodeText("find", "action", "Find the customer's order", "")]
>>> [(s.node_id, s.tool, s.score) for s in suggest_bindings(nodes, tools)]
[('find', 'lookup_order', 0.416667)]
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .errors import ContractEvalError
from .input_limits import DEFAULT_LIMITS, InputRefused, Limits, size_of

if TYPE_CHECKING:
    import numpy as np

# OpenAI's own limit on function names.
NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
BINDABLE_TYPES = ("action", "validation")
# The least score a suggestion needs, measured on the suite by scripts/tool_threshold.py
# (docs/engine.md, "Tool catalogues"): token similarity keeps the spec's candidate
# threshold; the semantic blend scores unrelated texts higher, so it needs more.
THRESHOLD = 0.35
SEMANTIC_THRESHOLD = 0.50
# weight of the embedding cosine in a suggestion score (with the tokens)
ALPHA = 0.75
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


class ToolCatalogueError(ContractEvalError):
    """The tools list is not a valid OpenAI ``tools`` list."""


@dataclass(frozen=True)
class Tool:
    """One declared function: its name, description and JSON-schema parameters."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)

    @property
    def words(self) -> str:
        """The name split into words, then the description: the text compared with nodes."""
        return f"{' '.join(name_words(self.name))} {self.description}".strip()


def name_words(name: str) -> list[str]:
    """A tool's name split into its words (snake, kebab or camel case).

    >>> name_words("transfer_to_human_agents"), name_words("sendCertificate")
    (['transfer', 'to', 'human', 'agents'], ['send', 'Certificate'])
    """
    return _CAMEL.sub(" ", name).replace("_", " ").replace("-", " ").split()


@dataclass(frozen=True)
class NodeText:
    """What a suggestion reads of a contract node."""

    node_id: str
    type: str
    label: str
    description: str


@dataclass(frozen=True)
class Suggestion:
    """``tool`` may enact ``node_id``; ``score`` in [0, 1], higher is likelier."""

    node_id: str
    tool: str
    score: float


class Encoder(Protocol):
    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def _load(source: Any, limits: Limits | None) -> list[Any]:
    what = "the tools list"
    if limits is not None:  # sizes before parsing, then depth (parameters too) and NUL
        if isinstance(source, str | bytes):
            try:
                source = limits.load_json(source, what=what, name="tools_bytes")
            except InputRefused as exc:
                if exc.rule != "json":
                    raise
                raise ToolCatalogueError(exc.message) from None  # a malformed list
        else:
            limits.check_bytes("tools_bytes", size_of(source), what=what)
            limits.check_json(source, what=what)
    elif isinstance(source, str | bytes):
        try:
            source = json.loads(source)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise ToolCatalogueError(f"the tools list is not JSON: {exc}") from exc
    if isinstance(source, Mapping) and isinstance(source.get("tools"), list):
        source = source["tools"]
    if not isinstance(source, list):
        raise ToolCatalogueError("the tools list must be a JSON array of functions")
    if limits is not None:
        limits.check_count("tool_count", len(source), what=what, unit="tools")
    return list(source)


def _tool(i: int, item: Any) -> Tool:
    where = f"tool {i + 1}"
    if isinstance(item, Mapping) and "function" in item:
        if item.get("type", "function") != "function":
            raise ToolCatalogueError(f"{where}: type must be 'function', not {item['type']!r}")
        item = item["function"]
    if not isinstance(item, Mapping):
        raise ToolCatalogueError(f"{where}: must be an object with a 'name'")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise ToolCatalogueError(f"{where}: the 'name' is missing")
    if not NAME.match(name):
        raise ToolCatalogueError(
            f"{where}: the name {name!r} must be 1-64 letters, digits, '_' or '-'"
        )
    description = item.get("description", "")
    if not isinstance(description, str):
        raise ToolCatalogueError(f"{where} ({name}): the description must be a string")
    parameters = item.get("parameters", {})
    if not isinstance(parameters, Mapping):
        raise ToolCatalogueError(f"{where} ({name}): parameters must be a JSON schema object")
    return Tool(name=name, description=description, parameters=dict(parameters))


def parse_tools(
    source: str | bytes | Sequence[Any] | Mapping[str, Any],
    *,
    limits: Limits | None = DEFAULT_LIMITS,
) -> list[Tool]:
    """The tools of an OpenAI ``tools`` list (JSON text or already parsed).

    Parameters
    ----------
    source : str, bytes or list
        ``[{"type": "function", "function": {...}}, ...]``, the bare list of function
        objects, or an object whose ``tools`` key holds either.
    limits : Limits or None
        The input limits a list as sent is held to; None for a catalogue already
        accepted and stored (a limit lowered since must not make it unreadable).

    Returns
    -------
    list of Tool
        In the order given.

    Raises
    ------
    InputRefused
        Past ``tools_bytes`` or ``tool_count``, nested deeper than ``json_depth``
        (``parameters`` included), bytes that are not UTF-8, a NUL character.
    ToolCatalogueError
        Not JSON, not a list, a tool without a name, a malformed name, a duplicate
        name, a non-string description or non-object parameters.

    Examples
    --------
    >>> parse_tools([{"type": "function", "function": {"name": "refund"}}])[0].name
    'refund'
    >>> try:
    ...     parse_tools('[{"name": "a"}, {"name": "a"}]')
    ... except ToolCatalogueError as exc:
    ...     print(exc.message)
    the tool name 'a' appears more than once
    >>> parse_tools('[{"name": "a", "parameters": ' + "[" * 70 + "]" * 70 + "}]")
    Traceback (most recent call last):
    ...
    matching.input_limits.InputRefused: $: the tools list is nested deeper than 64 levels \
(under $[0].parameters[0]) [depth]
    """
    tools = [_tool(i, item) for i, item in enumerate(_load(source, limits))]
    seen: set[str] = set()
    for t in tools:
        if t.name in seen:
            raise ToolCatalogueError(f"the tool name {t.name!r} appears more than once")
        seen.add(t.name)
    return tools


def catalogue_document(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """The tools in the canonical OpenAI form (what is stored and exported).

    Examples
    --------
    >>> catalogue_document([Tool("a", "does a")])
    [{'type': 'function', 'function': {'name': 'a', 'description': 'does a', 'parameters': {}}}]
    """
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
            },
        }
        for t in tools
    ]


def _cosines(encoder: Encoder, left: list[str], right: list[str]) -> np.ndarray:
    import numpy as np

    a = np.asarray(encoder.encode(left), dtype=np.float64)
    b = np.asarray(encoder.encode(right), dtype=np.float64)
    a /= np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b /= np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return np.clip(a @ b.T, 0.0, 1.0)


def suggest_bindings(
    nodes: Sequence[NodeText],
    tools: Sequence[Tool],
    *,
    encoder: Encoder | None = None,
    threshold: float | None = None,
) -> list[Suggestion]:
    """The best tool for each action or validation node, when it scores ``threshold``+.

    Parameters
    ----------
    nodes : sequence of NodeText
        Nodes of other types are skipped (only actions and validations call tools).
    tools : sequence of Tool
    encoder : object with ``encode(texts) -> array``, optional
        A sentence encoder (``matching.embed.encoder()``); without it only tokens count.
    threshold : float, optional
        The least score suggested; by default :data:`THRESHOLD` for tokens and
        :data:`SEMANTIC_THRESHOLD` with an encoder (both measured, docs/engine.md).

    Returns
    -------
    list of Suggestion
        In node order; ties go to the tool declared first.

    Examples
    --------
    >>> tools = [Tool("issue_refund", "Refund the payment"), Tool("get_weather")]
    >>> nodes = [NodeText("r", "action", "Issue the refund", ""),
    ...          NodeText("i", "intent", "Issue the refund", "")]
    >>> suggest_bindings(nodes, tools)
    [Suggestion(node_id='r', tool='issue_refund', score=0.833333)]
    """
    # The similarity (numpy, and the embedding's blend) loads here, on the first
    # suggestion: reading and writing a catalogue, all the web app's forms need, stays light.
    import numpy as np

    from .similarity import sim, tokens

    bindable = [n for n in nodes if n.type in BINDABLE_TYPES]
    if not bindable or not tools:
        return []
    node_texts = [f"{n.label} {n.description}".strip() for n in bindable]
    tool_texts = [t.words for t in tools]
    scores = np.array(
        [[sim(tokens(a), tokens(b)) for b in tool_texts] for a in node_texts], dtype=np.float64
    )
    if encoder is not None:
        # Embedding cosine blended with tokens, weighted as when the bar was measured
        # (scripts/tool_threshold.py): the words of a tool name rarely recur verbatim.
        scores = ALPHA * _cosines(encoder, node_texts, tool_texts) + (1 - ALPHA) * scores
    if threshold is None:
        threshold = THRESHOLD if encoder is None else SEMANTIC_THRESHOLD
    out = []
    for i, node in enumerate(bindable):
        j = int(np.argmax(scores[i]))
        if scores[i, j] >= threshold:
            out.append(Suggestion(node.node_id, tools[j].name, round(float(scores[i, j]), 6)))
    return out
