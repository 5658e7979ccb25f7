"""An annotator presses "LLM" in the browser and sees the proposals and the discards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm.fake_openai import ENV_NAMES, FakeOpenAI, completion, point_env_at
from web.test_llm_wiring import HALLUCINATED, answer

from audit import services
from audit.models import Membership, Project

pytestmark = [pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "pw-for-browser-1"


def test_annotator_requests_llm_proposals_and_sees_what_was_discarded(
    live_server, page, django_user_model, monkeypatch, shot
):
    doc = json.loads((ROOT / "fixtures" / "demo" / "refund-mini.json").read_text())
    user = django_user_model.objects.create_user(username="ann", password=PASSWORD)
    project = Project.objects.create(name="Demo", slug="demo")
    Membership.objects.create(project=project, user=user, role="annotator")
    services.contract_create(
        project=project, user=user, key="refunds", title="Refunds", text=doc["artifact"]["text"]
    )
    fake = FakeOpenAI().start()
    try:
        for name in ENV_NAMES:
            monkeypatch.delenv(name, raising=False)
        point_env_at(monkeypatch, fake)
        fake.push(completion(answer(doc), prompt_tokens=900, completion_tokens=400))

        page.goto(f"{live_server.url}/login/")
        page.fill("input[name=username]", "ann")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.click("text=Refunds")
        assert page.inner_text("[data-testid=llm-status]").startswith("LLM: fake-model @ 127.0.0.1")
        page.click("[data-testid=propose-llm]")  # htmx sends the pressed button's value
        page.wait_for_selector("[data-testid=run-summary]")
        assert "1 discarded" in page.inner_text("[data-testid=run-summary]")
        assert page.locator(".ol-item.s-proposed").count() == len(doc["nodes"])
        page.click("[data-tab=history]")
        assert HALLUCINATED in page.inner_text("[data-testid=run-discarded]")
        shot(page, "workspace-llm-run")
    finally:
        fake.stop()
