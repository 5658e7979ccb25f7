"""Machine checks: invariant regexes, output regexes and output JSON Schemas (§3.5–§3.6).

Annotators write these regexes and they run on uploads of up to megabytes, so a
pattern with catastrophic backtracking (``(a|aa)+$``) must not hang a worker. Every
check regex runs on the ``regex`` package in its ``re``-compatible ``VERSION0`` mode
with a time limit (:data:`REGEX_TIMEOUT`); a check that runs out of time raises
:class:`CheckTimeout`, and the evaluator reports it as *unjudged*, with the reason,
instead of guessing a verdict. The audit warns about nested quantifiers
(:func:`nested_quantifier`), the usual cause.

JSON Schemas are checked by one cached :class:`jsonschema.Draft202012Validator` per
schema, so every 2020-12 keyword (``dependentRequired``, ``prefixItems``,
``unevaluatedProperties`` …) counts; its ``pattern`` keyword runs with the same limit.

>>> search(r"\\bCODE-\\d{4}\\b", "The code is CODE-4321.")
True
>>> schema_error({"type": "object", "dependentRequired": {"card": ["cvv"]}}, {"card": 1})
"the output fails the schema: 'cvv' is a dependency of 'card'"
>>> nested_quantifier(r"(a+)+$"), nested_quantifier(r"(ab)+c*")
(True, False)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import jsonschema
import regex

# Seconds of CPU time per search (the regex package counts the process's CPU time, so
# on a loaded machine the wall time is longer); legitimate checks take milliseconds on
# 10 MB of text.
REGEX_TIMEOUT = 1.0


class CheckTimeout(Exception):
    """A check's regex ran past :data:`REGEX_TIMEOUT`; ``str()`` says which one."""


@cache
def compiled(rx: str) -> Any:
    """``rx`` compiled by the ``regex`` package in its ``re``-compatible mode (cached).

    Parameters
    ----------
    rx : str

    Returns
    -------
    regex.Pattern

    Raises
    ------
    regex.error
        When ``rx`` is not a valid pattern.
    """
    return regex.compile(rx, regex.VERSION0)


def _timed(rx: str, call: str, text: str) -> Any:
    try:
        return getattr(compiled(rx), call)(text, timeout=REGEX_TIMEOUT)
    except TimeoutError:
        raise CheckTimeout(
            f"the regex {rx!r} ran past its time limit ({REGEX_TIMEOUT:g} s of CPU time)"
            f" on {len(text):,} characters"
        ) from None


def search(rx: str, text: str) -> bool:
    """Whether ``rx`` matches anywhere in ``text`` (``re.search`` semantics).

    Parameters
    ----------
    rx : str
        A Python regular expression.
    text : str

    Returns
    -------
    bool

    Raises
    ------
    CheckTimeout
        When the regex runs past :data:`REGEX_TIMEOUT`.
    """
    return _timed(rx, "search", text) is not None


def fullmatch(rx: str, text: str) -> bool:
    """Whether ``rx`` matches the whole of ``text`` (``re.fullmatch`` semantics).

    Parameters
    ----------
    rx : str
        A Python regular expression.
    text : str

    Returns
    -------
    bool

    Raises
    ------
    CheckTimeout
        When the regex runs past :data:`REGEX_TIMEOUT`.
    """
    return _timed(rx, "fullmatch", text) is not None


def spans(rx: str, text: str) -> list[tuple[int, int]]:
    """Every non-overlapping match of ``rx`` in ``text`` (``re.finditer`` semantics).

    Parameters
    ----------
    rx : str
        A Python regular expression.
    text : str

    Returns
    -------
    list of (int, int)

    Raises
    ------
    CheckTimeout
        When the regex runs past :data:`REGEX_TIMEOUT`.
    """
    try:
        return [m.span() for m in compiled(rx).finditer(text, timeout=REGEX_TIMEOUT)]
    except TimeoutError:
        raise CheckTimeout(f"the regex {rx!r} ran past its time limit") from None


# --------------------------------------------------------------------------- audit


_REPEATS = {"MAX_REPEAT", "MIN_REPEAT"}


def nested_quantifier(rx: str) -> bool:
    """Whether ``rx`` repeats a group that itself holds an unbounded repeat.

    Like ``(a+)+`` or ``(\\w*\\s)*``: the shape behind catastrophic backtracking.
    Possessive and atomic groups (which never backtrack into) are not flagged; a
    pattern ``re`` cannot parse is not flagged either (the audit reports it as invalid).

    Parameters
    ----------
    rx : str

    Returns
    -------
    bool
    """
    try:
        tree = re._parser.parse(rx)  # type: ignore[attr-defined]
    except (re.error, RecursionError):
        return False
    return any(_repeats_unbounded(body) for body in _repeat_bodies(tree))


