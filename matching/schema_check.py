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
    try:
        _fast(name)(doc)
        return []
    except fastjsonschema.JsonSchemaException:
        pass
    out = []
    for err in _validator(name).iter_errors(doc):
        out.append((json_path(err.absolute_path), _rule_of(err), err.message))
    return sorted(out)
