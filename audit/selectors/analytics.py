"""Compliance analytics of one contract version across its finished runs.

Per obligation (a node of the contract): the share of runs that met it, missed it, did
it out of order, or for which it was not applicable (``matching.outcomes``); the share
of clean runs per day or week; and two agent versions (or models) compared obligation
by obligation, the difference in missed rate with a 95% Newcombe interval.

Every rate has the same denominator, ``n``: the finished runs the filters keep. A run
is read from its narrow :class:`~audit.models.RunOutcome` row (a few bytes a node),
never from its overlay, and the trend is counted by the database.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import date, timedelta
from typing import Any

from django.db.models import Count, Q, QuerySet

from matching.outcomes import MET, MISSED, OUT_OF_ORDER

from ..models import Contract, RunOutcome

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile
# What a comparison splits the runs by: the query parameter -> the run's column.
COMPARE_BY = {"agent_version": "agent_version", "model": "model_name"}
CHOICES_LISTED = 200  # distinct versions or models offered in a filter


def finished_runs(contract: Contract) -> QuerySet[RunOutcome]:
    """The finished runs of ``contract`` with a reading (failed runs have none)."""
    return RunOutcome.objects.filter(contract=contract)


def filter_choices(contract: Contract) -> dict[str, list[str]]:
    """The agent versions and models of ``contract``'s finished runs, for the filters."""
    runs = finished_runs(contract)
    out = {}
    for name, col in COMPARE_BY.items():
        values = runs.exclude(**{col: ""}).values_list(col, flat=True).distinct().order_by(col)
        out[name] = list(values[:CHOICES_LISTED])
    return out


def _nodes(contract: Contract) -> list[tuple[str, str, str]]:
    return list(contract.nodes.order_by("position", "pk").values_list("node_id", "label", "type"))


def _rate(k: int, n: int) -> float | None:
    return k / n if n else None


def _tally(
    patterns: Iterable[tuple[Mapping[str, str] | None, int]],
) -> tuple[int, dict[str, Counter]]:
    """How many runs, and per node how many had each outcome letter, from (outcomes,
    how many runs had exactly these) pairs."""
    n = 0
    per_node: dict[str, Counter] = {}
    for outcomes, count in patterns:
        n += count
        for node, letter in (outcomes or {}).items():
            per_node.setdefault(node, Counter())[letter] += count
    return n, per_node


def _patterns(runs: QuerySet[RunOutcome], *fields: str) -> QuerySet:
    """``fields``, ``obligations`` and how many runs share them. Runs repeat a few
    outcome patterns, so the database groups them and each pattern is decoded once:
    decoding 100,000 JSON objects one by one was most of the time."""
    return runs.order_by().values_list(*fields, "obligations").annotate(k=Count("pk"))


def obligation_rates(contract: Contract, runs: QuerySet[RunOutcome]) -> dict[str, Any]:
    """``{"runs": n, "obligations": [...]}``: per node of ``contract`` (in declaration
    order) the counts and rates of met, missed, out of order and not applicable."""
    n, per_node = _tally(_patterns(runs))
    rows = []
    for node_id, label, kind in _nodes(contract):
        c = per_node.get(node_id, Counter())
        met, missed, late = c[MET], c[MISSED], c[OUT_OF_ORDER]
        n_a = n - met - missed - late
        rows.append(
            {
                "node": node_id,
                "label": label,
                "type": kind,
                "n": n,
                "met": met,
                "missed": missed,
                "out_of_order": late,
                "n_a": n_a,
                "met_rate": _rate(met, n),
                "missed_rate": _rate(missed, n),
                "out_of_order_rate": _rate(late, n),
                "n_a_rate": _rate(n_a, n),
            }
        )
    return {"runs": n, "obligations": rows}


