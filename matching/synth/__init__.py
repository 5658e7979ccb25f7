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

from .contracts import synth_contract
from .executions import gold_steps, synth_execution
from .graphs import synth_graphs
from .vocab import FORBIDDEN, VIOLATION_EXAMPLE, words

__all__ = [
    "FORBIDDEN",
    "VIOLATION_EXAMPLE",
    "gold_steps",
    "synth_contract",
    "synth_execution",
    "synth_graphs",
    "words",
]
