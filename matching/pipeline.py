"""One evaluation pipeline: a contract, a query and an agent's work -> an :class:`Outcome`.

Every caller that judges a trace (the web app's runs and corrections, the batch worker
through :func:`matching.suite.run_suite`, ``contracteval match``, ``contracteval check``
and :func:`matching.gate.assert_follows`) calls :func:`judge_trace`, so that a trace
gets the same report whichever door it came in by. The callers only gather the inputs
(the contract, taught enactments, an LLM client, a project's thresholds) and say what
they want in :class:`Options`.

The stages, in the order :func:`judge_trace` runs them:

1. :func:`ingest` -- the observed document (parsed data or an :class:`Observed`);
2. :func:`expect` -- G_E(q): the contract (with taught enactments in semantic mode)
   conditioned on the query, unless the caller has it already;
3. :func:`extract` -- new observed nodes from the source text, unless the extractor is
   ``none``; then :func:`hold_to_limits` holds the steps to the input limits;
4. :func:`judge` -- the LLM invariant judge's scores, merged into the observed graph;
5. :func:`evaluate` -- alignment, satisfaction, failures, metrics (and semantic mode's
   confidence), with a reviewer's corrections applied;
6. :func:`overlay` -- the node-level overlay a run page draws (when asked for);
7. :func:`assess` -- P(violation) read as clean / needs review / violation with the
   caller's thresholds (semantic mode only).

>>> from pathlib import Path
>>> from matching.formats import read_observed
>>> from matching.validate import load_contract
>>> data = Path(__file__).parent / "data"
>>> contract = load_contract(data / "refund-mini.json")
>>> observed = read_observed(data / "refund-mini-observed-q1.json")
>>> outcome = judge_trace(contract, "q1", observed, Options(mode="token"))
>>> outcome.report["verdict"], outcome.overlay is None, outcome.assessment
('clean', True, None)

The module imports no Django and no LLM client: an LLM takes part only through the
callables a caller passes (``extract_with``, ``judge_with``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .conditioning import Expected, condition
from .enactments import with_enactments
from .evaluate import Evaluation, evaluate_detailed
from .extractors import Extractor, reextract
from .formats import Contract, Observed, Query, observed_from_data
from .overlay import overlay_payload

if TYPE_CHECKING:
    from .alignment import Setup
    from .corrections import Corrections
    from .input_limits import Limits
    from .pair_model import Thresholds

# Scores for the invariants G_E leaves unchecked: ``(expected, observed) -> {id: score}``.
InvariantJudge = Callable[[Expected, Observed], Mapping[str, float]]


@dataclass(frozen=True)
class Options:
    """How to judge a trace.

    Attributes
    ----------
    mode : {"oracle", "token", "semantic"}
        The matching mode (:data:`matching.model.MODES`).
    extractor : str
        ``"none"`` to judge the observed nodes as given, else an extractor name
        (:data:`matching.model.EXTRACTORS`) that reads new ones from the source text.
    semantic : matching.alignment.Setup, optional
        Semantic mode's pair model and knobs (default: the shipped ones).
    corrections : matching.corrections.Corrections, optional
        A reviewer's forced and refused pairs.
    limits : matching.input_limits.Limits, optional
        When given, the extracted steps are held to ``trace_events``.
    thresholds : matching.pair_model.Thresholds, optional
        A project's own thresholds for the three-way verdict (default: the model's).
    overlay : bool
        Build the overlay payload of the run page.
    record_warnings : bool
        Collect the warnings extraction raises (an LLM extractor falling back to the
        heuristic) into :attr:`Outcome.warnings` instead of letting them propagate.
    """

    mode: str = "token"
    extractor: str = "none"
    semantic: Setup | None = None
    corrections: Corrections | None = None
    limits: Limits | None = None
    thresholds: Thresholds | None = None
    overlay: bool = False
    record_warnings: bool = False


@dataclass
class Outcome:
    """What :func:`judge_trace` found: the evaluation and what was derived from it."""

    expected: Expected
    observed: Observed  # the graph judged: extracted, with the judged invariant scores
    evaluation: Evaluation
    overlay: dict[str, Any] | None = None
    assessment: dict[str, Any] | None = None  # {"p_violation", "verdict"}, semantic only
    warnings: list[str] = field(default_factory=list)
    judged_invariants: dict[str, float] = field(default_factory=dict)

    @property
    def report(self) -> dict[str, Any]:
        """The ``contracteval.report/v1`` document."""
        return self.evaluation.report()


def judge_trace(
    contract: Contract,
    query: Query | Mapping[str, Any] | str,
    observed: Observed | Mapping[str, Any],
    options: Options = Options(),
    *,
    expected: Expected | None = None,
    enactments: Mapping[str, Iterable[str]] | None = None,
    extract_with: Extractor | None = None,
    judge_with: InvariantJudge | None = None,
) -> Outcome:
    """Judge one observed execution against ``query`` of ``contract``.

    Parameters
    ----------
    contract, query : Contract; Query, mapping or str (a query id)
    observed : Observed or mapping (``contracteval.observed/v1`` data)
    options : Options
    expected : Expected, optional
        G_E(q) when the caller has it already (a suite's cache); ``contract``,
        ``query`` and ``enactments`` are then not read.
    enactments : mapping, optional
        Taught enactments (node id -> texts), read in semantic mode only.
    extract_with : callable, optional
        ``(text, *, kind) -> Observed``, run instead of ``options.extractor``.
    judge_with : callable, optional
        The invariant judge (:data:`InvariantJudge`).

    Raises ContractEvalError when the query does not condition the contract or the
    steps exceed the limits, ValueError for an unknown mode or extractor.

    Examples
    --------
    >>> from pathlib import Path
    >>> from matching.validate import load_contract
    >>> c = load_contract(Path(__file__).parent / "data" / "refund-mini.json")
    >>> trace = {"format": "contracteval.observed/v1", "nodes": [],
    ...          "source": {"kind": "trace", "text": "[assistant] Done, I refunded it."}}
    >>> out = judge_trace(c, "q1", trace, Options(mode="token", extractor="heuristic"))
    >>> [f["family"] for f in out.report["failures"]][:2]
    ['omission', 'omission']
    """
    graph = ingest(observed)
    if expected is None:
        expected = expect(contract, query, mode=options.mode, enactments=enactments)
    graph, caught = extract(graph, options, extract_with=extract_with)
    hold_to_limits(graph, options.limits)
    judged = judge(expected, graph, judge_with)
    evaluation = evaluate(expected, graph, options)
    return Outcome(
        expected=expected,
        observed=graph,
        evaluation=evaluation,
        overlay=overlay(evaluation, graph) if options.overlay else None,
        assessment=assess(evaluation, options),
        warnings=caught,
        judged_invariants=judged,
    )


# --------------------------------------------------------------------------- stages


def ingest(observed: Observed | Mapping[str, Any]) -> Observed:
    """The observed graph of ``observed`` (parsed data is read as an observed document).

    >>> ingest({"format": "contracteval.observed/v1", "nodes": [],
    ...         "source": {"kind": "response", "text": "Done."}}).text
    'Done.'
    """
    return observed if isinstance(observed, Observed) else observed_from_data(observed)


def reads_enactments(mode: str) -> bool:
    """Whether taught enactments take part in ``mode`` (token and oracle modes match
    the audited labels only), so a caller fetches them only when they count.

    >>> reads_enactments("semantic"), reads_enactments("token")
    (True, False)
    """
    return mode == "semantic"


def expect(
    contract: Contract,
    query: Query | Mapping[str, Any] | str,
    *,
    mode: str = "token",
    enactments: Mapping[str, Iterable[str]] | None = None,
) -> Expected:
    """G_E(q): ``contract``, with ``enactments`` in semantic mode, conditioned on ``query``.

    >>> from pathlib import Path
    >>> from matching.validate import load_contract
    >>> c = load_contract(Path(__file__).parent / "data" / "refund-mini.json")
    >>> expect(c, "q1").query.id
    'q1'
    """
    if enactments and reads_enactments(mode):
        contract = with_enactments(contract, enactments)
    return condition(contract, query)


def extract(
    observed: Observed, options: Options, *, extract_with: Extractor | None = None
) -> tuple[Observed, list[str]]:
    """The observed graph to judge and the warnings extraction raised (collected only
    with ``options.record_warnings``).

    Extraction replaces the nodes only: the output, invariant scores and ids carry over.
    """
    if extract_with is None and options.extractor == "none":
        return observed, []
    if not options.record_warnings:
        return reextract(observed, extract_with or options.extractor), []
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fresh = reextract(observed, extract_with or options.extractor)
    return fresh, [str(w.message) for w in seen]


def hold_to_limits(observed: Observed, limits: Limits | None) -> None:
    """:class:`~matching.input_limits.InputRefused` when the steps to judge exceed
    ``limits.trace_events``: an extractor's steps are what a run page draws, one by one."""
    if limits is not None:
        limits.check_count(
            "trace_events", len(observed.nodes), what="the trace", unit="steps (extracted)"
        )


def judge(
    expected: Expected, observed: Observed, judge_with: InvariantJudge | None
) -> dict[str, float]:
    """The judge's scores for the unchecked invariants, merged into ``observed``."""
    if judge_with is None:
        return {}
    scores = dict(judge_with(expected, observed))
    observed.invariants.update(scores)
    return scores


def evaluate(expected: Expected, observed: Observed, options: Options) -> Evaluation:
    """Alignment, satisfaction, failures and metrics (:func:`~matching.evaluate.evaluate_detailed`)."""
    return evaluate_detailed(
        expected,
        observed,
        mode=options.mode,
        corrections=options.corrections,
        semantic=options.semantic,
    )


def overlay(evaluation: Evaluation, observed: Observed) -> dict[str, Any]:
    """The overlay payload of a run page (:func:`~matching.overlay.overlay_payload`)."""
    return overlay_payload(evaluation, observed)


def assess(evaluation: Evaluation, options: Options) -> dict[str, Any] | None:
    """P(violation) and its verdict with ``options.thresholds`` (else those of the
    model that aligned); None outside semantic mode."""
    thresholds = options.thresholds
    if thresholds is None and options.semantic is not None:
        thresholds = options.semantic.model.thresholds
    return evaluation.assess(thresholds)
