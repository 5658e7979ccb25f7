"""Agreement between independent audits of one contract (double annotation).

Each annotator decides every proposed node of the same contract version: ``confirm``,
``reject`` or ``edit`` (with the edited fields). This module measures how far the
annotators agree and, what matters for evaluation, which disagreements change some
query's expected graph G_E (ALGORITHMS.md §1).

A *decision* is a mapping ``{"action": "confirm" | "reject" | "edit", "fields": {...}}``;
``fields`` (only for ``edit``) may set ``type``, ``label``, ``description``,
``required``, ``explicit``, ``combine``, ``parent`` and ``evidence`` (a list of
``[start, end]`` pairs or span dicts). A node an annotator left undecided keeps its
proposed form in that annotator's version and is left out of κ.

Degenerate cases, chosen so that every figure is a number a report can store in JSON:

- κ when the chance agreement ``p_e`` is 1 (both annotators used one and the same
  category for every item): ``p_e = 1`` forces the observed agreement ``p_o`` to be 1
  too, so κ is reported as **1.0**, "agreed on everything". (κ = (p_o - p_e)/(1 - p_e)
  is 0/0 there; scikit-learn returns NaN, which says nothing and cannot be stored.)
- α when the expected disagreement ``D_e`` is 0 (one category in all pairable values):
  the observed disagreement is 0 as well, and α is reported as **1.0** for the same
  reason.
- No item both annotators decided (κ), no pairable unit (α), no evidence on either side
  (span F1), no node both kept (type agreement), no edge on either side (edge agreement):
  ``None``, "not measured", never a made-up number.

>>> kappa = cohen_kappa(["confirm", "confirm", "reject", "edit"],
...                     ["confirm", "reject", "reject", "edit"])
>>> round(kappa, 4)
0.6364
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from .conditioning import condition
from .errors import ContractEvalError
from .formats import contract_from_data

ACTIONS = ("confirm", "reject", "edit")
EDIT_FIELDS = ("type", "label", "description", "required", "explicit", "combine", "parent")


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's κ of two annotators' labels of the same items.

    Parameters
    ----------
    a, b
        The labels, item by item (equal lengths).

    Returns
    -------
    float or None
        κ = (p_o - p_e) / (1 - p_e); 1.0 when p_e = 1 (see the module notes), ``None``
        for no items.

    Examples
    --------
    >>> cohen_kappa(["confirm", "reject"], ["confirm", "reject"])
    1.0
    >>> cohen_kappa(["confirm"] * 3, ["confirm"] * 3)
    1.0
    >>> cohen_kappa(["confirm", "reject"], ["reject", "confirm"])
    -1.0
    >>> cohen_kappa([], []) is None
    True
    """
    if len(a) != len(b):
        raise ValueError(f"κ needs labels of the same items ({len(a)} vs {len(b)})")
    n = len(a)
    if n == 0:
        return None
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[k] * cb[k] for k in ca) / (n * n)
    if p_e == 1.0:
        return 1.0
    return (p_o - p_e) / (1.0 - p_e)


def krippendorff_alpha(units: Iterable[Sequence[Hashable | None]]) -> float | None:
    """Krippendorff's α for nominal data, any number of annotators, missing values.

    Parameters
    ----------
    units
        One row per unit (node), one value per annotator; ``None`` = not decided.
        Units with fewer than two values are not pairable and are left out.

    Returns
    -------
    float or None
        α = 1 - D_o / D_e from the coincidence matrix; 1.0 when D_e = 0 (one category
        only), ``None`` with no pairable unit.

    Examples
    --------
    Two annotators, four units, one disagreement (hand computation in the tests):

    >>> round(krippendorff_alpha([["c", "c"], ["r", "r"], ["c", "r"], ["e", "e"]]), 4)
    0.6667
    >>> krippendorff_alpha([["c", "c", None], ["c", None, "c"]])
    1.0
    >>> krippendorff_alpha([["c", None]]) is None
    True
    """
    coincidence: dict[tuple[Hashable, Hashable], float] = {}
    for row in units:
        values = [v for v in row if v is not None]
        m = len(values)
        if m < 2:
            continue
        for i, j in ((i, j) for i in range(m) for j in range(m) if i != j):
            pair = (values[i], values[j])
            coincidence[pair] = coincidence.get(pair, 0.0) + 1.0 / (m - 1)
    n = sum(coincidence.values())
    if n == 0:
        return None
    marginal: dict[Hashable, float] = {}
    for (c, _), w in coincidence.items():
        marginal[c] = marginal.get(c, 0.0) + w
    d_o = sum(w for (c, k), w in coincidence.items() if c != k) / n
    d_e = sum(marginal[c] * marginal[k] for c in marginal for k in marginal if c != k)
    d_e /= n * (n - 1)
    if d_e == 0:
        return 1.0
    return 1.0 - d_o / d_e


