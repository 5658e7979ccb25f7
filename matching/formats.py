"""Readers and writers for the interchange documents of FORMAT.md.

Every reader accepts a parsed ``dict``, a JSON ``str``/``bytes`` or a ``pathlib.Path``,
checks the document against the JSON Schema shipped in ``matching/schemas/`` and raises
:class:`~matching.errors.ContractEvalError` naming the file, the JSON path and the rule.
Writers (``to_dict``) produce documents the readers accept.

>>> c = read_contract({
...     "format": "contracteval.contract/v1", "id": "mini",
...     "artifact": {"text": "Greet the customer."},
...     "nodes": [{"id": "greet", "type": "intent", "label": "Greet",
...                "required": True, "evidence": [{"start": 0, "end": 18}]}]})
>>> c.nodes[0].combine, c.nodes[0].evidence[0].end
('all', 18)
>>> read_contract(c.to_dict()).to_dict() == c.to_dict()
True
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import fastjsonschema
import jsonschema

from .errors import ContractEvalError, json_path
from .input_limits import MAX_DEPTH, check_json

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

Source = Mapping[str, Any] | str | bytes | Path
_HERE = Path(__file__).resolve().parent


# --------------------------------------------------------------------------- schemas


@cache
def schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a format, by short name (``"contract"``...)."""
    text = (_HERE / "schemas" / f"{name}.json").read_text("utf-8")
    return json.loads(text)


@cache
def _validator(name: str) -> jsonschema.protocols.Validator:
    cls = jsonschema.Draft202012Validator
    return cls(schema(name), format_checker=None)


def _rule_of(err: jsonschema.ValidationError) -> str:
    return str(err.validator)


@cache
def _fast(name: str) -> Any:
    return fastjsonschema.compile(schema(name))


def check_schema(doc: Any, name: str, *, file: str | None = None) -> None:
    """Raise the most relevant schema violation of ``doc`` against format ``name``.

    Documents are checked by a compiled validator (fastjsonschema, ~30x faster on a
    suite); only a document it rejects goes through ``jsonschema``, the reference
    implementation, which has the final word and names the path and rule.
    """
    try:
        _fast(name)(doc)
        return
    except fastjsonschema.JsonSchemaException:
        pass
    validator = _validator(name)
    err = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if err is None:
        return
    # A deep oneOf/anyOf failure names its most specific sub-error.
    while err.context:
        deeper = jsonschema.exceptions.best_match(err.context)
        if deeper is None:
            break
        err = deeper
    raise ContractEvalError(
        err.message, file=file, path=json_path(err.absolute_path), rule=_rule_of(err)
    )


def schema_errors(doc: Any, name: str) -> list[tuple[str, str, str]]:
    """Every schema violation as ``(path, rule, message)``, sorted by path."""
    out = []
    for err in _validator(name).iter_errors(doc):
        out.append((json_path(err.absolute_path), _rule_of(err), err.message))
    return sorted(out)


# --------------------------------------------------------------------------- loading


def load_json(src: Source, *, file: str | None = None) -> tuple[Any, str | None]:
    """Parse ``src`` into JSON data; returns ``(data, file name or None)``."""
    if isinstance(src, Path):
        file = file or str(src)
        try:
            src = src.read_bytes()
        except OSError as exc:
            raise ContractEvalError(
                f"cannot read file: {exc.strerror}", file=file, rule="io"
            ) from None
    if isinstance(src, (str, bytes)):
        try:
            data = json.loads(src)
        except json.JSONDecodeError as exc:
            raise ContractEvalError(
                f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                file=file,
                rule="json",
            ) from None
        except UnicodeDecodeError:
            raise ContractEvalError("not UTF-8 text", file=file, rule="json") from None
        except RecursionError:
            raise ContractEvalError(
                f"nested deeper than {MAX_DEPTH} levels", file=file, rule="depth"
            ) from None
    else:
        data = src
    try:
        # schema checks recurse per level: a deep document must stop here
        check_json(data, what="the document", strings=False)
    except ContractEvalError as exc:
        raise exc.with_file(file) from None
    return data, file


def _document(
    src: Source, fmt: str, *, file: str | None, embedded: bool = False
) -> tuple[dict[str, Any], str | None]:
    data, file = load_json(src, file=file)
    if not isinstance(data, dict):
        raise ContractEvalError(
            f"a {fmt} document must be a JSON object, not {type(data).__name__}",
            file=file,
            rule="type",
        )
    given = data.get("format")
    if given is None and not embedded:
        raise ContractEvalError(f'missing "format": expected {fmt!r}', file=file, rule="format")
    if given is not None and given != fmt:
        raise ContractEvalError(
            f"wrong format {given!r}: expected {fmt!r}", file=file, path="$.format", rule="format"
        )
    # The schemas require "format"; an embedded document may leave it out.
    check_schema(data if given else {**data, "format": fmt}, FORMATS[fmt], file=file)
    return data, file


