"""An annotator starts a contract from pasted text and lands on its proposals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from audit.models import Contract, Membership, Project

pytestmark = [pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "pw-for-browser-1"


@pytest.fixture
def annotator(django_user_model):
    user = django_user_model.objects.create_user(username="ann", password=PASSWORD)
    project = Project.objects.create(name="Demo", slug="demo")
    Membership.objects.create(project=project, user=user, role="annotator")
    return user


def test_annotator_creates_a_contract_from_pasted_text_with_proposals(
    live_server, page, annotator, shot
):
    text = json.loads((ROOT / "fixtures" / "demo" / "refund-mini.json").read_text())["artifact"][
        "text"
    ]
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "ann")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.click("[data-testid=new-contract]")
    page.wait_for_selector("[data-testid=new-contract-form]")

    page.fill("input[name=title]", "Refunds and returns")
    expect(page.locator("input[name=key]")).to_have_value("refunds-and-returns")  # suggested
    page.fill("input[name=domain]", "customer support")
    page.fill("textarea[name=text]", text)
    page.check("input[name=propose]")
    page.evaluate("() => document.querySelector('textarea[name=text]').scrollTo(0, 0)")
    shot(page, "new-contract")
    page.click("[data-testid=create-contract]")

    page.wait_for_selector("#ws-text")
    assert page.inner_text("[data-testid=contract-title]") == "Refunds and returns"
    page.wait_for_selector("#ws-outline .ol-item.s-proposed")
    contract = Contract.objects.get(key="refunds-and-returns")
    assert page.url.endswith(f"/c/{contract.pk}/")
    assert contract.artifact.text == text  # textarea CRLFs are stored as the LF pasted
    proposed = page.locator("#ws-outline .ol-item.s-proposed").count()
    assert proposed == contract.nodes.filter(review_status="proposed").count() > 3
