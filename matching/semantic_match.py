"""Matching in ``--mode semantic``: the rules that respect the contract's structure.

Each rule can be switched off (:class:`Rules`), so its effect on the suite is measured
one by one (``scripts/results.py``). With every rule on:

- *structural*: ``intent``, ``branch_condition`` and checked-output nodes are never
  paired directly; they are satisfied by the derive/cover rules and by their checks.
- *outcome wording*: a decision's texts include its chosen outcome's (in
  :mod:`matching.semantic`).
- *position prior*: a weak bonus for pairs at a similar relative position.
- *confident first*: pairs with sim ≥ ``confident`` are assigned first; the rest are
  assigned among candidates with sim ≥ ``window`` inside the order window those pairs
  leave (between the steps of the confidently paired nodes that must come before and
  after). Without this rule, one assignment on sim ≥ ``threshold``.
- *negation*: a negated sentence is no evidence for the outcome it negates.
- *tools extra* (off by default: measured to cost specificity and buy no detection):
  an unpaired tool call is an extra action (or a wrong-branch node when its best
  candidate is an inactive-branch node), never a repeat. Off, a call is treated like a
  sentence by the cover rule.
- *mutual* (an "any evidence" bar, 0 switches it off): after the rounds, an obligation
  still unpaired is paired with a step still free inside its order window when the step
  reads more like this obligation than like any other (paired or not), their similarity
  is at least ``mutual``, and no such step reads more like it. The omission of a required step is then reported only when nothing the
  agent did in its place reads like it.
- *same move*: an unpaired item of a request split into several things (same step, same
  sentence) is a repeat of the obligation its paired sibling enacts: the agent asked one
  question, not one per item.
- *adjacent*: an unpaired step whose best obligation (sim ≥ ``adjacent``) is paired with the
  step just before or after it is a repeat of that obligation: the call and the sentence
  that reports it, or two sentences of one move, enact the obligation together.
- *parts*: a step is also read part by part (each sentence of a move, the lead clause
  before a colon or semicolon: "In the ticket I recorded the facts: …", and an item of a
  split request with the sentence that asks for it); its
  similarity is the best over the whole and its parts, so one long sentence or a move of
  several sentences does not dilute the part that enacts an obligation.
- *cover repeat*: an unpaired sentence is an extra action only when its best similarity
  to every declared node and every artifact sentence is below ``cover``; else a repeat.
- *cover said*: for an unpaired message that tells (not a tool call, not a question) the
  bar is ``cover_said`` (below ``cover``): an on-topic remark or piece of advice is
  commentary on the procedure; a tool call acts, and keeps ``cover``.
- *share* (a bar, 0 switches it off): an obligation to tell the outcome ("Summarise the
  outcome", "Notify the requester of the outcome") still unpaired pairs with the closing
  message when it opens as a recap ("So …", "To sum up, …"), lies in its order window and
  reads like it (sim ≥ ``share``), even when that message is already paired: the last
  message reports the last action *and* tells the outcome. With *share free*, failing a
  recap, the free message in its window that reads most like it (sim ≥ ``share``).
- *second choice* (a bar, 0 switches it off): after that, an obligation still unpaired
  pairs with a free step in its window whose own best obligation is already paired
  elsewhere (the step would only repeat it) and that does not read like an inactive
  branch, when it reads like the obligation at least ``second_choice``.

>>> Rules().threshold <= Rules().confident
True
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from .conditioning import Expected
from .formats import ObservedNode
from .match import Alignment, call_quotes, calls_tool
from .semantic import (
    cover_scores,
    is_tool_call,
    node_matrix,
    observed_parts,
    observed_text,
)
from .semantic_late import precedence as _precedence
from .semantic_late import second_choice as _second
from .semantic_late import share as _share
from .semantic_late import window as _window
from .telling import tells


@dataclass(frozen=True)
class Rules:
    threshold: float = 0.45
    confident: float = 0.60
    window: float = 0.30  # last round: candidates inside the order window
    cover: float = 0.40
    prior: float = 0.05
    mutual: float = 0.15  # "any evidence": chosen by a cross-validation by contract
    structural: bool = True
    outcome_wording: bool = True
    confident_first: bool = True
    negation: bool = True
    # Measured on the suite (docs/results.md) and left off: read-only lookups and case
    # bookkeeping calls that no node binds are about the contract, not extra actions.
    tools_extra: bool = False
    cover_repeat: bool = True
    same_move: bool = True
    adjacent: float = 0.30  # a neighbour's obligation, read at least this well
    parts: bool = True
    # a message to the user may also enact an obligation to tell, read at least this well
    share: float = 0.15  # chosen by a cross-validation by contract (docs/engine.md)
    # an unpaired message that tells (not a call, not a question) is commentary on the
    # procedure from this cover score on; a tool call keeps ``cover``
    cover_said: float = 0.33  # chosen by a cross-validation by contract (docs/engine.md)
    # *share* also pairs an obligation to tell the outcome with a free message
    share_free: bool = True
    # a free step whose best obligation is paired elsewhere may enact its next choice
    second_choice: float = 0.25  # chosen by a cross-validation by contract

    def toggled(self, name: str) -> Rules:
        """These rules with one switched: a rule that is on goes off, one that is off
        goes on (a bar between 0 and its default)."""
        value = getattr(self, name)
        if name in ("prior", "mutual", "adjacent", "share", "second_choice"):  # bars: 0 is off
            bar: dict[str, Any] = {name: 0.0 if value else getattr(RULES, name)}
            return replace(self, **bar)
        if name == "cover_said":  # off: a message needs the cover of any other step
            return replace(self, cover_said=self.cover if value < self.cover else RULES.cover_said)
        return replace(self, **{name: not value})


RULES = Rules()
ABLATIONS = (
    "structural",
    "outcome_wording",
    "prior",
    "confident_first",
    "negation",
    "tools_extra",
    "cover_repeat",
    "mutual",
    "same_move",
    "adjacent",
    "parts",
    "share",
    "cover_said",
    "share_free",
    "second_choice",
)


_ACTIVE: ContextVar[Rules] = ContextVar("semantic_rules", default=RULES)


@contextmanager
def rules_in_effect(rules: Rules) -> Iterator[None]:
    """Run semantic matching with ``rules`` (for ablations) inside the block."""
    token = _ACTIVE.set(rules)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def semantic_align(
    expected: Expected, kept: list[ObservedNode], text: str, rules: Rules | None = None
) -> Alignment:
    """Pair expected with observed nodes on blended similarity and classify the rest."""
    rules = rules or _ACTIVE.get()
    c = expected.contract
    rows = expected.nodes
    inactive = [n for n in c.nodes if n.id in expected.inactive]
    all_exp = [c.by_id[e] for e in rows] + inactive
    obs = [observed_text(o, text) for o in kept]
    groups = [
        observed_parts(o, text) if rules.parts else [t] for o, t in zip(kept, obs, strict=True)
    ]
    flat = [t for g in groups for t in g]
    s = _group_max(
        node_matrix(
            all_exp, expected, flat, outcome_wording=rules.outcome_wording, negation=rules.negation
        ),
        groups,
    )
    _bind_tools(s, all_exp, kept, text)
    n_act = len(rows)
    act = s[:n_act]
    low = min(rules.threshold, rules.window) if rules.confident_first else rules.threshold
    pairable = np.array(
        [
            not rules.structural
            or not (c.by_id[e].type in ("intent", "branch_condition") or c.by_id[e].checked_output)
            for e in rows
        ],
        dtype=bool,
    )
    cand = (act >= low) & pairable[:, None]
    weights = np.where(cand, act + rules.prior * _closeness(len(rows), len(kept)), 0.0)
    m = Alignment("semantic", kept, [], {}, {})
    pairs = _assign(expected, kept, act, weights, rules, pairable)
    if rules.share > 0:
        taken = set(pairs.values())
        shared = _share(expected, kept, text, act, pairs, rules)
        pairs |= shared
        m.shared = {e: kept[c].id for e, c in shared.items() if c in taken}
    if rules.second_choice > 0:
        inact = s[n_act:]
        best_i = inact.max(axis=0) if inact.size else np.zeros(len(kept))
        # a step that reads like an inactive branch is left to the wrong-branch rule
        branchy = (best_i >= rules.threshold) & (best_i > (act.max(axis=0) if n_act else 0.0))
        pairs |= _second(expected, kept, act, pairs, pairable, rules.second_choice, branchy)
    m.pairs = {e: kept[pairs[e]].id for e in rows if e in pairs}
    m.scores = {e: float(act[rows.index(e), pairs[e]]) for e in m.pairs}
    by_row = margins(act, {rows.index(e): pairs[e] for e in m.pairs})
    m.margins = {rows[i]: v for i, v in by_row.items()}
    _leftovers(m, expected, kept, text, s, groups, inactive, rules)
    return m


def margins(act: np.ndarray, pairs: dict[int, int]) -> dict[int, float]:
    """Row -> its pair's similarity minus the best similarity of the same step to any
    other active obligation (1.0 when no other obligation competes for it).

    >>> margins(np.array([[0.8, 0.1], [0.7, 0.2]]), {0: 0})
    {0: 0.1}
    """
    out: dict[int, float] = {}
    for r, c in pairs.items():
        others = np.delete(act[:, c], r)
        out[r] = round(float(act[r, c] - others.max()), 6) if others.size else 1.0
    return out


def _bind_tools(s: np.ndarray, nodes: list, kept: list[ObservedNode], text: str) -> None:
    """An agent's tool call is the strongest evidence there is: sim 1.0 with the nodes
    that bind its tool, and (semantic mode) no other node may take it."""
    quotes = [call_quotes(o, text) for o in kept]
    bound = np.zeros(s.shape, dtype=bool)
    for i, n in enumerate(nodes):
        if n.tools:
            names = set(n.tools)
            for j, qs in enumerate(quotes):
                if calls_tool(qs, names):
                    bound[i, j] = True
    cols = bound.any(axis=0)
    s[:, cols] = np.where(bound[:, cols], 1.0, 0.0)


def _closeness(n_rows: int, n_cols: int) -> np.ndarray:
    """1 − |relative position of the expected node − relative position of the step|."""
    if n_rows == 0 or n_cols == 0:
        return np.zeros((n_rows, n_cols))
    r = np.arange(n_rows) / max(n_rows - 1, 1)
    k = np.arange(n_cols) / max(n_cols - 1, 1)
    return 1.0 - np.abs(r[:, None] - k[None, :])


def _lsa(weights: np.ndarray) -> dict[int, int]:
    if weights.size == 0 or not weights.any():
        return {}
    ri, ci = linear_sum_assignment(weights, maximize=True)
    return {int(r): int(c) for r, c in zip(ri, ci, strict=True) if weights[r, c] > 0}


def _assign(
    expected: Expected,
    kept: list[ObservedNode],
    act: np.ndarray,
    weights: np.ndarray,
    rules: Rules,
    pairable: np.ndarray,
) -> dict[str, int]:
    """expected id -> column of its observed node.

    With *confident first*, rounds of decreasing thresholds (``confident``,
    ``threshold``, ``window``): each round assigns the nodes still unpaired among the
    steps still free, inside the order window that the pairs of earlier rounds leave.
    With *mutual*, a last round pairs leftovers that are each other's best.
    """
    rows = expected.nodes
    if not rules.confident_first:
        return {rows[r]: col for r, col in _lsa(weights).items()}
    before = _precedence(expected)
    steps = np.array([o.step for o in kept])
    done: dict[int, int] = {}
    cuts = sorted({max(rules.confident, rules.threshold), rules.threshold, rules.window})
    for cut in reversed(cuts):
        w = np.where(act >= cut, weights, 0.0)
        w[list(done)] = 0.0
        w[:, list(done.values())] = 0.0
        for r in range(len(rows)):
            if r not in done and w[r].any():
                w[r, ~_window(r, done, before, steps)] = 0.0
        done.update(_lsa(w))
    if rules.mutual > 0:
        _mutual(act, pairable, done, before, steps, rules.mutual)
    return {rows[r]: col for r, col in done.items()}


def _group_max(flat: np.ndarray, groups: list[list[str]]) -> np.ndarray:
    """Columns of ``flat`` (one per text) reduced to one per group: the best text."""
    out = np.zeros((flat.shape[0], len(groups)))
    k = 0
    for j, g in enumerate(groups):
        if g:
            out[:, j] = flat[:, k : k + len(g)].max(axis=1)
        k += len(g)
    return out


def _mutual(
    act: np.ndarray,
    pairable: np.ndarray,
    done: dict[int, int],
    before: np.ndarray,
    steps: np.ndarray,
    floor: float,
) -> None:
    """Pair, best first, an unpaired obligation with the free step inside its window that
    reads most like it among the free steps whose best obligation (paired or not) is this
    one. Updates ``done``."""
    if act.size == 0 or not pairable.any():
        return
    masked = np.where(pairable[:, None], act, -1.0)
    step_best = masked.argmax(axis=0)  # each step's best obligation
    while True:
        taken = set(done.values())
        free = np.array([c not in taken for c in range(act.shape[1])])
        best: tuple[float, int, int] | None = None
        for r in np.flatnonzero(pairable):
            if r in done:
                continue
            ok = free & _window(int(r), done, before, steps) & (step_best == r)
            if not ok.any():
                continue
            c = int(np.argmax(np.where(ok, act[r], -1.0)))
            sim = float(act[r, c])
            if sim >= floor and step_best[c] == r and (best is None or sim > best[0]):
                best = (sim, int(r), c)
        if best is None:
            return
        done[best[1]] = best[2]


def _leftovers(
    m: Alignment,
    expected: Expected,
    kept: list[ObservedNode],
    text: str,
    s: np.ndarray,
    groups: list[list[str]],
    inactive: list,
    rules: Rules,
) -> None:
    """Wrong-branch nodes, repeats; what is left is extra (``align`` lists it)."""
    rows = expected.nodes
    by_id = expected.contract.by_id
    n_act = len(rows)
    paired = set(m.pairs.values())
    left = [j for j, o in enumerate(kept) if o.id not in paired]
    cover = None
    if rules.cover_repeat:
        cover = _group_max(
            cover_scores(expected, [t for j in left for t in groups[j]])[None, :],
            [groups[j] for j in left],
        )[0]
    for k, j in enumerate(left):
        o = kept[j]
        col = s[:n_act, j]
        best_a = float(col.max()) if n_act else 0.0
        best_i = float(s[n_act:, j].max()) if inactive else 0.0
        if best_i >= rules.threshold and best_i > best_a:
            node = inactive[int(np.argmax(s[n_act:, j]))].id
            m.wrong_branch.setdefault(expected.inactive[node], []).append(o.id)
            m.wrong_branch_of[o.id] = node
        elif n_act and best_a >= 1.0:  # another call of a bound tool: a repeat
            m.repeats.append((o.id, rows[int(np.argmax(col))]))
        elif best_a >= rules.threshold and by_id[rows[int(np.argmax(col))]].checked_output:
            # the final record written as a step: consumed by the output, as in §2
            m.repeats.append((o.id, rows[int(np.argmax(col))]))
        elif (of := _joined_to(o, j, kept, m, text, col, rows, rules)) is not None:
            m.repeats.append((o.id, of))
        elif rules.tools_extra and is_tool_call(o, text):
            continue
        elif cover is not None:
            bar = min(rules.cover, rules.cover_said) if tells(o, text) else rules.cover
            if n_act and cover[k] >= bar:
                m.repeats.append((o.id, rows[int(np.argmax(col))]))
        elif best_a >= rules.threshold:
            m.repeats.append((o.id, rows[int(np.argmax(col))]))


def _joined_to(
    o: ObservedNode,
    j: int,
    kept: list[ObservedNode],
    m: Alignment,
    text: str,
    col: np.ndarray,
    rows: list[str],
    rules: Rules,
) -> str | None:
    """The obligation an unpaired step enacts together with a paired one, if any: an
    item of the same request (*same move*), or a neighbouring step paired with the step's
    own best obligation (*adjacent*)."""
    owner = {ob: e for e, ob in m.pairs.items()} | dict(m.repeats)
    if rules.same_move:
        for other in kept:
            if other.id in owner and other.step == o.step and _one_sentence(o, other, text):
                return owner[other.id]
    if rules.adjacent and col.size and float(col.max()) >= rules.adjacent:
        e = rows[int(np.argmax(col))]
        ob = m.pairs.get(e)
        if ob is not None and abs(next(k.step for k in kept if k.id == ob) - o.step) <= 1:
            return e
    return None


def _one_sentence(a: ObservedNode, b: ObservedNode, text: str) -> bool:
    """Whether two single-span nodes lie in one sentence (nothing ends a sentence or a
    line between them)."""
    if len(a.evidence) != 1 or len(b.evidence) != 1:
        return False
    lo = min(a.evidence[0].end, b.evidence[0].end)
    hi = max(a.evidence[0].start, b.evidence[0].start)
    return not re.search(r"[.!?\n]", text[lo:hi]) if lo <= hi else True
