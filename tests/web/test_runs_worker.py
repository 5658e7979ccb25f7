"""A real Celery worker process (Redis broker) completes a run and a full-suite batch.

The tasks are enqueued the way the app does it (``.delay`` once the transaction
commits), routed to a queue of this test's own worker.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from audit import enqueue, services
from audit.models import Batch, Run
from audit.services import batches, runs
from matching.suite import load_suite, perturb_suite, write_suite

from .conftest import ensure_fixture_suite, require_service
from .workers import REDIS_URL, new_queue, redis_up, start_worker, stop_worker, wait_for

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.worker]


@pytest.fixture
def worker(transactional_db, monkeypatch):
    """A worker process on a private queue; ``.delay`` of our tasks goes to it."""
    from celery import Celery

    require_service(redis_up(), f"Redis is not reachable at {REDIS_URL}")
    queue = new_queue()
    proc = start_worker(queue)
    sender = Celery(broker=REDIS_URL, set_as_current=False)  # the app stays current
    for hook, name in (("enqueue_run", "execute_run"), ("enqueue_batch", "execute_batch")):
        monkeypatch.setattr(
            enqueue,
            hook,
            lambda pk, _name=f"audit.tasks.{name}": sender.send_task(_name, args=[pk], queue=queue),
        )
    state = {"output": ""}
    yield proc, state
    state["output"] = stop_worker(proc)


def _output(proc) -> str:
    if proc.poll() is None:
        return "(worker still running)"
    return proc.stdout.read()[-3000:] if proc.stdout else ""


def test_a_worker_completes_a_run(worker, project, users, refund_doc):
    proc, _ = worker
    contract = services.contract_import(project=project, user=users["admin"], source=refund_doc)
    contract = services.contract_mark_audited(contract=contract, user=users["reviewer"])
    run, created = runs.run_create(
        contract=contract,
        user=users["annotator"],
        query_key="q1",
        kind="tau_bench",
        data=[
            {"name": "lookup_order", "kwargs": {"order_id": "1042"}},
            {"name": "respond", "kwargs": {"content": "Your refund is approved."}},
        ],
        model_name="worker-test",
    )
    assert created and run.status == "queued"
    wait_for(run, proc, 60)
    assert run.status == "done", f"run is {run.status!r} {run.error}; worker: {_output(proc)}"
    assert run.verdict == "non_clean" and run.report["failures"] and run.overlay
    assert Run.objects.count() == 1


def _full_suite(tmp_path: Path) -> tuple[bytes | None, int]:
    """The fixture suite: fixtures/suite as it is, else fixtures/clean perturbed (seed 0)
    and uploaded as a zip, the way `make suite` builds fixtures/suite."""
    import io
    import zipfile

    folder = ensure_fixture_suite()
    if folder.name == "suite":
        return None, len(load_suite(folder).cases)
    suite = load_suite(folder)
    cases, _ = perturb_suite(suite, seed=0)
    out = tmp_path / "suite"
    write_suite(out, suite.contracts.values(), cases)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(out.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(out).as_posix())
    return buf.getvalue(), len(cases)


@pytest.mark.parametrize("mode", ["oracle", "token"])
def test_a_worker_runs_the_full_fixture_suite_as_one_batch(
    worker, project, users, tmp_path, settings, mode
):
    proc, _ = worker
    archive, n = _full_suite(tmp_path)
    limits = settings.INPUT_LIMITS
    big = max(limits.suite_archive_bytes, len(archive or b""))
    settings.INPUT_LIMITS = replace(limits, suite_archive_bytes=big)
    batch = batches.batch_create(
        project=project, user=users["reviewer"], mode=mode, archive=archive, name="full suite"
    )
    seen: list[int] = []
    wait_for(batch, proc, 600, seen)
    assert batch.status == "done", f"batch is {batch.status!r} {batch.error}; {_output(proc)}"
    assert batch.done == batch.total == n == batch.scores["cases"]
    assert seen == sorted(seen)  # progress only moves forward
    assert batch.scores["detection_accuracy"] >= 0.95
    assert Batch.objects.count() == 1


def test_a_worker_on_the_embedded_sqlite_broker_completes_a_run(
    transactional_db, monkeypatch, tmp_path, project, users, refund_doc
):
    """`make run`'s broker: a SQLite file read by kombu's SQLAlchemy transport, looking for
    messages every 0.1 s (the settings' default ``sqla-local+`` URL)."""
    from celery import Celery

    from contracteval_site.broker import LocalTransport

    url = f"sqla-local+sqlite:///{tmp_path / 'broker.sqlite3'}"
    queue = new_queue()
    proc = start_worker(queue, env={"CELERY_BROKER_URL": url})
    sender = Celery(broker=url, set_as_current=False)
    with sender.connection_for_write() as conn:
        assert isinstance(conn.transport, LocalTransport)
        assert conn.transport.polling_interval == 0.1
    monkeypatch.setattr(
        enqueue,
        "enqueue_run",
        lambda pk: sender.send_task("audit.tasks.execute_run", args=[pk], queue=queue),
    )
    try:
        contract = services.contract_import(project=project, user=users["admin"], source=refund_doc)
        contract = services.contract_mark_audited(contract=contract, user=users["reviewer"])
        run, _ = runs.run_create(
            contract=contract,
            user=users["annotator"],
            query_key="q1",
            kind="tau_bench",
            data=[{"name": "respond", "kwargs": {"content": "Your refund is approved."}}],
        )
        wait_for(run, proc, 60)
    finally:
        output = stop_worker(proc)
    assert run.status == "done", f"run is {run.status!r} {run.error}; worker: {output[-3000:]}"
