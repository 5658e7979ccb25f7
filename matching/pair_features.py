"""Features of (declared node, observed step) pairs: what the pair model reads.

For every node of G_D that semantic matching may pair (the active obligations, then the
inactive ones) and every observed :class:`~matching.observe.Step`, one row of
:data:`FEATURES`. The sentence embedding is all-MiniLM-L6-v2 (:mod:`matching.embed`);
``tok`` is the spec's token similarity (ALGORITHMS.md §2). A node's texts are
``label. description``, its enactments (``meta.enactment``) and, for an active decision,
its chosen outcome's; a step's texts are the whole move and its sentences and lead
clauses. Cost: one encoding of every distinct text, then matrix products; linear in
nodes × steps.

>>> from pathlib import Path
>>> from matching.validate import load_contract
>>> from matching.conditioning import condition
>>> from matching.observe import Step
>>> c = load_contract(Path(__file__).parent / "data" / "refund-mini.json")
>>> e = condition(c, "q1")
>>> nodes = [c.by_id[n] for n in e.nodes]
>>> s = [Step("ask", None, whole="Could you give me your order number?")]
>>> pairs_of(nodes, s, e, sims=lambda a, b: np.zeros((len(a), len(b)))).shape[1:]
(1, 20)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from .conditioning import Expected
from .formats import Node, node_texts_of_meta
from .observe import Step
from .similarity import similarity_matrix, tokens

FEATURES = (
    "cos_head",  # embedding cosine: the node's label. description vs the whole step
    "cos_best",  # best cosine over the node's texts and the step's whole and parts
    "cos_enact",  # best cosine over the node's enactments (0 without any)
    "has_enact",
    "tok_best",  # best token similarity over the same texts
    "tool_match",  # the step calls a tool the node binds
    "tool_other",  # the step calls a tool the node does not bind, and the node binds some
    "arg_overlap",  # token similarity of the call's argument names with the node's words
    "row_margin",  # how far this step reads better than the node's next-best step
    "col_margin",  # how far this node reads better than the step's next-best obligation
    "pos_gap",  # |relative position of the node - relative position of the step|
    "row_top",  # this step is the node's likeliest (scale-free: holds across domains)
    "col_top",  # this node is the step's likeliest active obligation
    "sim_z",  # the similarity standardised over the case's pairs (scale-free)
    "call_action",  # act x type: a call and an action or a validation
    "refuse_refusal",  # a refusal said and a refusal declared
    "refuse_other",  # a refusal said and anything else declared
    "ask_validation",  # a question or request for consent and a validation
    "decide_decision",  # a conclusion drawn and a decision
    "close_any",  # the agent's closing message
)
_WORD = re.compile(r"[A-Za-z]+")
Sims = Callable[[Sequence[str], Sequence[str]], np.ndarray]


def node_texts(n: Node, expected: Expected) -> tuple[list[str], list[bool]]:
    """A node's texts and, for each, whether it is an enactment."""
    head = f"{n.label}. {n.description}".strip() if n.description else n.label
    texts, enact = [head], [False]
    for t in node_texts_of_meta(n.meta):
        texts.append(t)
        enact.append(True)
    pick = expected.decisions.get(n.id) if n.type == "decision" else None
    if pick is not None:
        o = expected.contract.by_id[pick]
        texts.append(f"{o.label}. {o.description}".strip() if o.description else o.label)
        enact.append(False)
    return texts, enact


def embedding_sims(a: Sequence[str], b: Sequence[str]) -> np.ndarray:
    """Cosine of every text of ``a`` with every text of ``b`` (the MiniLM embedding)."""
    from .embed import encoder  # loads the model on first use

    if not a or not b:
        return np.zeros((len(a), len(b)))
    enc = encoder()
    return np.clip((enc.encode(list(a)) @ enc.encode(list(b)).T).astype(np.float64), 0.0, 1.0)


