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

    Parameters
    ----------
    n_expected : int
        About how many expected nodes.
    n_observed : int, optional
        How many observed nodes (``n_expected`` by default).
    seed : int

    Returns
    -------
    (Expected, Observed)

    Examples
    --------
    >>> e, o = synth_graphs(50, 50, seed=1)
    >>> len(e.nodes), len(o.nodes)
    (50, 50)
    """
    n_observed = n_expected if n_observed is None else n_observed
    r = random.Random(seed)
    pool = list(words()[-40:])
    g = _BenchContract(r, pool, n_expected)
    expected = condition(g.contract, "q")
    return expected, _bench_observed(r, pool, g, n_observed)


class _BenchContract:
    """The benchmark contract, with each node's own words and pool word."""

    def __init__(self, r: random.Random, pool: list[str], n_expected: int) -> None:
        self.r, self.pool = r, pool
        self.words = iter(words())
        self.lines = ["# Benchmark procedure", ""]
        self.pos = sum(len(x) + 1 for x in self.lines)
        self.node_docs: list[dict[str, Any]] = []
        self.own: dict[str, list[str]] = {}
        self.shared: dict[str, str] = {}
        self.leaves: list[str] = []
        self.add("goal", "intent", None)
        t = 0
        while len(self.node_docs) < n_expected:
            t += 1
            self.add(f"task{t}", "action", "goal")
            for k in range(min(4, n_expected - len(self.node_docs))):
                leaf = f"task{t}.{k + 1}"
                self.add(leaf, "action", f"task{t}")
                self.leaves.append(leaf)
        self.contract = read_contract(
            {
                "format": "contracteval.contract/v1",
                "id": f"bench-{n_expected}",
                "artifact": {"text": "\n".join(self.lines) + "\n"},
                "nodes": self.node_docs,
                "queries": [{"id": "q", "intents": [], "branches": {}}],
            }
        )

    def add(self, id_: str, type_: str, parent: str | None) -> None:
        ws = [next(self.words) for _ in range(3)]
        p = self.r.choice(self.pool)
        self.own[id_], self.shared[id_] = ws, p
        label = f"{VERB[type_]} {ws[0]} {ws[1]} {p}"
        body = f"{label}: {ws[2].capitalize()}."
        self.node_docs.append(
            {
                "id": id_,
                "type": type_,
                "label": label,
                "description": f"{ws[2].capitalize()}.",
                "required": True,
                "parent": parent,
                "evidence": [{"start": self.pos, "end": self.pos + len(body)}],
            }
        )
        self.lines.append(body)
        self.pos += len(body) + 1


def _bench_observed(
    r: random.Random, pool: list[str], g: _BenchContract, n_observed: int
) -> Observed:
    """Paraphrases of distinct leaves, then noise; steps shuffled."""
    targets = r.sample(g.leaves, min(len(g.leaves), n_observed))
    text_parts: list[str] = []
    obs_nodes: list[ObservedNode] = []
    pos = 0
    for i in range(n_observed):
        if i < len(targets):
            x = targets[i]
            a, b = r.sample(g.own[x], 2)
            body = f"[assistant] I {a} the {b} with {g.shared[x]} and {r.choice(pool)}."
            gold: str | None = x
        else:
            y = r.choice(g.leaves)
            body = f"[assistant] Also {r.choice(g.own[y])} {r.choice(pool)} {r.choice(pool)}."
            gold = None
        span = Span(pos, pos + len(body), body)
        text_parts.append(body + "\n")
        pos += len(body) + 1
        label = body.removeprefix("[assistant] ").rstrip(".")
        obs_nodes.append(ObservedNode(f"o{i + 1}", label, [span], i, gold=gold, index=i))
    order = list(range(n_observed))
    r.shuffle(order)  # observed steps are not in the expected order
    for step, j in enumerate(order):
        obs_nodes[j].step = step
    text = "".join(text_parts)
    return Observed("trace", text, obs_nodes, contract=g.contract.id, query="q")
