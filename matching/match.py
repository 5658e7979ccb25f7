"""Matching (ALGORITHMS.md §2): G_E, G_O -> the alignment M.

First the observed evidence is checked (a bad span is discarded, a node left without
spans is dropped and reported). Then expected and observed nodes are paired, by gold id
(oracle mode) or by one maximum-weight assignment on token similarity (token mode).
Observed nodes left over are classified: wrong-branch nodes, repeats, or extra actions.

>>> from pathlib import Path
>>> from matching.formats import read_observed
>>> from matching.validate import load_contract
>>> from matching.conditioning import condition
>>> data = Path(__file__).parent / "data"
>>> c = load_contract(data / "refund-mini.json")
>>> obs = read_observed(data / "refund-mini-observed-q1.json")
>>> m = align(condition(c, "q1"), obs, mode="token")
>>> m.pairs["check_window"], m.pairs["approve_refund"]
('o3', 'o4')
>>> m.extra
[]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .conditioning import Expected
from .formats import Observed, ObservedNode
from .model import MODES
from .similarity import THRESHOLD, similarity_matrix, tokens
from .trace import calls_tool, strip_tag, tag


@dataclass
class Alignment:
    """The alignment M and the classification of every kept observed node."""

    mode: str
    kept: list[ObservedNode]  # in (step, list) order
    dropped: list[tuple[str, str]]  # (observed id, reason)
    pairs: dict[str, str]  # expected id -> observed id, in expected order
    scores: dict[str, float]  # expected id -> sim of its pair
    repeats: list[tuple[str, str]] = field(default_factory=list)  # (observed id, of)
    wrong_branch: dict[str, list[str]] = field(default_factory=dict)  # decision -> obs ids
    wrong_branch_of: dict[str, str] = field(default_factory=dict)  # obs id -> inactive node
    # semantic mode: obs id -> the obligation of an intent the query does not activate
    # that the step offers or asks about (it stays an extra action)
    offered: dict[str, str] = field(default_factory=dict)
    consumed_output: list[str] = field(default_factory=list)  # obs ids paired with outputs
    extra: list[str] = field(default_factory=list)
    # expected id -> sim of its pair minus the best sim of the same step to another
    # active obligation (semantic and token modes; a weak pairing has a small one)
    margins: dict[str, float] = field(default_factory=dict)
    # expected id -> observed id of the pairs whose step already enacts another
    # obligation (semantic mode: a closing message reports an action and tells the
    # outcome); they are in ``pairs`` too
    shared: dict[str, str] = field(default_factory=dict)
    # semantic mode: the pair model's probabilities behind each possible failure
    # (:class:`matching.confidence.Likelihoods`); None in oracle and token modes
    likelihoods: Any = None
    # semantic mode: obligation -> the first step that enacts it (its anchor, or an
    # earlier step that co-enacts it: the request before the lookup); order is read there
    first_step: dict[str, int] = field(default_factory=dict)

    def steps_at(self, start: int, end: int) -> list[str]:
        """The kept observed nodes whose evidence overlaps ``[start, end)`` of the text."""
        return [o.id for o in self.kept if any(s.start < end and s.end > start for s in o.evidence)]

    @property
    def paired_observed(self) -> dict[str, str]:
        """Observed id -> the obligation it enacts (the first, when a step enacts two)."""
        return {o: e for e, o in self.pairs.items() if e not in self.shared}


def keep_evidence(obs: Observed) -> tuple[list[ObservedNode], list[tuple[str, str]]]:
    """Discard bad spans and drop the nodes left without any (ALGORITHMS.md §2).

    Parameters
    ----------
    obs : Observed

    Returns
    -------
    kept : list of ObservedNode
        In (step, list) order.
    dropped : list of (str, str)
        ``(observed id, reason)`` of every dropped node.
    """
    text = obs.text
    size = len(text)
    kept: list[ObservedNode] = []
    dropped: list[tuple[str, str]] = []
    for n in obs.nodes:
        good = []
        out_of_range = mismatch = 0
        for s in n.evidence:
            if not (0 <= s.start < s.end <= size):
                out_of_range += 1
            elif s.quote is not None and text[s.start : s.end] != s.quote:
                mismatch += 1
            else:
                good.append(s)
        if good:
            if len(good) != len(n.evidence):
                n = ObservedNode(
                    n.id, n.label, good, n.step, n.description, n.type, n.gold, n.index
                )
            kept.append(n)
        elif mismatch and not out_of_range:
            dropped.append((n.id, "every span's quote differs from the source text"))
        elif out_of_range and not mismatch:
            dropped.append((n.id, "every span is outside the source text"))
        else:
            dropped.append((n.id, "every span is outside the source text or quotes it wrongly"))
    kept.sort(key=lambda n: (n.step, n.index))
    return kept, dropped


def observed_tokens(n: ObservedNode, text: str) -> frozenset[str]:
    """The token set of an observed node: label, description and evidence quotes
    without their role tags (ALGORITHMS.md §2, token mode).

    Parameters
    ----------
    n : ObservedNode
    text : str
        The source text its spans index.

    Returns
    -------
    frozenset of str
    """
    quotes = " ".join(strip_tag(text[s.start : s.end]) for s in n.evidence)
    return tokens(f"{n.label} {n.description} {quotes}")


def call_quotes(n: ObservedNode, text: str) -> list[str]:
    """The texts of ``n``'s spans without an optional leading ``[tool] `` tag.

    Parameters
    ----------
    n : ObservedNode
    text : str
        The source text its spans index.

    Returns
    -------
    list of str
    """
    return [text[s.start : s.end].removeprefix(tag("tool")) for s in n.evidence]


def align(
    expected: Expected, obs: Observed, *, mode: str = "token", semantic: Any = None
) -> Alignment:
    """Pair expected with observed nodes and classify what is left (ALGORITHMS.md §2).

    Parameters
    ----------
    expected : Expected
        G_E(q).
    obs : Observed
    mode : {"token", "oracle", "semantic"}
    semantic : matching.alignment.Setup, optional
        Semantic mode's pair model and knobs (default: the shipped model's).

    Returns
    -------
    Alignment
        The pairs M, repeats, wrong-branch nodes, consumed outputs, extras, dropped nodes.

    Raises
    ------
    ValueError
        For an unknown ``mode``.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: expected one of {MODES}")
    kept, dropped = keep_evidence(obs)
    if mode == "oracle":
        m = _oracle(expected, kept)
    elif mode == "semantic":
        from .alignment import semantic_align  # loads the embedding model on use
        from .confidence import likelihoods

        scored = semantic_align(expected, kept, obs.text, setup=semantic)
        m = scored.alignment
        m.likelihoods = likelihoods(scored)
    else:
        m = _token(expected, kept, obs.text)
    m.dropped = dropped
    by_id = expected.contract.by_id
    m.consumed_output = [o for e, o in m.pairs.items() if by_id[e].checked_output]
    consumed = set(m.paired_observed) | {o for o, _ in m.repeats} | set(m.wrong_branch_of)
    m.extra = [n.id for n in kept if n.id not in consumed]
    return m


