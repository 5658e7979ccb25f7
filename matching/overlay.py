"""The node-level overlay of one evaluated run, as JSON for the viewer (static/js/overlay.js).

:func:`overlay_payload` turns an :class:`~matching.evaluate.Evaluation` and the
observed document it judged into one JSON-serialisable dict: every declared node of
the contract with its *state* on this run, the edges by kind with ordering violations
flagged, the observed nodes with their evidence spans and what each one pairs with,
the failures with the graph elements they point at, the metrics, and the raw artifact
and trace texts (the viewer inserts them as text, never as HTML).

Node states (``STATES``):

- ``direct``, ``derived``, ``covered``: satisfied (ALGORITHMS.md §3);
- ``passed`` / ``failed``: a checked output and its check;
- ``omitted``: a reported omission; ``unsatisfied``: not satisfied, its omission is
  reported on a descendant (or it is not required);
- ``not_applicable``: conditional on an action that did not happen
  (``meta.applies_if_action``), so neither met nor missed;
- ``wrong_branch``: folded into a wrong-branch failure, or the decision that has one;
- ``inactive_branch``: an unchosen outcome of an active decision, or below one;
- ``pruned``: any other declared node outside the expected graph.

>>> from pathlib import Path
>>> from matching.conditioning import condition
>>> from matching.evaluate import evaluate_detailed
>>> from matching.formats import read_observed
>>> from matching.validate import load_contract
>>> data = Path(__file__).parent / "data"
>>> c = load_contract(data / "refund-mini.json")
>>> obs = read_observed(data / "refund-mini-observed-q1.json")
>>> p = overlay_payload(evaluate_detailed(condition(c, "q1"), obs), obs)
>>> {n["id"]: n["state"] for n in p["nodes"]}["within_window"], p["verdict"]
('derived', 'clean')
>>> [n["state"] for n in p["nodes"] if n["id"] in ("outside_window", "reply_json")]
['inactive_branch', 'passed']
>>> [(o["id"], o["status"], o["expected"]) for o in p["observed"]][:2]
[('o1', 'paired', 'lookup_order'), ('o2', 'paired', 'verify_owner')]
>>> import json; len(json.dumps(p)) > 1000
True
"""

from __future__ import annotations

from typing import Any

from .evaluate import Evaluation
from .failures import offending_call
from .formats import Observed, Span

__all__ = [
    "OVERLAY",
    "STATES",
    "OBSERVED_STATUSES",
    "WEAK_MARGIN",
    "WEAK_SCORE",
    "edge_id",
    "is_weak",
    "overlay_payload",
]

OVERLAY = "contracteval.overlay/v1"

#: Every node state, in legend order, with the sentence the viewer's legend shows.
STATES: dict[str, str] = {
    "direct": "Directly evidenced by an observed step",
    "derived": "Derived from its evidenced children",
    "covered": "Covered by an evidenced parent task",
    "passed": "Checked output that passes its check",
    "omitted": "Required but not evidenced (omission)",
    "unsatisfied": "Not satisfied (reported on a descendant, or optional)",
    "not_applicable": "Conditional on an action that did not happen: neither met nor missed",
    "wrong_branch": "Decision that took the wrong branch, or a step lost to it",
    "failed": "Checked output that fails its check",
    "inactive_branch": "Outcome the query did not choose",
    "pruned": "Not active for this query",
}

#: Statuses of an observed node (``Evaluation.observed_status``).
OBSERVED_STATUSES: dict[str, str] = {
    "paired": "Pairs with an expected node",
    "output": "The final answer, consumed by a checked output",
    "repeat": "Repeats an already paired expected node",
    "wrong_branch": "Acts on an outcome the query did not choose",
    "extra": "Enacts no active obligation (extra action)",
}

_SATISFIED = frozenset({"direct", "derived", "covered", "passed"})

#: A pairing is *weak* (drawn distinctly, counted on the run page) when its similarity
#: is below the mode's bar (semantic: the confident-first bar, 0.60; token: 0.50, well
#: above the spec's 0.35 pairing threshold) or its margin to the runner-up obligation
#: for the same step is below ``WEAK_MARGIN``. Oracle and reviewer pairs are never weak.
WEAK_SCORE: dict[str, float] = {"semantic": 0.60, "token": 0.50}
WEAK_MARGIN = 0.05


def is_weak(mode: str, score: float | None, margin: float | None) -> bool:
    """Whether a pairing of ``score`` (and ``margin`` to the runner-up) is weak.

    >>> is_weak("semantic", 0.9, 0.01), is_weak("semantic", 0.5, None), is_weak("oracle", 0.1, None)
    (True, True, False)
    """
    if score is None or mode not in WEAK_SCORE or score >= 1.0:
        return False
    return score < WEAK_SCORE[mode] or (margin is not None and margin < WEAK_MARGIN)


def edge_id(source: str, target: str) -> str:
    """The id a failure uses for an edge (its ``location`` for ordering failures).

    Parameters
    ----------
    source, target : str
        Node ids.

    Returns
    -------
    str
        ``"source->target"``.
    """
    return f"{source}->{target}"


