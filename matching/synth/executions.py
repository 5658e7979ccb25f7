"""Clean gold executions of a query, as traces or responses (ALGORITHMS.md §5)."""

from __future__ import annotations

import itertools
import json
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
    """
    r = coerce(rng)
    c = expected.contract
    ids = c.by_id
    active = expected.active
    kids = {
        n: [k for k in c.children[n] if k in active and not ids[k].checked_output]
        for n in expected.nodes
    }
    steps: set[str] = set()
    done: set[str] = set()
    stack_guard: set[str] = set()

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
        if ids[n].parent not in active:
            cover(n)
    for n in expected.required:
        cover(n)
    del stack_guard

    memo: dict[str, frozenset[str]] = {}

    def S(x: str) -> frozenset[str]:
        """The steps that fix x's position."""
        if x in memo:
            return memo[x]
        node = ids[x]
        if x in steps:
            out = frozenset({x})
        elif node.checked_output:
            out = frozenset()
        elif node.combine == "any":
            out = frozenset().union(*(S(k) for k in kids[x] if k in done))
        else:
            out = frozenset().union(*(S(k) for k in kids[x] if ids[k].required))
        memo[x] = out
        return out

    after: dict[str, set[str]] = {s: set() for s in steps}
    for e in expected.edges:
        if e.kind in ("requires", "enables"):
            for a in S(e.source):
                for z in S(e.target):
                    if a != z:
                        after[a].add(z)
    for d, pick in expected.decisions.items():
        if d in steps:
            stack = [pick]
            while stack:
                x = stack.pop()
                if x in steps and x != d:
                    after[d].add(x)
                stack.extend(c.children[x])
    indeg = {s: 0 for s in steps}
    for a in after:
        for z in after[a]:
            indeg[z] += 1
    decl = c.order
    ready = sorted((s for s in steps if indeg[s] == 0), key=decl.__getitem__)
    order: list[str] = []
    while ready:
        x = ready.pop(r.randrange(len(ready)))
        order.append(x)
        for z in sorted(after[x], key=decl.__getitem__):
            indeg[z] -= 1
            if indeg[z] == 0:
                ready.append(z)
    if len(order) != len(steps):
        raise ValueError(f"no valid execution order for contract {c.id!r}: edges form a cycle")
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
    """
    if kind not in ("trace", "response"):
        raise ValueError(f"kind must be 'trace' or 'response', not {kind!r}")
    r = coerce(rng)
    e = expected or condition(contract, query)
    ids = contract.by_id
    order = gold_steps(e, r)
    pieces: list[str] = []
    nodes: list[ObservedNode] = []
    pos = 0
    if kind == "trace":
        head = f"[user] {e.query.text or 'Please help.'}\n"
        pieces.append(head)
        pos = len(head)
    for i, x in enumerate(order):
        node = ids[x]
        call = _call(node) if kind == "trace" else None
        if kind == "trace":
            body = f"[tool] {call}" if call else f"[assistant] {_sentence(node)}"
            label = f"Called {call.partition('(')[0]}" if call else _sentence(node).rstrip(".")
        else:
            body = _sentence(node)
            label = body.rstrip(".")
            if i:
                pieces.append(" ")
                pos += 1
        span = Span(pos, pos + len(body), body)
        pieces.append(body)
        pos += len(body)
        if kind == "trace":
            pieces.append("\n")
            pos += 1
            if call:
                res = '[result] {"ok": true}\n'
                pieces.append(res)
                pos += len(res)
        nodes.append(ObservedNode(f"o{i + 1}", label, [span], i, "", node.type, x, i))
    text = "".join(pieces)
    outputs = [ids[n] for n in e.nodes if ids[n].checked_output]
    output = None
    for o in outputs:
        if "json_schema" in o.meta:
            output = json.dumps(_instance(o.meta["json_schema"]))
            break
    judged = {i.id for i in contract.invariants if not i.check}
    return Observed(
        kind=kind,
        text=text,
        nodes=nodes,
        edges=[Edge(a.id, z.id, "precedes") for a, z in itertools.pairwise(nodes)],
        invariants={i: 1.0 for i in e.invariants if i in judged},
        output=output,
        contract=contract.id,
        query=e.query.id,
    )
