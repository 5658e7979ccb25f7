"""Evaluation of one execution (ALGORITHMS.md §2–§4) -> ``contracteval.report/v1``.

:func:`evaluate_detailed` is a pipeline of pure steps, one per clause of the spec:
alignment (§2, :mod:`matching.match`), satisfaction and positions (§3,
:mod:`matching.satisfaction`), the failure families in report order (§3.1–§3.6,
:mod:`matching.failures`), then the metrics (§4) and the per-node status, here.

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
from typing import TYPE_CHECKING, Any

from .conditioning import Expected, condition
from .confidence import failure_probability, p_violation, trace_features
from .consent import Unconsented
from .corrections import Corrections, correct
from .failures import (
    Failure,
    call_failures,
    extra_action_failures,
    invariant_failures,
    invariant_scores,
    omission_failures,
    ordering_failures,
    output_failures,
    wrong_branch_failures,
)
from .failures import agent_text as agent_text  # the invariant checks' text, read here too
from .formats import FAMILIES as FAMILIES  # the judges and the web app read it here
from .formats import METRICS as METRICS  # the report's metric names, read here too
from .formats import REPORT, Contract, Observed, Query
from .match import Alignment, align
from .pair_model import Thresholds, load_model
from .satisfaction import Pos, Satisfaction, satisfaction
from .scope import OutOfScope
from .turn_checks import TraceChecks, among, read_turns

if TYPE_CHECKING:
    from .alignment import Setup


@dataclass
class Evaluation:
    """Everything the report says, plus per-node detail for overlays.

    ``status`` of an expected node: ``direct``, ``derived``, ``covered``, ``passed``/
    ``failed``/``unjudged`` (checked outputs), ``omitted`` (reported), ``folded`` (inside
    a wrong branch), ``unsatisfied`` (its omission is reported on a descendant), or
    ``not_applicable`` (conditional on an action that did not happen).
    ``observed_status``: ``paired``, ``output``, ``repeat``, ``wrong_branch``, ``extra``.
    ``unjudged_reasons``: invariant or checked-output id -> why its check could not be
    judged (its regex ran out of time).
    ``not_applicable``: the nodes conditional on an action that did not happen
    (``meta.applies_if_action``), in G_E's node order; their status is ``not_applicable``.
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
    not_applicable: list[str] = field(default_factory=list)
    # semantic mode: P(violation) and the verdict it reads as (clean, needs_review or
    # violation); each failure then also carries its ``probability``
    confidence: dict[str, Any] | None = None
    # semantic mode's checks of the trace (their failures are in ``failures`` too)
    checks: TraceChecks = field(default_factory=TraceChecks)
    # semantic mode: what the verdict model reads of this run (set with ``confidence``,
    # :func:`~matching.confidence.trace_features`): the failures the alignment found,
    # each with the pair model's probability (a failed check of the trace decides alone)
    features: list[float] | None = None

    @property
    def unconsented(self) -> list[Unconsented]:
        return self.checks.unconsented

    @property
    def out_of_scope(self) -> list[OutOfScope]:
        return self.checks.out_of_scope

    @property
    def checked(self) -> list[Failure]:
        """The failures a check of the trace found: certain."""
        return self.checks.failures

    @property
    def certain(self) -> bool:
        """Whether a check decided the run's violation (semantic mode): a check of the
        trace's own turns, or a failed machine check of an invariant or an output."""
        return bool(self.checked) or any(_machine_checked(f, self.expected) for f in self.failures)

    @property
    def verdict(self) -> str:
        return "non_clean" if self.failures else "clean"

    def assess(self, thresholds: Thresholds | None = None) -> dict[str, Any] | None:
        """The confidence read with other thresholds (a project's own)."""
        if self.confidence is None:
            return None
        t = thresholds or load_model().thresholds
        p = self.confidence["p_violation"]
        return {"p_violation": p, "verdict": t.verdict(p)}

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
        if self.confidence is not None:
            out["confidence"] = dict(self.confidence)
        if self.not_applicable:  # only for conditional obligations: reports stay as they were
            out["not_applicable"] = list(self.not_applicable)
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


