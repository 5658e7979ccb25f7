"""Readers and writers for the interchange documents of FORMAT.md (the dataclasses
themselves are in :mod:`matching.model`, re-exported here).

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
from functools import cache
from pathlib import Path
from typing import Any

import fastjsonschema
import jsonschema

from .errors import ContractEvalError, json_path
from .model import (
    CASE,
    CONTRACT,
    EXPECTED,
    FAMILIES,
    FORMATS,
    NODE_TYPES,
    OBSERVED,
    ORDER_KINDS,
    QUERY,
    REPORT,
    Case,
    Contract,
    Edge,
    Invariant,
    Node,
    Observed,
    ObservedNode,
    Query,
    Span,
)

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
            return json.loads(src), file
        except json.JSONDecodeError as exc:
            raise ContractEvalError(
                f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                file=file,
                rule="json",
            ) from None
        except UnicodeDecodeError:
            raise ContractEvalError("not UTF-8 text", file=file, rule="json") from None
    return src, file


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


# The model's names are re-exported: readers and the model are one public surface.
__all__ = [
    "CASE",
    "CONTRACT",
    "Case",
    "Contract",
    "EXPECTED",
    "Edge",
    "FAMILIES",
    "FORMATS",
    "Invariant",
    "NODE_TYPES",
    "Node",
    "OBSERVED",
    "ORDER_KINDS",
    "Observed",
    "ObservedNode",
    "QUERY",
    "Query",
    "REPORT",
    "Source",
    "Span",
    "check_schema",
    "contract_from_data",
    "dumps",
    "load_json",
    "observed_from_data",
    "read_case",
    "read_contract",
    "read_document",
    "read_expected",
    "read_observed",
    "read_query",
    "read_report",
    "schema",
    "schema_errors",
]
