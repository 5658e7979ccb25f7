"""WCAG 2.1 AA on the workspace, the run page and the inbox, checked by axe-core
(vendored from npm into static/vendor/ by `make static`): no serious or critical
violation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from web.conftest import require_service

from audit import services
from audit.models import Contract, Membership, Project
from browser.test_review import CHAT, PASSWORD, ROOT

pytestmark = [pytest.mark.browser]
AXE = ROOT / "static" / "vendor" / "axe.min.js"
RUN_AXE = """async () => {
  const result = await axe.run(document, {runOnly: {type: "tag",
    values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}});
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => ({id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 12).map((n) => n.target.join(" "))}));
}"""


@pytest.fixture
def project(django_user_model):
    user = django_user_model.objects.create_user(username="rev", password=PASSWORD)
    project = Project.objects.create(name="Demo", slug="demo")
    Membership.objects.create(project=project, user=user, role="reviewer")
    doc = json.loads((ROOT / "fixtures" / "demo" / "refund-mini.json").read_text())
    contract = services.contract_import(project=project, user=user, source=doc)
    services.contract_mark_audited(contract=contract, user=user)
    contract.refresh_from_db()
    run, _ = services.run_create(
        contract=contract,
        user=user,
        query_key="q1",
        kind="auto",
        data=json.dumps(CHAT),
        extractor="heuristic",
    )
    services.run_execute(run_id=run.pk)
    draft = services.contract_new_version(contract=contract, user=user)
    return project, draft, run


def _violations(page, base_url: str) -> list:
    # From the app's own static files: the CSP (script-src 'self') blocks the inline
    # script Playwright writes for ``path=``/``content=``.
    page.add_script_tag(url=f"{base_url}/static/vendor/axe.min.js")
    return page.evaluate(RUN_AXE)


def test_workspace_run_and_inbox_have_no_serious_or_critical_violations(live_server, page, project):
    require_service(Path(AXE).exists(), f"{AXE} missing: run `make static`")
    _, draft, run = project
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "rev")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    node = draft.nodes.order_by("position").first() if isinstance(draft, Contract) else None
    found = {}
    for name, url, ready in [
        ("workspace", f"/c/{draft.pk}/?node={node.node_id}", "[data-testid=node-card]"),
        ("run", f"/r/{run.pk}/", "#overlay[data-rendered-nodes]"),
        ("inbox", "/p/demo/inbox/", "[data-testid=inbox]"),
    ]:
        page.goto(live_server.url + url)
        page.wait_for_selector(ready)
        found[name] = _violations(page, live_server.url)
    assert found == {"workspace": [], "run": [], "inbox": []}
