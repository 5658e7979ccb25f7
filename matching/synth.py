"""Seeded generators of valid contracts and gold executions, for tests and benchmarks.

:func:`synth_contract` builds a random but audit-clean contract whose artifact has one
line per node (so every evidence span is exactly a line): intents at the roots, tasks,
decisions with two or three outcomes that each hold required steps, a ``combine: any``
node with non-required alternatives, some ``explicit`` nodes, acyclic ``requires`` /
``enables`` edges that run forward in declaration order, a forbidden-text invariant
with its ``violation_example``, an unchecked invariant, a checked JSON output and
embedded queries that resolve every decision. Every node has its own pseudo-words, so
token matching can tell the nodes apart.

:func:`synth_execution` renders a clean gold execution of a query (ALGORITHMS.md §5):
one step for every active required leaf, every decision, every explicit node and one
alternative of each active ``any`` node, in a random order that satisfies every
``requires``/``enables`` edge and puts each decision before the steps of its outcome,
as trace lines (FORMAT.md §4) or response sentences with exact spans.

:func:`synth_graphs` builds large expected/observed pairs for the matching benchmark.

>>> from matching.evaluate import evaluate
>>> from matching.validate import audit_contract
>>> c = synth_contract(7, nodes=20)
>>> audit_contract(c).ok, len(c.nodes) >= 20
(True, True)
>>> obs = synth_execution(c, c.queries[0], 7, kind="trace")
>>> all(obs.text[s.start:s.end] == s.quote for n in obs.nodes for s in n.evidence)
True
>>> [evaluate(c, c.queries[0], obs, mode=m)["verdict"] for m in ("oracle", "token")]
['clean', 'clean']
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from .conditioning import Expected, condition
from .formats import Contract, Edge, Observed, ObservedNode, Query, Span, read_contract
from .similarity import _stem, stopwords
from .trace import is_call

__all__ = [
    "FORBIDDEN",
    "VIOLATION_EXAMPLE",
    "gold_steps",
    "synth_contract",
    "synth_execution",
    "synth_graphs",
    "words",
]

Rng = random.Random | int | str | None

#: The forbidden-text invariant of every synthetic contract, and text that breaks it.
FORBIDDEN = r"\bCODE-\d{4}\b"
VIOLATION_EXAMPLE = " The access code is CODE-4321."

# One verb per node type opens every declared label (so labels read naturally); no
# pseudo-word shares a stem with them, and observed wordings never use them.
_VERB = {
    "intent": "Handle",
    "action": "Process",
    "validation": "Verify",
    "decision": "Decide",
    "branch_condition": "When",
    "refusal": "Refuse",
    "output_requirement": "Return",
}
_PREFIX = {
    "intent": "goal",
    "action": "act",
    "validation": "chk",
    "decision": "dec",
    "branch_condition": "br",
    "refusal": "ref",
    "output_requirement": "out",
}


def _coerce(rng: Rng) -> random.Random:
    return rng if isinstance(rng, random.Random) else random.Random(0 if rng is None else rng)


@cache
def words() -> tuple[str, ...]:
    """A fixed list of pronounceable pseudo-words with pairwise distinct stems.

    >>> w = words()
    >>> len(w) > 10_000, w[:3] == words()[:3]
    (True, True)
    """
    cons, vow, last = "bdfgklmnprtvz", "aeiou", "bdfgklmnprtvz"
    stop = stopwords()
    reserved = {_stem(v.casefold()) for v in _VERB.values()} | {
        _stem(w) for w in ("call", "ref", "ok", "done", "code", "access", "case", "status")
    }
    seen: set[str] = set()
    out = []
    for a, b, c, d, e in itertools.product(cons, vow, cons, vow, last):
        w = a + b + c + d + e
        s = _stem(w)
        if w in stop or s in seen or s in reserved:
            continue
        seen.add(s)
        out.append(w)
    random.Random("contracteval-words").shuffle(out)
    return tuple(out)


# --------------------------------------------------------------------------- contracts


@dataclass
class _Spec:
    id: str
    type: str
    parent: str | None
    words: list[str]
    required: bool = True
    explicit: bool = False
    combine: str = "all"
    meta: dict[str, Any] = field(default_factory=dict)
    kids: list[_Spec] = field(default_factory=list)
    alternative: bool = False  # a child of a combine: any node
    outcome: str | None = None  # the nearest branch_condition at or above


class _Builder:
    def __init__(self, rng: random.Random, offset: int) -> None:
        self.rng = rng
        self.words = iter(words()[offset:])
        self.counts: dict[str, int] = {}

    def node(
        self, type_: str, parent: _Spec | None, *, prefix: str | None = None, **kw: Any
    ) -> _Spec:
        p = prefix or _PREFIX[type_]
        self.counts[p] = self.counts.get(p, 0) + 1
        spec = _Spec(
            id=f"{p}{self.counts[p]}",
            type=type_,
            parent=parent.id if parent else None,
            words=[next(self.words) for _ in range(3)],
            **kw,
        )
        if parent is not None:
            spec.outcome = parent.id if parent.type == "branch_condition" else parent.outcome
            parent.kids.append(spec)
        return spec

    def leaf(self, parent: _Spec, *, alternative: bool = False) -> _Spec:
        type_ = self.rng.choices(["action", "validation", "refusal"], [6, 3, 1])[0]
        spec = self.node(
            type_,
            parent,
            required=not alternative,
            explicit=not alternative and self.rng.random() < 0.25,
            alternative=alternative,
        )
        w0, w1, w2 = spec.words
        sentence = f"I {w0} the {w1} for {w2}."
        if type_ == "action" and self.rng.random() < 0.3:
            tool = f"{w0}_{w1}"
            spec.meta["tool"] = tool
            spec.meta["enactment"] = [f'{tool}(ref="{w2}")', sentence]
        else:
            spec.meta["enactment"] = sentence
        return spec

    def block(self, parent: _Spec, kind: str) -> int:
        """Add one block under ``parent``; returns how many nodes it added."""
        rng = self.rng
        if kind == "leaf":
            self.leaf(parent)
            return 1
        if kind == "task":
            task = self.node("action", parent, prefix="task", explicit=rng.random() < 0.2)
            task.meta["enactment"] = f"I {task.words[0]} the {task.words[1]} for {task.words[2]}."
            k = rng.randint(2, 3)
            for _ in range(k):
                self.leaf(task)
            return k + 1
        if kind == "decision":
            d = self.node("decision", parent, explicit=rng.random() < 0.2)
            d.meta["enactment"] = f"I {d.words[0]} whether the {d.words[1]} is {d.words[2]}."
            added = 1
            for _ in range(rng.randint(2, 3)):
                b = self.node("branch_condition", d, required=False)
                b.meta["enactment"] = f"The {b.words[0]} is {b.words[1]} and {b.words[2]}."
                added += 1
                for _ in range(rng.randint(1, 2)):
                    self.leaf(b)
                    added += 1
            return added
        if kind == "any":
            a = self.node("action", parent, prefix="any", combine="any")
            k = rng.randint(2, 3)
            for _ in range(k):
                self.leaf(a, alternative=True)
            return k + 1
        raise ValueError(kind)


def _preorder(roots: Sequence[_Spec]) -> list[_Spec]:
    out: list[_Spec] = []
    stack = list(reversed(roots))
    while stack:
        s = stack.pop()
        out.append(s)
        stack.extend(reversed(s.kids))
    return out


def synth_contract(
    rng: Rng = None,
    *,
    nodes: int = 20,
    intents: int | None = None,
    queries: int = 3,
    id: str | None = None,
) -> Contract:
    """A random, audit-clean contract of at least ``nodes`` nodes (see the module doc).

    ``rng`` is a :class:`random.Random` or a seed. The same seed gives the same contract.
    """
    r = _coerce(rng)
    seed_tag = r.randrange(10**6)
    b = _Builder(r, offset=r.randrange(0, 2000) * 3)
    n_intents = intents if intents is not None else (1 if nodes < 14 else r.randint(1, 2))
    roots = [b.node("intent", None) for _ in range(n_intents)]
    count = n_intents + 1  # + the checked output
    # Every contract has a decision, an any-node and a task; then random blocks.
    plan = ["decision", "any", "task"]
    r.shuffle(plan)
    blocks: list[tuple[int, str]] = [(i % n_intents, k) for i, k in enumerate(plan)]
    for i, kind in blocks:
        count += b.block(roots[i], kind)
    while count < nodes:
        kind = r.choices(["leaf", "task", "decision", "any"], [4, 3, 2, 1])[0]
        count += b.block(roots[r.randrange(n_intents)], kind)
    # Interleave: put one plain leaf first under every intent, then the checked output.
    for root in roots:
        b.leaf(root)
        root.kids.insert(0, root.kids.pop())
    out = b.node("output_requirement", roots[0])
    out.meta["json_schema"] = {
        "type": "object",
        "required": ["case_id", "status"],
        "properties": {"case_id": {"type": "string"}, "status": {"enum": ["resolved", "closed"]}},
    }
    order = _preorder(roots)
    index = {s.id: i for i, s in enumerate(order)}
    by_id = {s.id: s for s in order}

    def ancestors(s: _Spec) -> set[str]:
        out: set[str] = set()
        p = s.parent
        while p is not None:
            out.add(p)
            p = by_id[p].parent
        return out

    anc = {s.id: ancestors(s) for s in order}
    ends = [
        s
        for s in order
        if s.type not in ("intent", "branch_condition", "output_requirement") and not s.alternative
    ]
    edges: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    want = max(2, len(ends) // 2)
    for _ in range(want * 8):
        if len(edges) >= want:
            break
        u, v = r.sample(ends, 2)
        if index[u.id] > index[v.id]:
            u, v = v, u
        if u.id in anc[v.id] or (u.id, v.id) in seen:
            continue
        # requires pulls its source in: only from an unconditional node, or within
        # one outcome, so no query contradicts the contract.
        can_require = u.outcome is None or u.outcome == v.outcome
        kind = "requires" if can_require and r.random() < 0.5 else "enables"
        seen.add((u.id, v.id))
        edges.append({"source": u.id, "target": v.id, "kind": kind})
    for s in order:
        if s.type == "decision":
            for k in s.kids:
                if k.type == "branch_condition":
                    edges.append({"source": s.id, "target": k.id, "kind": "branches_to"})
    top = {k.id for k in roots[0].kids}
    producers = [s for s in order if s.id in top and s.type != "output_requirement"]
    if producers:
        edges.append({"source": producers[-1].id, "target": out.id, "kind": "produces"})

    # The artifact: a heading, one line per node, one per invariant.
    lines = [f"# Procedure {seed_tag}", ""]
    spans: dict[str, tuple[int, int]] = {}
    pos = sum(len(x) + 1 for x in lines)

    def add_line(key: str, depth: int, body: str) -> None:
        nonlocal pos
        indent = "  " * depth + "- "
        start = pos + len(indent)
        spans[key] = (start, start + len(body))
        lines.append(indent + body)
        pos += len(indent) + len(body) + 1

    depth = {s.id: len(anc[s.id]) for s in order}

    def label(s: _Spec) -> str:
        return f"{_VERB[s.type]} {s.words[0]} {s.words[1]}"

    def description(s: _Spec) -> str:
        return f"{s.words[2].capitalize()} {s.words[0]}."

    for s in order:
        add_line(s.id, depth[s.id], f"{label(s)}: {description(s)}")
    inv_words = [next(b.words) for _ in range(4)]
    add_line("inv:forbid", 0, f"Never write an access code; {inv_words[0]} {inv_words[1]}.")
    add_line("inv:judged", 0, f"Stay {inv_words[2]} and {inv_words[3]} throughout.")
    text = "\n".join(lines) + "\n"

    def ev(key: str) -> list[dict[str, Any]]:
        a, z = spans[key]
        return [{"start": a, "end": z, "quote": text[a:z]}]

    node_docs = [
        {
            "id": s.id,
            "type": s.type,
            "label": label(s),
            "description": description(s),
            "required": s.required,
            "explicit": s.explicit,
            "combine": s.combine,
            "parent": s.parent,
            "evidence": ev(s.id),
            "meta": s.meta,
        }
        for s in order
    ]
    judged_target = r.choice([s.id for s in order if s.type != "intent"])
    invariants = [
        {
            "id": "no_access_code",
            "label": "Never write an access code",
            "description": f"{inv_words[0]} {inv_words[1]}",
            "evidence": ev("inv:forbid"),
            "applies_to": [],
            "check": {"forbid_regex": FORBIDDEN, "violation_example": VIOLATION_EXAMPLE},
        },
        {
            "id": "stay_courteous",
            "label": f"Stay {inv_words[2]}",
            "description": f"{inv_words[3]}",
            "evidence": ev("inv:judged"),
            "applies_to": [judged_target],
        },
    ]
    decisions = [s for s in order if s.type == "decision"]
    qdocs = []
    for qi in range(queries):
        intents_q = [] if n_intents == 1 or qi == 0 else [r.choice(roots).id]
        branches = {
            d.id: r.choice([k.id for k in d.kids if k.type == "branch_condition"])
            for d in decisions
        }
        qdocs.append(
            {
                "id": f"q{qi + 1}",
                "text": f"Query {qi + 1}.",
                "intents": intents_q,
                "branches": branches,
            }
        )
    doc = {
        "format": "contracteval.contract/v1",
        "id": id or f"synth-{seed_tag}",
        "title": f"Synthetic procedure {seed_tag}",
        "domain": "synthetic",
        "artifact": {"text": text, "media_type": "text/markdown"},
        "nodes": node_docs,
        "edges": edges,
        "invariants": invariants,
        "queries": qdocs,
    }
    return read_contract(doc)


# --------------------------------------------------------------------------- executions


def gold_steps(expected: Expected, rng: Rng = None) -> list[str]:
    """The declared nodes a clean execution enacts, in a valid random order.

    One step for every active required leaf, every active decision, every explicit
    node and one alternative (drawn from ``rng``) of each active ``any`` node; the order
    satisfies every ``requires``/``enables`` edge of G_E (between the steps that give
    each end its position) and puts each decision before every step of its outcome.
    """
    r = _coerce(rng)
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
    r = _coerce(rng)
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


# --------------------------------------------------------------------------- benchmarks


def synth_graphs(
    n_expected: int,
    n_observed: int | None = None,
    seed: int = 0,
) -> tuple[Expected, Observed]:
    """A large G_E (every node active) and a noisy G_O for the matching benchmark.

    G_E has one intent, tasks of four leaves and about ``n_expected`` nodes. Each node
    has three words of its own and one from a shared pool of 40, so many pairs have a
    nonzero similarity. Each of the first observed nodes paraphrases a distinct leaf
    (two of its words, its pool word and a random pool word); the others are noise
    built from pool words and words of random nodes.

    >>> e, o = synth_graphs(50, 50, seed=1)
    >>> len(e.nodes), len(o.nodes)
    (50, 50)
    """
    n_observed = n_expected if n_observed is None else n_observed
    r = random.Random(seed)
    w = words()
    pool = list(w[-40:])
    it = iter(w)
    lines = ["# Benchmark procedure", ""]
    pos = sum(len(x) + 1 for x in lines)
    node_docs: list[dict[str, Any]] = []
    own: dict[str, list[str]] = {}
    shared: dict[str, str] = {}

    def add(id_: str, type_: str, parent: str | None) -> None:
        nonlocal pos
        ws = [next(it) for _ in range(3)]
        p = r.choice(pool)
        own[id_], shared[id_] = ws, p
        body = f"{_VERB[type_]} {ws[0]} {ws[1]} {p}: {ws[2].capitalize()}."
        node_docs.append(
            {
                "id": id_,
                "type": type_,
                "label": f"{_VERB[type_]} {ws[0]} {ws[1]} {p}",
                "description": f"{ws[2].capitalize()}.",
                "required": True,
                "parent": parent,
                "evidence": [{"start": pos, "end": pos + len(body)}],
            }
        )
        lines.append(body)
        pos += len(body) + 1

    add("goal", "intent", None)
    leaves: list[str] = []
    t = 0
    while len(node_docs) < n_expected:
        t += 1
        add(f"task{t}", "action", "goal")
        for k in range(min(4, n_expected - len(node_docs))):
            leaf = f"task{t}.{k + 1}"
            add(leaf, "action", f"task{t}")
            leaves.append(leaf)
    doc = {
        "format": "contracteval.contract/v1",
        "id": f"bench-{n_expected}",
        "artifact": {"text": "\n".join(lines) + "\n"},
        "nodes": node_docs,
        "queries": [{"id": "q", "intents": [], "branches": {}}],
    }
    contract = read_contract(doc)
    expected = condition(contract, "q")
    targets = r.sample(leaves, min(len(leaves), n_observed))
    text_parts: list[str] = []
    obs_nodes: list[ObservedNode] = []
    pos = 0
    for i in range(n_observed):
        if i < len(targets):
            x = targets[i]
            a, b = r.sample(own[x], 2)
            body = f"[assistant] I {a} the {b} with {shared[x]} and {r.choice(pool)}."
            gold: str | None = x
        else:
            y = r.choice(leaves)
            body = f"[assistant] Also {r.choice(own[y])} {r.choice(pool)} {r.choice(pool)}."
            gold = None
        span = Span(pos, pos + len(body), body)
        text_parts.append(body + "\n")
        pos += len(body) + 1
        obs_nodes.append(
            ObservedNode(
                f"o{i + 1}",
                body.removeprefix("[assistant] ").rstrip("."),
                [span],
                i,
                gold=gold,
                index=i,
            )
        )
    order = list(range(n_observed))
    r.shuffle(order)  # observed steps are not in the expected order
    for step, j in enumerate(order):
        obs_nodes[j].step = step
    observed = Observed("trace", "".join(text_parts), obs_nodes, contract=contract.id, query="q")
    return expected, observed
