"""Clean gold executions of a query, as traces or responses (ALGORITHMS.md §5)."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Mapping
from typing import Any

from ..conditioning import Expected, condition
from ..model import Contract, Edge, Observed, ObservedNode, Query, Span
from ..trace import is_call
from .vocab import Rng, coerce


def gold_steps(expected: Expected, rng: Rng = None) -> list[str]:
    """The declared nodes a clean execution enacts, in a valid random order.

    One step for every active required leaf, every active decision, every explicit
    node and one alternative (drawn from ``rng``) of each active ``any`` node; the order
    satisfies every ``requires``/``enables`` edge of G_E (between the steps that give
    each end its position) and puts each decision before every step of its outcome.

    Parameters
    ----------
    expected : Expected
        G_E(q).
    rng : random.Random, int, str or None
        The generator, or a seed.

    Returns
    -------
    list of str
        Node ids, one per step, in execution order.

    Raises
    ------
    ValueError
        When the edges admit no order (a cycle).
    """
    r = coerce(rng)
    c = expected.contract
    ids = c.by_id
    kids = {
        n: [k for k in c.children[n] if k in expected.active and not ids[k].checked_output]
        for n in expected.nodes
    }
    steps, done = _step_nodes(expected, kids, r)
    after = _constraints(expected, kids, steps, done)
    order = _random_topological(r, steps, after, c.order)
    if len(order) != len(steps):
        raise ValueError(f"no valid execution order for contract {c.id!r}: edges form a cycle")
    return order


def _step_nodes(
    expected: Expected, kids: dict[str, list[str]], r: random.Random
) -> tuple[set[str], set[str]]:
    """The nodes that get a step of their own, and every node the execution satisfies."""
    ids = expected.contract.by_id
    steps: set[str] = set()
    done: set[str] = set()

    def cover(x: str) -> None:
        if x in done or ids[x].checked_output:
            return
        done.add(x)
        node = ids[x]
        ch = kids[x]
        if node.type == "decision":
            steps.add(x)
            pick = expected.decisions.get(x)
            if pick is not None:
                cover(pick)
            ch = [k for k in ch if ids[k].type != "branch_condition"]
        if node.explicit or not kids[x]:
            steps.add(x)
        if node.combine == "any" and ch:
            cover(r.choice(ch))
        else:
            for k in ch:
                if ids[k].required:
                    cover(k)

    for n in expected.nodes:
        if ids[n].parent not in expected.active:
            cover(n)
    for n in expected.required:
        cover(n)
    return steps, done


def _constraints(
    expected: Expected, kids: dict[str, list[str]], steps: set[str], done: set[str]
) -> dict[str, set[str]]:
    """step -> the steps that must come after it (ordered edges, decisions first)."""
    c = expected.contract
    ids = c.by_id
    memo: dict[str, frozenset[str]] = {}

    def fixing(x: str) -> frozenset[str]:
        """The steps that fix x's position."""
        if x in memo:
            return memo[x]
        node = ids[x]
        if x in steps:
            out = frozenset({x})
        elif node.checked_output:
            out = frozenset()
        elif node.combine == "any":
            out = frozenset().union(*(fixing(k) for k in kids[x] if k in done))
        else:
            out = frozenset().union(*(fixing(k) for k in kids[x] if ids[k].required))
        memo[x] = out
        return out

    after: dict[str, set[str]] = {s: set() for s in steps}
    for e in expected.edges:
        if e.kind in ("requires", "enables"):
            for a in fixing(e.source):
                after[a].update(z for z in fixing(e.target) if z != a)
    for d, pick in expected.decisions.items():
        if d in steps:
            stack = [pick]
            while stack:
                x = stack.pop()
                if x in steps and x != d:
                    after[d].add(x)
                stack.extend(c.children[x])
    return after


def _random_topological(
    r: random.Random, steps: set[str], after: dict[str, set[str]], decl: dict[str, int]
) -> list[str]:
    """A topological order of ``after`` drawing each next step at random from the ready ones."""
    indeg = dict.fromkeys(steps, 0)
    for a in after:
        for z in after[a]:
            indeg[z] += 1
    ready = sorted((s for s in steps if indeg[s] == 0), key=decl.__getitem__)
    order: list[str] = []
    while ready:
        x = ready.pop(r.randrange(len(ready)))
        order.append(x)
        for z in sorted(after[x], key=decl.__getitem__):
            indeg[z] -= 1
            if indeg[z] == 0:
                ready.append(z)
    return order