def clean_trend(runs: QuerySet[RunOutcome], bucket: str = "day") -> list[dict[str, Any]]:
    """Per day (or ISO week, from its Monday) with runs: how many, how many clean, the
    share. The database counts per day; weeks are summed from the days."""
    rows = (
        runs.order_by()
        .values("day")
        .annotate(runs=Count("pk"), clean_runs=Count("pk", filter=Q(is_clean=True)))
        .order_by("day")
    )
    totals: dict[date, list[int]] = {}
    for r in rows:
        day = r["day"]
        period = day - timedelta(days=day.weekday()) if bucket == "week" else day
        total = totals.setdefault(period, [0, 0])
        total[0] += r["runs"]
        total[1] += r["clean_runs"]
    return [
        {"period": p.isoformat(), "runs": n, "clean": k, "clean_share": _rate(k, n)}
        for p, (n, k) in totals.items()
    ]


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of the proportion ``k / n`` (None when n is 0)."""
    if n <= 0:
        return None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(k1: int, n1: int, k2: int, n2: int, z: float = Z95) -> tuple[float, float] | None:
    """Newcombe's hybrid score interval (his method 10) for ``k1/n1 - k2/n2``: each
    proportion's Wilson interval, combined. Good coverage at small n and at rates near 0
    or 1, where the Wald interval is not; None when either group is empty."""
    w1, w2 = wilson(k1, n1, z), wilson(k2, n2, z)
    if w1 is None or w2 is None:
        return None
    p1, p2 = k1 / n1, k2 / n2
    d = p1 - p2
    lower = d - math.sqrt((p1 - w1[0]) ** 2 + (w2[1] - p2) ** 2)
    upper = d + math.sqrt((w1[1] - p1) ** 2 + (p2 - w2[0]) ** 2)
    return lower, upper


def _flag(interval: tuple[float, float] | None) -> str:
    """``regression`` when B misses more with 95% confidence, ``improvement`` when it
    misses less, else ""."""
    if interval is None:
        return ""
    if interval[0] > 0:
        return "regression"
    if interval[1] < 0:
        return "improvement"
    return ""


def compare(
    contract: Contract, runs: QuerySet[RunOutcome], by: str, a: str, b: str
) -> dict[str, Any]:
    """Group A (``by`` = ``a``) against group B (``b``): per obligation each group's
    missed rate and B minus A with its 95% interval and a flag where the interval
    excludes 0; the same for the share of non-clean runs (``violation``)."""
    col = COMPARE_BY[by]
    groups: dict[str, list[Any]] = {a: [], b: []}
    clean: Counter = Counter()
    for value, is_clean, outcomes, count in _patterns(
        runs.filter(**{f"{col}__in": [a, b]}), col, "is_clean"
    ):
        groups[value].append((outcomes, count))
        clean[value] += count if is_clean else 0
    (na, tally_a), (nb, tally_b) = _tally(groups[a]), _tally(groups[b])
    out_rows = []
    for node_id, label, kind in _nodes(contract):
        ka = tally_a.get(node_id, Counter())[MISSED]
        kb = tally_b.get(node_id, Counter())[MISSED]
        out_rows.append({"node": node_id, "label": label, "type": kind, **_diff(ka, na, kb, nb)})
    violation = _diff(na - clean[a], na, nb - clean[b], nb)
    return {
        "by": by,
        "a": {"value": a, "runs": na},
        "b": {"value": b, "runs": nb},
        "violation": violation,
        "obligations": out_rows,
    }


def _diff(ka: int, na: int, kb: int, nb: int) -> dict[str, Any]:
    interval = newcombe(kb, nb, ka, na)
    ra, rb = _rate(ka, na), _rate(kb, nb)
    return {
        "a_missed": ka,
        "a_rate": ra,
        "b_missed": kb,
        "b_rate": rb,
        "difference": None if ra is None or rb is None else rb - ra,
        "low": None if interval is None else interval[0],
        "high": None if interval is None else interval[1],
        "flag": _flag(interval),
    }


# ------------------------------------------------------------------------------ CSV


def _csv(header: list[str], rows: Iterable[Iterable[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    for row in rows:
        # a leading =, +, - or @ would be a formula to a spreadsheet: quote it as text
        writer.writerow([_cell(v) for v in row])
    return out.getvalue()


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


RATE_COLUMNS = ["met", "missed", "out_of_order", "n_a"]


def rates_csv(rates: Mapping[str, Any]) -> str:
    header = ["node", "label", "type", "n", *RATE_COLUMNS, *(f"{c}_rate" for c in RATE_COLUMNS)]
    return _csv(header, ([r[h] for h in header] for r in rates["obligations"]))


def trend_csv(trend: list[dict[str, Any]]) -> str:
    header = ["period", "runs", "clean", "clean_share"]
    return _csv(header, ([r[h] for h in header] for r in trend))


COMPARE_COLUMNS = ["a_missed", "a_rate", "b_missed", "b_rate", "difference", "low", "high"]


def compare_csv(result: Mapping[str, Any]) -> str:
    header = ["node", "label", "type", "a", "a_runs", "b", "b_runs", *COMPARE_COLUMNS, "flag"]
    a, b = result["a"], result["b"]

    def row(r: Mapping[str, Any]) -> list[Any]:
        head = [r["node"], r["label"], r["type"], a["value"], a["runs"], b["value"], b["runs"]]
        return [*head, *(r[c] for c in COMPARE_COLUMNS), r["flag"]]

    violation = {"node": "(any violation)", "label": "", "type": "", **result["violation"]}
    return _csv(header, (row(r) for r in [violation, *result["obligations"]]))
