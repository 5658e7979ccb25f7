"""Runs as downloads: one run or a list of runs as JSON documents and CSV rows."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from typing import Any

from ..models import METRIC_FIELDS, Run


def run_row(run: Run) -> dict[str, Any]:
    """One run as a flat export row (JSON and CSV)."""
    row: dict[str, Any] = {
        "run": run.pk,
        "contract": run.contract.key,
        "contract_version": run.contract.version,
        "query": run.query_key,
        "model": run.model_name,
        "input_kind": run.input_kind,
        "mode": run.mode,
        "extractor": run.extractor,
        "status": run.status,
        "verdict": run.verdict,
        "assessment": run.assessment,
        "p_violation": run.p_violation,
        "failures": run.failure_count,
        "families": " ".join(run.families),
    }
    row.update({m: getattr(run, m) for m in METRIC_FIELDS})
    if hasattr(run, "latest_agrees"):  # annotated by selectors.runs.annotate_latest_verdict
        agrees = getattr(run, "latest_agrees", None)
        row["review"] = "" if agrees is None else ("agrees" if agrees else "disagrees")
        row["review_note"] = getattr(run, "latest_note", "") or ""
        row["reviewer"] = getattr(run, "latest_reviewer", "") or ""
    row["created_at"] = run.created_at.isoformat()
    return row


def rows_csv(rows: Iterable[Mapping[str, Any]], fields: list[str] | None = None) -> str:
    rows = list(rows)
    buf = io.StringIO()
    names = fields or (list(rows[0]) if rows else ["run"])
    writer = csv.DictWriter(buf, fieldnames=names, extrasaction="ignore")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in r.items()})
    return buf.getvalue()


def run_csv(run: Run) -> str:
    """A run as CSV: one line per failure (family, location, detail and, in semantic
    mode, its probability, the run's assessment and P(violation)), plus its metrics."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(
        [
            *("run", "contract", "query", "model", "verdict", "family", "location", "detail"),
            *("probability", "assessment", "p_violation"),
        ]
    )
    failures = (run.report or {}).get("failures", [])
    for f in failures or [{"family": "", "location": "", "detail": ""}]:
        writer.writerow(
            [
                *(run.pk, run.contract.key, run.query_key, run.model_name, run.verdict),
                *(f["family"], f["location"], f["detail"]),
                _blank_none(f.get("probability")),
                run.assessment,
                _blank_none(run.p_violation),
            ]
        )
    writer.writerow([])
    writer.writerow(["metric", "value"])
    for m in METRIC_FIELDS:
        writer.writerow([m, _blank_none(getattr(run, m))])
    return buf.getvalue()


def _blank_none(value: Any) -> Any:
    return "" if value is None else value


def run_export(run: Run) -> dict[str, Any]:
    """A run as one JSON document: its inputs, status, report and verdicts."""
    return {
        "run": run.pk,
        "contract": {"id": run.contract.key, "version": run.contract.version},
        "query": run.query_key,
        "model": run.model_name,
        "agent_version": run.agent_version,
        "input_kind": run.input_kind,
        "mode": run.mode,
        "extractor": run.extractor,
        "status": run.status,
        "assessment": run.assessment,
        "p_violation": run.p_violation,
        "error": run.error,
        "warnings": run.warnings,
        "report": run.report,
        # a reviewer's corrected reading is the run's report; the engine's own is kept
        "corrected": run.is_corrected,
        "automatic": None
        if run.automatic is None
        else {k: run.automatic[k] for k in ("verdict", "failure_count", "assessment", "report")},
        "observed": run.observed,
        "verdicts": [
            {
                "reviewer": v.reviewer.get_username() if v.reviewer else None,
                "agrees": v.agrees,
                "note": v.note,
                "at": v.created_at.isoformat(),
            }
            for v in run.verdicts.select_related("reviewer")
        ],
        "created_at": run.created_at.isoformat(),
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }
