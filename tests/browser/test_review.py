"""A reviewer uploads a trace, watches the run finish, reads the overlay, records a
verdict and finds the run in the inbox; and a suite batch's family table."""

from __future__ import annotations

import io
import json
import threading
import zipfile
from pathlib import Path

import pytest
from web.conftest import ensure_fixture_suite

from audit import enqueue, services
from audit.models import Membership, Project, ReviewVerdict, Run
from audit.services import batches, runs
from matching.suite import load_suite, perturb_suite, write_suite

pytestmark = [pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "pw-for-browser-1"

CHAT = [
    {"role": "system", "content": "You are the refunds assistant of an electronics shop."},
    {"role": "user", "content": "Hi, order 1042 arrived 10 days ago and the headphones broke."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "lookup_order", "arguments": '{"order_id": "1042"}'},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "c1",
        "content": '{"order_id": "1042", "email": "sam@example.com", "placed": "10 days ago"}',
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c2",
                "type": "function",
                "function": {
                    "name": "issue_refund",
                    "arguments": '{"order_id": "1042", "to": "original_payment"}',
                },
            }
        ],
    },
    {
        "role": "assistant",
        "content": "The order is inside the 30-day window, so I approved a refund to your"
        ' original payment method.\n{"order_id": "1042", "resolution": "refunded"}',
    },
]


@pytest.fixture
def reviewer(django_user_model):
    user = django_user_model.objects.create_user(username="rev", password=PASSWORD)
    project = Project.objects.create(name="Demo", slug="demo")
    Membership.objects.create(project=project, user=user, role="reviewer")
    doc = json.loads((ROOT / "fixtures" / "demo" / "refund-mini.json").read_text())
    contract = services.contract_import(project=project, user=user, source=doc)
    services.contract_mark_audited(contract=contract, user=user)
    return user


@pytest.fixture
def slow_worker(monkeypatch):
    """Runs execute in a thread, as a worker would, once the test sets the event."""
    threads: list[threading.Thread] = []
    go = threading.Event()

    def delay(run_id):
        def work():
            from django.db import connection

            go.wait(30)
            try:
                runs.run_execute(run_id=run_id)
            finally:
                connection.close()

        t = threading.Thread(target=work, daemon=True)
        threads.append(t)
        t.start()

    monkeypatch.setattr(enqueue, "enqueue_run", delay)
    yield go
    go.set()
    for t in threads:
        t.join(10)


def _login(page, live_server):
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "rev")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")


def test_a_reviewer_uploads_a_trace_reads_the_overlay_and_records_a_verdict(
    live_server, page, reviewer, slow_worker, shot
):
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    _login(page, live_server)
    page.click("text=Runs")
    page.wait_for_selector("#new-run")
    options = page.eval_on_selector_all(
        "select[name=target] option", "els => els.map(e => e.value)"
    )
    page.select_option("select[name=target]", next(v for v in options if v.endswith("|q1")))
    page.fill("input[name=model_name]", "shop-agent-v3")
    page.fill("textarea[name=text]", json.dumps(CHAT, indent=1))
    # the LLM-judging checkbox sits beside its label, not alone between the columns
    box = page.locator("input[name=judge_invariants]").bounding_box()
    label = page.locator("label.check").bounding_box()
    assert box and label and abs(box["x"] - label["x"]) < 12
    shot(page, "review-new-run")
    page.click("text=Run the check")

    # queued: the status box polls, then the page reloads with the report
    page.wait_for_selector("[data-testid=run-status]")
    assert page.get_attribute("[data-testid=run-status]", "data-status") in ("queued", "running")
    slow_worker.set()  # the worker picks the run up; the page notices by polling
    page.wait_for_selector("[data-testid=run-summary]", timeout=20_000)
    run = Run.objects.get()
    assert run.status == "done" and run.input_kind == "openai" and run.model_name == "shop-agent-v3"
    assert page.inner_text("[data-testid=run-verdict]").startswith(
        "Non-clean" if run.verdict == "non_clean" else "Clean"
    )

    # the overlay is mounted and drawn
    page.wait_for_selector("#overlay[data-rendered-nodes]", timeout=20_000)
    drawn = int(page.get_attribute("#overlay", "data-rendered-nodes"))
    assert drawn == len(run.overlay["nodes"]) > 5
    assert page.locator("[data-testid=trace] mark").count() >= 1  # evidence highlighted
    # the page carries the trace once, in its text view; the overlay reads it from there
    assert "\n" in run.overlay["trace"]["text"] and '"text": null' in page.content()
    shown = page.evaluate("() => ContractEvalOverlay.views[0].p.trace.text")
    assert shown == run.overlay["trace"]["text"]
    # the overlay's columns fit inside its frame (the head's metrics used to push them out)
    assert page.evaluate(
        "() => { const o = document.getElementById('overlay');"
        " const body = o.querySelector('.ce-body').getBoundingClientRect();"
        " return body.right <= o.getBoundingClientRect().right + 0.5; }"
    )
    page.wait_for_timeout(300)
    shot(page, "review-run")

    # one screen at 1100 x 800: the window does not scroll, the graph (fitted again to
    # its new pane) and the verdict bar are in view
    page.set_viewport_size({"width": 1100, "height": 800})
    page.wait_for_timeout(400)
    assert page.evaluate("() => document.scrollingElement.scrollHeight <= innerHeight + 1")
    assert page.locator("#overlay .ce-cy-wrap").is_visible()
    assert page.locator("#verdicts").is_visible()

    # and at 1024 x 768: nothing wider than the window, graph and verdict bar in view
    page.set_viewport_size({"width": 1024, "height": 768})
    page.wait_for_timeout(400)
    assert page.evaluate("() => document.scrollingElement.scrollWidth <= innerWidth")
    assert page.evaluate("() => document.scrollingElement.scrollHeight <= innerHeight + 1")
    assert page.locator("#overlay .ce-cy-wrap").is_visible()
    assert page.locator("#verdicts").is_visible()
    shot(page, "review-run-1024")
    page.set_viewport_size({"width": 1100, "height": 800})
    page.wait_for_timeout(400)

    # a failure in the overlay's list (grouped by family, shown once) selects its place
    assert run.report["failures"], "the example trace skips the ownership check"
    page.locator("#overlay button[data-failure='0']").click()
    page.wait_for_function(
        "() => document.getElementById('overlay').dataset.selected === 'failure:0'"
        " || (document.getElementById('overlay').dataset.selected || '').length > 0"
    )
    page.wait_for_timeout(600)
    shot(page, "review-overlay")

    # the details of the clicked failure sit beside the graph, within the viewport
    box = page.locator("#overlay .ce-details").bounding_box()
    assert box and box["y"] + 20 < page.viewport_size["height"]

    # disagreeing without a note: the error appears beside the form and takes the focus
    page.keyboard.press("d")
    assert page.evaluate("() => document.activeElement.name") == "note"
    page.click("text=Record verdict")
    page.wait_for_selector("[data-testid=verdict-error]")
    assert page.evaluate("() => document.activeElement.id") == "verdict-error"
    assert page.evaluate("() => document.scrollingElement.scrollTop") == 0

    # record a verdict
    page.locator("#verdicts").scroll_into_view_if_needed()
    page.check("input[name=agrees][value=yes]")
    page.fill("textarea[name=note]", "Right: the email on the order was never checked.")
    page.click("text=Record verdict")
    page.wait_for_selector("[data-testid=verdict-row]")
    assert "agrees with the report" in page.inner_text("[data-testid=verdict-row]")
    verdict = ReviewVerdict.objects.get()
    assert verdict.agrees and verdict.reviewer == reviewer and verdict.run == run

    # the inbox lists it, reviewed, filterable by model
    page.click("text=Reviewer inbox")
    page.wait_for_selector("[data-testid=inbox]")
    page.select_option("select[name=model]", "shop-agent-v3")
    page.click("[data-testid=inbox-filters] button[type=submit]")
    page.wait_for_selector(f"a[href='/r/{run.pk}/']")
    assert "agrees" in page.inner_text("[data-testid=inbox]")
    shot(page, "review-inbox")
    assert errors == []


