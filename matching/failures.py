"""The failure families of ALGORITHMS.md §3, one pure step each, in report order.

Each step reads G_E(q), the alignment M (§2) and the :class:`~matching.satisfaction.Satisfaction`
of the expected nodes, and returns its failures ``{family, location, detail}`` (plus what
later steps or the metrics need). :func:`matching.evaluate.evaluate_detailed` runs them
in this order: wrong branch (§3.1), omission (§3.2), ordering (§3.3), extra action
(§3.4), invariant violation (§3.5), output contract (§3.6).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import checks, tool_args, tool_checks, trace
from .conditioning import Expected
from .match import Alignment
from .model import Observed
from .satisfaction import Pos, Satisfaction

_ORDERED = frozenset({"requires", "enables", "branches_to"})

Failure = dict[str, Any]


def wrong_branch_failures(
    expected: Expected, m: Alignment, s: Satisfaction
) -> tuple[list[Failure], dict[str, str]]:
    """§3.1: a ``wrong_branch`` failure at every decision with a wrong-branch node.

    Parameters
    ----------
    expected : Expected
        G_E(q).
    m : Alignment
        The alignment M (ALGORITHMS.md §2).
    s : Satisfaction
        Satisfaction and positions of the expected nodes (§3).

    Returns
    -------
    failures : list of dict
        In the order of the query's decisions.
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
            if x in expected.required
            and x not in sat
            and not ids[x].checked_output
            and x not in s.not_applicable
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

    Parameters
    ----------
    expected : Expected
        G_E(q).
    s : Satisfaction
        Satisfaction and positions of the expected nodes (§3).
    folded : mapping
        The nodes folded into a wrong branch (:func:`wrong_branch_failures`).

    Returns
    -------
    failures : list of dict
        In the order of G_E's required set.
    status : dict
        Each unsatisfied required node -> ``omitted``, ``folded`` or ``unsatisfied``
        (its omission is reported on a descendant); a not-applicable node is none of them.
    """
    ids = expected.contract.by_id
    sat = s.sat
    na = s.not_applicable
    required = [n for n in expected.required if not ids[n].checked_output and n not in na]
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

    Parameters
    ----------
    expected : Expected
        G_E(q).
    s : Satisfaction
        Satisfaction and positions of the expected nodes (§3).

    Returns
    -------
    failures : list of dict
        In edge declaration order; an edge with a not-applicable end is neither
        checked nor counted.
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
        u, v = edge.source, edge.target
        if u in s.not_applicable or v in s.not_applicable:
            continue  # an order that was never put to the test
        total += 1
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
    """§3.4: an ``extra_action`` at every kept observed node neither paired nor consumed.

    Parameters
    ----------
    m : Alignment
        The alignment M (ALGORITHMS.md §2).

    Returns
    -------
    list of dict
        In (step, list) order of the observed nodes.
    """
    labels = {x.id: x.label for x in m.kept}
    return [
        {
            "family": "extra_action",
            "location": o,
            "detail": f"observed step {o!r} ({labels[o]}) {_why_extra(m, o)}",
        }
        for o in m.extra
    ]


def _why_extra(m: Alignment, o: str) -> str:
    if o in m.offered:
        return f"offers {m.offered[o]!r}, an obligation of an intent the query does not activate"
    return "enacts no active obligation"


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
    :mod:`matching.checks`), a tool check reads the trace's tool calls
    (:mod:`matching.tool_checks`); without a check the observed document's audited score is
    used; an invariant with neither, or whose check ran out of time, is unjudged.

    Parameters
    ----------
    expected : Expected
        G_E(q).
    observed : Observed
        The execution: its text, output and audited invariant scores.

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
        if tool_checks.is_tool_check(check):
            calls = tool_checks.tool_calls(observed.kind, observed.text)
            scores[i] = tool_checks.score(check, calls)
        elif check:
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


def invariant_failures(
    expected: Expected, scores: Mapping[str, float], observed: Observed | None = None
) -> list[Failure]:
    """§3.5: an ``invariant_violation`` at every judged invariant scoring below 0.5.

    Parameters
    ----------
    expected : Expected
        G_E(q).
    scores : mapping
        From :func:`invariant_scores`.
    observed : Observed, optional
        The execution: a broken tool check's failure names the offending call.

    Returns
    -------
    list of dict
    """
    by_id = {i.id: i for i in expected.contract.invariants}
    failures: list[Failure] = []
    for i, score in scores.items():
        if score < 0.5:
            inv = by_id[i]
            how = "its check" if inv.check else "the audited score"
            detail = f"invariant {i!r} ({inv.label}) is violated: {how} gives {score:g}"
            if observed is not None and tool_checks.is_tool_check(inv.check):
                calls = tool_checks.tool_calls(observed.kind, observed.text)
                detail = f"invariant {i!r} ({inv.label}) is violated: the agent " + (
                    tool_checks.offending(inv.check, calls)
                )
            failures.append({"family": "invariant_violation", "location": i, "detail": detail})
    return failures


def output_failures(s: Satisfaction) -> list[Failure]:
    """§3.6: an ``output_contract`` failure at every checked output whose check fails
    (an unjudged one, whose regex ran out of time, is no failure).

    Parameters
    ----------
    s : Satisfaction
        Satisfaction and positions of the expected nodes (§3).

    Returns
    -------
    list of dict
    """
    return [
        {"family": "output_contract", "location": n, "detail": r.reason or ""}
        for n, r in s.outputs.items()
        if r.passed is False and n not in s.not_applicable
    ]


def call_failures(expected: Expected, observed: Observed) -> list[Failure]:
    """An ``output_contract`` failure at every active tool-bound node with argument
    constraints (``meta.tool_args``, :mod:`matching.tool_args`) that a call of its tool
    breaks; the detail names the first such call, its line and what is wrong.

    Parameters
    ----------
    expected : Expected
        G_E(q): its active nodes and the query whose text holds the user's facts.
    observed : Observed
        The execution: its tool calls and ``[user]`` events.

    Returns
    -------
    list of dict
        In G_E's node order; empty when no active node constrains arguments.
    """
    ids = expected.contract.by_id
    failures: list[Failure] = []
    for n in expected.nodes:
        bad = offending_call(expected, observed, n)
        if bad is None:
            continue
        c, why = bad
        detail = (
            f"{ids[n].type} {n!r} ({ids[n].label}): the agent calls"
            f" {c.name}({c.arguments}) (line {c.line}): {why}"
        )
        failures.append({"family": "output_contract", "location": n, "detail": detail})
    return failures


def offending_call(
    expected: Expected, observed: Observed, node: str
) -> tuple[tool_checks.Call, str] | None:
    """The first call that breaks the argument constraints of active ``node``, and why
    (None: none does, or the node constrains no argument)."""
    meta = expected.contract.by_id[node].meta
    if "tool_args" not in meta or node not in expected.active:
        return None
    calls = tool_checks.tool_calls(observed.kind, observed.text)
    facts = tool_args.user_facts(expected.query.text, observed.kind, observed.text)
    return tool_args.broken(meta, calls, facts)
