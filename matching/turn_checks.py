"""Semantic mode's checks of a trace's own turns, and what they settle.

The alignment reads a trace through similarity; the turns themselves say some things
outright: whether the user's yes came before a call (:mod:`matching.consent`), and
whether a call or an offer belongs to an intent the query does not activate
(:mod:`matching.scope`). :func:`read_turns` runs both on a trace in semantic mode and
returns the failures they make certain, and the alignment's ordering failures less
those the consent check settles (:func:`matching.consent.settled_orderings`).

>>> f = {"family": "omission", "location": "n", "detail": "not evidenced"}
>>> among(f, [dict(f)]), among(f, [f])  # the same failure, not an equal one
(False, True)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .conditioning import Expected
from .consent import (
    Unconsented,
    consent_failures,
    kept_gates,
    settled_orderings,
    unconsented_calls,
)
from .failures import Failure
from .formats import Observed
from .match import Alignment
from .scope import OutOfScope, out_of_scope, scope_failures


@dataclass
class TraceChecks:
    """What semantic mode's checks of a trace's own turns found: the calls a consent
    gate guards made without the user's yes, the calls (and offers of calls) of tools
    only inactive obligations bind, and the failures they make certain."""

    unconsented: list[Unconsented] = field(default_factory=list)
    out_of_scope: list[OutOfScope] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)  # every one they make certain
    omissions: list[Failure] = field(default_factory=list)  # added: gates without a yes
    extra: list[Failure] = field(default_factory=list)  # added: calls or offers out of scope

    @property
    def added(self) -> list[Failure]:
        return [*self.omissions, *self.extra]


_Ordering = tuple[list[Failure], list[tuple[str, str]], tuple[int, int]]


def read_turns(
    expected: Expected,
    observed: Observed,
    m: Alignment,
    ordering: _Ordering,
    omitted: list[Failure],
    found: list[Failure],
) -> tuple[_Ordering, TraceChecks]:
    """Semantic mode's reading of a trace's own turns: the ordering failures the consent
    check settles taken out, and what the checks found. A response calls nothing, and
    token and oracle modes read the spec's failures alone."""
    if m.likelihoods is None or observed.kind != "trace":
        return ordering, TraceChecks()
    unconsented = unconsented_calls(expected, observed.text)
    return (
        _settle(expected, observed, unconsented, ordering),
        _trace_checks(expected, observed, m, unconsented, omitted, found),
    )


def _settle(
    expected: Expected,
    observed: Observed,
    unconsented: list[Unconsented],
    ordering: _Ordering,
) -> _Ordering:
    """The ordering failures (with their edges and the edge conformance counts) left once
    the consent check has read the gates' order from the turns
    (:func:`matching.consent.settled_orderings`); a settled edge conforms."""
    ordered, edges, (conform, total) = ordering
    consented = kept_gates(expected, unconsented)
    settled = settled_orderings(expected, consented, ordered) if consented else []
    kept = [(f, e) for f, e in zip(ordered, edges, strict=True) if not among(f, settled)]
    return [f for f, _ in kept], [e for _, e in kept], (conform + len(settled), total)


def _trace_checks(
    expected: Expected,
    observed: Observed,
    m: Alignment,
    unconsented: list[Unconsented],
    omitted: list[Failure],
    found: list[Failure],
) -> TraceChecks:
    """Semantic mode's checks of a trace (:mod:`matching.consent`, :mod:`matching.scope`):
    the failures they make certain, the alignment's own (``omitted``, ``found``) where it
    reported them, new ones where it did not."""
    consent = consent_failures(expected, unconsented, omitted)
    scoped = out_of_scope(expected, observed.text)
    scope, extra = scope_failures(expected, m, scoped, found)
    return TraceChecks(
        unconsented,
        scoped,
        [*consent, *(f for f in scope if not among(f, consent))],
        [f for f in consent if not among(f, omitted)],
        extra,
    )


def among(f: Failure, fs: list[Failure]) -> bool:
    """Whether ``f`` is one of ``fs`` (the same failure, not an equal one)."""
    return any(f is g for g in fs)
