"""The data model of the interchange documents of FORMAT.md: contracts, queries,
observed executions and cases, as dataclasses with their writers (``to_dict``).

The readers that check documents and build these are in :mod:`matching.formats`.

>>> obs = observed_from_steps("Checked it. Done it.", "response", [(0, 11, "Check", "", None)])
>>> obs.nodes[0].evidence[0].quote, obs.nodes[0].step, obs.to_dict()["format"]
('Checked it.', 0, 'contracteval.observed/v1')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .errors import ContractEvalError

CONTRACT = "contracteval.contract/v1"
QUERY = "contracteval.query/v1"
EXPECTED = "contracteval.expected/v1"
OBSERVED = "contracteval.observed/v1"
REPORT = "contracteval.report/v1"
CASE = "contracteval.case/v1"
FORMATS = {
    CONTRACT: "contract",
    QUERY: "query",
    EXPECTED: "expected",
    OBSERVED: "observed",
    REPORT: "report",
    CASE: "case",
}
NODE_TYPES = (
    "intent",
    "action",
    "decision",
    "branch_condition",
    "output_requirement",
    "refusal",
    "validation",
)
ORDER_KINDS = frozenset({"requires", "enables"})
# The only copies: the CLI, the web app and the schemas are held to them (tests/
# test_single_sources.py). Extractor "none" keeps the observed nodes.
MODES = ("oracle", "token", "semantic")
EXTRACTORS = ("heuristic", "behaviour", "llm")
EXTRACTOR_CHOICES = ("none", *EXTRACTORS)
SOURCE_KINDS = ("response", "trace")  # how an observed source text reads (FORMAT.md §4)
# The failure families, in the order of the perturbation generators (ALGORITHMS.md §5,
# CLI.md): suites, score tables and judge schemas list them so. A report lists its
# failures in the order the checks run (§3), which starts with wrong_branch.
FAMILIES = (
    "omission",
    "wrong_branch",
    "ordering",
    "extra_action",
    "invariant_violation",
    "output_contract",
)

# --------------------------------------------------------------------------- model


def names(value: Any) -> tuple[str, ...]:
    """A meta field's name or list of names (``meta.tool``, ``meta.applies_if_action``)."""
    if isinstance(value, str):
        return (value,)
    return tuple(x for x in value if isinstance(x, str)) if isinstance(value, list) else ()


@dataclass(frozen=True, slots=True)
class Span:
    """A half-open code-point range ``[start, end)`` into a text."""

    start: int
    end: int
    quote: str | None = None

    def to_dict(self, text: str | None = None) -> dict[str, Any]:
        d: dict[str, Any] = {"start": self.start, "end": self.end}
        if text is not None:
            d["quote"] = text[self.start : self.end]
        elif self.quote is not None:
            d["quote"] = self.quote
        return d

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> Span:
        return cls(d["start"], d["end"], d.get("quote"))


@dataclass(slots=True)
class Node:
    id: str
    type: str
    label: str
    required: bool
    evidence: list[Span]
    description: str = ""
    explicit: bool = False
    combine: str = "all"
    parent: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def checked_output(self) -> bool:
        """An output requirement judged by its ``json_schema``/``regex`` check."""
        return self.type == "output_requirement" and (
            "json_schema" in self.meta or "regex" in self.meta
        )

    @property
    def tools(self) -> tuple[str, ...]:
        """The tools the node is bound to (``meta.tool``)."""
        return names(self.meta.get("tool"))

    @property
    def triggers(self) -> tuple[str, ...]:
        """The actions after which alone the node applies (``meta.applies_if_action``)."""
        return names(self.meta.get("applies_if_action"))

    def to_dict(self, text: str | None = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "label": self.label,
            "description": self.description,
            "required": self.required,
            "explicit": self.explicit,
            "combine": self.combine,
            "parent": self.parent,
            "evidence": [s.to_dict(text) for s in self.evidence],
            "meta": self.meta,
        }


@dataclass(slots=True)
class Edge:
    source: str
    target: str
    kind: str

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source, "target": self.target, "kind": self.kind}


@dataclass(slots=True)
class Invariant:
    id: str
    label: str
    evidence: list[Span]
    description: str = ""
    applies_to: list[str] = field(default_factory=list)
    check: dict[str, Any] | None = None

    def to_dict(self, text: str | None = None) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "label": self.label,
            "description": self.description,
            "evidence": [s.to_dict(text) for s in self.evidence],
            "applies_to": list(self.applies_to),
        }
        if self.check is not None:
            d["check"] = dict(self.check)
        return d


