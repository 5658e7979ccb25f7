"""WCAG 2.1 AA on the workspace, the run page, the inbox, the live traces, the webhooks,
blind annotation, the members, team and adjudication pages, checked by axe-core
(vendored from npm into static/vendor/ by `make static`): no serious or critical
violation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.utils import timezone
from web.conftest import require_service
from web.team_helpers import decide_all

from audit import services
from audit.models import Contract, IngestedTrace, Membership, Project
from browser.conftest import log_in
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
    admin = django_user_model.objects.create_user(username="adm", password=PASSWORD)
    Membership.objects.create(project=project, user=admin, role="admin")
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
    services.ingest_token_create(project=project, user=admin, name="refund-bot")
    services.routing_rule_create(
        project=project,
        user=admin,
        attribute="gen_ai.agent.name",
        value="refund-bot",
        contract_key="refund-mini",
        query_value="q1",
    )
    IngestedTrace.objects.create(
        project=project,
        trace_id="a" * 32,
        last_span_at=timezone.now(),
        status="unrouted",
        agent_name="other-bot",
        reason="no routing rule matches this trace (agent 'other-bot')",
    )
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
        ("live traces", "/p/demo/ingest/", "[data-testid=ingest-queue]"),
    ]:
        page.goto(live_server.url + url)
        page.wait_for_selector(ready)
        found[name] = _violations(page, live_server.url)
    assert found == {"workspace": [], "run": [], "inbox": [], "live traces": []}


def test_the_live_traces_page_with_its_forms_has_no_serious_or_critical_violations(
    live_server, page, project
):
    require_service(Path(AXE).exists(), f"{AXE} missing: run `make static`")
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "adm")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/p/demo/ingest/")
    page.fill("#ingest-tokens input[name=name]", "second bot")
    page.click("text=Create token")
    page.wait_for_selector("[data-testid=new-token]")
    assert _violations(page, live_server.url) == []


def test_the_webhooks_page_with_a_new_endpoint_has_no_serious_or_critical_violations(
    live_server, page, project
):
    require_service(Path(AXE).exists(), f"{AXE} missing: run `make static`")
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "adm")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/p/demo/webhooks/")
    page.fill("#webhook-endpoints input[name=name]", "chat")
    page.fill("#webhook-endpoints input[name=url]", "https://hooks.example.com/ce")
    page.click("text=Add endpoint")
    page.wait_for_selector("[data-testid=new-secret]")
    assert _violations(page, live_server.url) == []


def test_blind_annotation_and_the_members_page_have_no_serious_or_critical_violations(
    live_server, page, project, django_user_model
):
    require_service(Path(AXE).exists(), f"{AXE} missing: run `make static`")
    _, draft, _ = project
    admin = django_user_model.objects.get(username="adm")
    services.double_annotation_set(contract=draft, by=admin, enabled=True)
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "adm")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    node = draft.nodes.order_by("position").first()
    found = {}
    for name, url, ready in [
        ("blind", f"/c/{draft.pk}/annotate/?node={node.node_id}", "[data-testid=blind-actions]"),
        ("members", "/p/demo/members/", "[data-testid=member-add]"),
    ]:
        page.goto(live_server.url + url)
        page.wait_for_selector(ready)
        found[name] = _violations(page, live_server.url)
    assert found == {"blind": [], "members": []}


def test_the_team_and_adjudication_pages_have_no_serious_or_critical_violations(
    live_server,
    page,
    people,
):
    require_service(Path(AXE).exists(), f"{AXE} missing: run `make static`")
    users, contract = people
    services.double_annotation_set(contract=contract, by=users["boss"], enabled=True)
    for name, role in (("ann1", "annotator"), ("ann2", "annotator"), ("cur", "reviewer")):
        services.assignment_create(
            project=contract.project,
            user=users[name],
            by=users["boss"],
            role=role,
            contract=contract,
        )
    third = contract.nodes.order_by("position")[2].node_id
    decide_all(contract, users["ann1"])
    decide_all(contract, users["ann2"], {third: ("reject", None)})  # one for the curator
    services.adjudication_start(contract=contract, user=users["cur"])
    log_in(page, live_server.url, "cur", PASSWORD)
    found = {}
    for name, url, ready in [
        ("team", f"/c/{contract.pk}/team/", "[data-testid=assignment]"),
        ("adjudication", f"/c/{contract.pk}/adjudicate/", "[data-testid=adjudication-row]"),
    ]:
        page.goto(live_server.url + url)
        page.wait_for_selector(ready)
        found[name] = _violations(page, live_server.url)
    assert found == {"team": [], "adjudication": []}
