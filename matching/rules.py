"""The audit rules of a contract (FORMAT.md §1): one function per rule family.

:func:`findings` runs them all; :func:`matching.validate.audit_contract` adds the
evidence coverage and is the entry point.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
import networkx as nx
import regex

from . import checks, tool_args
from .conditioning import condition
from .errors import ContractEvalError
from .model import ORDER_KINDS, Contract, Edge, Invariant, Node, Span


@dataclass(frozen=True, slots=True)
class Finding:
    """One audit finding. ``node`` is the node (or invariant/query) it concerns."""

    rule: str
    message: str
    path: str
    node: str | None = None


def findings(c: Contract) -> tuple[list[Finding], list[Finding]]:
    """Every audit rule of a parsed contract (FORMAT.md §1 and the project's own).

    Parameters
    ----------
    c : Contract

    Returns
    -------
    errors, warnings : list of Finding
        Errors first by rule family (evidence, references, cycles, branches, machine
        checks, embedded queries); warnings after (hierarchy, labels, regexes).
    """
    errors: list[Finding] = []
    warnings: list[Finding] = []
    _evidence_errors(c, errors)
    edges_ok = _reference_errors(c, errors)
    parent_cycle = _hierarchy_cycle(c, errors)
    _order_cycle(c, edges_ok, errors)
    _branch_errors(c, edges_ok, errors)
    _machine_check_errors(c, errors)
    if not parent_cycle:  # only meaningful on a sound hierarchy
        _hierarchy_warnings(c, warnings)
    _label_warnings(c, warnings)
    warnings.extend(_regex_warnings(c))
    if not errors:  # embedded queries must condition (on a structurally sound contract)
        _query_errors(c, errors)
    return errors, warnings


def _check_spans(text: str, spans: list[Span], path: str, owner: str, out: list[Finding]) -> None:
    for j, s in enumerate(spans):
        p = f"{path}.evidence[{j}]"
        if not (0 <= s.start < s.end <= len(text)):
            out.append(
                Finding(
                    "span-out-of-range",
                    f"span [{s.start}, {s.end}) is outside the text (length {len(text)})"
                    if s.end > len(text) or s.start >= s.end
                    else f"span [{s.start}, {s.end}) is empty",
                    p,
                    owner,
                )
            )
        elif s.quote is not None and text[s.start : s.end] != s.quote:
            out.append(
                Finding(
                    "quote-mismatch",
                    f"quote {s.quote[:40]!r} differs from the text at [{s.start}, {s.end}):"
                    f" {text[s.start : s.end][:40]!r}",
                    p,
                    owner,
                )
            )


def _evidence_errors(c: Contract, errors: list[Finding]) -> None:
    """Every node and invariant has evidence, and every span quotes the artifact."""
    items: list[tuple[str, Sequence[Node | Invariant]]] = [
        ("node", c.nodes),
        ("invariant", c.invariants),
    ]
    for kind, group in items:
        for i, item in enumerate(group):
            path = f"$.{kind}s[{i}]"
            if not item.evidence:
                errors.append(Finding("no-evidence", f"{kind} has no evidence span", path, item.id))
            _check_spans(c.text, item.evidence, path, item.id, errors)


def _reference_errors(c: Contract, errors: list[Finding]) -> list[tuple[int, Edge]]:
    """Parents, edge ends and ``applies_to`` name declared nodes; returns the sound edges."""
    ids = c.by_id
    for i, n in enumerate(c.nodes):
        if n.parent is not None and n.parent not in ids:
            path = f"$.nodes[{i}].parent"
            errors.append(Finding("unknown-parent", f"unknown parent {n.parent!r}", path, n.id))
    edges_ok = []
    for i, e in enumerate(c.edges):
        bad = [x for x in (e.source, e.target) if x not in ids]
        for x in bad:
            end = "source" if x == e.source else "target"
            msg = f"edge {end} {x!r} is not a node"
            errors.append(Finding("unknown-id", msg, f"$.edges[{i}].{end}", x))
        if not bad:
            edges_ok.append((i, e))
    for i, inv in enumerate(c.invariants):
        for j, x in enumerate(inv.applies_to):
            if x not in ids:
                msg = f"applies_to names unknown node {x!r}"
                errors.append(
                    Finding("unknown-id", msg, f"$.invariants[{i}].applies_to[{j}]", inv.id)
                )
    return edges_ok


def _acyclic(links: Sequence[tuple[str, str]]) -> bool:
    """Whether the directed graph of ``links`` has no cycle (Kahn's algorithm).

    Linear and without building a graph object: most contracts have no cycle, and this
    answers that for 1,000 nodes in about a millisecond where a networkx graph and
    ``find_cycle`` took some 25 ms. Only a cyclic graph goes on to networkx, which
    names the cycle.
    """
    succ: dict[str, list[str]] = {}
    indegree: dict[str, int] = {}
    for a, b in links:
        succ.setdefault(a, []).append(b)
        indegree.setdefault(a, 0)
        indegree[b] = indegree.get(b, 0) + 1
    ready = [v for v, d in indegree.items() if d == 0]
    done = 0
    while ready:
        v = ready.pop()
        done += 1
        for w in succ.get(v, ()):
            indegree[w] -= 1
            if indegree[w] == 0:
                ready.append(w)
    return done == len(indegree)


def _hierarchy_cycle(c: Contract, errors: list[Finding]) -> bool:
    """Whether the parent links form a cycle (reported as an error)."""
    ids = c.by_id
    links = [(n.parent, n.id) for n in c.nodes if n.parent in ids]
    if _acyclic(links):
        return False
    hier = nx.DiGraph(links)
    try:
        cyc = nx.find_cycle(hier)
    except nx.NetworkXNoCycle:
        return False
    members = sorted({a for a, _ in cyc}, key=c.order.__getitem__)
    errors.append(
        Finding(
            "parent-cycle",
            "the hierarchy has a cycle: " + " -> ".join(members + members[:1]),
            f"$.nodes[{c.order[members[0]]}].parent",
            members[0],
        )
    )
    return True


def _order_cycle(c: Contract, edges_ok: list[tuple[int, Edge]], errors: list[Finding]) -> None:
    """``requires`` and ``enables`` edges must not form a cycle."""
    links = [(e.source, e.target) for _, e in edges_ok if e.kind in ORDER_KINDS]
    if _acyclic(links):
        return
    order = nx.DiGraph()
    order.add_edges_from(links)
    try:
        cyc = nx.find_cycle(order)
    except nx.NetworkXNoCycle:
        return
    first = cyc[0][0]
    msg = "requires/enables edges form a cycle: " + " -> ".join([a for a, _ in cyc] + [first])
    errors.append(Finding("order-cycle", msg, "$.edges", first))


def _branch_errors(c: Contract, edges_ok: list[tuple[int, Edge]], errors: list[Finding]) -> None:
    """Decisions have two or more outcomes, each reached by a ``branches_to`` edge."""
    ids = c.by_id
    has_branch_edge: set[tuple[str, str]] = set()
    for i, e in edges_ok:
        if e.kind != "branches_to":
            continue
        s, t = ids[e.source], ids[e.target]
        if s.type != "decision" or t.type != "branch_condition" or t.parent != s.id:
            msg = (
                f"branches_to {s.id!r} -> {t.id!r} must go from a decision to one of its"
                " branch_condition children"
            )
            errors.append(Finding("branches-to", msg, f"$.edges[{i}]", s.id))
        else:
            has_branch_edge.add((s.id, t.id))
    for d, outs in c.outcomes.items():
        if len(outs) < 2:
            msg = (
                f"decision {d!r} has {len(outs)} outcome(s); it needs at least two"
                " branch_condition children"
            )
            errors.append(Finding("decision-outcomes", msg, f"$.nodes[{c.order[d]}]", d))
    for n in c.nodes:
        if n.type == "branch_condition" and n.parent in ids and ids[n.parent].type == "decision":
            if (n.parent, n.id) not in has_branch_edge:
                msg = f"outcome {n.id!r} of decision {n.parent!r} has no branches_to edge from it"
                errors.append(
                    Finding("branch-without-edge", msg, f"$.nodes[{c.order[n.id]}]", n.id)
                )


def _machine_check_errors(c: Contract, errors: list[Finding]) -> None:
    """Output checks and invariant checks must compile; a violation example must match."""
    for i, n in enumerate(c.nodes):
        _check_output_meta(n.meta, f"$.nodes[{i}].meta", n.id, n.type, errors)
        for where, msg in tool_args.audit(n.meta):
            errors.append(Finding("bad-tool-args", msg, f"$.nodes[{i}].meta.{where}", n.id))
        errors.extend(_condition_errors(c, i, n))
    for i, inv in enumerate(c.invariants):
        for key, rx in (inv.check or {}).items():
            if key.endswith("_regex"):
                _check_regex(rx, f"$.invariants[{i}].check.{key}", inv.id, errors)
        if inv.check and "forbid_regex" in inv.check and "violation_example" in inv.check:
            try:
                if not checks.search(inv.check["forbid_regex"], inv.check["violation_example"]):
                    errors.append(
                        Finding(
                            "violation-example",
                            "violation_example does not match forbid_regex",
                            f"$.invariants[{i}].check.violation_example",
                            inv.id,
                        )
                    )
            except (re.error, regex.error, checks.CheckTimeout):
                pass  # reported as a bad regex above, or warned about below


def _condition_errors(c: Contract, i: int, n: Node) -> list[Finding]:
    """``meta.applies_if_action`` names other nodes of the contract."""
    if "applies_if_action" not in n.meta:
        return []
    path = f"$.nodes[{i}].meta.applies_if_action"
    out = []
    for t in n.triggers:
        if t == n.id:
            msg = f"node {n.id!r} cannot be conditional on its own action"
            out.append(Finding("bad-applies-if", msg, path, n.id))
        elif t not in c.by_id:
            msg = f"applies_if_action names {t!r}, which is not a node of the contract"
            out.append(Finding("unknown-id", msg, path, n.id))
    return out


def _hierarchy_warnings(c: Contract, warnings: list[Finding]) -> None:
    """Required nodes without an intent above them, and required alternatives."""
    ids = c.by_id
    for n in c.nodes:
        anc = c.ancestors(n.id)
        path = f"$.nodes[{c.order[n.id]}]"
        if n.required and n.type != "intent" and all(ids[a].type != "intent" for a in anc):
            msg = f"required node {n.id!r} has no intent among its ancestors"
            warnings.append(Finding("no-intent-ancestor", msg, path, n.id))
        if n.required and any(ids[a].combine == "any" for a in anc):
            msg = (
                f"node {n.id!r} is below a combine: any node but marked required;"
                " alternatives are never required on their own"
            )
            warnings.append(Finding("required-below-any", msg, f"{path}.required", n.id))


def _label_warnings(c: Contract, warnings: list[Finding]) -> None:
    """Two nodes with the same label (white space and case folded)."""
    labels: dict[str, str] = {}
    for n in c.nodes:
        key = " ".join(n.label.split()).casefold()
        if key in labels:
            msg = f"nodes {labels[key]!r} and {n.id!r} have the same label {n.label!r}"
            warnings.append(
                Finding("duplicate-label", msg, f"$.nodes[{c.order[n.id]}].label", n.id)
            )
        else:
            labels[key] = n.id


def _check_regexes(c: Contract) -> list[tuple[str, str, str]]:
    """``(regex, path, owner)`` of every machine-check regex of the contract."""
    out = []
    for i, n in enumerate(c.nodes):
        if isinstance(n.meta.get("regex"), str):
            out.append((n.meta["regex"], f"$.nodes[{i}].meta.regex", n.id))
        args = n.meta.get("tool_args")
        for key, rule in args.items() if isinstance(args, Mapping) else ():
            if isinstance(rule, Mapping) and isinstance(rule.get("matches"), str):
                path = f"$.nodes[{i}].meta.tool_args.{key}.matches"
                out.append((rule["matches"], path, n.id))
    for i, inv in enumerate(c.invariants):
        for key, rx in (inv.check or {}).items():
            if key.endswith("_regex") and isinstance(rx, str):
                out.append((rx, f"$.invariants[{i}].check.{key}", inv.id))
    return out


def _regex_warnings(c: Contract) -> list[Finding]:
    """Check regexes that repeat an unbounded repeat (``(a+)+``): catastrophic backtracking."""
    return [
        Finding(
            "nested-quantifier",
            f"regex {rx!r} repeats a group that itself repeats without bound (like (a+)+):"
            " it can take exponential time on some texts; a check that runs past"
            f" {checks.REGEX_TIMEOUT:g} s of CPU time is reported as unjudged",
            path,
            owner,
        )
        for rx, path, owner in _check_regexes(c)
        if checks.nested_quantifier(rx)
    ]


def _query_errors(c: Contract, errors: list[Finding]) -> None:
    """Every embedded query conditions the contract (ALGORITHMS.md §1)."""
    for i, q in enumerate(c.queries):
        try:
            condition(c, q)
        except ContractEvalError as exc:
            errors.append(Finding(exc.rule, exc.message, f"$.queries[{i}]", q.id))


def _check_regex(rx: str, path: str, owner: str, out: list[Finding]) -> None:
    try:
        re.compile(rx)
        checks.compiled(rx)
    except (re.error, regex.error) as exc:
        out.append(
            Finding("bad-regex", f"not a valid Python regular expression: {exc}", path, owner)
        )


def _check_output_meta(
    meta: Mapping[str, Any], path: str, owner: str, type_: str, out: list[Finding]
) -> None:
    if "regex" in meta:
        if isinstance(meta["regex"], str):
            _check_regex(meta["regex"], f"{path}.regex", owner, out)
        else:
            out.append(Finding("bad-regex", "meta.regex must be a string", f"{path}.regex", owner))
    if "json_schema" in meta:
        try:
            jsonschema.Draft202012Validator.check_schema(meta["json_schema"])
        except jsonschema.SchemaError as exc:
            out.append(
                Finding(
                    "bad-json-schema",
                    f"meta.json_schema is not a valid JSON Schema: {exc.message}",
                    f"{path}.json_schema",
                    owner,
                )
            )