def _enactments(node: Any) -> list[str]:
    en = node.meta.get("enactment")
    if isinstance(en, str):
        return [en]
    if isinstance(en, list):
        return [x for x in en if isinstance(x, str)]
    return []


def _sentence(node: Any) -> str:
    for x in _enactments(node):
        if not is_call(x):
            return x
    label = node.label.rstrip(".")
    return f"{label}: {node.description.rstrip('.')}." if node.description else f"{label}."


def _call(node: Any) -> str | None:
    for x in _enactments(node):
        if is_call(x):
            return x
    return f"{node.tools[0]}()" if node.tools else None


def _instance(schema: Mapping[str, Any]) -> Any:
    """A small value valid against a simple JSON Schema."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    t = schema.get("type")
    if isinstance(t, list):
        t = t[0]
    if t == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {k: _instance(props.get(k, {})) for k in schema.get("required", props)}
    return {
        "string": "x",
        "integer": 1,
        "number": 1.0,
        "boolean": True,
        "array": [],
        "null": None,
    }.get(t or "string", "x")


def synth_execution(
    contract: Contract,
    query: Query | Mapping[str, Any] | str,
    rng: Rng = None,
    *,
    kind: str = "trace",
    expected: Expected | None = None,
) -> Observed:
    """A clean gold execution of ``query`` (ALGORITHMS.md §5), as a trace or a response.

    Steps are worded from each node's ``meta.enactment`` (a tool call when the node
    has ``meta.tool`` in a trace), else from its label and description. ``gold`` ids
    are set, ``output`` satisfies the checked outputs' JSON Schema, and every unchecked
    invariant of G_E gets score 1.0.

    Parameters
    ----------
    contract : Contract
    query : Query, mapping or str
    rng : random.Random, int, str or None
        The generator, or a seed.
    kind : {"trace", "response"}
    expected : Expected, optional
        G_E(q), when the caller has it already.

    Returns
    -------
    Observed

    Raises
    ------
    ValueError
        For an unknown ``kind``.
    """
    if kind not in ("trace", "response"):
        raise ValueError(f"kind must be 'trace' or 'response', not {kind!r}")
    r = coerce(rng)
    e = expected or condition(contract, query)
    ids = contract.by_id
    order = gold_steps(e, r)
    if kind == "trace":
        text, nodes = _render_trace(e, order)
    else:
        text, nodes = _render_response(e, order)
    outputs = [ids[n] for n in e.nodes if ids[n].checked_output]
    schemas = [o.meta["json_schema"] for o in outputs if "json_schema" in o.meta]
    judged = {i.id for i in contract.invariants if not i.check}
    return Observed(
        kind=kind,
        text=text,
        nodes=nodes,
        edges=[Edge(a.id, z.id, "precedes") for a, z in itertools.pairwise(nodes)],
        invariants={i: 1.0 for i in e.invariants if i in judged},
        output=json.dumps(_instance(schemas[0])) if schemas else None,
        contract=contract.id,
        query=e.query.id,
    )


def _render_trace(e: Expected, order: list[str]) -> tuple[str, list[ObservedNode]]:
    """A user line, then one ``[tool]`` call (with its result) or ``[assistant]`` line per step."""
    ids = e.contract.by_id
    pieces = [f"[user] {e.query.text or 'Please help.'}\n"]
    pos = len(pieces[0])
    nodes: list[ObservedNode] = []
    for i, x in enumerate(order):
        node = ids[x]
        call = _call(node)
        body = f"[tool] {call}" if call else f"[assistant] {_sentence(node)}"
        label = f"Called {call.partition('(')[0]}" if call else _sentence(node).rstrip(".")
        nodes.append(
            ObservedNode(
                f"o{i + 1}", label, [Span(pos, pos + len(body), body)], i, "", node.type, x, i
            )
        )
        line = body + "\n" + ('[result] {"ok": true}\n' if call else "")
        pieces.append(line)
        pos += len(line)
    return "".join(pieces), nodes


def _render_response(e: Expected, order: list[str]) -> tuple[str, list[ObservedNode]]:
    """One sentence per step, separated by spaces."""
    ids = e.contract.by_id
    pieces: list[str] = []
    pos = 0
    nodes: list[ObservedNode] = []
    for i, x in enumerate(order):
        node = ids[x]
        body = _sentence(node)
        if i:
            pieces.append(" ")
            pos += 1
        nodes.append(
            ObservedNode(
                f"o{i + 1}",
                body.rstrip("."),
                [Span(pos, pos + len(body), body)],
                i,
                "",
                node.type,
                x,
                i,
            )
        )
        pieces.append(body)
        pos += len(body)
    return "".join(pieces), nodes
