"""Large expected/observed graph pairs for the matching benchmark."""

from __future__ import annotations

import random
from typing import Any

from ..conditioning import Expected, condition
from ..formats import read_contract
from ..model import Observed, ObservedNode, Span
from .vocab import VERB, words


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
        body = f"{VERB[type_]} {ws[0]} {ws[1]} {p}: {ws[2].capitalize()}."
        node_docs.append(
            {
                "id": id_,
                "type": type_,
                "label": f"{VERB[type_]} {ws[0]} {ws[1]} {p}",
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
