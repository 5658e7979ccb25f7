"""What each obligation of a contract was on one run, in a few bytes, for analytics
across many runs.

:func:`obligation_outcomes` reads the node states of a run's overlay
(:func:`matching.overlay.overlay_payload`) and keeps one letter per obligation the
run's query made applicable:

- ``m`` (met): satisfied (direct, derived, covered, or a checked output that passes);
- ``o`` (out of order): satisfied, but the target of an ordering violation, so it was
  done before a step the contract puts first (``u -> v`` violated counts against ``v``);
- ``x`` (missed): active and required but not satisfied (omitted, lost to a wrong
  branch, a failing output check, or not evidenced while a descendant's omission is
  reported).

Every other node (an unchosen branch, pruned for the query, optional and not done, or
conditional on an action that did not happen: state ``not_applicable``) is absent: not
applicable on this run. No engine import: the web app's models read this
at start-up.

>>> payload = {"nodes": [
...     {"id": "a", "state": "direct", "active": True, "in_required_set": True},
...     {"id": "b", "state": "derived", "active": True, "in_required_set": True},
...     {"id": "c", "state": "omitted", "active": True, "in_required_set": True},
...     {"id": "d", "state": "inactive_branch", "active": False, "in_required_set": False},
...     {"id": "e", "state": "unsatisfied", "active": True, "in_required_set": False},
...     {"id": "f", "state": "not_applicable", "active": True, "in_required_set": True}],
...   "edges": [{"source": "a", "target": "b", "ordering_violation": True}]}
>>> obligation_outcomes(payload)
{'a': 'm', 'b': 'o', 'c': 'x'}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MET, OUT_OF_ORDER, MISSED = "m", "o", "x"
# The overlay state of an obligation conditional on an action that did not happen.
NOT_APPLICABLE = "not_applicable"
#: The outcomes analytics count, by letter; ``n_a`` is every run without a letter.
OUTCOMES = {MET: "met", MISSED: "missed", OUT_OF_ORDER: "out_of_order"}

_SATISFIED = frozenset({"direct", "derived", "covered", "passed"})
# States that are a miss even on a node outside the required set (a failed check, a
# step the wrong branch swallowed, a reported omission).
_MISSED = frozenset({"omitted", "failed", "wrong_branch"})


def obligation_outcomes(payload: Mapping[str, Any]) -> dict[str, str]:
    """Node id -> ``m``, ``o`` or ``x`` for the applicable nodes of one run's overlay."""
    late = {
        str(e.get("target"))
        for e in payload.get("edges") or []
        if e.get("ordering_violation") and e.get("target")
    }
    out: dict[str, str] = {}
    for node in payload.get("nodes") or []:
        state, nid = node.get("state"), str(node.get("id"))
        if state == NOT_APPLICABLE:
            continue
        if state in _SATISFIED:
            out[nid] = OUT_OF_ORDER if nid in late else MET
        elif state in _MISSED or (node.get("active") and node.get("in_required_set")):
            if node.get("active"):
                out[nid] = MISSED
    return out