def _spans(spans: list[Span]) -> list[dict[str, int]]:
    return [{"start": s.start, "end": s.end} for s in spans]


def overlay_payload(evaluation: Evaluation, observed: Observed) -> dict[str, Any]:
    """The overlay of one run: a JSON-serialisable dict (format ``contracteval.overlay/v1``).

    Parameters
    ----------
    evaluation : Evaluation
        The evaluation of the run (:func:`matching.evaluate.evaluate_detailed`).
    observed : Observed
        The observed document it judged.

    Returns
    -------
    dict
        Keys: ``format``, ``contract`` {id, title}, ``query`` {id, text, decisions},
        ``mode``, ``verdict``, ``artifact`` {text, media_type}, ``trace`` {kind, text,
        output}, ``nodes``, ``edges``, ``invariants``, ``observed``, ``dropped``,
        ``failures``, ``metrics``, ``counts`` and the legends ``states`` and
        ``observed_statuses`` (state -> sentence). Texts are carried raw.
    """
    ev = evaluation
    e = ev.expected
    c = e.contract
    m = ev.alignment
    targets = _observed_targets(ev)
    nodes = _nodes(ev, targets)
    counts: dict[str, int] = {s: 0 for s in STATES}
    for item in nodes:
        counts[item["state"]] += 1
    observed_items = _observed(ev, targets)
    return {
        "format": OVERLAY,
        "contract": {"id": c.id, "title": c.title},
        "query": {"id": e.query.id, "text": e.query.text, "decisions": dict(e.decisions)},
        "mode": m.mode,
        "verdict": ev.verdict,
        "artifact": {"text": c.text, "media_type": c.media_type},
        "trace": {"kind": observed.kind, "text": observed.text, "output": observed.output},
        "nodes": nodes,
        "edges": _edges(ev),
        "invariants": _invariants(ev),
        "observed": observed_items,
        "dropped": [{"id": i, "reason": r} for i, r in m.dropped],
        "failures": [_targets(f, ev, observed) for f in ev.failures],
        "metrics": dict(ev.metrics),
        "unjudged_invariants": list(ev.unjudged),
        "counts": counts,
        "weak": sum(1 for o in observed_items if o["weak"]),
        "thresholds": {"weak_score": WEAK_SCORE.get(m.mode), "weak_margin": WEAK_MARGIN},
        "states": dict(STATES),
        "observed_statuses": dict(OBSERVED_STATUSES),
    }


Target = tuple[str | None, str | None]  # (expected node, relation)


def _observed_targets(ev: Evaluation) -> dict[str, Target]:
    """What each kept observed node points at: the node it pairs with, repeats, or
    enacts in a wrong branch."""
    m = ev.alignment
    paired_obs = m.paired_observed
    repeat_of = dict(m.repeats)
    out: dict[str, Target] = {}
    for o in m.kept:
        status = ev.observed_status.get(o.id, "extra")
        target: Target = (None, None)
        if status in ("paired", "output"):
            target = (paired_obs.get(o.id), "pairs")
        elif status == "repeat":
            target = (repeat_of.get(o.id), "repeats")
        elif status == "wrong_branch":
            target = (m.wrong_branch_of.get(o.id), "wrong_branch")
        out[o.id] = target
    return out


def _state(ev: Evaluation, node: str, wrong_decisions: list[str]) -> str:
    e = ev.expected
    if node in e.active:
        raw = ev.status.get(node)
        # an unjudged checked output is not satisfied; its status says why
        state = "unsatisfied" if raw in (None, "unjudged") else raw
        return "wrong_branch" if state == "folded" or node in wrong_decisions else state
    return "inactive_branch" if node in e.inactive else "pruned"


def _nodes(ev: Evaluation, targets: dict[str, Target]) -> list[dict[str, Any]]:
    """Every declared node with its state on this run, in declaration order."""
    e = ev.expected
    c = e.contract
    m = ev.alignment
    wrong_decisions = [f["location"] for f in ev.failures if f["family"] == "wrong_branch"]
    observed_of: dict[str, list[dict[str, str]]] = {}
    for oid, (target, relation) in targets.items():
        if target is not None and relation is not None:
            observed_of.setdefault(target, []).append({"id": oid, "relation": relation})
    for target, oid in m.shared.items():  # a step that enacts this obligation beside another
        observed_of.setdefault(target, []).append({"id": oid, "relation": "pairs"})
    nodes: list[dict[str, Any]] = []
    for n in c.nodes:
        state = _state(ev, n.id, wrong_decisions)
        pos = ev.pos.get(n.id)
        nodes.append(
            {
                "id": n.id,
                "label": n.label,
                "description": n.description,
                "type": n.type,
                "parent": n.parent,
                "depth": len(c.ancestors(n.id)),
                "required": n.required,
                "in_required_set": n.id in e.required,
                "explicit": n.explicit,
                "combine": n.combine,
                "checked_output": n.checked_output,
                "active": n.id in e.active,
                "state": state,
                "status": ev.status.get(n.id),
                "satisfied": state in _SATISFIED,
                "branch_of": e.inactive.get(n.id),
                "chosen_outcome": e.decisions.get(n.id),
                "pos": list(pos) if pos is not None and n.id in e.active else None,
                "score": m.scores.get(n.id),
                "weak": is_weak(m.mode, m.scores.get(n.id), m.margins.get(n.id)),
                "spans": _spans(n.evidence),
                "observed": observed_of.get(n.id, []),
            }
        )
    return nodes


