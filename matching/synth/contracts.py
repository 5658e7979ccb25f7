"""Seeded random contracts that pass the audit (see :mod:`matching.synth`)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..formats import read_contract
from ..model import Contract
from .vocab import FORBIDDEN, PREFIX, VERB, VIOLATION_EXAMPLE, Rng, coerce, words


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
        p = prefix or PREFIX[type_]
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
    """A random, audit-clean contract of at least ``nodes`` nodes (see :mod:`matching.synth`).

    Parameters
    ----------
    rng : random.Random, int, str or None
        The generator, or a seed. The same seed gives the same contract.
    nodes : int
        The least number of nodes.
    intents : int, optional
        How many root intents (1 or 2, drawn, by default).
    queries : int
        How many embedded queries.
    id : str, optional
        The contract id (``synth-<tag>`` by default).

    Returns
    -------
    Contract
    """
    r = coerce(rng)
    seed_tag = r.randrange(10**6)
    b = _Builder(r, offset=r.randrange(0, 2000) * 3)
    n_intents = intents if intents is not None else (1 if nodes < 14 else r.randint(1, 2))
    roots, out = _tree(b, n_intents, nodes)
    order = _preorder(roots)
    anc = _ancestors(order)
    edges = _edges(r, order, anc, roots, out)
    inv_words = [next(b.words) for _ in range(4)]
    text, spans = _artifact(seed_tag, order, anc, inv_words)

    def ev(key: str) -> list[dict[str, Any]]:
        a, z = spans[key]
        return [{"start": a, "end": z, "quote": text[a:z]}]

    invariants = _invariants(r, order, inv_words, ev)
    doc = {
        "format": "contracteval.contract/v1",
        "id": id or f"synth-{seed_tag}",
        "title": f"Synthetic procedure {seed_tag}",
        "domain": "synthetic",
        "artifact": {"text": text, "media_type": "text/markdown"},
        "nodes": [_node_doc(s, ev(s.id)) for s in order],
        "edges": edges,
        "invariants": invariants,
        "queries": _queries(r, roots, order, queries),
    }
    return read_contract(doc)


def _tree(b: _Builder, n_intents: int, nodes: int) -> tuple[list[_Spec], _Spec]:
    """The node tree: intents, a decision, an any-node, a task, then random blocks until
    there are ``nodes`` nodes; a plain leaf first under every intent; the checked output."""
    r = b.rng
    roots = [b.node("intent", None) for _ in range(n_intents)]
    count = n_intents + 1  # + the checked output
    plan = ["decision", "any", "task"]
    r.shuffle(plan)
    for i, kind in enumerate(plan):
        count += b.block(roots[i % n_intents], kind)
    while count < nodes:
        kind = r.choices(["leaf", "task", "decision", "any"], [4, 3, 2, 1])[0]
        count += b.block(roots[r.randrange(n_intents)], kind)
    for root in roots:
        b.leaf(root)
        root.kids.insert(0, root.kids.pop())
    out = b.node("output_requirement", roots[0])
    out.meta["json_schema"] = {
        "type": "object",
        "required": ["case_id", "status"],
        "properties": {"case_id": {"type": "string"}, "status": {"enum": ["resolved", "closed"]}},
    }
    return roots, out


def _ancestors(order: list[_Spec]) -> dict[str, set[str]]:
    by_id = {s.id: s for s in order}
    anc: dict[str, set[str]] = {}
    for s in order:
        found: set[str] = set()
        p = s.parent
        while p is not None:
            found.add(p)
            p = by_id[p].parent
        anc[s.id] = found
    return anc


def _edges(
    r: random.Random,
    order: list[_Spec],
    anc: dict[str, set[str]],
    roots: list[_Spec],
    out: _Spec,
) -> list[dict[str, str]]:
    """Acyclic ``requires``/``enables`` edges forward in declaration order, the
    ``branches_to`` edges of every decision, and one ``produces`` edge to the output."""
    index = {s.id: i for i, s in enumerate(order)}
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
    return edges


def _node_doc(s: _Spec, evidence: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": s.id,
        "type": s.type,
        "label": _label(s),
        "description": _description(s),
        "required": s.required,
        "explicit": s.explicit,
        "combine": s.combine,
        "parent": s.parent,
        "evidence": evidence,
        "meta": s.meta,
    }


def _label(s: _Spec) -> str:
    return f"{VERB[s.type]} {s.words[0]} {s.words[1]}"


def _description(s: _Spec) -> str:
    return f"{s.words[2].capitalize()} {s.words[0]}."


def _artifact(
    seed_tag: int, order: list[_Spec], anc: dict[str, set[str]], inv_words: list[str]
) -> tuple[str, dict[str, tuple[int, int]]]:
    """The artifact: a heading, one line per node, one per invariant; and each line's span."""
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

    for s in order:
        add_line(s.id, len(anc[s.id]), f"{_label(s)}: {_description(s)}")
    add_line("inv:forbid", 0, f"Never write an access code; {inv_words[0]} {inv_words[1]}.")
    add_line("inv:judged", 0, f"Stay {inv_words[2]} and {inv_words[3]} throughout.")
    return "\n".join(lines) + "\n", spans


def _invariants(
    r: random.Random, order: list[_Spec], inv_words: list[str], ev: Any
) -> list[dict[str, Any]]:
    """A checked forbidden-text invariant and an unchecked one on a random node."""
    judged_target = r.choice([s.id for s in order if s.type != "intent"])
    return [
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


def _queries(
    r: random.Random, roots: list[_Spec], order: list[_Spec], n: int
) -> list[dict[str, Any]]:
    """Embedded queries resolving every decision at random (the first one all intents)."""
    decisions = [s for s in order if s.type == "decision"]
    out = []
    for qi in range(n):
        intents_q = [] if len(roots) == 1 or qi == 0 else [r.choice(roots).id]
        branches = {
            d.id: r.choice([k.id for k in d.kids if k.type == "branch_condition"])
            for d in decisions
        }
        text = f"Query {qi + 1}."
        out.append({"id": f"q{qi + 1}", "text": text, "intents": intents_q, "branches": branches})
    return out
