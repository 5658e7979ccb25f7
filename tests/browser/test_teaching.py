"""The enactment loop in the browser: a reviewer pairs a step the semantic matcher left
unpaired, the corrected report appears beside the automatic one, and the next run of a
similar trace pairs that step on its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit import enqueue, services
from audit.models import Enactment, Membership, Project, Run
from audit.services import runs

pytestmark = [pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "pw-for-browser-1"
TRACE = """[user] Hi, I'd like a refund for order {order} please, it arrived {days} days ago.
[tool] lookup_order(order_id="{order}")
[result] {{"order_id": "{order}", "email": "sam@example.com", "total": 59.00}}
[assistant] The email on order {order} matches the one you wrote from, so I can confirm the purchase is yours.
[assistant] {Days} days on the calendar puts you comfortably under our cutoff.
[tool] issue_refund(order_id="{order}", amount=59.00, to="original_payment")
[result] {{"refund_id": "RF-88", "status": "approved"}}
[assistant] Your refund of $59.00 is approved and should arrive within 5 business days.
"""


@pytest.fixture
def setup(django_user_model, monkeypatch):
    user = django_user_model.objects.create_user(username="rev", password=PASSWORD)
    project = Project.objects.create(name="Demo", slug="demo")
    Membership.objects.create(project=project, user=user, role="reviewer")
    doc = json.loads((ROOT / "fixtures" / "demo" / "refund-mini.json").read_text())
    contract = services.contract_import(project=project, user=user, source=doc)
    services.contract_mark_audited(contract=contract, user=user)
    contract.refresh_from_db()
    monkeypatch.setattr(enqueue, "enqueue_run", lambda run_id: runs.run_execute(run_id=run_id))
    return user, contract


def _run(user, contract, order: str, days: str) -> Run:
    run, _ = services.run_create(
        contract=contract,
        user=user,
        query_key="q1",
        kind="text",
        data=TRACE.format(order=order, days=days, Days=days.capitalize()),
        source_kind="trace",
        mode="semantic",
        extractor="behaviour",
    )
    run.refresh_from_db()
    assert run.status == "done", run.error
    return run


def _step(run: Run, words: str) -> str:
    text = run.overlay["trace"]["text"]
    return next(
        o["id"]
        for o in run.overlay["observed"]
        if any(words in text[s["start"] : s["end"]] for s in o["spans"])
    )


def test_a_pairing_corrected_in_the_browser_is_paired_by_the_next_run(live_server, page, setup):
    user, contract = setup
    first = _run(user, contract, "1042", "ten")
    step = _step(first, "Ten days on the calendar")
    assert step not in {a["observed"] for a in first.report["alignment"]}
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "rev")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/r/{first.pk}/")
    page.locator("[data-testid=run-correction] > summary").click()
    form = page.locator("[data-testid=pair-form]")
    form.locator("select[name=observed]").select_option(step)
    form.locator("select[name=expected]").select_option("check_window")
    form.locator("button[type=submit]").click()
    page.wait_for_selector("[data-testid=corrected-report]")
    assert page.inner_text("[data-testid=corrected-by]") == "rev"
    assert Enactment.objects.filter(node_id="check_window", run=first).exists()

    later = _run(user, contract, "2077", "twelve")
    paired = {a["expected"]: a["observed"] for a in later.report["alignment"]}
    assert paired.get("check_window") == _step(later, "Twelve days on the calendar")
    page.goto(f"{live_server.url}/r/{later.pk}/")
    page.wait_for_selector("[data-testid=weak-total]")
    assert ("omission", "check_window") not in {
        (f["family"], f["location"]) for f in later.report["failures"]
    }
