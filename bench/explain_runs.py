"""EXPLAIN ANALYZE of the run reads (API list, runs page, inbox) on the seeded database.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/contracteval_bench \\
        python bench/explain_runs.py [--full]

One line per query: execution time, the index that serves it, whether the database
sorted every matching row (a top-N sort over the project) or read in index order.
``--full`` prints the plans.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contracteval_site.settings")


def summary(name: str, qs, full: bool) -> str:
    text = qs.explain(analyze=True)
    lines = text.splitlines()
    scans = [x.strip().split("  (")[0].lstrip("-> ") for x in lines if "Scan" in x]
    took = next(x for x in lines if "Execution Time" in x).split(":")[1].strip()
    sorted_all = "top-N heapsort" in text
    out = f"{name:<34} {took:>10}  {'SORTS ALL ROWS' if sorted_all else 'index order'}  {scans[0]}"
    return out + ("\n" + text + "\n" if full else "")


def main() -> int:
    import django

    django.setup()
    from audit.models import Project, Run
    from audit.selectors import runs as reads

    project = Project.objects.get(slug="demo")
    print(f"{Run.objects.filter(project=project).count():,} runs in project demo")
    full = "--full" in sys.argv
    api = Run.objects.filter(project_id=project.pk).select_related(
        "project", "contract", "created_by"
    )
    api = api.defer("observed", "overlay", "report")
    for params in ({}, {"verdict": "non_clean"}, {"status": "failed"}, {"family": "omission"}):
        label = "api list " + " ".join(f"{k}={v}" for k, v in params.items())
        qs = reads.filter_runs(api, params)
        print(summary(label, qs[:50], full))
        print(summary("  count", qs.values("pk"), full))
    page = reads.filter_runs(
        project.runs.select_related("contract").defer("observed", "overlay", "report"), {}
    )
    print(summary("runs page", page[:50], full))
    print(summary("inbox", reads.inbox(project, {})[:50], full))
    print(summary("inbox family=omission", reads.inbox(project, {"family": "omission"})[:50], full))
    old = Run.objects.filter(project__memberships__user__username="reviewer", project=project)
    print(summary("(before) api list via membership join", old.order_by("-created_at")[:50], full))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