def _edges(ev: Evaluation) -> list[dict[str, Any]]:
    """Every declared edge, ordering violations flagged, in declaration order."""
    active = ev.expected.active
    ordering = {edge_id(u, v) for u, v in ev.ordering_edges}
    edges: list[dict[str, Any]] = []
    seen: set[str] = set()
    for edge in ev.expected.contract.edges:
        eid = edge_id(edge.source, edge.target)
        if eid in seen:  # the same pair under a second kind
            eid = f"{eid}:{edge.kind}"
        seen.add(eid)
        edges.append(
            {
                "id": eid,
                "source": edge.source,
                "target": edge.target,
                "kind": edge.kind,
                "active": edge.source in active and edge.target in active,
                "ordering_violation": eid in ordering,
            }
        )
    return edges


def _invariants(ev: Evaluation) -> list[dict[str, Any]]:
    """Every declared invariant with its score on this run."""
    applicable = set(ev.expected.invariants)
    violated = {f["location"] for f in ev.failures if f["family"] == "invariant_violation"}
    return [
        {
            "id": inv.id,
            "label": inv.label,
            "description": inv.description,
            "applies_to": list(inv.applies_to),
            "active": inv.id in applicable,
            "checked": inv.check is not None,
            "score": ev.invariant_scores.get(inv.id),
            "judged": inv.id in ev.invariant_scores,
            "violated": inv.id in violated,
            "spans": _spans(inv.evidence),
        }
        for inv in ev.expected.contract.invariants
    ]


def _observed(ev: Evaluation, targets: dict[str, Target]) -> list[dict[str, Any]]:
    """The kept observed nodes, in (step, list) order, with what each points at."""
    m = ev.alignment
    out = []
    for o in m.kept:
        target, relation = targets[o.id]
        score = m.scores.get(target) if relation == "pairs" and target else None
        margin = m.margins.get(target) if score is not None and target else None
        out.append(
            {
                "id": o.id,
                "label": o.label,
                "description": o.description,
                "type": o.type,
                "step": o.step,
                "status": ev.observed_status.get(o.id, "extra"),
                "expected": target,
                "relation": relation,
                "score": score,
                "margin": margin,
                "weak": is_weak(m.mode, score, margin),
                "spans": _spans(o.evidence),
            }
        )
    return out


def _call_steps(ev: Evaluation, observed: Observed, node: str) -> list[str]:
    """The observed steps citing the line of the call that breaks ``node``'s argument
    constraints (none for a checked output or a node without them)."""
    bad = offending_call(ev.expected, observed, node)
    if bad is None:
        return []
    lines = observed.text.split("\n")
    start = sum(len(x) + 1 for x in lines[: bad[0].line - 1])
    end = start + len(lines[bad[0].line - 1])
    return ev.alignment.steps_at(start, end)


def _targets(failure: dict[str, str], ev: Evaluation, observed: Observed) -> dict[str, Any]:
    """``failure`` with ``nodes``, ``edges``, ``observed`` and ``invariants`` it points at
    (a call that breaks argument constraints: the steps citing it)."""
    m = ev.alignment
    e = ev.expected
    family, loc = failure["family"], failure["location"]
    nodes: list[str] = []
    edges: list[str] = []
    steps: list[str] = []
    invariants: list[str] = []
    if family == "omission" or family == "output_contract":
        nodes.append(loc)
        if family == "output_contract":
            steps += _call_steps(ev, observed, loc)
    elif family == "ordering":
        u, _, v = loc.partition("->")
        edges.append(loc)
        nodes += [u, v]
        steps += [m.pairs[x] for x in (u, v) if x in m.pairs]
    elif family == "wrong_branch":
        nodes.append(loc)
        wrong = m.wrong_branch.get(loc, [])
        steps += wrong
        for o in wrong:
            x = m.wrong_branch_of.get(o)
            if x is not None and x not in nodes:
                nodes.append(x)
        inside = {loc, *e.subtree(e.decisions.get(loc, loc))}
        nodes += [n for n in e.nodes if ev.status.get(n) == "folded" and n in inside and n != loc]
    elif family == "extra_action":
        steps.append(loc)
        nodes += [m.offered[loc]] if loc in m.offered else []
    elif family == "invariant_violation":
        invariants.append(loc)
    return {
        "family": family,
        "location": loc,
        "detail": failure["detail"],
        "nodes": nodes,
        "edges": edges,
        "observed": steps,
        "invariants": invariants,
    }
