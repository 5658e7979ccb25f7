"""Load demo data: every suite contract into a demo project, and one demo user per role.

Contracts come from fixtures/suite/contracts/*.json if that folder exists, else from
fixtures/clean/contracts/*.json, plus fixtures/demo/*.json (always there). Running it
again changes nothing: a contract already loaded with the same document is skipped.

The audited example gets finished runs of two agent versions over the last four weeks
(token mode on variants of its example trace), so its analytics show rates, a trend and
a comparison; they are made only while it has no runs.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from audit import enqueue, services
from audit.models import Contract, Membership, Project, Role, Run
from matching.propose import propose_heuristic

DRAFT_KEY = "refund-mini-draft"  # the same artifact, as heuristic proposals to review
DEMO_USERS = [
    ("annotator", Role.ANNOTATOR, "annotate-demo"),
    ("reviewer", Role.REVIEWER, "review-demo"),
    ("admin", Role.ADMIN, "admin-demo"),
]


# The example trace's variants: which observed steps it drops, which two swap places.
VARIANTS: dict[str, dict[str, Any]] = {
    "clean": {},
    "skips verify_owner": {"drop": ("o2",)},
    "refunds before verifying": {"swap": ("o2", "o4")},
    "skips check_window": {"drop": ("o3",)},
}
# (agent version, model, how many runs of each variant, days ago they start): the newer
# version skips the ownership check far more often, a regression the comparison flags.
DEMO_AGENTS = [
    (
        "1.4.0",
        "gpt-4o-mini",
        {
            "clean": 16,
            "skips verify_owner": 2,
            "refunds before verifying": 2,
            "skips check_window": 2,
        },
        28,
    ),
    (
        "1.5.0",
        "gpt-4.1-mini",
        {
            "clean": 10,
            "skips verify_owner": 9,
            "refunds before verifying": 3,
            "skips check_window": 1,
        },
        14,
    ),
]


def observed_variant(
    base: dict, *, drop: tuple[str, ...] = (), swap: tuple[str, str] | None = None, ref: int = 0
) -> dict:
    """The observed document ``base`` without the steps ``drop``, with the steps of
    ``swap`` exchanged, and a reference number in its output (each run its own input)."""
    doc = copy.deepcopy(base)
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] not in drop]
    if swap:
        first, second = (n for n in doc["nodes"] if n["id"] in swap)
        first["step"], second["step"] = second["step"], first["step"]
    doc["edges"] = []
    output = json.loads(doc.get("output") or "{}")
    doc["output"] = json.dumps({**output, "ref": ref})
    return doc


@contextmanager
def runs_in_process() -> Iterator[list[int]]:
    """Runs created inside are collected, not sent to a worker: the caller evaluates them."""
    created: list[int] = []
    sender = enqueue.enqueue_run

    def hold(run_id: int) -> None:
        created.append(run_id)

    enqueue.enqueue_run = hold  # enqueue looks its senders up when a transaction commits
    try:
        yield created
    finally:
        enqueue.enqueue_run = sender


def demo_runs(contract: Contract, user, base: dict) -> int:
    """Finished token-mode runs of ``contract`` (query q1) by two agent versions, spread
    over the last four weeks; how many were made."""
    now, made = timezone.now(), 0
    with runs_in_process() as created:
        for version, model, counts, days in DEMO_AGENTS:
            plan = [name for name, k in counts.items() for _ in range(k)]
            for i, name in enumerate(plan):
                doc = observed_variant(base, ref=made, **VARIANTS[name])
                run, _ = services.run_create(
                    contract=contract,
                    user=user,
                    query_key="q1",
                    kind="observed",
                    data=doc,
                    mode="token",
                    model_name=model,
                    agent_version=version,
                )
                when = now - timedelta(days=days - days * i / len(plan), hours=made % 7)
                Run.objects.filter(pk=run.pk).update(created_at=when)
                made += 1
    for run_id in created:
        services.run_execute(run_id=run_id)
    return made


def demo_files(base: Path) -> list[Path]:
    suite = base / "fixtures" / "suite" / "contracts"
    clean = base / "fixtures" / "clean" / "contracts"
    folder = suite if suite.is_dir() and any(suite.glob("*.json")) else clean
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    return files + sorted((base / "fixtures" / "demo").glob("*.json"))


class Command(BaseCommand):
    help = "Load the demo project, its contracts and one demo user per role (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--base", default=str(settings.BASE_DIR), help="project root")
        parser.add_argument(
            "--superuser",
            action="store_true",
            help="also make the demo admin a Django superuser (the /admin/ site); off by"
            " default, since the demo passwords are public",
        )

    def handle(self, *args, base, superuser=False, **options):
        project = self._project_and_users(superuser=superuser)
        admin = get_user_model().objects.get(username="admin")
        loaded, skipped = self._import_contracts(project, admin, Path(base))
        if not Contract.objects.filter(project=project, key=DRAFT_KEY).exists():
            source = json.loads((Path(base) / "fixtures" / "demo" / "refund-mini.json").read_text())
            draft = services.contract_create(
                project=project,
                user=admin,
                key=DRAFT_KEY,
                title="Refunds and returns (to annotate)",
                text=source["artifact"]["text"],
                media_type=source["artifact"].get("media_type", ""),
            )
            services.contract_apply_proposals(
                contract=draft, user=admin, proposals=propose_heuristic(draft.artifact.text)
            )
            loaded += 1
        # The example contract is audited, so reviewers can run traces against it at once.
        example = (
            Contract.objects.filter(project=project, key="refund-mini").order_by("-version").first()
        )
        if example is not None and example.status != "audited":
            try:
                services.contract_mark_audited(contract=example, user=admin)
            except services.ServiceError as exc:
                self.stderr.write(self.style.WARNING(f"refund-mini not audited: {exc}"))
            example.refresh_from_db()
        if example is not None and example.status == "audited" and not example.runs.exists():
            observed = Path(base) / "matching" / "data" / "refund-mini-observed-q1.json"
            made = demo_runs(example, admin, json.loads(observed.read_text(encoding="utf-8")))
            self.stdout.write(f"{made} demo runs of refund-mini by two agent versions.")
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo project ready: {loaded} contract(s) loaded, {skipped} already there."
            )
        )
        # `make run` passes the HOST and PORT it serves on
        host, port = os.environ.get("HOST", "127.0.0.1"), os.environ.get("PORT", "8000")
        self.stdout.write(f"Sign in at http://{host}:{port}/login/ as one of:")
        for username, role, password in DEMO_USERS:
            self.stdout.write(f"  {role.label:<10} {username} / {password}")
        self.stdout.write(
            self.style.WARNING(
                "These demo passwords are public and for local use only: never load the demo"
                " on a server that others can reach."
                + ("" if superuser else " (No superuser was made; add --superuser for /admin/.)")
            )
        )

    def _project_and_users(self, *, superuser: bool) -> Project:
        User = get_user_model()
        with transaction.atomic():
            project, _ = Project.objects.get_or_create(
                slug="demo",
                defaults={
                    "name": "Demo project",
                    "description": "The controlled-suite contracts, ready to audit.",
                },
            )
            for username, role, password in DEMO_USERS:
                user, created = User.objects.get_or_create(username=username)
                if created:
                    user.set_password(password)
                    user.save()
                if superuser and role == Role.ADMIN and not user.is_superuser:
                    user.is_staff = user.is_superuser = True
                    user.save(update_fields=["is_staff", "is_superuser"])
                Membership.objects.update_or_create(
                    project=project, user=user, defaults={"role": role}
                )
        return project

    def _import_contracts(self, project: Project, admin, base: Path) -> tuple[int, int]:
        """Import the demo contracts that are not there yet: ``(loaded, skipped)``."""
        loaded = skipped = 0
        for path in demo_files(base):
            doc = json.loads(path.read_text(encoding="utf-8"))
            if Contract.objects.filter(project=project, key=doc.get("id")).exists():
                skipped += 1
                continue
            try:
                services.contract_import(
                    project=project, user=admin, source=path.read_bytes(), file=path.name
                )
            except services.ServiceError as exc:
                self.stderr.write(self.style.WARNING(f"skipped {path.name}: {exc}"))
                continue
            loaded += 1
        return loaded, skipped
