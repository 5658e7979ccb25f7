"""Two annotators audit one contract blind, a curator adjudicates it, a comment holds
the audit back until it is resolved."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit import services
from audit.models import Membership, Node, Project

pytestmark = [pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "pw-for-browser-1"


@pytest.fixture
def people(django_user_model):
    project = Project.objects.create(name="Demo", slug="demo")
    users = {}
    for name, role in (
        ("boss", "admin"),
        ("ann1", "annotator"),
        ("ann2", "annotator"),
        ("cur", "reviewer"),
    ):
        users[name] = django_user_model.objects.create_user(username=name, password=PASSWORD)
        Membership.objects.create(project=project, user=users[name], role=role)
    doc = json.loads((ROOT / "fixtures" / "demo" / "refund-mini.json").read_text())
    contract = services.contract_import(project=project, user=users["boss"], source=doc)
    Node.objects.filter(contract=contract).update(review_status="proposed")
    return users, contract


def as_user(browser, live_server, name):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state()
    return page


def submit(page, selector):
    with page.expect_navigation():
        page.locator(selector).first.click()


def annotate(page, contract, rejected=(), edits=None):
    edits = edits or {}
    for node in contract.nodes.all():
        row = f'[data-testid=blind-node][data-node="{node.node_id}"]'
        if node.node_id in edits:
            page.locator(f"{row} summary").click()
            page.locator(f"{row} input[name=label]").fill(edits[node.node_id])
            submit(page, f'{row} button:has-text("Save edit")')
        else:
            verb = "Reject" if node.node_id in rejected else "Confirm"
            submit(page, f'{row} button:has-text("{verb}")')


def test_two_annotators_and_a_curator_audit_one_contract(browser, live_server, people, shot):
    users, contract = people
    boss = as_user(browser, live_server, "boss")
    boss.goto(f"{live_server.url}/c/{contract.pk}/team/")
    boss.check("input[name=enabled]")
    submit(boss, "[data-testid=save-double]")
    for name, role in (("ann1", "annotator"), ("ann2", "annotator"), ("cur", "reviewer")):
        boss.fill("[data-testid=assign-user]", name)
        boss.select_option("select[name=role]", role)
        submit(boss, 'button:has-text("Assign")')
    assert boss.locator("[data-testid=assignment]").count() == 3

    ann1 = as_user(browser, live_server, "ann1")
    ann1.goto(f"{live_server.url}/queue/")
    submit(ann1, '[data-testid=queue-row] a:has-text("Annotate")')
    annotate(ann1, contract, edits={"lookup_order": "Find the order by its number"})
    assert ann1.locator("[data-testid=my-percent]").inner_text() == "100%"
    ann1.goto(f"{live_server.url}/c/{contract.pk}/annotate/")
    shot(ann1, "team-annotate")
    ann1.goto(f"{live_server.url}/queue/")
    assert ann1.locator("[data-testid=queue-percent]").inner_text() == "100%"
    shot(ann1, "team-queue")

    ann2 = as_user(browser, live_server, "ann2")
    ann2.goto(f"{live_server.url}/c/{contract.pk}/annotate/")
    assert "Find the order by its number" not in ann2.content()
    annotate(ann2, contract, rejected={"approve_refund"})
    for path in ("team/", "", "export.json", "agreement.json"):
        body = ann2.request.get(f"{live_server.url}/c/{contract.pk}/{path}").text()
        assert "Find the order by its number" not in body, path

    cur = as_user(browser, live_server, "cur")
    cur.goto(f"{live_server.url}/c/{contract.pk}/adjudicate/")
    submit(cur, "[data-testid=start-adjudication]")
    rows = cur.locator("[data-testid=adjudication-row]")
    assert rows.first.get_attribute("data-node") == "approve_refund"
    assert rows.first.locator("[data-testid=path-changing-badge]").is_visible()
    shot(cur, "team-adjudicate")
    submit(cur, '[data-node="approve_refund"] [data-testid=pick-ann1]')
    submit(cur, '[data-node="lookup_order"] [data-testid=pick-ann1]')

    cur.goto(f"{live_server.url}/c/{contract.pk}/team/")
    cur.select_option("[data-testid=comment-about]", label="node verify_owner")
    cur.fill("[data-testid=comment-body]", "@ann2 should this be explicit?")
    submit(cur, 'button:has-text("Comment")')
    cur.goto(f"{live_server.url}/c/{contract.pk}/adjudicate/")
    submit(cur, "[data-testid=adjudication-audited]")
    assert "1 comment(s) are open" in cur.content()
    cur.goto(f"{live_server.url}/c/{contract.pk}/team/")
    shot(cur, "team-page")
    submit(cur, '[data-testid=comment] button:has-text("Resolve")')
    cur.goto(f"{live_server.url}/c/{contract.pk}/adjudicate/")
    submit(cur, "[data-testid=adjudication-audited]")
    contract.refresh_from_db()
    assert contract.status == "audited"
    assert contract.nodes.get(node_id="lookup_order").label == "Find the order by its number"
    assert cur.locator("[data-testid=kappa]").inner_text() != "—"