def test_a_batch_shows_progress_then_the_family_table(
    live_server, page, reviewer, tmp_path, shot, monkeypatch
):
    monkeypatch.setattr(enqueue, "enqueue_batch", lambda batch_id: None)  # run it below
    suite = load_suite(ensure_fixture_suite())
    cases, _ = perturb_suite(suite, seed=0)
    write_suite(tmp_path / "s", suite.contracts.values(), cases)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted((tmp_path / "s").rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(tmp_path / "s").as_posix())
    project = Project.objects.get(slug="demo")
    batch = batches.batch_create(
        project=project, user=reviewer, mode="token", archive=buf.getvalue(), name="suite.zip"
    )
    _login(page, live_server)
    page.goto(f"{live_server.url}/b/{batch.pk}/")
    page.wait_for_selector("[data-testid=batch-progress]")
    batches.batch_execute(batch_id=batch.pk)
    page.wait_for_selector("[data-testid=family-table]", timeout=20_000)
    rows = page.locator("[data-testid=family-table] tbody tr").count()
    assert rows == len(batch.__class__.objects.get(pk=batch.pk).scores["per_family"]) + 2
    shot(page, "review-batch")


def test_a_trace_over_the_limit_is_refused_before_queueing_and_a_queued_run_never_reloads(
    live_server, page, reviewer, slow_worker
):
    """A 2 MB upload gets the limit's message and no run; a run that waits for a worker
    polls its status in place (no navigation) until it is done, then shows the report."""
    _login(page, live_server)
    page.goto(f"{live_server.url}/p/demo/runs/")
    options = page.eval_on_selector_all(
        "select[name=target] option", "els => els.map(e => e.value)"
    )
    target = next(v for v in options if v.endswith("|q1"))
    page.select_option("select[name=target]", target)
    big = ("[assistant] " + "x" * 96 + "\n") * 20_000  # 2.1 MB of text
    page.set_input_files(
        "input[name=file]", {"name": "big.txt", "mimeType": "text/plain", "buffer": big.encode()}
    )
    page.click("text=Run the check")
    page.wait_for_selector("#new-run .errorlist, #new-run [role=alert]")
    message = page.inner_text("#new-run")
    assert "limit" in message and "bytes" in message, message
    assert Run.objects.count() == 0

    page.select_option("select[name=target]", target)
    page.fill("textarea[name=text]", json.dumps(CHAT, indent=1))
    page.click("text=Run the check")
    page.wait_for_selector("[data-testid=run-status]")
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    page.wait_for_timeout(2_000)  # four polls while the run is queued
    assert navigations == []
    assert page.get_attribute("[data-testid=run-status]", "data-status") == "queued"
    slow_worker.set()
    page.wait_for_selector("[data-testid=run-summary]", timeout=20_000)
    assert len(navigations) <= 1  # at most the one move to the finished report