def _step_columns(
    steps: Sequence[Step],
) -> tuple[list[str], list[int], dict[int, Sequence[str]]]:
    """Each step's texts (its whole first, then up to six parts), the step of each,
    and the pieces each whole is said in, by the whole's column."""
    cols: list[str] = []
    owner: list[int] = []
    pieces: dict[int, Sequence[str]] = {}
    for j, s in enumerate(steps):
        pieces[len(cols)] = s.pieces
        cols += [s.whole, *s.parts[:6]]
        owner += [j] * (1 + len(s.parts[:6]))
    return cols, owner, pieces


def step_cosines(
    rows: Sequence[str], cols: Sequence[str], pieces: Mapping[int, Sequence[str]], sims: Sims
) -> np.ndarray:
    """``sims(rows, cols)``, where a whole step said in several pieces (``pieces[k]``
    for column ``k``: its evidence quotes, or its sentences) reads as the word-weighted
    mean of its pieces' vectors.

    A message is its pieces said one after another, and the whole costs as much to
    encode as all of them together: composing it from them halves what a trace costs
    to read. The cosine with a mean ``m = Σ wᵢvᵢ`` needs only cosines:
    ``cos(r, m) = Σ wᵢ cos(r, vᵢ) / √(Σ wᵢwⱼ cos(vᵢ, vⱼ))``.

    >>> unit = {"a b.": np.array([1.0, 0.0]), "c d.": np.array([0.0, 1.0])}
    >>> vec = lambda t: unit.get(t, np.array([1.0, 1.0]) / np.sqrt(2))
    >>> dot = lambda a, b: np.array([[vec(x) @ vec(y) for y in b] for x in a])
    >>> whole = {0: ["a b.", "c d."]}
    >>> step_cosines(["a b."], ["a b. c d.", "a b."], whole, dot).round(3).tolist()
    [[0.707, 1.0]]
    """
    composed = {k: list(p) for k, p in pieces.items() if len(p) > 1}
    direct = [t for k, t in enumerate(cols) if k not in composed]
    extra = [p for ps in composed.values() for p in ps]
    texts = list(dict.fromkeys([*direct, *extra]))
    at = {t: i for i, t in enumerate(texts)}
    base = sims(rows, texts)
    out = np.zeros((len(rows), len(cols)))
    for k, t in enumerate(cols):
        if k not in composed:
            out[:, k] = base[:, at[t]]
    for k, said in composed.items():
        idx = [at[p] for p in said]
        w = np.array([max(len(p.split()), 1) for p in said], dtype=np.float64)
        gram = sims(said, said)
        norm = float(np.sqrt(max(float(w @ gram @ w), 1e-12)))
        out[:, k] = np.clip(base[:, idx] @ w / norm, 0.0, 1.0)
    return out


def _reduce(m: np.ndarray, starts: np.ndarray, axis: int) -> np.ndarray:
    return np.maximum.reduceat(m, starts, axis=axis) if m.size else m