def _oracle(expected: Expected, kept: list[ObservedNode]) -> Alignment:
    active = expected.active
    paired: dict[str, str] = {}
    m = Alignment("oracle", kept, [], {}, {})
    for n in kept:
        g = n.gold
        if g is not None and g in expected.inactive:
            m.wrong_branch.setdefault(expected.inactive[g], []).append(n.id)
            m.wrong_branch_of[n.id] = g
        elif g is not None and g in active:
            if g in paired:
                m.repeats.append((n.id, g))
            else:
                paired[g] = n.id
    m.pairs = {e: paired[e] for e in expected.nodes if e in paired}
    m.scores = dict.fromkeys(m.pairs, 1.0)
    return m


def _token(expected: Expected, kept: list[ObservedNode], text: str) -> Alignment:
    from scipy.optimize import linear_sum_assignment  # ~0.3 s: not at web start

    c = expected.contract
    by_id = c.by_id
    rows = expected.nodes
    inactive = [n for n in c.nodes if n.id in expected.inactive]
    all_exp = [by_id[e] for e in rows] + inactive
    exp_tokens = [tokens(f"{n.label} {n.description}") for n in all_exp]
    obs_tokens = [observed_tokens(o, text) for o in kept]
    s = similarity_matrix(exp_tokens, obs_tokens)
    # An agent's tool call is the strongest evidence there is.
    bound = [(i, set(n.tools)) for i, n in enumerate(all_exp) if n.tools]
    if bound:
        quotes = [call_quotes(o, text) for o in kept]
        # the text before the first "(" of each quote: a quick test for plain names
        heads = [{q.partition("(")[0] for q in qs if "(" in q} for qs in quotes]
        for i, names in bound:
            plain = {x for x in names if "(" not in x}
            odd = names - plain
            for j, qs in enumerate(quotes):
                if plain & heads[j] or (odd and calls_tool(qs, odd)):
                    s[i, j] = 1.0
    n_act = len(rows)
    act = s[:n_act]
    weights = np.where(act >= THRESHOLD, act, 0.0)
    m = Alignment("token", kept, [], {}, {})
    pairs: dict[str, str] = {}
    if n_act and kept:
        ri, ci = linear_sum_assignment(weights, maximize=True)
        for r, col in zip(ri.tolist(), ci.tolist(), strict=True):
            if weights[r, col] > 0:
                pairs[rows[r]] = kept[col].id
                m.scores[rows[r]] = float(act[r, col])
    m.pairs = {e: pairs[e] for e in rows if e in pairs}
    m.scores = {e: m.scores[e] for e in m.pairs}
    paired_obs = set(pairs.values())
    inact = s[n_act:]
    for j, o in enumerate(kept):
        if o.id in paired_obs:
            continue
        col = act[:, j] if n_act else np.zeros(0)
        best_a = float(col.max()) if n_act else 0.0
        best_i = float(inact[:, j].max()) if len(inactive) else 0.0
        if best_i >= THRESHOLD and best_i > best_a:
            node = inactive[int(np.argmax(inact[:, j]))].id
            m.wrong_branch.setdefault(expected.inactive[node], []).append(o.id)
            m.wrong_branch_of[o.id] = node
        elif best_a >= THRESHOLD:
            m.repeats.append((o.id, rows[int(np.argmax(col))]))
    return m