def _children(op: Any, av: Any) -> Iterator[Any]:
    """The sub-patterns of one parsed item (groups, branches, lookarounds)."""
    name = str(op)
    if name in _REPEATS:
        yield av[2]
    elif name == "SUBPATTERN":
        yield av[3]
    elif name == "BRANCH":
        yield from av[1]
    elif name in ("ASSERT", "ASSERT_NOT"):
        yield av[1]
    elif name == "GROUPREF_EXISTS":
        yield from (p for p in av[1:] if p is not None)


def _repeat_bodies(pattern: Any) -> Iterator[Any]:
    """The body of every backtracking repeat that can run more than once."""
    for op, av in pattern:
        if str(op) in _REPEATS and av[1] > 1:
            yield av[2]
        for child in _children(op, av):
            yield from _repeat_bodies(child)


def _repeats_unbounded(pattern: Any) -> bool:
    for op, av in pattern:
        if str(op) in _REPEATS and av[1] == re._constants.MAXREPEAT:  # type: ignore[attr-defined]
            return True
        if any(_repeats_unbounded(child) for child in _children(op, av)):
            return True
    return False


# --------------------------------------------------------------------------- schemas


def _timed_pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[Any]:
    """The ``pattern`` keyword, searched with the time limit of the other checks."""
    if validator.is_type(instance, "string") and not search(patrn, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {patrn!r}")


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, {"pattern": _timed_pattern}
)


@cache
def _schema_validator(schema_json: str) -> Any:
    return _Validator(json.loads(schema_json))


def schema_validator(schema: Mapping[str, Any]) -> Any:
    """The cached draft 2020-12 validator of ``schema``.

    Its ``pattern`` keyword searches with the time limit of the other checks.

    Parameters
    ----------
    schema : mapping

    Returns
    -------
    jsonschema.protocols.Validator
    """
    return _schema_validator(json.dumps(schema, sort_keys=True))


def schema_error(schema: Mapping[str, Any], value: Any) -> str | None:
    """Why ``value`` fails ``schema`` (the most relevant error), or ``None``.

    Parameters
    ----------
    schema : mapping
        A draft 2020-12 JSON Schema.
    value : object
        Parsed JSON.

    Returns
    -------
    str or None

    Raises
    ------
    CheckTimeout
        When a ``pattern`` of the schema runs past :data:`REGEX_TIMEOUT`.
    """
    err = jsonschema.exceptions.best_match(schema_validator(schema).iter_errors(value))
    if err is None:
        return None
    where = "".join(f"[{p!r}]" for p in err.absolute_path) or "the output"
    return f"{where} fails the schema: {err.message}"


# --------------------------------------------------------------------------- outputs


@dataclass(frozen=True)
class OutputCheck:
    """The outcome of one checked output: ``passed`` is ``None`` when the check could
    not be judged (it ran out of time); ``reason`` says why it failed or was unjudged."""

    passed: bool | None
    reason: str | None = None


def check_output(node_id: str, meta: Mapping[str, Any], output: str | None) -> OutputCheck:
    """Judge a final ``output`` against a checked output's ``meta`` (ALGORITHMS.md §3.6).

    Parameters
    ----------
    node_id : str
        The checked output's id, named in the reason.
    meta : mapping
        Its ``meta``: a ``json_schema``, a ``regex``, or both (both must pass).
    output : str or None
        The execution's final output.

    Returns
    -------
    OutputCheck

    Examples
    --------
    >>> check_output("reply", {"regex": "[0-9]+"}, "42")
    OutputCheck(passed=True, reason=None)
    >>> check_output("reply", {"json_schema": {"prefixItems": [{"type": "string"}]}}, "[1]")
    OutputCheck(passed=False, reason="'reply': [0] fails the schema: 1 is not of type 'string'")
    """
    if output is None:
        return OutputCheck(False, f"{node_id!r}: the execution has no final output")
    try:
        if "json_schema" in meta:
            try:
                value = json.loads(output)
            except json.JSONDecodeError as exc:
                return OutputCheck(False, f"{node_id!r}: the output is not JSON ({exc.msg})")
            err = schema_error(meta["json_schema"], value)
            if err is not None:
                return OutputCheck(False, f"{node_id!r}: {err}")
        if "regex" in meta and not fullmatch(meta["regex"], output):
            return OutputCheck(False, f"{node_id!r}: the output does not match {meta['regex']!r}")
    except CheckTimeout as exc:
        return OutputCheck(None, f"{node_id!r}: unjudged: {exc}")
    return OutputCheck(True)