def pairs_of(
    nodes: Sequence[Node],
    steps: Sequence[Step],
    expected: Expected,
    *,
    n_active: int | None = None,
    sims: Sims = embedding_sims,
) -> np.ndarray:
    """The feature array (len(nodes), len(steps), len(FEATURES)).

    ``n_active``: the first ``n_active`` nodes are the active obligations (the column
    margin compares a node with the other active ones); default all.
    """
    n_nodes, n_steps = len(nodes), len(steps)
    out = np.zeros((n_nodes, n_steps, len(FEATURES)))
    if not n_nodes or not n_steps:
        return out
    n_active = n_nodes if n_active is None else n_active
    rows: list[str] = []
    owner: list[int] = []
    is_enact: list[bool] = []
    for i, n in enumerate(nodes):
        t, en = node_texts(n, expected)
        rows += t
        owner += [i] * len(t)
        is_enact += en
    cols, col_owner, pieces = _step_columns(steps)
    row_starts = np.flatnonzero(np.r_[True, np.diff(owner) != 0])
    col_starts = np.flatnonzero(np.r_[True, np.diff(col_owner) != 0])
    cos = step_cosines(rows, cols, pieces, sims)
    tok = similarity_matrix([tokens(t) for t in rows], [tokens(t) for t in cols])
    heads = row_starts  # each node's first text is its head
    wholes = col_starts  # each step's first text is its whole
    f = {name: k for k, name in enumerate(FEATURES)}
    out[..., f["cos_head"]] = cos[np.ix_(heads, wholes)]
    best = _reduce(_reduce(cos, row_starts, 0), col_starts, 1)
    out[..., f["cos_best"]] = best
    out[..., f["tok_best"]] = _reduce(_reduce(tok, row_starts, 0), col_starts, 1)
    enact = np.array(is_enact, dtype=bool)
    if enact.any():
        masked = np.where(enact[:, None], cos, 0.0)
        out[..., f["cos_enact"]] = _reduce(_reduce(masked, row_starts, 0), col_starts, 1)
        out[..., f["has_enact"]] = _reduce(enact.astype(float), row_starts, 0)[:, None]
    _tools(out, f, nodes, steps)
    sim = np.maximum(best, out[..., f["tok_best"]])
    out[..., f["row_margin"]] = sim - _best_other(sim.T, n_steps).T
    out[..., f["col_margin"]] = sim - _best_other(sim, n_active)
    out[..., f["row_top"]] = sim >= sim.max(axis=1, keepdims=True)
    out[..., f["col_top"]] = sim >= sim[:n_active].max(axis=0, keepdims=True)
    sd = float(sim.std())
    out[..., f["sim_z"]] = (sim - sim.mean()) / sd if sd > 0 else 0.0
    rn = np.arange(n_nodes) / max(n_active - 1, 1)
    rs = np.arange(n_steps) / max(n_steps - 1, 1)
    out[..., f["pos_gap"]] = np.minimum(np.abs(rn[:, None] - rs[None, :]), 1.0)
    _acts(out, f, nodes, steps)
    return out


def _best_other(m: np.ndarray, k: int) -> np.ndarray:
    """For each cell (i, j), the best of column j over rows ``< k`` other than i (0 when
    there is none): what else competes for the same step (or, transposed, node).

    >>> _best_other(np.array([[0.9, 0.1], [0.5, 0.3]]), 2).tolist()
    [[0.5, 0.3], [0.9, 0.1]]
    """
    out = np.zeros_like(m)
    if k < 2 or not m.size:
        return out
    top = m[:k]
    arg = top.argmax(axis=0)
    srt = np.sort(top, axis=0)
    first, second = srt[-1], srt[-2]
    out[:] = first[None, :]
    rows = np.arange(m.shape[0])[:, None]
    out[:] = np.where(rows == arg[None, :], second[None, :], out)
    return out


def _tools(
    out: np.ndarray, f: dict[str, int], nodes: Sequence[Node], steps: Sequence[Step]
) -> None:
    bound_anywhere = {t for n in nodes for t in n.tools}
    words = [tokens(f"{n.label} {n.description}") for n in nodes]
    for j, s in enumerate(steps):
        if s.act != "call" or not s.tool:
            continue
        arg_words = tokens(" ".join(k.replace("_", " ") for k in s.args))
        for i, n in enumerate(nodes):
            if n.tools:
                hit = s.tool in n.tools
                out[i, j, f["tool_match"]] = float(hit)
                out[i, j, f["tool_other"]] = float(not hit)
            elif s.tool in bound_anywhere:
                # a call another node binds; a call no node binds may enact any node
                # (a contract without a tool catalogue binds none)
                out[i, j, f["tool_other"]] = 1.0
            if arg_words:
                out[i, j, f["arg_overlap"]] = len(arg_words & words[i]) / len(arg_words)


def _acts(out: np.ndarray, f: dict[str, int], nodes: Sequence[Node], steps: Sequence[Step]) -> None:
    types = np.array([n.type for n in nodes])
    for j, s in enumerate(steps):
        if s.act == "call":
            out[:, j, f["call_action"]] = np.isin(types, ("action", "validation"))
        elif s.act == "refuse":
            out[:, j, f["refuse_refusal"]] = types == "refusal"
            out[:, j, f["refuse_other"]] = types != "refusal"
        elif s.act in ("ask", "confirm"):
            out[:, j, f["ask_validation"]] = types == "validation"
        elif s.act == "decide":
            out[:, j, f["decide_decision"]] = types == "decision"
        elif s.act == "close":
            out[:, j, f["close_any"]] = 1.0
