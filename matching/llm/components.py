"""The component study: how good are compiled declared graphs and extracted observed graphs?

Declared graphs (per contract, proposals vs the audited contract):

- node precision / recall / F1: proposed and audited nodes are paired by one
  maximum-weight assignment on the token similarity of ALGORITHMS.md §2
  (text = label + " " + description on both sides), keeping pairs with sim ≥ 0.35;
- type accuracy: the share of paired nodes whose proposed type equals the audited one;
- edge F1: a proposed edge is correct when both ends are paired and the audited
  contract has an edge between those two nodes in that direction (kind not compared:
  the compilers disagree on requires vs enables far more than on the order itself);
- expected-node recall: over the contract's queries, the share of the nodes of G_E(q)
  that are paired (how much of each expected graph the compiled graph could express).

Observed graphs (per clean case, the extractor run on the case's source text vs the
gold observed nodes): a node *hits* when one of its spans overlaps a span of a node
on the other side. Precision = extracted nodes that hit / extracted nodes; recall =
gold nodes hit / gold nodes; both micro-averaged over cases.

>>> from pathlib import Path
>>> from matching.propose import propose_heuristic
>>> from matching.validate import load_contract
>>> c = load_contract(Path(__file__).parents[1] / "data" / "refund-mini.json")
>>> row = compare_declared(propose_heuristic(c.text), c)
>>> 0 < row.node_recall <= 1 and 0 <= row.type_accuracy <= 1
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..conditioning import condition
from ..errors import ContractEvalError
from ..formats import Contract, Observed
from ..propose import Proposals
from ..similarity import THRESHOLD, similarity_matrix, tokens
from ..suite import Suite
from .client import LLMError

__all__ = [
    "DeclaredRow",
    "ObservedRow",
    "compare_declared",
    "compare_observed",
    "declared_study",
    "format_components",
    "observed_study",
]


def _f1(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return 0.0 if p + r == 0 else round(2 * p * r / (p + r), 6)


def _share(num: int, den: int) -> float | None:
    return None if den == 0 else round(num / den, 6)


@dataclass
class DeclaredRow:
    compiler: str
    contracts: int = 0
    proposed: int = 0
    audited: int = 0
    paired: int = 0
    typed_right: int = 0
    proposed_edges: int = 0
    audited_edges: int = 0
    edges_right: int = 0
    expected_nodes: int = 0
    expected_paired: int = 0
    errors: list[str] = field(default_factory=list)

    def add(self, other: DeclaredRow) -> None:
        for k in (
            "contracts",
            "proposed",
            "audited",
            "paired",
            "typed_right",
            "proposed_edges",
            "audited_edges",
            "edges_right",
            "expected_nodes",
            "expected_paired",
        ):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        self.errors.extend(other.errors)

    @property
    def node_precision(self) -> float | None:
        return _share(self.paired, self.proposed)

    @property
    def node_recall(self) -> float | None:
        return _share(self.paired, self.audited)

    @property
    def node_f1(self) -> float | None:
        return _f1(self.node_precision, self.node_recall)

    @property
    def type_accuracy(self) -> float | None:
        return _share(self.typed_right, self.paired)

    @property
    def edge_f1(self) -> float | None:
        return _f1(
            _share(self.edges_right, self.proposed_edges),
            _share(self.edges_right, self.audited_edges),
        )

    @property
    def expected_recall(self) -> float | None:
        return _share(self.expected_paired, self.expected_nodes)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k in (
            "node_precision",
            "node_recall",
            "node_f1",
            "type_accuracy",
            "edge_f1",
            "expected_recall",
        ):
            d[k] = getattr(self, k)
        return d


def pair_nodes(proposed: Sequence[dict[str, Any]], contract: Contract) -> dict[str, str]:
    """audited id → proposed id, by one assignment on token sim (≥ 0.35 kept)."""
    from scipy.optimize import linear_sum_assignment  # ~0.3 s: only when pairing

    audited = contract.nodes
    if not audited or not proposed:
        return {}
    rows = [tokens(f"{n.label} {n.description}") for n in audited]
    cols = [tokens(f"{p['label']} {p.get('description', '')}") for p in proposed]
    m = similarity_matrix(rows, cols)
    weights = np.where(m >= THRESHOLD, m, 0.0)
    r, c = linear_sum_assignment(weights, maximize=True)
    return {
        audited[i].id: proposed[j]["id"]
        for i, j in zip(r.tolist(), c.tolist(), strict=True)
        if m[i, j] >= THRESHOLD
    }


def compare_declared(proposals: Proposals, contract: Contract, compiler: str = "") -> DeclaredRow:
    """One contract's row (counts; the ratios are properties)."""
    pairs = pair_nodes(proposals.nodes, contract)
    ptype = {p["id"]: p["type"] for p in proposals.nodes}
    back = {p: a for a, p in pairs.items()}
    audited_edges = {(e.source, e.target) for e in contract.edges}
    mapped = {
        (back[e["source"]], back[e["target"]])
        for e in proposals.edges
        if e["source"] in back and e["target"] in back
    }
    row = DeclaredRow(
        compiler or proposals.proposer,
        contracts=1,
        proposed=len(proposals.nodes),
        audited=len(contract.nodes),
        paired=len(pairs),
        typed_right=sum(1 for a, p in pairs.items() if contract.by_id[a].type == ptype[p]),
        proposed_edges=len({(e["source"], e["target"]) for e in proposals.edges}),
        audited_edges=len(audited_edges),
        edges_right=len(mapped & audited_edges),
    )
    for q in contract.queries:
        try:
            e = condition(contract, q)
        except ContractEvalError as exc:
            row.errors.append(f"{contract.id}/{q.id}: {exc}")
            continue
        row.expected_nodes += len(e.nodes)
        row.expected_paired += sum(1 for n in e.nodes if n in pairs)
    return row