def _chars(spans: Iterable[Any]) -> set[int]:
    out: set[int] = set()
    for s in spans:
        start, end = (s["start"], s["end"]) if isinstance(s, Mapping) else s
        out.update(range(start, end))
    return out


def span_counts(a: Iterable[Any], b: Iterable[Any]) -> tuple[int, int, int]:
    """``(|A ∩ B|, |A|, |B|)`` over the characters two span lists cover."""
    ca, cb = _chars(a), _chars(b)
    return len(ca & cb), len(ca), len(cb)


def span_f1(a: Iterable[Any], b: Iterable[Any]) -> float | None:
    """Character-level F1 of two evidence span lists (``[start, end)`` pairs or dicts).

    Examples
    --------
    >>> span_f1([(0, 10)], [(5, 15)])
    0.5
    >>> span_f1([{"start": 0, "end": 4}], [(0, 4)])
    1.0
    >>> span_f1([], []) is None
    True
    """
    both, na, nb = span_counts(a, b)
    return None if na + nb == 0 else 2.0 * both / (na + nb)


def _evidence(value: Any, text: str) -> list[dict[str, Any]]:
    out = []
    for s in value:
        start, end = (s["start"], s["end"]) if isinstance(s, Mapping) else s
        out.append({"start": start, "end": end, "quote": text[start:end]})
    return out


def apply_decisions(doc: Mapping[str, Any], decisions: Mapping[str, Any]) -> dict[str, Any]:
    """One annotator's version of a contract document: their decisions applied.

    Rejected nodes are dropped (a child takes its nearest kept ancestor as parent;
    edges and ``applies_to`` entries naming a dropped node go), edited nodes take the
    edited fields, confirmed and undecided nodes stay as they are.

    Examples
    --------
    >>> doc = {"artifact": {"text": "ab"}, "nodes": [
    ...     {"id": "a", "type": "intent", "label": "A", "required": True, "parent": None,
    ...      "evidence": [{"start": 0, "end": 1}]},
    ...     {"id": "b", "type": "action", "label": "B", "required": True, "parent": "a",
    ...      "evidence": [{"start": 1, "end": 2}]}], "edges": [], "invariants": []}
    >>> v = apply_decisions(doc, {"a": {"action": "reject"},
    ...                           "b": {"action": "edit", "fields": {"label": "Bee"}}})
    >>> [(n["id"], n["label"], n["parent"]) for n in v["nodes"]]
    [('b', 'Bee', None)]
    """
    out = copy.deepcopy(dict(doc))
    text = out["artifact"]["text"]
    parents = {n["id"]: n.get("parent") for n in out["nodes"]}
    rejected = {k for k, d in decisions.items() if d.get("action") == "reject"}
    kept = []
    for n in out["nodes"]:
        if n["id"] in rejected:
            continue
        d = decisions.get(n["id"]) or {}
        if d.get("action") == "edit":
            fields = d.get("fields") or {}
            n.update({k: fields[k] for k in EDIT_FIELDS if k in fields})
            if "evidence" in fields:
                n["evidence"] = _evidence(fields["evidence"], text)
            parents[n["id"]] = n.get("parent")
        kept.append(n)
    for n in kept:
        p, seen = n.get("parent"), set()
        while p is not None and p in rejected and p not in seen:
            seen.add(p)
            p = parents.get(p)
        n["parent"] = p
    out["nodes"] = kept
    out["edges"] = [
        e
        for e in out.get("edges", [])
        if e["source"] not in rejected and e["target"] not in rejected
    ]
    for inv in out.get("invariants", []):
        inv["applies_to"] = [x for x in inv.get("applies_to", []) if x not in rejected]
    return out


@dataclass
class QueryDiff:
    """How one query's G_E differs between two versions (an error is a G_E too)."""

    query: str
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    required_changed: list[str] = field(default_factory=list)
    edges_changed: list[str] = field(default_factory=list)
    error_a: str | None = None
    error_b: str | None = None
    nodes: set[str] = field(default_factory=set)  # every node id the difference touches

    @property
    def changed(self) -> bool:
        return bool(self.nodes) or self.error_a != self.error_b

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "required_changed": self.required_changed,
            "edges_changed": self.edges_changed,
            "error_a": self.error_a,
            "error_b": self.error_b,
        }


