"""Argument constraints of tool-bound nodes: what the agent may pass to a tool.

A node bound to a tool (``meta.tool``, FORMAT.md §1) may constrain the arguments of its
calls with ``meta.tool_args``, an object from argument name to one constraint:

- ``{"equals": VALUE}``: the argument is that value (a string, or JSON: ``59.0``, ``true``);
- ``{"in_query": true}``: the value is something the user said — it occurs in the
  query's text or in a ``[user]`` event of the trace (an order number, a reservation id),
  so the agent did not make it up;
- ``{"one_of": [VALUE, ...]}``: the argument is one of these values;
- ``{"matches": "REGEX"}``: the regex is found in the value (``re.search``, as invariant
  checks search; anchor it with ``^``/``$``), time-limited as every check
  (:mod:`matching.checks`);
- ``"ignored"``: any value, or none (said for the reader: the argument is not checked).

A constrained argument (not ``ignored``) must be present. Every call of a bound tool
in the trace is held to the constraints of every active node bound to it that has
them; :func:`broken` names the first call that breaks one, with what is wrong.

>>> args = {"order_id": {"in_query": True}, "to": {"one_of": ["card"]}, "ts": "ignored"}
>>> problem(args, parse_args('order_id="1042", to="card", ts=5'), "Order 1042, please")
>>> problem(args, parse_args('order_id="977", to="card"'), "Order 1042, please")
"argument order_id='977' is not something the user said"
>>> problem(args, parse_args('{"order_id": "1042", "to": "cash"}'), "Order 1042")
"argument to='cash' is not one of ['card']"
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import regex

from . import checks, trace
from .model import names
from .observe import ARG, json_object, parse_args
from .tool_checks import Call

KINDS = ("equals", "in_query", "one_of", "matches")
IGNORED = "ignored"


def _same(value: str, want: Any) -> bool:
    if isinstance(want, str):
        return value == want
    try:
        return bool(json.loads(value) == want)
    except ValueError:
        return False


def _said(value: str, facts: str) -> bool:
    if not value.strip():
        return False
    rx = r"(?<![A-Za-z0-9])" + re.escape(value.casefold()) + r"(?![A-Za-z0-9])"
    return re.search(rx, facts.casefold()) is not None


def problem(constraints: Mapping[str, Any], args: Mapping[str, str], facts: str) -> str | None:
    """What is wrong with a call's ``args`` under ``constraints`` (None: nothing).

    ``facts`` is what the user said: the query's text and the trace's ``[user]`` events.
    A regex that runs out of time judges nothing.
    """
    for key, rule in constraints.items():
        if rule == IGNORED:
            continue
        if key not in args:
            return f"argument {key} is missing"
        value = args[key]
        (kind, want), *_ = rule.items()
        if kind == "equals" and not _same(value, want):
            return f"argument {key}={value!r} is not {want!r}"
        if kind == "one_of" and not any(_same(value, w) for w in want):
            return f"argument {key}={value!r} is not one of {list(want)!r}"
        if kind == "in_query" and want and not _said(value, facts):
            return f"argument {key}={value!r} is not something the user said"
        if kind == "matches":
            try:
                ok = checks.search(want, value)
            except checks.CheckTimeout:
                ok = True
            if not ok:
                return f"argument {key}={value!r} does not match {want!r}"
    return None


def user_facts(query_text: str, kind: str, text: str) -> str:
    """What the user said: the query's text, then the ``[user]`` events of a trace."""
    said = [query_text]
    if kind == "trace":
        said += ["\n".join(e.lines) for e in trace.events(text) if e.role == "user"]
    return "\n".join(said)


def broken(meta: Mapping[str, Any], calls: Sequence[Call], facts: str) -> tuple[Call, str] | None:
    """The first call of a tool ``meta`` binds that breaks ``meta.tool_args``, and why."""
    constraints = meta.get("tool_args")
    if not isinstance(constraints, Mapping):
        return None
    tools = set(names(meta.get("tool")))
    for c in calls:
        if c.name in tools:
            why = problem(constraints, parse_args(c.arguments), facts)
            if why is not None:
                return c, why
    return None


# ----------------------------------------------------------------------- perturbation


def wrong_value(rule: Mapping[str, Any], facts: str) -> str | None:
    """A value that breaks ``rule`` (None when none is found).

    >>> wrong_value({"one_of": ["card", "credit"]}, ""), wrong_value({"in_query": True}, "A1")
    ('not_card', 'ZX-90317')
    """
    (kind, want), *_ = rule.items()
    if kind == "in_query":
        tries = ["ZX-90317", "QQ-00000"]
    elif kind == "equals":
        tries = [f"not_{want}"]
    elif kind == "one_of":
        tries = [f"not_{want[0]}", "unlisted_value"]
    else:
        tries = ["", "?", "not a match", "0"]
    return next((v for v in tries if problem({"a": rule}, {"a": v}, facts)), None)


def with_value(arguments: str, key: str, value: str) -> str | None:
    """``arguments`` with ``key`` set to ``value``, the rest as written (None: no ``key``).

    >>> with_value('order_id="1042", amount=59.00', "order_id", "977")
    'order_id="977", amount=59.00'
    >>> with_value('{"order_id": "1042"}', "order_id", "977")
    '{"order_id": "977"}'
    """
    obj = json_object(arguments)
    if obj is not None:
        if key not in obj:
            return None
        return json.dumps({**obj, key: value})
    for m in ARG.finditer(arguments):
        if m.group(1) == key:
            a, b = m.span(2)
            end = a + len(m.group(2).rstrip())
            return arguments[:a] + json.dumps(value) + arguments[end:]
    return None


# ----------------------------------------------------------------------- audit


def audit(meta: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What is wrong with ``meta.tool_args``, as ``(json path below meta, message)``.

    >>> audit({"tool": "t", "tool_args": {"a": {"close_to": 1}, "b": {"matches": "("}}})[0]
    ('tool_args.a', "argument a: unknown constraint 'close_to' (one of: equals, in_query, \
one_of, matches, or the string 'ignored')")
    """
    if "tool_args" not in meta:
        return []
    constraints = meta["tool_args"]
    if not isinstance(constraints, Mapping):
        return [("tool_args", "tool_args must be an object: argument name -> constraint")]
    out = []
    if not names(meta.get("tool")):
        out.append(("tool_args", "tool_args needs meta.tool: the tool whose calls it checks"))
    for key, rule in constraints.items():
        why = _rule_problem(key, rule)
        if why:
            out.append((f"tool_args.{key}", why))
    return out


def _rule_problem(key: str, rule: Any) -> str | None:
    kinds = ", ".join(KINDS)
    if rule == IGNORED:
        return None
    if not isinstance(rule, Mapping) or len(rule) != 1:
        return f"argument {key}: a constraint is one object of one kind ({kinds}) or 'ignored'"
    (kind, want), *_ = rule.items()
    if kind not in KINDS:
        return f"argument {key}: unknown constraint {kind!r} (one of: {kinds}, or the string 'ignored')"
    if kind == "one_of" and (not isinstance(want, list) or not want):
        return f"argument {key}: one_of needs a non-empty list of values"
    if kind == "in_query" and want is not True:
        return f"argument {key}: in_query must be true"
    if kind == "matches":
        if not isinstance(want, str):
            return f"argument {key}: matches needs a regex string"
        try:
            re.compile(want)
            checks.compiled(want)
        except (re.error, regex.error) as exc:
            return f"argument {key}: matches is not a valid Python regular expression: {exc}"
    return None
