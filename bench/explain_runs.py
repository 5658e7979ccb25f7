"""EXPLAIN ANALYZE of the run reads (API list, runs page, inbox) on the seeded database.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/contracteval_bench \\
        python bench/explain_runs.py [--full]

One line per query: execution time, the index that serves it, whether the database
sorted every matching row (a top-N sort over the project) or read in index order.
``--full`` prints the plans; ``--doc`` writes ``docs/benchmarks-query-plans.md``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench import doc  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contracteval_site.settings")


METHOD = """
EXPLAIN ANALYZE, on the database seeded by ``bench/seed_runs.py`` (analysed), of the
queries behind the run reads: the API list with its filters, the runs page and the inbox
(the page's 50 rows), beside two ways no longer used (a page count, the membership
join). Each row: execution time, the first scan of the plan, and whether the database
read in index order or sorted every matching row.
"""
ROWS: list[list[str]] = []


def summary(name: str, qs, full: bool) -> str:
    text = qs.explain(analyze=True)
    lines = text.splitlines()
    scans = [x.strip().split("  (")[0].lstrip("-> ") for x in lines if "Scan" in x]
    took = next(x for x in lines if "Execution Time" in x).split(":")[1].strip()
    order = "sorts every row" if "top-N heapsort" in text else "index order"
    ROWS.append([name.strip(), took, order, f"`{scans[0]}`"])
    out = f"{name:<36} {took:>10}  {order}  {scans[0]}"
    return out + ("\n" + text + "\n" if full else "")


def main() -> int:
    load = os.getloadavg()[0]
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from audit.filters import InboxFilter, RunApiFilter, RunListFilter
    from audit.models import Project, Run
    from audit.selectors import runs as reads

    project = Project.objects.get(slug="demo")
    print(f"{Run.objects.filter(project=project).count():,} runs in project demo")
    full = "--full" in sys.argv
    # the API's queryset (audit/api.py): the user's project ids first, then the filters
    api = Run.objects.filter(project_id=project.pk).select_related(
        "project", "contract", "created_by"
    )
    api = api.defer("observed", "overlay", "report")
    for params in ({}, {"verdict": "non_clean"}, {"status": "failed"}, {"family": "omission"}):
        label = "api list " + " ".join(f"{k}={v}" for k, v in params.items())
        qs = RunApiFilter({"project": "demo", **params}, queryset=api).qs
        print(summary(label, qs[:50], full))
        # what page numbers needed on every page; the API pages by cursor now
        print(summary("  (before) its count", qs.values("pk"), full))
    runs = project.runs.select_related("contract").defer("observed", "overlay", "report")
    print(summary("runs page", RunListFilter({}, queryset=runs).qs[:50], full))
    inbox = reads.inbox(project)
    print(summary("inbox", InboxFilter({}, queryset=inbox).qs[:50], full))
    family = InboxFilter({"family": "omission"}, queryset=inbox).qs
    print(summary("inbox family=omission", family[:50], full))
    user = get_user_model().objects.get(username="reviewer")
    old = Run.objects.filter(project__memberships__user=user, project__slug="demo")
    print(summary("(before) api list, membership join", old[:50], full))
    if "--doc" in sys.argv:
        doc.write(
            "query-plans",
            title=f"query plans at {Run.objects.count():,} runs",
            command="make bench-reads (bench/explain_runs.py --doc)",
            method=METHOD,
            machine_line=doc.machine(doc.postgres_version(), load=load),
            body=doc.table(["query", "execution", "order", "first scan"], ROWS),
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