def _expected(doc: Mapping[str, Any], query: Mapping[str, Any]) -> tuple[Any, str | None]:
    try:
        return condition(contract_from_data(doc), dict(query)), None
    except (ContractEvalError, KeyError, ValueError) as exc:
        return None, str(exc)


def _edge_key(e: Any) -> str:
    return f"{e.source} -{e.kind}-> {e.target}"


def expected_diff(
    doc_a: Mapping[str, Any], doc_b: Mapping[str, Any], query: Mapping[str, Any]
) -> QueryDiff:
    """Condition ``query`` under both versions and diff the expected graphs.

    A query that conditions under one version only touches every node of the G_E it
    has; one that fails under both with different messages touches no node but is
    still a change.

    Examples
    --------
    >>> from matching.validate import load_contract
    >>> from pathlib import Path
    >>> doc = load_contract(Path(__file__).parent / "data" / "refund-mini.json").to_dict()
    >>> b = apply_decisions(doc, {"verify_owner": {"action": "reject"}})
    >>> d = expected_diff(doc, b, doc["queries"][0])
    >>> d.only_a, d.changed
    (['verify_owner'], True)
    """
    qid = str(query.get("id", ""))
    ea, err_a = _expected(doc_a, query)
    eb, err_b = _expected(doc_b, query)
    diff = QueryDiff(qid, error_a=err_a, error_b=err_b)
    if ea is None or eb is None:
        diff.nodes = set((ea or eb).nodes) if (ea or eb) is not None else set()
        return diff
    na, nb = set(ea.nodes), set(eb.nodes)
    diff.only_a = [n for n in ea.nodes if n not in nb]
    diff.only_b = [n for n in eb.nodes if n not in na]
    diff.required_changed = sorted(set(ea.required) ^ set(eb.required))
    edges_a = {_edge_key(e): e for e in ea.edges}
    edges_b = {_edge_key(e): e for e in eb.edges}
    changed = sorted(set(edges_a) ^ set(edges_b))
    diff.edges_changed = changed
    diff.nodes = set(diff.only_a) | set(diff.only_b) | set(diff.required_changed)
    for k in changed:
        e = edges_a.get(k) or edges_b[k]
        diff.nodes |= {e.source, e.target}
    return diff


@dataclass
class Disagreement:
    """A node the annotators' versions disagree on (kept or not, or its fields)."""

    node: str
    decisions: dict[str, Any]  # annotator -> their decision (None: undecided)
    path_changing: bool = False
    queries: list[str] = field(default_factory=list)  # queries whose G_E it changes

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "decisions": self.decisions,
            "path_changing": self.path_changing,
            "queries": self.queries,
        }


@dataclass
class Agreement:
    """Every agreement figure of one contract (see :func:`compare`)."""

    annotators: list[str]
    nodes: int
    kappa: float | None
    alpha: float | None
    span_f1: float | None
    type_agreement: float | None
    edge_agreement: float | None
    disagreements: list[Disagreement]
    query_diffs: list[QueryDiff]

    @property
    def path_changing(self) -> int:
        return sum(d.path_changing for d in self.disagreements)

    def figures(self) -> dict[str, Any]:
        """The numbers alone (a report row, the export's provenance)."""
        return {
            "annotators": list(self.annotators),
            "nodes": self.nodes,
            "kappa": self.kappa,
            "alpha": self.alpha,
            "span_f1": self.span_f1,
            "type_agreement": self.type_agreement,
            "edge_agreement": self.edge_agreement,
            "disagreements": len(self.disagreements),
            "path_changing": self.path_changing,
        }

    def to_dict(self) -> dict[str, Any]:
        out = self.figures()
        out["disagreement_list"] = [d.to_dict() for d in self.disagreements]
        out["query_diffs"] = [q.to_dict() for q in self.query_diffs]
        return out


def _shape(n: Mapping[str, Any] | None) -> Any:
    if n is None:
        return None
    spans = sorted((s["start"], s["end"]) for s in n.get("evidence", []))
    return tuple(n.get(k) for k in EDIT_FIELDS), tuple(spans)


