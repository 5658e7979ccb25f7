"""A member reads a contract's compliance analytics in Chromium: the rates and charts,
the filters swapped in place by htmx, the comparison of two agent versions flagging the
regression, and no serious or critical WCAG 2.1 AA violation (axe-core) on either page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from web.conftest import require_service

from audit import services
from audit.management.commands.load_demo import demo_runs
from audit.models import Membership, Project
from browser.test_accessibility import AXE, _violations
from browser.test_review import PASSWORD, ROOT

pytestmark = [pytest.mark.browser]


@pytest.fixture
def analytics_contract(django_user_model):
    user = django_user_model.objects.create_user(username="ann", password=PASSWORD)
    project = Project.objects.create(name="Demo", slug="demo")
    Membership.objects.create(project=project, user=user, role="annotator")
    doc = json.loads((ROOT / "fixtures" / "demo" / "refund-mini.json").read_text())
    # made by the system (user None): the member only reads, as an annotator may
    contract = services.contract_import(project=project, user=None, source=doc)
    services.contract_mark_audited(contract=contract, user=None)
    contract.refresh_from_db()
    observed = ROOT / "matching" / "data" / "refund-mini-observed-q1.json"
    demo_runs(contract, None, json.loads(observed.read_text()))
    return contract


def test_analytics_pages_filter_in_place_flag_the_regression_and_pass_axe(
    live_server, page, analytics_contract, shot
):
    require_service(Path(AXE).exists(), f"{AXE} missing: run `make static`")
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "ann")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/c/{analytics_contract.pk}/")
    page.click("[data-testid=analytics-link]")
    page.wait_for_selector("[data-testid=analytics-table]")
    assert page.inner_text("[data-testid=analytics-runs]") == "45 finished runs"
    assert page.locator("[data-testid=trend-chart] svg circle").count() > 5
    shot(page, "analytics")
    found = {"rates": _violations(page, live_server.url)}

    page.select_option("select[name=agent_version]", "1.5.0")
    page.click("[data-testid=analytics-filters] button[type=submit]")
    page.wait_for_selector("[data-testid=analytics-runs]:has-text('23 finished runs')")
    assert "agent_version=1.5.0" in page.url  # the filtered view has its own address

    page.click("text=Compare two versions")
    page.fill("input[name=a]", "1.4.0")
    page.fill("input[name=b]", "1.5.0")
    page.click("[data-testid=compare-form] button[type=submit]")
    row = page.locator("[data-testid=compare-table] tr[data-node=verify_owner]")
    row.wait_for()
    assert row.locator("[data-flag=regression]").count() == 1
    shot(page, "analytics-compare")
    found["compare"] = _violations(page, live_server.url)
    assert found == {"rates": [], "compare": []}
    assert errors == []
