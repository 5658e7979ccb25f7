"""Keyboard review under latency never acts on a node other than the one on screen;
bulk decisions on the filtered outline move only the statuses they say and undo in one
step."""

from __future__ import annotations

import time

import pytest

from audit.models import AuditRecord
from audit.services.reviews import nodes_review
from browser.test_workspace import PASSWORD, draft  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser]
LATENCY = 0.25

# Each review POST is logged with the node the panel showed when it was sent.
WATCH = """() => {
  window.__sent = [];
  document.body.addEventListener("htmx:beforeRequest", (e) => {
    const m = e.detail.requestConfig.path.match(/nodes\\/(\\d+)\\/review/);
    if (m) window.__sent.push([+m[1], +document.querySelector("#ws-detail").dataset.pk]);
  });
}"""
# Keys typed by the page itself at a fixed pace, so they keep coming while the test's
# thread holds a request back in the route handler.
TYPE = """([keys, gap]) => {
  keys.forEach((key, i) => setTimeout(() => document.body.dispatchEvent(
    new KeyboardEvent("keydown", {key, bubbles: true, cancelable: true})), i * gap));
}"""


def _open(live_server, page, contract):
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "ann")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/c/{contract.pk}/")
    page.wait_for_selector("#ws-text")
    page.evaluate(WATCH)


def _slow(page):
    def delay(route):
        if route.request.resource_type in ("xhr", "fetch"):
            time.sleep(LATENCY)
        route.continue_()

    page.route("**/c/**", delay)


def _settle(page, posts):
    """Wait for ``posts`` review POSTs (in total) and for the last answer to land."""
    page.wait_for_function(f"() => window.__sent.length >= {posts}", timeout=30_000)
    page.wait_for_function("() => !document.querySelector('.htmx-request')", timeout=30_000)
    page.wait_for_timeout(300)
    page.wait_for_function("() => !document.querySelector('.htmx-request')", timeout=30_000)


def _label(page, selector: str) -> str:
    """The words of an element, one space apart (a button's parts are flex items)."""
    return " ".join(page.inner_text(selector).split())


def _statuses(contract):
    return dict(contract.nodes.values_list("node_id", "review_status"))


def test_rapid_keys_under_latency_act_only_on_the_node_shown(live_server, page, draft):  # noqa: F811
    _open(live_server, page, draft)
    page.keyboard.press("j")
    page.wait_for_selector("[data-testid=node-card]")
    first = page.get_attribute("#ws-detail", "data-node")
    _slow(page)
    page.evaluate(TYPE, [["r", "j", "c"], 50])
    _settle(page, 2)
    sent = page.evaluate("window.__sent")
    assert len(sent) == 2 and all(node == shown for node, shown in sent)
    after = _statuses(draft)
    assert after[first] == "rejected"
    confirmed = [k for k, v in after.items() if v == "confirmed"]
    assert len(confirmed) == 1 and confirmed[0] != first
    assert draft.nodes.get(pk=sent[1][0]).node_id == confirmed[0]


def test_p_c_three_times_confirms_three_nodes_with_and_without_latency(live_server, page, draft):  # noqa: F811
    _open(live_server, page, draft)
    page.evaluate(TYPE, [["p", "c", "p", "c", "p", "c"], 60])
    _settle(page, 3)
    assert list(_statuses(draft).values()).count("confirmed") == 3
    _slow(page)
    page.evaluate(TYPE, [["p", "c", "p", "c", "p", "c"], 60])
    _settle(page, 6)
    assert list(_statuses(draft).values()).count("confirmed") == 6
    sent = page.evaluate("window.__sent")
    assert len(sent) == 6 and all(node == shown for node, shown in sent)


def test_c_on_a_confirmed_node_says_so(live_server, page, draft):  # noqa: F811
    _open(live_server, page, draft)
    node = draft.nodes.order_by("position").first()
    node.review_status = "confirmed"
    node.save()
    page.goto(f"{live_server.url}/c/{draft.pk}/?node={node.node_id}")
    page.wait_for_selector("[data-testid=node-card]")
    page.keyboard.press("c")
    page.wait_for_selector("[data-testid=notice]:not([hidden])")
    assert "already confirmed" in page.inner_text("[data-testid=notice]")


def test_bulk_confirm_of_the_filtered_outline_and_one_undo(live_server, page, draft, shot):  # noqa: F811
    _open(live_server, page, draft)
    page.select_option("#outline-status", "proposed")
    page.select_option("#outline-type", "action")
    shown = page.eval_on_selector_all(
        "#ws-outline li.ol-item:not([hidden])", "els => els.map(e => e.dataset.node)"
    )
    actions = set(draft.nodes.filter(type="action").values_list("node_id", flat=True))
    assert shown and set(shown) == actions
    assert _label(page, "[data-testid=bulk-confirm]") == f"Confirm {len(shown)} proposed"
    assert _label(page, "[data-testid=bulk-left]") == ""
    page.click("[data-testid=bulk-confirm]")
    page.wait_for_selector("[data-testid=undo]:not([hidden])")
    statuses = _statuses(draft)
    assert {statuses[n] for n in shown} == {"confirmed"}
    assert {v for k, v in statuses.items() if k not in shown} == {"proposed"}
    records = AuditRecord.objects.filter(contract=draft, action="confirm")
    assert sorted(records.values_list("object_id", flat=True)) == sorted(shown)
    # the confirmed rows left the "proposed" filter at once
    page.wait_for_function("() => !document.querySelector('#ws-outline li.ol-item:not([hidden])')")
    shot(page, "bulk-review")
    page.keyboard.press("Control+z")
    page.wait_for_selector("[data-testid=undo][hidden]", state="attached")
    assert set(_statuses(draft).values()) == {"proposed"}
    assert AuditRecord.objects.filter(contract=draft, action="undo").count() == len(shown)
    assert page.locator("#ws-outline li.ol-item:not([hidden])").count() == len(shown)


def test_bulk_buttons_leave_a_rejection_alone_unless_rejected_is_picked(
    live_server,
    page,
    draft,  # noqa: F811
    django_user_model,
):
    nodes = list(draft.nodes.order_by("position"))
    rejected = nodes[1]
    nodes_review(
        contract=draft,
        user=django_user_model.objects.get(username="ann"),
        action="reject",
        nodes=[(rejected.pk, rejected.version)],
        from_states=["proposed"],
    )
    _open(live_server, page, draft)
    # any status: the buttons move the proposed nodes and say what they leave
    proposed = len(nodes) - 1
    assert _label(page, "[data-testid=bulk-confirm]") == f"Confirm {proposed} proposed"
    assert _label(page, "[data-testid=bulk-reject]") == f"Reject {proposed} proposed"
    assert _label(page, "[data-testid=bulk-left]") == "1 rejected left as they are"
    # picking "rejected" in the filter is what lets a bulk confirm move a rejection
    page.select_option("#outline-status", "rejected")
    assert _label(page, "[data-testid=bulk-confirm]") == "Confirm 1 rejected"
    assert page.is_disabled("[data-testid=bulk-reject]")
    page.click("[data-testid=bulk-confirm]")
    page.wait_for_selector("[data-testid=undo]:not([hidden])")
    statuses = _statuses(draft)
    assert statuses[rejected.node_id] == "confirmed"
    assert {v for k, v in statuses.items() if k != rejected.node_id} == {"proposed"}
    assert _label(page, "[data-testid=review-summary]") == "Confirmed 1 rejected."
    page.keyboard.press("u")
    page.wait_for_selector("[data-testid=undo][hidden]", state="attached")
    assert _statuses(draft)[rejected.node_id] == "rejected"