def evaluate_detailed(
    expected: Expected,
    observed: Observed,
    *,
    mode: str = "token",
    corrections: Corrections | None = None,
    semantic: Setup | None = None,
) -> Evaluation:
    """Conformance of ``observed`` to ``expected``, with per-node detail.

    Parameters
    ----------
    expected : Expected
        G_E(q), from :func:`matching.conditioning.condition`.
    observed : Observed
    mode : {"token", "oracle", "semantic"}
        The matching mode (ALGORITHMS.md §2; semantic: docs/engine.md).
    semantic : matching.alignment.Setup, optional
        Semantic mode's pair model and knobs (default: the shipped ones).
    corrections : Corrections, optional
        A reviewer's forced and refused pairs, applied to the automatic alignment
        (:mod:`matching.corrections`) before it is scored.

    Raises
    ------
    ValueError
        For an unknown ``mode``.
    """
    m = align(expected, observed, mode=mode, semantic=semantic)
    if corrections:
        m = correct(m, expected, corrections)
    s = satisfaction(expected, m, observed)
    branch_failures, folded = wrong_branch_failures(expected, m, s)
    omitted, omission_status = omission_failures(expected, s, folded)
    extra = extra_action_failures(m)
    (ordered, ordering_edges, conform), checks = read_turns(
        expected, observed, m, ordering_failures(expected, s), omitted, [*branch_failures, *extra]
    )
    scores, unjudged, reasons = invariant_scores(expected, observed)
    called = call_failures(expected, observed)
    failures = [*branch_failures, *omitted, *checks.omissions, *ordered, *extra, *checks.extra]
    failures += [*invariant_failures(expected, scores, observed), *output_failures(s), *called]
    reasons.update({n: r.reason or "" for n, r in s.outputs.items() if r.passed is None})
    evaluation = Evaluation(
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
        not_applicable=[n for n in expected.nodes if n in s.not_applicable],
        checks=checks,
    )
    evaluation.confidence = _confidence(evaluation, scores, semantic) if m.likelihoods else None
    return evaluation


def _confidence(
    ev: Evaluation, scores: Mapping[str, float], semantic: Setup | None
) -> dict[str, Any]:
    """Each failure's probability (set on it), P(violation) and the default verdict.
    A failure a check of the trace found is certain, and so is the run's violation, as
    is a failed machine check of an invariant or an output; the verdict model reads the
    alignment's failures with the pair model's probabilities."""
    model = semantic.model if semantic else load_model()
    m = ev.alignment
    for f in ev.failures:
        if f["family"] == "invariant_violation" and f["location"] in scores:
            p = 1.0 - scores[f["location"]]
        elif among(f, ev.checks.added):
            p = 1.0
        else:
            p = failure_probability(f, m.likelihoods, ev.expected, m)
        f["probability"] = round(p, 6)
    found = [f for f in ev.failures if not among(f, ev.checks.added)]
    ev.features = trace_features(found, len(m.likelihoods.omission), m.scores.values())
    for f in ev.checked:
        f["probability"] = 1.0
    vm = model.verdict_model
    judged = [
        f["probability"]
        for f in ev.failures
        if f["family"] == "invariant_violation" and not _machine_checked(f, ev.expected)
    ]
    if ev.certain:
        pv = 1.0
    elif vm is not None:  # a judged (not machine-checked) invariant adds its own doubt
        pv = p_violation([vm.p(ev.features), *judged])
    else:
        pv = p_violation(f["probability"] for f in ev.failures)
    return {"p_violation": pv, "verdict": model.thresholds.verdict(pv)}


def _machine_checked(f: Failure, expected: Expected) -> bool:
    """Whether ``f`` is a failed machine check, which reads the text itself and so makes
    the run's violation certain: every output or argument check, and an invariant's
    ``check`` (an invariant scored by a judge is not one)."""
    if f["family"] == "output_contract":
        return True
    if f["family"] != "invariant_violation":
        return False
    inv = next((i for i in expected.contract.invariants if i.id == f["location"]), None)
    return inv is not None and inv.check is not None


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
    ``output_validity``, as unjudged invariants are left out of ``invariant_score``;
    not-applicable nodes (conditional on an action that did not happen) are left out of
    every denominator.

    Parameters
    ----------
    expected : Expected
        G_E(q).
    m : Alignment
        The alignment M (§2).
    s : Satisfaction
        Satisfaction and positions (§3).
    conformance : (int, int)
        Conforming and ordered edges (:func:`~matching.failures.ordering_failures`).
    scores : mapping
        The judged invariant scores (:func:`~matching.failures.invariant_scores`).

    Returns
    -------
    dict
        Metric name (:data:`METRICS`) -> value rounded to 6 decimals, or None.
    """
    ids = expected.contract.by_id
    sat = s.sat
    na = s.not_applicable
    required = {n for n in expected.required if not ids[n].checked_output and n not in na}
    decisions_ok = [
        d not in m.wrong_branch and any(x in s.direct for x in expected.subtree(chosen))
        for d, chosen in expected.decisions.items()
        if d not in na
    ]
    judged = [
        r.passed is True for n, r in s.outputs.items() if r.passed is not None and n not in na
    ]
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
    """The status of every expected node (see :class:`Evaluation`).

    Parameters
    ----------
    expected : Expected
    s : Satisfaction
    unsatisfied : mapping
        The status of unsatisfied required nodes (:func:`~matching.failures.omission_failures`).

    Returns
    -------
    dict
        Node id -> status, in G_E's node order.
    """
    out: dict[str, str] = {}
    for n in expected.nodes:
        if n in s.not_applicable:
            out[n] = "not_applicable"
        else:
            out[n] = s.how(n) or unsatisfied.get(n, "unsatisfied")
    return out


def observed_status(m: Alignment) -> dict[str, str]:
    """The status of every kept observed node (see :class:`Evaluation`).

    Parameters
    ----------
    m : Alignment

    Returns
    -------
    dict
        Observed id -> ``paired``, ``output``, ``repeat``, ``wrong_branch`` or ``extra``.
    """
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