def _mean(values: Iterable[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return sum(got) / len(got) if got else None


def _ratio(hits: int, total: int) -> float | None:
    return hits / total if total else None


def _pair_figures(
    va: Mapping[str, Any], vb: Mapping[str, Any], da: Mapping[str, Any], db: Mapping[str, Any]
) -> tuple[float | None, float | None, float | None, float | None]:
    """κ, span F1, type agreement and edge agreement of one pair of annotators."""
    both = [k for k in da if k in db]
    kappa = cohen_kappa([da[k]["action"] for k in both], [db[k]["action"] for k in both])
    na = {n["id"]: n for n in va["nodes"]}
    nb = {n["id"]: n for n in vb["nodes"]}
    kept = [k for k in na if k in nb]
    inter = sa = sb = 0
    for k in kept:
        i, x, y = span_counts(na[k]["evidence"], nb[k]["evidence"])
        inter, sa, sb = inter + i, sa + x, sb + y
    f1 = None if sa + sb == 0 else 2.0 * inter / (sa + sb)
    types = _ratio(sum(na[k]["type"] == nb[k]["type"] for k in kept), len(kept))
    ea = {(e["source"], e["kind"], e["target"]) for e in va.get("edges", [])}
    eb = {(e["source"], e["kind"], e["target"]) for e in vb.get("edges", [])}
    edges = None if not ea and not eb else 2.0 * len(ea & eb) / (len(ea) + len(eb))
    return kappa, f1, types, edges


def _disagreements(
    order: list[str],
    versions: Mapping[str, Mapping[str, Any]],
    decisions: Mapping[str, Mapping[str, Any]],
    diffs: list[QueryDiff],
) -> list[Disagreement]:
    """Nodes whose versions differ between annotators, path-changing ones first."""
    by_id = {a: {n["id"]: n for n in v["nodes"]} for a, v in versions.items()}
    out = []
    for k in order:
        if len({_shape(nodes.get(k)) for nodes in by_id.values()}) > 1:
            hit = sorted({d.query for d in diffs if k in d.nodes})
            out.append(Disagreement(k, {a: decisions[a].get(k) for a in by_id}, bool(hit), hit))
    out.sort(key=lambda d: not d.path_changing)
    return out


def compare(
    doc: Mapping[str, Any],
    decisions: Mapping[str, Mapping[str, Mapping[str, Any]]],
    queries: Sequence[Mapping[str, Any]] | None = None,
) -> Agreement:
    """Agreement of two or more annotators' decisions on one contract.

    Parameters
    ----------
    doc
        The contract version they annotated (a ``contracteval.contract/v1`` dict).
    decisions
        Annotator name -> node id -> decision (see the module notes).
    queries
        The saved queries to condition (default: the contract's own ``queries``).

    Returns
    -------
    Agreement
        κ (two annotators; with more, the mean over pairs), α (nominal, any number),
        character-level span F1 and type agreement on the nodes both kept, edge
        agreement (F1 of the edge sets), and the disagreements, path-changing first:
        a disagreement is path-changing when its node is part of how some query's G_E
        differs between two annotators' versions.

    Examples
    --------
    >>> from matching.validate import load_contract
    >>> from pathlib import Path
    >>> doc = load_contract(Path(__file__).parent / "data" / "refund-mini.json").to_dict()
    >>> a = {n["id"]: {"action": "confirm"} for n in doc["nodes"]}
    >>> b = dict(a, verify_owner={"action": "reject"})
    >>> r = compare(doc, {"ann": a, "bob": b})
    >>> [(d.node, d.path_changing, d.queries) for d in r.disagreements]
    [('verify_owner', True, ['q1', 'q2'])]
    """
    names = sorted(decisions)
    versions = {a: apply_decisions(doc, decisions[a]) for a in names}
    queries = list(doc.get("queries", []) if queries is None else queries)
    figures, diffs = [], []
    for a, b in combinations(names, 2):
        figures.append(_pair_figures(versions[a], versions[b], decisions[a], decisions[b]))
        diffs += [d for q in queries if (d := expected_diff(versions[a], versions[b], q)).changed]
    order = [n["id"] for n in doc["nodes"]]
    alpha = krippendorff_alpha(
        [[(decisions[a].get(k) or {}).get("action") for a in names] for k in order]
    )
    return Agreement(
        annotators=names,
        nodes=len(order),
        kappa=_mean(f[0] for f in figures),
        alpha=alpha,
        span_f1=_mean(f[1] for f in figures),
        type_agreement=_mean(f[2] for f in figures),
        edge_agreement=_mean(f[3] for f in figures),
        disagreements=_disagreements(order, versions, decisions, diffs),
        query_diffs=diffs,
    )
