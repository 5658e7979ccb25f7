"""Long work never runs in the request: starting a batch, proposing nodes and a run each
answer at once with a status that the page polls, and the worker does the work."""

from __future__ import annotations

import json

import pytest

from audit import enqueue
from audit.models import Batch, ProposalRun, Run
from audit.services import batches

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def queued(monkeypatch, project):
    """The ids each sender was given; nothing reaches a worker or runs in process."""
    from contracteval_site.celery import app

    sent: dict[str, list[int]] = {"batch": [], "run": [], "proposals": []}
    monkeypatch.setattr(enqueue, "enqueue_batch", sent["batch"].append)
    monkeypatch.setattr(enqueue, "enqueue_run", sent["run"].append)
    monkeypatch.setattr(enqueue, "enqueue_proposals", sent["proposals"].append)
    app.conf.task_always_eager = False
    try:
        yield sent
    finally:
        app.conf.task_always_eager = True


def test_starting_a_batch_queues_it_unread_and_its_page_polls_preparing(
    queued, login, fixture_suite, monkeypatch, django_capture_on_commit_callbacks
):
    def refuse(folder):
        raise AssertionError("the request read the suite")

    monkeypatch.setattr(batches, "_read_suite", refuse)
    client = login("reviewer")
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post("/p/tests/batches/new/", {"mode": "oracle", "extractor": "none"})
    batch = Batch.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/b/{batch.pk}/"
    assert queued["batch"] == [batch.pk]
    assert batch.status == "queued" and batch.total == 0 and not batch.chunks.exists()
    page = client.get(f"/b/{batch.pk}/").content.decode()
    assert f'hx-get="/b/{batch.pk}/status/"' in page and 'hx-trigger="every 1s"' in page
    poll = client.get(f"/b/{batch.pk}/status/", **HTMX)
    assert poll.status_code == 200
    html = poll.content.decode()
    assert 'data-testid="batch-preparing"' in html and "Preparing…" in html
    assert 'hx-trigger="every 1s"' in html
    listing = client.get("/p/tests/batches/").content.decode()
    assert "preparing…" in listing


def test_a_bad_upload_shape_is_still_refused_in_the_request(queued, login):
    from django.core.files.uploadedfile import SimpleUploadedFile

    body = {"mode": "oracle", "extractor": "none"}
    body["suite"] = SimpleUploadedFile("suite.zip", b"not a zip", "application/zip")
    r = login("reviewer").post("/p/tests/batches/new/", body)
    assert r.status_code == 400 and "not a zip archive" in r.content.decode()
    assert Batch.objects.count() == 0 and queued["batch"] == []


def test_proposing_queues_a_run_and_the_workspace_polls_its_status(
    queued, login, contract, django_capture_on_commit_callbacks
):
    client = login("annotator")
    nodes_before = contract.nodes.count()
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(f"/c/{contract.pk}/propose/", {"proposer": "heuristic"}, **HTMX)
    run = ProposalRun.objects.get(contract=contract)
    assert r.status_code == 200 and queued["proposals"] == [run.pk]
    assert run.status == "queued" and contract.nodes.count() == nodes_before
    html = r.content.decode()
    assert f'hx-get="/c/{contract.pk}/proposals/"' in html and "Proposing" in html
    poll = client.get(f"/c/{contract.pk}/proposals/", **HTMX)
    assert poll.status_code == 200 and 'hx-trigger="every 1s"' in poll.content.decode()


def test_a_run_is_queued_and_its_page_polls_its_status(
    queued, login, audited, observed_doc, django_capture_on_commit_callbacks
):
    client = login("reviewer")
    page = client.get("/p/tests/runs/").content.decode()
    target = page.split('name="target"', 1)[1].split('<option value="', 2)[1].split('"', 1)[0]
    body = {"target": target, "input_kind": "auto", "text": json.dumps(observed_doc)}
    body |= {"source_kind": "auto", "mode": "token", "extractor": "none"}
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post("/p/tests/runs/new/", body)
    run = Run.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/r/{run.pk}/"
    assert queued["run"] == [run.pk] and run.status == "queued" and run.report is None
    poll = client.get(f"/r/{run.pk}/status/", **HTMX)
    assert poll.status_code == 200 and 'hx-trigger="every 500ms"' in poll.content.decode()
