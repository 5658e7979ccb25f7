"""The JSON Schemas of the interchange formats (``matching/schemas/``) and the checks
of a document against them: a compiled validator first, ``jsonschema`` for the message.

>>> check_schema({"format": "contracteval.contract/v1"}, "contract")
Traceback (most recent call last):
...
matching.errors.ContractEvalError: $: 'id' is a required property [required]
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fastjsonschema

from .errors import ContractEvalError, json_path

__all__ = ["check_schema", "schema", "schema_errors"]

if TYPE_CHECKING:
    import jsonschema

_HERE = Path(__file__).resolve().parent


@cache
def schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a format.

    Parameters
    ----------
    name : str
        The format's short name (``"contract"``, ``"observed"`` ...).

    Returns
    -------
    dict
    """
    text = (_HERE / "schemas" / f"{name}.json").read_text("utf-8")
    return json.loads(text)


@cache
def _validator(name: str) -> jsonschema.protocols.Validator:
    # jsonschema only explains a rejection; a valid document never loads it, so neither
    # does a process (the web app) that merely imports the formats.
    import jsonschema

    cls = jsonschema.Draft202012Validator
    return cls(schema(name), format_checker=None)


def _rule_of(err: jsonschema.ValidationError) -> str:
    return str(err.validator)


@cache
def _fast(name: str) -> Any:
    return fastjsonschema.compile(schema(name))


# Items already accepted by the compiled validator, per format and array: an audited
# contract is checked again after every edit, and almost all of its nodes and edges are
# the same as last time. Keys are the items' repr (documents are parsed JSON: plain
# dicts, lists, strings, numbers), so equal keys are equal items.
_ACCEPTED: dict[tuple[str, str], set[str]] = {}
ACCEPTED_LIMIT = 50_000


@cache
def _split(name: str) -> dict[str, Any]:
    """The compiled validator of each top-level array property that only says
    ``{"type": "array", "items": {"$ref": ...}}``: such an array is valid exactly when
    each of its items is valid, whatever the other items are."""
    full = schema(name)
    base = {k: v for k, v in full.items() if k in ("$schema", "$id", "$defs")}
    out = {}
    for prop, sub in full.get("properties", {}).items():
        items = sub.get("items", {})
        if set(sub) == {"type", "items"} and sub["type"] == "array" and set(items) == {"$ref"}:
            out[prop] = fastjsonschema.compile({**base, "$ref": items["$ref"]})
    return out


def _accepted(doc: Any, name: str) -> bool:
    """Whether the compiled validator accepts ``doc``, checking each item of a split
    array (see :func:`_split`) once per distinct item: the document with those arrays
    emptied, then every item not accepted before."""
    split = _split(name)
    arrays = {k: doc[k] for k in split if isinstance(doc, dict) and isinstance(doc.get(k), list)}
    try:
        _fast(name)({**doc, **dict.fromkeys(arrays, [])} if arrays else doc)
        for prop, items in arrays.items():
            seen = _ACCEPTED.setdefault((name, prop), set())
            for item in items:
                key = repr(item)
                if key not in seen:
                    split[prop](item)
                    if len(seen) >= ACCEPTED_LIMIT:
                        seen.clear()
                    seen.add(key)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def check_schema(doc: Any, name: str, *, file: str | None = None) -> None:
    """Raise the most relevant schema violation of ``doc`` against format ``name``.

    Documents are checked by a compiled validator (fastjsonschema, ~30x faster on a
    suite); only a document it rejects goes through ``jsonschema``, the reference
    implementation, which has the final word and names the path and rule. (Output
    checks of a run use ``jsonschema`` alone: see :mod:`matching.checks`.)

    Parameters
    ----------
    doc : object
        Parsed JSON.
    name : str
        A format's short name (``"contract"``, ``"observed"`` ...).
    file : str, optional
        The file name the error names.

    Raises
    ------
    ContractEvalError
        The violation, with its JSON path and the schema keyword as rule.
    """
    try:
        _fast(name)(doc)
        return
    except fastjsonschema.JsonSchemaException:
        pass
    validator = _validator(name)
    from jsonschema.exceptions import best_match

    err = best_match(validator.iter_errors(doc))
    if err is None:
        return
    # A deep oneOf/anyOf failure names its most specific sub-error.
    while err.context:
        deeper = best_match(err.context)
        if deeper is None:
            break
        err = deeper
    raise ContractEvalError(
        err.message, file=file, path=json_path(err.absolute_path), rule=_rule_of(err)
    )


def schema_errors(doc: Any, name: str) -> list[tuple[str, str, str]]:
    """Every schema violation of ``doc`` against format ``name`` (compiled check first).

    Parameters
    ----------
    doc : object
        Parsed JSON.
    name : str
        The format's short name.

    Returns
    -------
    list of (str, str, str)
        ``(path, rule, message)``, sorted by path.
    """
    if _accepted(doc, name):
        return []
    out = []
    for err in _validator(name).iter_errors(doc):
        out.append((json_path(err.absolute_path), _rule_of(err), err.message))
    return sorted(out)
