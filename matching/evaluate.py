"""Failures and metrics (ALGORITHMS.md §3, §4) -> ``contracteval.report/v1``.

:func:`evaluate_detailed` is a pipeline of pure steps, one per clause of the spec:
alignment (§2, :mod:`matching.match`), satisfaction and positions (§3,
:mod:`matching.satisfaction`), then the failure families in report order — wrong
branch (§3.1), omissions (§3.2), ordering (§3.3), extra actions (§3.4), invariants
(§3.5), output contracts (§3.6) — and the metrics (§4).

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

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import checks, trace
from .conditioning import Expected, condition
from .formats import FAMILIES as FAMILIES  # the judges and the web app read it here
from .formats import REPORT, Contract, Observed, Query
from .match import Alignment, align
from .satisfaction import Pos, Satisfaction, satisfaction

METRICS = (
    "required_recall",
    "observed_precision",
    "edge_conformance",
    "branch_correctness",
    "invariant_score",
    "output_validity",
)
_ORDERED = frozenset({"requires", "enables", "branches_to"})

Failure = dict[str, str]


@dataclass
class Evaluation:
    """Everything the report says, plus per-node detail for overlays.

    ``status`` of an expected node: ``direct``, ``derived``, ``covered``, ``passed``/
    ``failed``/``unjudged`` (checked outputs), ``omitted`` (reported), ``folded`` (inside
    a wrong branch), or ``unsatisfied`` (its omission is reported on a descendant).
    ``observed_status``: ``paired``, ``output``, ``repeat``, ``wrong_branch``, ``extra``.
    ``unjudged_reasons``: invariant or checked-output id -> why its check could not be
    judged (its regex ran out of time).
    """

    expected: Expected
    alignment: Alignment
    status: dict[str, str]
    pos: dict[str, Pos]
    failures: list[Failure]
    metrics: dict[str, float | None]
    invariant_scores: dict[str, float]
    unjudged: list[str]
    ordering_edges: list[tuple[str, str]] = field(default_factory=list)
    observed_status: dict[str, str] = field(default_factory=dict)
    unjudged_reasons: dict[str, str] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return "non_clean" if self.failures else "clean"

    def report(self) -> dict[str, Any]:
        """The ``contracteval.report/v1`` document."""
        e, m = self.expected, self.alignment
        out = {
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
        if self.unjudged_reasons:  # only when a check timed out: reports stay as they were
            out["unjudged_checks"] = [
                {"id": i, "reason": r} for i, r in self.unjudged_reasons.items()
            ]
        return out


def evaluate(
    contract: Contract,
    query: Query | Mapping[str, Any] | str,
    observed: Observed,
    *,
    mode: str = "token",
) -> dict[str, Any]:
    """The ``contracteval.report/v1`` of one observed execution.

    Parameters
    ----------
    contract : Contract
        The declared contract G_D (audited).
    query : Query, mapping or str
        The query, or the id of one of the contract's queries.
    observed : Observed
        The observed execution.
    mode : {"token", "oracle"}
        The matching mode (ALGORITHMS.md §2).

    Returns
    -------
    dict
        The report.

    Raises
    ------
    ContractEvalError
        When the query does not condition the contract (§1).
    ValueError
        For an unknown ``mode``.
    """
    return evaluate_detailed(condition(contract, query), observed, mode=mode).report()


def evaluate_detailed(expected: Expected, observed: Observed, *, mode: str = "token") -> Evaluation:
    """Conformance of ``observed`` to ``expected``, with per-node detail.

    Parameters
    ----------
    expected : Expected
        G_E(q), from :func:`matching.conditioning.condition`.
    observed : Observed
        The observed execution.
    mode : {"token", "oracle"}
        The matching mode (ALGORITHMS.md §2).

    Returns
    -------
    Evaluation

    Raises
    ------
    ValueError
        For an unknown ``mode``.
    """
    m = align(expected, observed, mode=mode)
    s = satisfaction(expected, m, observed)
    branch_failures, folded = wrong_branch_failures(expected, m, s)
    omitted, omission_status = omission_failures(expected, s, folded)
    ordered, ordering_edges, conform = ordering_failures(expected, s)
    scores, unjudged, reasons = invariant_scores(expected, observed)
    failures = [
        *branch_failures,
        *omitted,
        *ordered,
        *extra_action_failures(m),
        *invariant_failures(expected, scores),
        *output_failures(s),
    ]
    reasons.update({n: r.reason or "" for n, r in s.outputs.items() if r.passed is None})
    return Evaluation(
        expected=expected,
        alignment=m,
        status=node_status(expected, s, omission_status),
        pos=s.pos,
        failures=failures,
        metrics=metrics(expected, m, s, conform, scores),
        invariant_scores=scores,
        unjudged=unjudged,
        ordering_edges=ordering_edges,
        observed_status=observed_status(m),
        unjudged_reasons=reasons,
    )


# --------------------------------------------------------------------------- failures


def wrong_branch_failures(
    expected: Expected, m: Alignment, s: Satisfaction
) -> tuple[list[Failure], dict[str, str]]:
    """§3.1: a ``wrong_branch`` failure at every decision with a wrong-branch node.

    Returns
    -------
    failures : list of dict
    folded : dict
        Each unsatisfied required node of a failing decision's chosen outcome (and the
        decision itself) -> the decision: its omission is folded, not reported.
    """
    ids = expected.contract.by_id
    sat = s.sat
    failures: list[Failure] = []
    folded: dict[str, str] = {}
    for d, chosen in expected.decisions.items():
        if d not in m.wrong_branch:
            continue
        missing = [
            x
            for x in [d, *expected.subtree(chosen)]
            if x in expected.required and x not in sat and not ids[x].checked_output
        ]
        folded.update(dict.fromkeys(missing, d))
        wrong = ", ".join(f"{o} ({m.wrong_branch_of[o]})" for o in m.wrong_branch[d])
        detail = (
            f"decision {d!r} should take {chosen!r}, but the execution acts on"
            f" another outcome: {wrong}"
        )
        if missing:
            detail += "; missing in the chosen branch: " + ", ".join(missing)
        failures.append({"family": "wrong_branch", "location": d, "detail": detail})
    return failures, folded


def omission_failures(
    expected: Expected, s: Satisfaction, folded: Mapping[str, str]
) -> tuple[list[Failure], dict[str, str]]:
    """§3.2: an ``omission`` at every deepest unsatisfied required node, not folded.

    Returns
    -------
    failures : list of dict
    status : dict
        Each unsatisfied required node -> ``omitted``, ``folded`` or ``unsatisfied``
        (its omission is reported on a descendant).
    """
    ids = expected.contract.by_id
    sat = s.sat
    required = [n for n in expected.required if not ids[n].checked_output]
    req_set = set(required)
    unsat = {n for n in required if n not in sat}
    failures: list[Failure] = []
    status: dict[str, str] = {}
    for n in required:
        if n not in unsat:
            continue
        if n in folded:
            status[n] = "folded"
        elif any(x in unsat for x in expected.subtree(n, include_self=False) if x in req_set):
            status[n] = "unsatisfied"
        else:
            status[n] = "omitted"
            detail = f"required {ids[n].type} {n!r} ({ids[n].label}) is not evidenced"
            failures.append({"family": "omission", "location": n, "detail": detail})
    return failures, status


def _fmt(p: Pos) -> str:
    return str(p[0]) if p[0] == p[1] else f"{p[0]}-{p[1]}"


def _ordering_problem(expected: Expected, s: Satisfaction, kind: str, u: str, v: str) -> str | None:
    """Why the edge ``u -> v`` of ``kind`` (both ends satisfied) is out of order, or None."""
    pos = s.pos
    if kind != "branches_to":
        if pos[u][1] > pos[v][0]:
            return (
                f"{u!r} (step {_fmt(pos[u])}) must come before {v!r} (step {_fmt(pos[v])}) [{kind}]"
            )
        return None
    if u not in s.direct:
        return None
    end_u = pos[u][1]
    early = [x for x in expected.subtree(v) if x in s.direct and pos[x][0] < end_u]
    if not early:
        return None
    return (
        f"{early[0]!r} (step {pos[early[0]][0]}) acts on outcome {v!r} before"
        f" decision {u!r} is evidenced (step {end_u})"
    )


def ordering_failures(
    expected: Expected, s: Satisfaction
) -> tuple[list[Failure], list[tuple[str, str]], tuple[int, int]]:
    """§3.3: ``ordering`` failures on ``requires``/``enables``/``branches_to`` edges.

    Returns
    -------
    failures : list of dict
    edges : list of (str, str)
        The violated edges.
    conformance : (int, int)
        Conforming edges and ordered edges of E_E, for ``edge_conformance`` (§4).
    """
    sat = s.sat
    failures: list[Failure] = []
    edges: list[tuple[str, str]] = []
    conform = total = 0
    for edge in expected.edges:
        if edge.kind not in _ORDERED:
            continue
        total += 1
        u, v = edge.source, edge.target
        if u not in sat or v not in sat:
            continue
        bad = _ordering_problem(expected, s, edge.kind, u, v)
        if bad:
            edges.append((u, v))
            failures.append({"family": "ordering", "location": f"{u}->{v}", "detail": bad})
        else:
            conform += 1
    return failures, edges, (conform, total)


def extra_action_failures(m: Alignment) -> list[Failure]:
    """§3.4: an ``extra_action`` at every kept observed node neither paired nor consumed."""
    labels = {x.id: x.label for x in m.kept}
    return [
        {
            "family": "extra_action",
            "location": o,
            "detail": f"observed step {o!r} ({labels[o]}) enacts no active obligation",
        }
        for o in m.extra
    ]


def agent_text(observed: Observed) -> str:
    """The text invariant checks search (ALGORITHMS.md §3.5); see :func:`matching.trace.agent_text`.

    >>> from matching.formats import Observed
    >>> agent_text(Observed("trace", "[user] hi\\n[assistant] Hello\\n  there\\n[tool] f(x=1)\\n",
    ...                     [], output="{}"))
    '[assistant] Hello\\n  there\\n[tool] f(x=1)\\n{}'
    """
    return trace.agent_text(observed.kind, observed.text, observed.output)


def invariant_scores(
    expected: Expected, observed: Observed
) -> tuple[dict[str, float], list[str], dict[str, str]]:
    """§3.5: the score of every invariant of I_E that can be judged.

    A check's regex is searched over the agent text (with a time limit, see
    :mod:`matching.checks`); without a check the observed document's audited score is
    used; an invariant with neither, or whose check ran out of time, is unjudged.

    Returns
    -------
    scores : dict
        Invariant id -> score in [0, 1].
    unjudged : list of str
        The unjudged invariants, in I_E order.
    reasons : dict
        Unjudged invariant id -> why, for checks that ran out of time.
    """
    by_id = {i.id: i for i in expected.contract.invariants}
    scores: dict[str, float] = {}
    unjudged: list[str] = []
    reasons: dict[str, str] = {}
    text: str | None = None
    for i in expected.invariants:
        check = by_id[i].check
        if check:
            text = agent_text(observed) if text is None else text
            try:
                if "forbid_regex" in check:
                    scores[i] = 0.0 if checks.search(check["forbid_regex"], text) else 1.0
                else:
                    scores[i] = 1.0 if checks.search(check["require_regex"], text) else 0.0
            except checks.CheckTimeout as exc:
                unjudged.append(i)
                reasons[i] = f"{i!r}: unjudged: {exc}"
        elif i in observed.invariants:
            scores[i] = observed.invariants[i]
        else:
            unjudged.append(i)
    return scores, unjudged, reasons


def invariant_failures(expected: Expected, scores: Mapping[str, float]) -> list[Failure]:
    """§3.5: an ``invariant_violation`` at every judged invariant scoring below 0.5."""
    by_id = {i.id: i for i in expected.contract.invariants}
    failures: list[Failure] = []
    for i, score in scores.items():
        if score < 0.5:
            inv = by_id[i]
            how = "its check" if inv.check else "the audited score"
            detail = f"invariant {i!r} ({inv.label}) is violated: {how} gives {score:g}"
            failures.append({"family": "invariant_violation", "location": i, "detail": detail})
    return failures


def output_failures(s: Satisfaction) -> list[Failure]:
    """§3.6: an ``output_contract`` failure at every checked output whose check fails."""
    return [
        {"family": "output_contract", "location": n, "detail": r.reason or ""}
        for n, r in s.outputs.items()
        if r.passed is False
    ]


# --------------------------------------------------------------------------- metrics, status


def _ratio(num: float, den: int) -> float | None:
    return None if den == 0 else round(num / den, 6)


def metrics(
    expected: Expected,
    m: Alignment,
    s: Satisfaction,
    conformance: tuple[int, int],
    scores: Mapping[str, float],
) -> dict[str, float | None]:
    """§4: the six metrics, each ``None`` when its denominator is empty.

    An unjudged checked output (its check ran out of time) is left out of
    ``output_validity``, as unjudged invariants are left out of ``invariant_score``.
    """
    ids = expected.contract.by_id
    sat = s.sat
    required = {n for n in expected.required if not ids[n].checked_output}
    decisions_ok = [
        d not in m.wrong_branch and any(x in s.direct for x in expected.subtree(chosen))
        for d, chosen in expected.decisions.items()
    ]
    judged = [r.passed is True for r in s.outputs.values() if r.passed is not None]
    return {
        "required_recall": _ratio(len(required & sat), len(required)),
        "observed_precision": _ratio(len(m.paired_observed), len(m.kept)),
        "edge_conformance": _ratio(*conformance),
        "branch_correctness": _ratio(sum(decisions_ok), len(decisions_ok)),
        "invariant_score": _ratio(sum(scores.values()), len(scores)),
        "output_validity": _ratio(sum(judged), len(judged)),
    }


def node_status(
    expected: Expected, s: Satisfaction, unsatisfied: Mapping[str, str]
) -> dict[str, str]:
    """The status of every expected node (see :class:`Evaluation`)."""
    out: dict[str, str] = {}
    for n in expected.nodes:
        out[n] = s.how(n) or unsatisfied.get(n, "unsatisfied")
    return out


def observed_status(m: Alignment) -> dict[str, str]:
    """The status of every kept observed node (see :class:`Evaluation`)."""
    out: dict[str, str] = {}
    outputs = set(m.consumed_output)
    paired = m.paired_observed
    for kept in m.kept:
        if kept.id in outputs:
            out[kept.id] = "output"
        elif kept.id in paired:
            out[kept.id] = "paired"
    out.update((oid, "repeat") for oid, _ in m.repeats)
    out.update((oid, "wrong_branch") for oid in m.wrong_branch_of)
    out.update((oid, "extra") for oid in m.extra)
    return out
