"""Two annotators audit one contract blind, a curator adjudicates it, a comment holds
the audit back until it is resolved."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit import services
from audit.models import AnnotatorDecision
from browser.conftest import PASSWORD

pytestmark = [pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[2]


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


MOVED_ON = """n => document.querySelector('#ws-detail').dataset.node !== n
    || document.querySelector('[data-testid=my-percent]').textContent === '100%'"""


def annotate(page, rejected=(), edits=None):
    """Decide every node in the blind workspace with the keys: c / r, and e for an edit
    (then p to the next undecided node)."""
    edits = edits or {}
    assert page.locator("#ws-text .hl").count() > 0  # the evidence is highlighted
    page.locator("#ws-outline li.ol-item a").first.click()
    page.wait_for_selector("#ws-detail[data-node]")
    for _ in range(40):
        if page.locator("[data-testid=my-percent]").inner_text() == "100%":
            return
        node = page.locator("#ws-detail").get_attribute("data-node")
        if node in edits:
            page.keyboard.press("e")
            page.locator("[data-testid=blind-edit-form] input[name=label]").fill(edits[node])
            page.locator('[data-testid=blind-edit-form] button:has-text("Save edit")').click()
            page.wait_for_selector(f'#ws-outline li[data-node="{node}"][data-status="edited"]')
            page.keyboard.press("p")
        else:
            status = "rejected" if node in rejected else "confirmed"
            page.keyboard.press(status[0])
            page.wait_for_selector(f'#ws-outline li[data-node="{node}"][data-status="{status}"]')
        page.wait_for_function(MOVED_ON, arg=node)
    raise AssertionError("the blind annotation did not reach 100%")


def add_evidence_with_the_key(page, node_id, from_node):
    """Select the text of ``from_node``'s highlight and press a on ``node_id``."""
    page.locator(f'#ws-outline li[data-node="{node_id}"] a').click()
    page.wait_for_selector(f'#ws-detail[data-node="{node_id}"]')
    page.evaluate(
        """id => {
            const mark = document.querySelector(`#ws-text [data-p="${id}"]`);
            const range = document.createRange();
            range.selectNodeContents(mark);
            const sel = window.getSelection();
            sel.removeAllRanges();
            sel.addRange(range);
        }""",
        from_node,
    )
    page.keyboard.press("a")
    page.wait_for_selector(f'#ws-outline li[data-node="{node_id}"][data-status="edited"]')


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
    annotate(ann1, edits={"lookup_order": "Find the order by its number"})
    assert ann1.locator("[data-testid=my-percent]").inner_text() == "100%"
    add_evidence_with_the_key(ann1, "verify_owner", "check_window")
    mine = AnnotatorDecision.objects.get(node__node_id="verify_owner", user=users["ann1"])
    assert mine.fields == {"evidence": [[149, 230], [234, 302]]}
    ann1.goto(f"{live_server.url}/c/{contract.pk}/annotate/?node=lookup_order")
    shot(ann1, "team-annotate")
    ann1.goto(f"{live_server.url}/queue/")
    assert ann1.locator("[data-testid=queue-percent]").inner_text() == "100%"
    shot(ann1, "team-queue")

    ann2 = as_user(browser, live_server, "ann2")
    ann2.goto(f"{live_server.url}/c/{contract.pk}/annotate/")
    assert "Find the order by its number" not in ann2.content()
    annotate(ann2, rejected={"approve_refund"})
    for path in ("team/", "", "export.json", "agreement.json"):
        body = ann2.request.get(f"{live_server.url}/c/{contract.pk}/{path}").text()
        assert "Find the order by its number" not in body, path

    cur = as_user(browser, live_server, "cur")
    cur.goto(f"{live_server.url}/c/{contract.pk}/adjudicate/")
    submit(cur, "[data-testid=start-adjudication]")
    rows = cur.locator("[data-testid=adjudication-row]")
    assert rows.first.get_attribute("data-state") == "path-changing"
    approve = cur.locator('[data-testid=adjudication-row][data-node="approve_refund"]')
    assert approve.locator("[data-testid=path-changing-badge]").is_visible()
    verify = cur.locator('[data-node="verify_owner"] [data-testid=evidence-source]')
    assert verify.locator("mark.ev-a0").count() > verify.locator("mark.ev-a1").count()
    assert "yet κ is" in cur.locator("[data-testid=kappa-note]").inner_text()
    shot(cur, "team-adjudicate")
    for node_id in ("approve_refund", "lookup_order", "verify_owner"):  # answered in place
        cur.locator(f'[data-node="{node_id}"] [data-testid=pick-ann1]').click()
        cur.wait_for_selector(f'[data-node="{node_id}"] [data-testid=curated]')

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


def test_evidence_added_with_the_key_on_a_stale_copy_is_refused_in_the_panel(
    browser, live_server, people
):
    """The a key sends the version of the copy the panel shows: after another tab
    changed the copy, it is answered 409 in the panel and the copy keeps its change."""
    users, contract = people
    boss = users["boss"]
    services.assignment_create(
        project=contract.project, contract=contract, user=users["ann1"], by=boss, role="annotator"
    )
    services.double_annotation_set(contract=contract, by=boss, enabled=True)
    ann1 = as_user(browser, live_server, "ann1")
    ann1.goto(f"{live_server.url}/c/{contract.pk}/annotate/")
    add_evidence_with_the_key(ann1, "verify_owner", "lookup_order")
    node = contract.nodes.get(node_id="verify_owner")
    mine = AnnotatorDecision.objects.get(node=node, user=users["ann1"])
    assert ann1.locator("#ws-detail").get_attribute("data-copy-version") == str(mine.version)
    # another tab of ann1 confirms the node: the copy moves on under this panel
    services.decision_record(
        node=node, user=users["ann1"], action="confirm", expected_version=mine.version
    )
    mine.refresh_from_db()
    ann1.evaluate(
        """() => {
            const mark = document.querySelector('#ws-text [data-p="approve_refund"]');
            const range = document.createRange();
            range.selectNodeContents(mark);
            window.getSelection().removeAllRanges();
            window.getSelection().addRange(range);
        }"""
    )
    ann1.keyboard.press("a")
    error = ann1.locator("#ws-detail [data-testid=error]")
    error.wait_for()
    assert "changed meanwhile" in error.inner_text()
    assert ann1.locator("#ws-detail").get_attribute("data-copy-version") == str(mine.version)
    after = AnnotatorDecision.objects.get(node=node, user=users["ann1"])
    assert (after.action, after.version) == ("confirm", mine.version)