@dataclass(slots=True)
class Query:
    id: str
    text: str = ""
    intents: list[str] = field(default_factory=list)
    branches: dict[str, str] = field(default_factory=dict)

    def to_dict(self, *, embedded: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {} if embedded else {"format": QUERY}
        d.update(
            id=self.id, text=self.text, intents=list(self.intents), branches=dict(self.branches)
        )
        return d

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> Query:
        return cls(
            d["id"], d.get("text", ""), list(d.get("intents", [])), dict(d.get("branches", {}))
        )


@dataclass(eq=False)
class Contract:
    """A declared contract G_D. Index properties are computed once and cached."""

    id: str
    text: str
    nodes: list[Node]
    edges: list[Edge] = field(default_factory=list)
    invariants: list[Invariant] = field(default_factory=list)
    queries: list[Query] = field(default_factory=list)
    title: str | None = None
    domain: str | None = None
    media_type: str | None = None

    @cached_property
    def by_id(self) -> dict[str, Node]:
        return {n.id: n for n in self.nodes}

    @cached_property
    def order(self) -> dict[str, int]:
        """Declaration index of every node."""
        return {n.id: i for i, n in enumerate(self.nodes)}

    @cached_property
    def children(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {n.id: [] for n in self.nodes}
        for n in self.nodes:
            if n.parent is not None and n.parent in out:
                out[n.parent].append(n.id)
        return out

    @cached_property
    def outcomes(self) -> dict[str, list[str]]:
        """A decision's outcomes: its ``branch_condition`` children."""
        return {
            n.id: [c for c in self.children[n.id] if self.by_id[c].type == "branch_condition"]
            for n in self.nodes
            if n.type == "decision"
        }

    @cached_property
    def queries_by_id(self) -> dict[str, Query]:
        return {q.id: q for q in self.queries}

    def ancestors(self, node_id: str) -> list[str]:
        """Parents of ``node_id``, nearest first (stops at a cycle)."""
        out: list[str] = []
        seen = {node_id}
        p = self.by_id[node_id].parent
        while p is not None and p in self.by_id and p not in seen:
            out.append(p)
            seen.add(p)
            p = self.by_id[p].parent
        return out

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"format": CONTRACT, "id": self.id}
        if self.title is not None:
            d["title"] = self.title
        if self.domain is not None:
            d["domain"] = self.domain
        artifact: dict[str, Any] = {"text": self.text}
        if self.media_type is not None:
            artifact["media_type"] = self.media_type
        d["artifact"] = artifact
        d["nodes"] = [n.to_dict(self.text) for n in self.nodes]
        d["edges"] = [e.to_dict() for e in self.edges]
        d["invariants"] = [i.to_dict(self.text) for i in self.invariants]
        d["queries"] = [q.to_dict(embedded=True) for q in self.queries]
        return d


@dataclass(slots=True)
class ObservedNode:
    id: str
    label: str
    evidence: list[Span]
    step: int
    description: str = ""
    type: str | None = None
    gold: str | None = None
    index: int = 0  # position in the document's list

    def to_dict(self, text: str | None = None, *, with_step: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "label": self.label, "description": self.description}
        if self.type is not None:
            d["type"] = self.type
        if with_step:
            d["step"] = self.step
        d["evidence"] = [s.to_dict(text) for s in self.evidence]
        d["gold"] = self.gold
        return d


@dataclass(eq=False)
class Observed:
    """An observed graph G_O as written (spans not yet checked: see ``matching.match``)."""

    kind: str
    text: str
    nodes: list[ObservedNode]
    edges: list[Edge] = field(default_factory=list)
    invariants: dict[str, float] = field(default_factory=dict)
    output: str | None = None
    contract: str | None = None
    query: str | None = None
    has_steps: bool = True

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"format": OBSERVED}
        if self.contract is not None:
            d["contract"] = self.contract
        if self.query is not None:
            d["query"] = self.query
        d["source"] = {"kind": self.kind, "text": self.text}
        d["nodes"] = [n.to_dict(with_step=self.has_steps) for n in self.nodes]
        d["edges"] = [e.to_dict() for e in self.edges]
        d["invariants"] = [{"id": k, "score": v} for k, v in self.invariants.items()]
        if self.output is not None:
            d["output"] = self.output
        return d


@dataclass(eq=False)
class Case:
    id: str
    contract: str
    query: str
    observed: Observed
    clean: bool
    family: str | None = None
    location: str | None = None

    def to_dict(self) -> dict[str, Any]:
        obs = self.observed.to_dict()
        label: dict[str, Any] = {"clean": self.clean}
        if not self.clean:
            label["family"] = self.family
            if self.location is not None:
                label["location"] = self.location
        return {
            "format": CASE,
            "id": self.id,
            "contract": self.contract,
            "query": self.query,
            "observed": obs,
            "label": label,
        }


