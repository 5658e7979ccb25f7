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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import ContractEvalError
from .input_limits import check_depth, too_deep
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
    contract_from_data,
    observed_from_data,
    unique_ids,
)
from .schema_check import check_schema, schema, schema_errors

Source = Mapping[str, Any] | str | bytes | Path
# The metrics of a report, in its order (ALGORITHMS.md §4). Here rather than with the
# evaluation that computes them: the web app keeps one column per metric and reads the
# names without loading the matcher (numpy, networkx).
METRICS = (
    "required_recall",
    "observed_precision",
    "edge_conformance",
    "branch_correctness",
    "invariant_score",
    "output_validity",
)


def node_texts_of_meta(meta: dict) -> list[str]:
    """The enactment texts of a node's ``meta`` (string or list; others ignored)."""
    e = meta.get("enactment")
    if isinstance(e, str):
        return [e] if e.strip() else []
    if isinstance(e, list):
        return [x for x in e if isinstance(x, str) and x.strip()]
    return []


# --------------------------------------------------------------------------- loading


def load_json(src: Source, *, file: str | None = None) -> tuple[Any, str | None]:
    """Parse ``src`` into JSON data.

    Parameters
    ----------
    src : mapping, str, bytes or pathlib.Path
        Parsed data (returned as is), JSON text, or a file to read.
    file : str, optional
        The file name errors name.

    Returns
    -------
    (data, file)
        The data and the file name (or None).

    Raises
    ------
    ContractEvalError
        When the file cannot be read or the text is not JSON.
    """
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
            raise too_deep(file) from None
    else:
        data = src
    return check_depth(data, file=file), file  # schema checks recurse per level


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


def read_contract(src: Source, *, file: str | None = None) -> Contract:
    """Read a ``contracteval.contract/v1`` document (schema and unique ids).

    The structural rules (spans, references, cycles, branches) are the audit's:
    :func:`matching.validate.load_contract` reads *and* audits.

    Parameters
    ----------
    src : mapping, str, bytes or pathlib.Path
        Parsed data, JSON text, or a file to read.
    file : str, optional
        The file name errors name (a path's own name by default).

    Returns
    -------
    Contract

    Raises
    ------
    ContractEvalError
        Naming the file, the JSON path and the rule: unreadable JSON, a wrong ``format``,
        a schema violation, a duplicate id.
    """
    d, file = _document(src, CONTRACT, file=file)
    unique_ids([n["id"] for n in d["nodes"]], "nodes", file)
    unique_ids([i["id"] for i in d.get("invariants", [])], "invariants", file)
    unique_ids([q["id"] for q in d.get("queries", [])], "queries", file)
    return contract_from_data(d)


def read_query(src: Source, *, file: str | None = None, embedded: bool = False) -> Query:
    """Read a ``contracteval.query/v1`` document.

    Parameters
    ----------
    src : mapping, str, bytes or pathlib.Path
        Parsed data, JSON text, or a file to read.
    file : str, optional
        The file name errors name (a path's own name by default).
    embedded : bool
        A query inside a contract, whose ``format`` may be omitted.

    Returns
    -------
    Query

    Raises
    ------
    ContractEvalError
        Naming the file, the JSON path and the rule: unreadable JSON, a wrong ``format``,
        a schema violation, a duplicate id.
    """
    return Query.of(_document(src, QUERY, file=file, embedded=embedded)[0])


def read_observed(src: Source, *, file: str | None = None, embedded: bool = False) -> Observed:
    """Read a ``contracteval.observed/v1`` document.

    Parameters
    ----------
    src : mapping, str, bytes or pathlib.Path
        Parsed data, JSON text, or a file to read.
    file : str, optional
        The file name errors name (a path's own name by default).
    embedded : bool
        An observed graph inside a case, whose ``format`` may be omitted.

    Returns
    -------
    Observed

    Raises
    ------
    ContractEvalError
        Naming the file, the JSON path and the rule: unreadable JSON, a wrong ``format``,
        a schema violation, a duplicate id.
    """
    d, file = _document(src, OBSERVED, file=file, embedded=embedded)
    return observed_from_data(d, file=file)


def read_case(src: Source, *, file: str | None = None) -> Case:
    """Read one ``contracteval.case/v1`` document (a line of ``cases.jsonl``).

    Parameters
    ----------
    src : mapping, str, bytes or pathlib.Path
        Parsed data, JSON text, or a file to read.
    file : str, optional
        The file name errors name (a path's own name by default).

    Returns
    -------
    Case

    Raises
    ------
    ContractEvalError
        Naming the file, the JSON path and the rule: unreadable JSON, a wrong ``format``,
        a schema violation, a duplicate id.
    """
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
    """Read a ``contracteval.expected/v1`` document.

    Parameters
    ----------
    src : mapping, str, bytes or pathlib.Path
        Parsed data, JSON text, or a file to read.
    file : str, optional
        The file name errors name (a path's own name by default).

    Returns
    -------
    dict
        The validated data.

    Raises
    ------
    ContractEvalError
        Naming the file, the JSON path and the rule: unreadable JSON, a wrong ``format``,
        a schema violation, a duplicate id.
    """
    return _document(src, EXPECTED, file=file)[0]


def read_report(src: Source, *, file: str | None = None) -> dict[str, Any]:
    """Read a ``contracteval.report/v1`` document.

    Parameters
    ----------
    src : mapping, str, bytes or pathlib.Path
        Parsed data, JSON text, or a file to read.
    file : str, optional
        The file name errors name (a path's own name by default).

    Returns
    -------
    dict
        The validated data.

    Raises
    ------
    ContractEvalError
        Naming the file, the JSON path and the rule: unreadable JSON, a wrong ``format``,
        a schema violation, a duplicate id.
    """
    return _document(src, REPORT, file=file)[0]


def read_document(src: Source, *, file: str | None = None) -> Any:
    """Read any document, dispatching on its ``format`` key.

    Parameters
    ----------
    src : mapping, str, bytes or pathlib.Path
        Parsed data, JSON text, or a file to read.
    file : str, optional
        The file name errors name (a path's own name by default).

    Returns
    -------
    Contract, Query, Observed, Case or dict
        What the matching reader returns.

    Raises
    ------
    ContractEvalError
        Naming the file, the JSON path and the rule: unreadable JSON, a wrong ``format``,
        a schema violation, a duplicate id.
    """
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
    """The canonical JSON text the project writes: UTF-8, indented, key order kept.

    Parameters
    ----------
    doc : mapping

    Returns
    -------
    str
        Ending with a newline.
    """
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
    "METRICS",
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
    "node_texts_of_meta",
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
