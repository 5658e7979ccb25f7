"""Labelled pairs for the pair model, from a suite whose cases carry gold observed graphs.

Each case's trace is read by the behaviour extractor, as semantic mode reads it; an
extracted step is labelled with the gold ids of the gold observed nodes its evidence
overlaps (several when the step joins moves the gold graph keeps apart: a step may enact
several obligations). A pair (node, step) is positive when the node is one of them.
Contracts are read without their authored enactments (they were written with the
traces); the *taught* copies of the clean cases add the enactments harvested from the
other queries' clean cases (:func:`matching.enactments.protocol_expected`), never the
case's own.

>>> from matching.formats import ObservedNode, Span
>>> gold = [ObservedNode("g1", "x", [Span(0, 5)], 0, gold="a"), ObservedNode("g2", "y", [Span(6, 9)], 1, gold="b")]
>>> sorted(step_golds(ObservedNode("o1", "z", [Span(2, 8)], 0), gold))
['a', 'b']
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .alignment import pairable
from .behaviour import extract_behaviour
from .conditioning import Expected
from .enactments import protocol_expected
from .formats import Case, ObservedNode
from .match import keep_evidence
from .observe import steps
from .pair_features import FEATURES, pairs_of
from .suite import Suite

TRAIN_FAMILIES = ("clean", "wrong_branch", "extra_action")


@dataclass
class Pairs:
    x: list[np.ndarray] = field(default_factory=list)  # one (pairs, features) block a case
    y: list[np.ndarray] = field(default_factory=list)
    group: list[str] = field(default_factory=list)  # the case's contract
    case: list[str] = field(default_factory=list)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        sizes = [len(b) for b in self.y]
        x = np.vstack(self.x) if self.x else np.zeros((0, len(FEATURES)))
        y = np.concatenate(self.y) if self.y else np.zeros(0)
        return x, y, np.repeat(np.array(self.group, dtype=object), sizes)


def step_golds(o: ObservedNode, gold: Sequence[ObservedNode]) -> set[str]:
    """The gold ids of the gold nodes whose evidence overlaps ``o``'s."""
    out = set()
    for g in gold:
        if g.gold is None:
            continue
        if any(min(a.end, b.end) > max(a.start, b.start) for a in o.evidence for b in g.evidence):
            out.add(g.gold)
    return out


def case_pairs(case: Case, expected: Expected) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels of every (pairable node, extracted step) of one case."""
    text = case.observed.text
    kept, _ = keep_evidence(extract_behaviour(text, kind=case.observed.kind))
    by_id = expected.contract.by_id
    rows = [e for e in expected.nodes if pairable(by_id[e])]
    inactive = [
        n.id for n in expected.contract.nodes if n.id in expected.inactive and n.type != "intent"
    ]
    nodes = [by_id[e] for e in [*rows, *inactive]]
    x = pairs_of(nodes, steps(kept, text), expected, n_active=len(rows))
    y = np.zeros(x.shape[:2])
    for j, o in enumerate(kept):
        golds = step_golds(o, case.observed.nodes)
        for i, n in enumerate(nodes):
            y[i, j] = n.id in golds
    return x.reshape(-1, len(FEATURES)), y.reshape(-1)


def suite_pairs(
    suite: Suite, families: Iterable[str] = TRAIN_FAMILIES, progress: Any = None
) -> Pairs:
    """The labelled pairs of a suite's cases of ``families`` (zero-shot), plus the
    clean cases again with taught enactments."""
    fams = set(families)
    cases = [c for c in suite.cases if ("clean" if c.clean else c.family) in fams]
    zero = protocol_expected(suite.contracts, suite.cases, "zero-shot")
    taught = protocol_expected(suite.contracts, suite.cases, "taught")
    work = [(c, zero) for c in cases] + [(c, taught) for c in cases if c.clean]
    out = Pairs()
    for k, (case, expected) in enumerate(work):
        x, y = case_pairs(case, expected[(case.contract, case.query)])
        out.x.append(x)
        out.y.append(y)
        out.group.append(case.contract)
        out.case.append(case.id)
        if progress:
            progress(k + 1, len(work))
    return out


def data_hash(paths: Iterable[Path]) -> str:
    """SHA-256 of the training data and of what shapes the pairs (features, lexicons)."""
    h = hashlib.sha256()
    h.update("\n".join(FEATURES).encode())
    for p in sorted(Path(x) for x in paths):
        files = (
            sorted(q for q in p.rglob("*") if q.is_file())
            if p.is_dir()
            else [p]
            if p.is_file()
            else []
        )
        for f in files:
            h.update(f.name.encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def devset_pairs(contract: Any, items: Any, labels: Any, progress: Any = None) -> Pairs:
    """Labelled pairs of development-set traces: ``labels`` maps (task, trial) to
    ``[{"spans": [[start, end], ...], "nodes": [...]}, ...]`` (what a reviewer said each
    stretch of the trace enacts). Steps are projected onto the extracted steps by
    overlap, as gold graphs are; the group of a pair is its task, so folds hold whole
    tasks out."""
    from .conditioning import condition
    from .formats import Span

    out = Pairs()
    todo = [it for it in items if (it.task, it.trial) in labels]
    for k, it in enumerate(todo):
        gold = [
            ObservedNode(f"g{i}_{n}", n, [Span(a, b) for a, b in row["spans"]], 0, gold=n)
            for i, row in enumerate(labels[(it.task, it.trial)])
            for n in row["nodes"]
        ]
        case = Case(
            f"dev/{it.task}/{it.trial}", contract.id, it.query, _observed(it.text, gold), True
        )
        x, y = case_pairs(case, condition(contract, it.query))
        out.x.append(x)
        out.y.append(y)
        out.group.append(f"task{it.task}")
        out.case.append(case.id)
        if progress:
            progress(k + 1, len(todo))
    return out


def _observed(text: str, nodes: list[ObservedNode]) -> Any:
    from .formats import Observed

    return Observed(kind="trace", text=text, nodes=nodes)