def observed_from_steps(
    text: str, kind: str, steps: list[tuple[int, int, str, str, str | None]]
) -> Observed:
    """An observed graph built from extracted steps, in text order.

    Parameters
    ----------
    text : str
        The source text.
    kind : {"trace", "response"}
    steps : list of (int, int, str, str, str or None)
        ``(start, end, label, description, type)`` of each step.

    Returns
    -------
    Observed
        Ids ``o1…``, one step each, exact quotes, ``precedes`` edges between them.

    Examples
    --------
    >>> obs = observed_from_steps("Checked it. Done it.", "response", [(0, 11, "Check", "", None)])
    >>> obs.nodes[0].evidence[0].quote, obs.nodes[0].step
    ('Checked it.', 0)
    """
    nodes = [
        ObservedNode(
            id=f"o{i + 1}",
            label=label,
            evidence=[Span(a, b, text[a:b])],
            step=i,
            description=desc,
            type=type_,
            gold=None,
            index=i,
        )
        for i, (a, b, label, desc, type_) in enumerate(steps)
    ]
    edges = [Edge(x.id, y.id, "precedes") for x, y in zip(nodes, nodes[1:], strict=False)]
    return Observed(kind=kind, text=text, nodes=nodes, edges=edges)


# --------------------------------------------------------------------------- from data


def unique_ids(ids: Iterable[str], where: str, file: str | None) -> None:
    seen: set[str] = set()
    for i, x in enumerate(ids):
        if x in seen:
            raise ContractEvalError(
                f"duplicate id {x!r}", file=file, path=f"$.{where}[{i}].id", rule="unique-id"
            )
        seen.add(x)


# --------------------------------------------------------------------------- readers


def _spans(items: Iterable[Mapping[str, Any]]) -> list[Span]:
    return [Span.of(s) for s in items]


def contract_from_data(d: Mapping[str, Any]) -> Contract:
    """Build a :class:`Contract` from a contract document that passed its schema (no
    checks)."""
    nodes = [
        Node(
            id=n["id"],
            type=n["type"],
            label=n["label"],
            required=n["required"],
            evidence=_spans(n["evidence"]),
            description=n.get("description", ""),
            explicit=n.get("explicit", False),
            combine=n.get("combine", "all"),
            parent=n.get("parent"),
            meta=dict(n.get("meta", {})),
        )
        for n in d["nodes"]
    ]
    art = d["artifact"]
    return Contract(
        id=d["id"],
        text=art["text"],
        media_type=art.get("media_type"),
        title=d.get("title"),
        domain=d.get("domain"),
        nodes=nodes,
        edges=[Edge(e["source"], e["target"], e["kind"]) for e in d.get("edges", [])],
        invariants=[
            Invariant(
                id=i["id"],
                label=i["label"],
                evidence=_spans(i["evidence"]),
                description=i.get("description", ""),
                applies_to=list(i.get("applies_to", [])),
                check=dict(i["check"]) if "check" in i else None,
            )
            for i in d.get("invariants", [])
        ],
        queries=[Query.of(q) for q in d.get("queries", [])],
    )


def observed_from_data(d: Mapping[str, Any], *, file: str | None = None) -> Observed:
    """Build an :class:`Observed` from schema-valid data.

    Parameters
    ----------
    d : mapping
        An observed document that passed its schema.
    file : str, optional
        The file name errors name.

    Returns
    -------
    Observed

    Raises
    ------
    ContractEvalError
        For duplicate node ids, or ``step`` given for some nodes and not others.
    """
    raw = d["nodes"]
    unique_ids([n["id"] for n in raw], "nodes", file)
    with_step = [("step" in n) for n in raw]
    if any(with_step) and not all(with_step):
        i = with_step.index(False)
        raise ContractEvalError(
            "'step' must be given for every node or for none",
            file=file,
            path=f"$.nodes[{i}]",
            rule="step",
        )
    has_steps = bool(raw) and all(with_step)
    nodes = [
        ObservedNode(
            id=n["id"],
            label=n["label"],
            evidence=_spans(n["evidence"]),
            step=n["step"] if has_steps else i,
            description=n.get("description", ""),
            type=n.get("type"),
            gold=n.get("gold"),
            index=i,
        )
        for i, n in enumerate(raw)
    ]
    src = d["source"]
    return Observed(
        kind=src["kind"],
        text=src["text"],
        nodes=nodes,
        edges=[Edge(e["source"], e["target"], e["kind"]) for e in d.get("edges", [])],
        invariants={x["id"]: float(x["score"]) for x in d.get("invariants", [])},
        output=d.get("output"),
        contract=d.get("contract"),
        query=d.get("query"),
        has_steps=has_steps or not raw,
    )
