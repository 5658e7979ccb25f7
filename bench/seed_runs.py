"""Seed a database with many conformance runs for the load test (``make seed-runs``).

Loads the demo project (``load_demo``), evaluates one real run of the audited
``refund-mini`` contract, then clones it with ``bulk_create`` into ``--runs`` runs with
varied verdicts, failure families, models, statuses and creation times (spread over
the last 90 days), and a reviewer verdict on about a fifth of them, so that every
filter of the runs list, the inbox and the API has something to select. Idempotent:
only the missing number of runs is added; ends with ``ANALYZE`` (:func:`analyze`).
100,000 runs took 6 minutes on PostgreSQL on the shared 2-core machine (each run
carries ~15 kB of JSON).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/contracteval_bench \\
        python bench/seed_runs.py --runs 100000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contracteval_site.settings")

FAMILIES = [
    "n_omission",
    "n_wrong_branch",
    "n_ordering",
    "n_extra_action",
    "n_invariant_violation",
    "n_output_contract",
]
MODELS = ["gpt-4o", "gpt-4o-mini", "claude-sonnet", "llama-3-70b", ""]
AGENT_VERSIONS = ["1.4.0", "1.5.0", "1.6.0-rc1", ""]
TOKEN_FILE = ROOT / "var" / "loadtest-token"


def template_run(contract, user):
    """One run of ``contract`` evaluated for real: its report and overlay are cloned."""
    from audit.models import Run
    from audit.services import runs
    from contracteval_site.celery import app

    app.conf.task_always_eager = True  # evaluate here: the seeder needs no worker
    observed = json.loads((ROOT / "matching" / "data" / "refund-mini-observed-q1.json").read_text())
    run, _ = runs.run_create(
        contract=contract, user=user, query_key="q1", kind="observed", data=observed
    )
    run.refresh_from_db()
    if run.status != "done":
        run = runs.run_execute(run_id=run.pk)
    return Run.objects.get(pk=run.pk)


def outcomes(clean: dict[str, str], run, rng: random.Random) -> dict:
    """The clean run's outcome per obligation, with misses and late steps where the
    seeded run counts omissions and ordering failures (for the analytics)."""
    out = dict(clean)
    nodes = sorted(out)
    for node in rng.sample(nodes, min(len(nodes), run.n_omission)):
        out[node] = "x"
    for node in rng.sample(nodes, min(len(nodes), run.n_ordering)):
        out[node] = "o"
    return out


def clone(template, i: int, now, rng: random.Random, reviewer):
    """The ``i``-th seeded run: the template's documents, varied outcome and metadata."""
    from audit.models import Run

    fields = {f: 0 for f in FAMILIES}
    violation = rng.random() < 0.45
    if violation:
        for f in rng.sample(FAMILIES, rng.randint(1, 3)):
            fields[f] = rng.randint(1, 4)
    # No "queued" clones: no task would ever pick them up, and the load test waits for
    # the queue to drain.
    status = rng.choices(["done", "failed"], weights=[97, 3])[0]
    done = status == "done"
    return Run(
        project_id=template.project_id,
        contract_id=template.contract_id,
        query_id=template.query_id,
        query_key=template.query_key,
        input_kind=template.input_kind,
        observed=template.observed,
        input_hash=hashlib.sha256(f"seed-run-{i}".encode()).hexdigest(),
        mode=template.mode,
        extractor=template.extractor,
        model_name=rng.choice(MODELS),
        agent_version=rng.choice(AGENT_VERSIONS),
        status=status,
        error="" if status != "failed" else "internal error: seeded failure",
        report=template.report if done else None,
        overlay=template.overlay if done else None,
        verdict=("non_clean" if violation else "clean") if done else "",
        failure_count=sum(fields.values()) if done else 0,
        required_recall=round(rng.uniform(0.5, 1.0), 3) if done else None,
        observed_precision=round(rng.uniform(0.5, 1.0), 3) if done else None,
        created_by=reviewer,
        created_at=now - timedelta(seconds=rng.randint(0, 90 * 86400)),
        **(fields if done else {}),
    )


def seed(total: int, batch_size: int = 2000, seed_value: int = 0) -> int:
    """Add runs until the demo project holds ``total``; the number added."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import transaction
    from django.utils import timezone
    from rest_framework.authtoken.models import Token

    from audit.models import Contract, ReviewVerdict, Run, RunOutcome

    call_command("load_demo", verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
    reviewer = get_user_model().objects.get(username="reviewer")
    TOKEN_FILE.parent.mkdir(parents=True, exist_ok=True)
    TOKEN_FILE.write_text(Token.objects.get_or_create(user=reviewer)[0].key)
    contract = Contract.objects.filter(key="refund-mini", status="audited").latest("version")
    template = template_run(contract, reviewer)
    clean = RunOutcome.objects.get(run=template).obligations
    have = Run.objects.filter(project_id=contract.project_id).count()
    missing = max(0, total - have)
    rng, now = random.Random(seed_value + have), timezone.now()
    # auto_now_add would stamp every clone "now"; the spread of dates is the point here.
    Run._meta.get_field("created_at").auto_now_add = False
    added = 0
    while added < missing:
        n = min(batch_size, missing - added)
        batch = [clone(template, have + added + k, now, rng, reviewer) for k in range(n)]
        with transaction.atomic():
            made = Run.objects.bulk_create(batch)
            RunOutcome.objects.bulk_create(
                RunOutcome(
                    run=r,
                    contract_id=r.contract_id,
                    day=timezone.localdate(r.created_at),
                    agent_version=r.agent_version,
                    model_name=r.model_name,
                    is_clean=r.verdict == "clean",
                    obligations=outcomes(clean, r, rng),
                )
                for r in made
                if r.status == "done"
            )
            ReviewVerdict.objects.bulk_create(
                ReviewVerdict(run=r, reviewer=reviewer, agrees=rng.random() < 0.8, note="")
                for r in made
                if r.status == "done" and rng.random() < 0.2
            )
        added += n
    analyze()
    return added


def analyze() -> None:
    """Refresh the planner's statistics of what was just loaded.

    Without them PostgreSQL guesses: on 100,000 unanalysed runs it sorted every
    non-clean run for a filtered page (940 ms instead of 1 ms) and hash-joined every
    verdict for the next unreviewed run (740 ms). Autovacuum would analyse the tables a
    minute later, but a server may run without it (this machine's has it off), and a
    bulk load is followed by ANALYZE in any case. Always, even when nothing was added:
    the runs may come from an earlier seeding that was never analysed.
    """
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000, help="runs wanted in total")
    parser.add_argument("--batch-size", type=int, default=2000)
    args = parser.parse_args(argv)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    started = time.perf_counter()
    added = seed(args.runs, args.batch_size)
    print(f"seeded {added:,} runs in {time.perf_counter() - started:.1f} s (target {args.runs:,})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