def _unique(ids: Iterable[str], where: str, file: str | None) -> None:
    seen: set[str] = set()
    for i, x in enumerate(ids):
        if x in seen:
            raise ContractEvalError(
                f"duplicate id {x!r}", file=file, path=f"$.{where}[{i}].id", rule="unique-id"
            )
        seen.add(x)


# --------------------------------------------------------------------------- model


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
        t = self.meta.get("tool")
        if isinstance(t, str):
            return (t,)
        if isinstance(t, list):
            return tuple(x for x in t if isinstance(x, str))
        return ()

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
    check: dict[str, str] | None = None

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


# --------------------------------------------------------------------------- readers


def _spans(items: Iterable[Mapping[str, Any]]) -> list[Span]:
    return [Span.of(s) for s in items]


def contract_from_data(d: Mapping[str, Any]) -> Contract:
    """Build a :class:`Contract` from schema-valid data (no checks)."""
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


def read_contract(src: Source, *, file: str | None = None) -> Contract:
    """Read a ``contracteval.contract/v1`` document (schema and unique ids).

    The structural rules (spans, references, cycles, branches) are the audit's:
    :func:`matching.validate.load_contract` reads *and* audits.
    """
    d, file = _document(src, CONTRACT, file=file)
    _unique([n["id"] for n in d["nodes"]], "nodes", file)
    _unique([i["id"] for i in d.get("invariants", [])], "invariants", file)
    _unique([q["id"] for q in d.get("queries", [])], "queries", file)
    return contract_from_data(d)


def read_query(src: Source, *, file: str | None = None, embedded: bool = False) -> Query:
    """Read a ``contracteval.query/v1`` document."""
    return Query.of(_document(src, QUERY, file=file, embedded=embedded)[0])


def observed_from_data(d: Mapping[str, Any], *, file: str | None = None) -> Observed:
    """Build an :class:`Observed` from schema-valid data; checks ids and steps."""
    raw = d["nodes"]
    _unique([n["id"] for n in raw], "nodes", file)
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


def read_observed(src: Source, *, file: str | None = None, embedded: bool = False) -> Observed:
    """Read a ``contracteval.observed/v1`` document."""
    d, file = _document(src, OBSERVED, file=file, embedded=embedded)
    return observed_from_data(d, file=file)


def read_case(src: Source, *, file: str | None = None) -> Case:
    """Read one ``contracteval.case/v1`` document (a line of ``cases.jsonl``)."""
    d, file = _document(src, CASE, file=file)
    obs_d = d["observed"]
    if obs_d.get("format", OBSERVED) != OBSERVED:
        raise ContractEvalError(
            f"wrong format {obs_d['format']!r}: expected {OBSERVED!r}",
            file=file,
            path="$.observed.format",
            rule="format",
        )
    try:
        obs = observed_from_data(obs_d, file=file)
    except ContractEvalError as exc:
        raise ContractEvalError(
            exc.message, file=file, path=exc.path.replace("$", "$.observed", 1), rule=exc.rule
        ) from None
    label = d["label"]
    return Case(
        id=d["id"],
        contract=d["contract"],
        query=d["query"],
        observed=obs,
        clean=label["clean"],
        family=label.get("family"),
        location=label.get("location"),
    )


def read_expected(src: Source, *, file: str | None = None) -> dict[str, Any]:
    """Read a ``contracteval.expected/v1`` document (returned as validated data)."""
    return _document(src, EXPECTED, file=file)[0]


def read_report(src: Source, *, file: str | None = None) -> dict[str, Any]:
    """Read a ``contracteval.report/v1`` document (returned as validated data)."""
    return _document(src, REPORT, file=file)[0]


def read_document(src: Source, *, file: str | None = None) -> Any:
    """Read any document, dispatching on its ``format`` key."""
    data, file = load_json(src, file=file)
    fmt = data.get("format") if isinstance(data, dict) else None
    readers = {
        CONTRACT: read_contract,
        QUERY: read_query,
        EXPECTED: read_expected,
        OBSERVED: read_observed,
        REPORT: read_report,
        CASE: read_case,
    }
    if fmt not in readers:
        raise ContractEvalError(
            f"unknown or missing format {fmt!r}: expected one of {sorted(readers)}",
            file=file,
            path="$.format",
            rule="format",
        )
    return readers[fmt](data, file=file)  # type: ignore[operator]


def dumps(doc: Mapping[str, Any]) -> str:
    """The canonical JSON text the project writes: UTF-8, indented, key order kept."""
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