def declared_study(
    contracts: Iterable[Contract], propose: Callable[[str], Proposals], compiler: str
) -> DeclaredRow:
    total = DeclaredRow(compiler)
    for c in contracts:
        try:
            total.add(compare_declared(propose(c.text), c, compiler))
        except LLMError as exc:
            total.errors.append(f"{c.id}: {exc.reason}")
    return total


@dataclass
class ObservedRow:
    extractor: str
    cases: int = 0
    extracted: int = 0
    gold: int = 0
    extracted_hit: int = 0
    gold_hit: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float | None:
        return _share(self.extracted_hit, self.extracted)

    @property
    def recall(self) -> float | None:
        return _share(self.gold_hit, self.gold)

    @property
    def f1(self) -> float | None:
        return _f1(self.precision, self.recall)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(precision=self.precision, recall=self.recall, f1=self.f1)
        return d


def _overlaps(a: Observed, b: Observed) -> tuple[int, int]:
    """(nodes of a overlapping some node of b, nodes of b overlapping some node of a)."""

    def spans(o: Observed) -> list[list[tuple[int, int]]]:
        return [[(s.start, s.end) for s in n.evidence] for n in o.nodes]

    sa, sb = spans(a), spans(b)

    def hit(x: list[tuple[int, int]], ys: list[list[tuple[int, int]]]) -> bool:
        return any(s < e2 and s2 < e for s, e in x for y in ys for s2, e2 in y)

    return sum(1 for x in sa if hit(x, sb)), sum(1 for y in sb if hit(y, sa))


def compare_observed(extracted: Observed, gold: Observed, extractor: str) -> ObservedRow:
    ea, gb = _overlaps(extracted, gold)
    return ObservedRow(extractor, 1, len(extracted.nodes), len(gold.nodes), ea, gb)


def observed_study(
    suite: Suite,
    extract: Callable[..., Observed],
    extractor: str,
    *,
    limit: int | None = None,
) -> ObservedRow:
    """Extraction quality over the suite's clean cases (perturbed copies would count
    the same text several times)."""
    total = ObservedRow(extractor)
    clean = [c for c in suite.cases if c.clean]
    for case in clean if limit is None else clean[:limit]:
        try:
            row = compare_observed(
                extract(case.observed.text, kind=case.observed.kind), case.observed, extractor
            )
        except LLMError as exc:
            total.errors.append(f"{case.id}: {exc.reason}")
            continue
        for k in ("cases", "extracted", "gold", "extracted_hit", "gold_hit"):
            setattr(total, k, getattr(total, k) + getattr(row, k))
    return total


def format_components(declared: Sequence[DeclaredRow], observed: Sequence[ObservedRow]) -> str:
    """The two tables, plain text."""

    def cell(x: float | None) -> str:
        return "—" if x is None else f"{x:.3f}"

    head = (
        f"{'declared compiler':<28}{'contracts':>10}{'node P':>8}{'node R':>8}{'node F1':>9}"
        f"{'type acc':>10}{'edge F1':>9}{'G_E recall':>12}"
    )
    lines = [head, "-" * len(head)]
    for r in declared:
        lines.append(
            f"{r.compiler:<28}{r.contracts:>10}{cell(r.node_precision):>8}{cell(r.node_recall):>8}"
            f"{cell(r.node_f1):>9}{cell(r.type_accuracy):>10}{cell(r.edge_f1):>9}"
            f"{cell(r.expected_recall):>12}"
        )
    head2 = f"{'observed extractor':<28}{'cases':>10}{'precision':>11}{'recall':>9}{'F1':>8}"
    lines += ["", head2, "-" * len(head2)]
    for o in observed:
        lines.append(
            f"{o.extractor:<28}{o.cases:>10}{cell(o.precision):>11}{cell(o.recall):>9}"
            f"{cell(o.f1):>8}"
        )
    errors = [e for r in declared for e in r.errors] + [e for o in observed for e in o.errors]
    if errors:
        lines.append(f"errors ({len(errors)}):")
        lines.extend(f"  {e}" for e in errors[:20])
    return "\n".join(lines)
