"""Satisfaction, failures and metrics (ALGORITHMS.md §3, §4) -> ``contracteval.report/v1``.

>>> from pathlib import Path
>>> from matching.formats import read_observed
>>> from matching.validate import load_contract
>>> data = Path(__file__).parent / "data"
>>> c = load_contract(data / "refund-mini.json")
>>> obs = read_observed(data / "refund-mini-observed-q1.json")
>>> report = evaluate(c, "q1", obs, mode="token")
>>> report["verdict"], set(report["metrics"].values())
('clean', {1.0})
>>> del obs.nodes[1]  # the explicit ownership check
>>> [(f["family"], f["location"]) for f in evaluate(c, "q1", obs)["failures"]]
[('omission', 'verify_owner')]
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import fastjsonschema
import jsonschema

from . import trace
from .conditioning import Expected, condition
from .formats import FAMILIES as FAMILIES  # the judges and the web app read it here
from .formats import REPORT, Contract, Node, Observed, Query
from .match import Alignment, align

METRICS = (
    "required_recall",
    "observed_precision",
    "edge_conformance",
    "branch_correctness",
    "invariant_score",
    "output_validity",
)
_STRUCTURAL = frozenset({"intent", "decision", "branch_condition"})
_ORDERED = frozenset({"requires", "enables", "branches_to"})


@dataclass
class Evaluation:
    """Everything the report says, plus per-node detail for overlays.

    ``status`` of an expected node: ``direct``, ``derived``, ``covered``, ``passed``/
    ``failed`` (checked outputs), ``omitted`` (reported), ``folded`` (inside a wrong
    branch), or ``unsatisfied`` (its omission is reported on a descendant).
    ``observed_status``: ``paired``, ``output``, ``repeat``, ``wrong_branch``, ``extra``.
    """

    expected: Expected
    alignment: Alignment
    status: dict[str, str]
    pos: dict[str, tuple[int, int]]
    failures: list[dict[str, str]]
    metrics: dict[str, float | None]
    invariant_scores: dict[str, float]
    unjudged: list[str]
    ordering_edges: list[tuple[str, str]] = field(default_factory=list)
    observed_status: dict[str, str] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return "non_clean" if self.failures else "clean"

    def report(self) -> dict[str, Any]:
        e, m = self.expected, self.alignment
        return {
            "format": REPORT,
            "contract": e.contract.id,
            "query": e.query.id,
            "mode": m.mode,
            "verdict": self.verdict,
            "metrics": dict(self.metrics),
            "alignment": [
                {"expected": x, "observed": o, "score": m.scores[x], "level": "direct"}
                for x, o in m.pairs.items()
            ],
            "failures": list(self.failures),
            "dropped_observed": [{"id": i, "reason": r} for i, r in m.dropped],
            "repeated_observed": [{"id": i, "of": of} for i, of in m.repeats],
            "unjudged_invariants": list(self.unjudged),
        }


def evaluate(
    contract: Contract,
    query: Query | Mapping[str, Any] | str,
    observed: Observed,
    *,
    mode: str = "token",
) -> dict[str, Any]:
    """The ``contracteval.report/v1`` of one observed execution."""
    return evaluate_detailed(condition(contract, query), observed, mode=mode).report()


def evaluate_detailed(expected: Expected, observed: Observed, *, mode: str = "token") -> Evaluation:
    """Conformance of ``observed`` to ``expected``, with per-node detail."""
    m = align(expected, observed, mode=mode)
    c = expected.contract
    ids = c.by_id
    kids = expected.active_children
    steps = {o.id: o.step for o in m.kept}
    last = max(steps.values(), default=-1)

    # -- direct
    pos: dict[str, tuple[int, int]] = {}
    direct: set[str] = set()
    outputs = [n for n in expected.nodes if ids[n].checked_output]
    output_ok: dict[str, str | None] = {n: _check_output(ids[n], observed.output) for n in outputs}
    for e, o in m.pairs.items():
        if not ids[e].checked_output:
            direct.add(e)
            pos[e] = (steps[o], steps[o])

    # -- derived, bottom-up (children before parents: reverse pre-order)
    derived: set[str] = set()
    for n in reversed(expected.preorder):
        node = ids[n]
        if n in direct or node.checked_output:
            continue
        if node.type == "decision":
            pick = expected.decisions.get(n)
            if pick is not None and pick in direct:
                derived.add(n)
                pos[n] = pos[pick]
                continue
        if node.explicit:
            continue
        ch = [k for k in kids[n] if not ids[k].checked_output]
        if not ch:
            continue
        done = [k for k in ch if k in direct or k in derived]
        if node.combine == "any":
            if done:
                derived.add(n)
                pos[n] = _hull(pos, done)
        else:
            req = [k for k in ch if ids[k].required]
            if req and all(k in direct or k in derived for k in req):
                derived.add(n)
                pos[n] = _hull(pos, req)

    # -- covered
    covered: set[str] = set()
    for n in expected.nodes:
        node = ids[n]
        if n in direct or n in derived or node.explicit or node.checked_output:
            continue
        p = node.parent
        while p is not None:
            anc = ids[p]
            if anc.type in _STRUCTURAL or anc.explicit:
                break
            if p in direct:
                covered.add(n)
                pos[n] = pos[p]
                break
            p = anc.parent

    for n in outputs:
        pos[n] = (last + 1, last + 1)
    sat = direct | derived | covered | {n for n in outputs if output_ok[n] is None}

    failures: list[dict[str, str]] = []
    status: dict[str, str] = {}
    for n in expected.nodes:
        if ids[n].checked_output:
            status[n] = "passed" if output_ok[n] is None else "failed"
        elif n in direct:
            status[n] = "direct"
        elif n in derived:
            status[n] = "derived"
        elif n in covered:
            status[n] = "covered"

    # 1. wrong branch
    folded: dict[str, str] = {}
    for d in expected.decisions:
        if d not in m.wrong_branch:
            continue
        inside = [d, *expected.subtree(expected.decisions[d])]
        missing = [
            x
            for x in inside
            if x in expected.required and x not in sat and not ids[x].checked_output
        ]
        for x in missing:
            folded[x] = d
        wrong = ", ".join(f"{o} ({m.wrong_branch_of[o]})" for o in m.wrong_branch[d])
        detail = (
            f"decision {d!r} should take {expected.decisions[d]!r}, but the execution acts on"
            f" another outcome: {wrong}"
        )
        if missing:
            detail += "; missing in the chosen branch: " + ", ".join(missing)
        failures.append({"family": "wrong_branch", "location": d, "detail": detail})

    # 2. omissions: the deepest unsatisfied required nodes
    required = [n for n in expected.required if not ids[n].checked_output]
    req_set = set(required)
    unsat = {n for n in required if n not in sat}
    for n in required:
        if n not in unsat:
            continue
        if n in folded:
            status[n] = "folded"
            continue
        if any(x in unsat for x in expected.subtree(n, include_self=False) if x in req_set):
            status[n] = "unsatisfied"
            continue
        status[n] = "omitted"
        failures.append(
            {
                "family": "omission",
                "location": n,
                "detail": f"required {ids[n].type} {n!r} ({ids[n].label}) is not evidenced",
            }
        )
    for n in expected.nodes:
        status.setdefault(n, "unsatisfied")

    # 3. ordering
    ordering: list[tuple[str, str]] = []
    conform = total = 0
    for edge in expected.edges:
        if edge.kind not in _ORDERED:
            continue
        total += 1
        u, v = edge.source, edge.target
        if u not in sat or v not in sat:
            continue
        bad: str | None = None
        if edge.kind == "branches_to":
            if u in direct:
                end_u = pos[u][1]
                early = [x for x in expected.subtree(v) if x in direct and pos[x][0] < end_u]
                if early:
                    bad = (
                        f"{early[0]!r} (step {pos[early[0]][0]}) acts on outcome {v!r} before"
                        f" decision {u!r} is evidenced (step {end_u})"
                    )
        elif pos[u][1] > pos[v][0]:
            bad = (
                f"{u!r} (step {_fmt(pos[u])}) must come before {v!r} (step {_fmt(pos[v])})"
                f" [{edge.kind}]"
            )
        if bad:
            ordering.append((u, v))
            failures.append({"family": "ordering", "location": f"{u}->{v}", "detail": bad})
        else:
            conform += 1

    # 4. extra actions
    labels = {x.id: x.label for x in m.kept}
    for o in m.extra:
        failures.append(
            {
                "family": "extra_action",
                "location": o,
                "detail": f"observed step {o!r} ({labels[o]}) enacts no active obligation",
            }
        )

    # 5. invariants
    inv_scores, unjudged = _invariants(expected, observed)
    for i, score in inv_scores.items():
        if score < 0.5:
            inv = next(x for x in c.invariants if x.id == i)
            how = "its check" if inv.check else "the audited score"
            failures.append(
                {
                    "family": "invariant_violation",
                    "location": i,
                    "detail": f"invariant {i!r} ({inv.label}) is violated: {how} gives {score:g}",
                }
            )

    # 6. output contracts
    for n in outputs:
        if output_ok[n] is not None:
            failures.append(
                {"family": "output_contract", "location": n, "detail": str(output_ok[n])}
            )

    paired_obs = set(m.paired_observed)
    decisions_ok = [
        1.0
        if d not in m.wrong_branch
        and any(x in direct for x in expected.subtree(expected.decisions[d]))
        else 0.0
        for d in expected.decisions
    ]
    metrics: dict[str, float | None] = {
        "required_recall": _ratio(len(req_set - unsat), len(req_set)),
        "observed_precision": _ratio(len(paired_obs), len(m.kept)),
        "edge_conformance": _ratio(conform, total),
        "branch_correctness": _ratio(sum(decisions_ok), len(decisions_ok)),
        "invariant_score": _ratio(sum(inv_scores.values()), len(inv_scores)),
        "output_validity": _ratio(sum(1 for n in outputs if output_ok[n] is None), len(outputs)),
    }
    obs_status: dict[str, str] = {}
    outs = set(m.consumed_output)
    for kept in m.kept:
        if kept.id in outs:
            obs_status[kept.id] = "output"
        elif kept.id in paired_obs:
            obs_status[kept.id] = "paired"
    for oid, _ in m.repeats:
        obs_status[oid] = "repeat"
    for oid in m.wrong_branch_of:
        obs_status[oid] = "wrong_branch"
    for oid in m.extra:
        obs_status[oid] = "extra"
    return Evaluation(
        expected=expected,
        alignment=m,
        status=status,
        pos=pos,
        failures=failures,
        metrics=metrics,
        invariant_scores=inv_scores,
        unjudged=unjudged,
        ordering_edges=ordering,
        observed_status=obs_status,
    )


def _fmt(p: tuple[int, int]) -> str:
    return str(p[0]) if p[0] == p[1] else f"{p[0]}-{p[1]}"


def _ratio(num: float, den: int) -> float | None:
    return None if den == 0 else round(num / den, 6)


def _hull(pos: dict[str, tuple[int, int]], nodes: list[str]) -> tuple[int, int]:
    return min(pos[k][0] for k in nodes), max(pos[k][1] for k in nodes)


# --------------------------------------------------------------------------- checks


def agent_text(observed: Observed) -> str:
    """The text invariant checks search (ALGORITHMS.md §3.5); see :func:`matching.trace.agent_text`.

    >>> from matching.formats import Observed
    >>> agent_text(Observed("trace", "[user] hi\\n[assistant] Hello\\n  there\\n[tool] f(x=1)\\n",
    ...                     [], output="{}"))
    '[assistant] Hello\\n  there\\n[tool] f(x=1)\\n{}'
    """
    return trace.agent_text(observed.kind, observed.text, observed.output)


@cache
def _compiled(rx: str) -> re.Pattern[str]:
    return re.compile(rx)


def _invariants(expected: Expected, observed: Observed) -> tuple[dict[str, float], list[str]]:
    c = expected.contract
    by_id = {i.id: i for i in c.invariants}
    scores: dict[str, float] = {}
    unjudged: list[str] = []
    text: str | None = None
    for i in expected.invariants:
        inv = by_id[i]
        if inv.check:
            if text is None:
                text = agent_text(observed)
            if "forbid_regex" in inv.check:
                scores[i] = 0.0 if _compiled(inv.check["forbid_regex"]).search(text) else 1.0
            else:
                scores[i] = 1.0 if _compiled(inv.check["require_regex"]).search(text) else 0.0
        elif i in observed.invariants:
            scores[i] = observed.invariants[i]
        else:
            unjudged.append(i)
    return scores, unjudged


@cache
def _schema_validator(schema_json: str) -> jsonschema.protocols.Validator:
    return jsonschema.Draft202012Validator(json.loads(schema_json))


@cache
def _fast_validator(schema_json: str) -> Any:
    try:
        return fastjsonschema.compile(json.loads(schema_json))
    except Exception:  # a schema the compiler does not support: use jsonschema alone
        return None


def _check_output(node: Node, output: str | None) -> str | None:
    """``None`` when the output passes the node's check, else why it fails."""
    if output is None:
        return f"{node.id!r}: the execution has no final output"
    if "json_schema" in node.meta:
        try:
            value = json.loads(output)
        except json.JSONDecodeError as exc:
            return f"{node.id!r}: the output is not JSON ({exc.msg})"
        key = json.dumps(node.meta["json_schema"], sort_keys=True)
        fast = _fast_validator(key)
        err = None
        if fast is not None:
            try:
                fast(value)
            except fastjsonschema.JsonSchemaException:
                err = jsonschema.exceptions.best_match(_schema_validator(key).iter_errors(value))
        else:
            err = jsonschema.exceptions.best_match(_schema_validator(key).iter_errors(value))
        if err is not None:
            where = "".join(f"[{p!r}]" for p in err.absolute_path) or "the output"
            return f"{node.id!r}: {where} fails the schema: {err.message}"
    if "regex" in node.meta and not _compiled(node.meta["regex"]).fullmatch(output):
        return f"{node.id!r}: the output does not match {node.meta['regex']!r}"
    return None
