"""An annotator reviews proposals in the browser, with the keyboard and a text selection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit import services
from audit.models import Membership, Project
from matching.propose import propose_heuristic

pytestmark = [pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "pw-for-browser-1"
FINISH = 'Finish with a JSON object with the keys "order_id" and "resolution".'

SELECT_TEXT = """(needle) => {
  const text = document.getElementById("ws-text");
  const walker = document.createTreeWalker(text, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode())) {
    const at = node.data.indexOf(needle);
    if (at >= 0) {
      const range = document.createRange();
      range.setStart(node, at);
      range.setEnd(node, at + needle.length);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      document.dispatchEvent(new MouseEvent("mouseup", {bubbles: true}));
      return true;
    }
  }
  return false;
}"""


@pytest.fixture
def draft(django_user_model):
    user = django_user_model.objects.create_user(username="ann", password=PASSWORD)
    project = Project.objects.create(name="Demo", slug="demo")
    Membership.objects.create(project=project, user=user, role="annotator")
    text = json.loads((ROOT / "fixtures" / "demo" / "refund-mini.json").read_text())["artifact"][
        "text"
    ]
    contract = services.contract_create(
        project=project, user=user, key="refunds", title="Refunds and returns", text=text
    )
    proposals = propose_heuristic(text)
    # leave the last line unannotated, so that a node made from it raises the coverage
    proposals.nodes = [n for n in proposals.nodes if n["evidence"][0]["quote"] != FINISH]
    services.contract_apply_proposals(contract=contract, user=user, proposals=proposals)
    return contract


def test_annotator_confirms_with_the_keyboard_and_adds_a_node_from_a_selection(
    live_server, page, draft, shot
):
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "ann")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.click("text=Refunds and returns")
    page.wait_for_selector("#ws-text")
    coverage_before = page.inner_text("[data-testid=coverage]")

    # j selects the first node; c confirms it in place
    page.keyboard.press("j")
    page.wait_for_selector("[data-testid=node-card]")
    assert page.inner_text("[data-testid=node-status]").lower() == "proposed"
    first = page.get_attribute("#ws-detail", "data-node")
    assert page.locator(f'#ws-text [data-n~="{first}"].is-sel').count() >= 1
    # c confirms it and opens the next node to review
    page.keyboard.press("c")
    page.wait_for_function(
        f"() => document.querySelector('#ws-detail').dataset.node !== {json.dumps(first)}"
    )
    assert draft.nodes.get(node_id=first).review_status == "confirmed"
    assert "s-confirmed" in page.get_attribute(f'#ws-outline li[data-node="{first}"]', "class")
    second = page.get_attribute("#ws-detail", "data-node")
    assert page.inner_text("[data-testid=node-status]").lower() == "proposed"
    page.wait_for_selector(f'#ws-text [data-n~="{second}"].is-sel')
    shot(page, "workspace")

    # at 1024 x 768 the outline, the text and the node panel still sit side by side
    page.set_viewport_size({"width": 1024, "height": 768})
    page.wait_for_timeout(300)
    assert page.evaluate("() => document.scrollingElement.scrollWidth <= innerWidth")
    for pane in ("#ws-outline", "#ws-text", "#ws-detail"):
        box = page.locator(pane).bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 1024 + 0.5, pane
        assert box["y"] < 768, pane
    shot(page, "workspace-1024")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.wait_for_timeout(300)

    # a text selection offers "new node"; n opens the form with the quote
    assert page.evaluate(SELECT_TEXT, FINISH)
    page.wait_for_selector("#sel-toolbar:not([hidden])")
    shot(page, "selection")
    page.keyboard.press("n")
    page.wait_for_selector("[data-testid=node-form]")
    assert FINISH in page.inner_text("[data-testid=node-form] blockquote")
    page.select_option("[data-testid=node-form] select[name=type]", "output_requirement")
    shot(page, "new-node")
    page.click("[data-testid=node-form] button[type=submit]")
    page.wait_for_selector("[data-testid=node-card]")
    assert page.inner_text(".node-label").startswith("Finish with a JSON object")

    # the audit panel followed the change
    page.wait_for_function(
        f"() => document.querySelector('[data-testid=coverage]').textContent !== "
        f"{json.dumps(coverage_before)}"
    )
    assert float(page.inner_text("[data-testid=coverage]").rstrip("%")) > float(
        coverage_before.rstrip("%")
    )
    node = draft.nodes.get(label__startswith="Finish with a JSON")
    assert node.type == "output_requirement" and node.review_status == "confirmed"

    page.keyboard.press("?")
    page.wait_for_selector("#help:not([hidden])")
    shot(page, "help")


def test_query_text_typed_after_the_id_survives_and_the_preview_follows_outcomes(
    live_server, page, draft
):
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "ann")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/c/{draft.pk}/")
    page.click("[data-tab=queries]")
    # leaving the id field (a change event) must not re-render the form under the text
    page.fill("#ws-queries input[name=query_id]", "q9")
    page.fill("#ws-queries textarea[name=text]", "Refund order 1042 <script>x</script>")
    page.wait_for_timeout(500)
    assert page.input_value("#ws-queries textarea[name=text]").startswith("Refund order 1042")
    # choosing an outcome still refreshes the preview, keeping what was typed
    select = page.locator("#ws-queries select[name^='branch:']").first
    select.select_option(index=1)
    page.wait_for_selector("[data-testid=query-preview]")
    assert page.input_value("#ws-queries textarea[name=text]").startswith("Refund order 1042")
    page.click("#ws-queries button[type=submit]")
    page.wait_for_selector("#ws-queries .alert.ok")
    assert draft.queries.get(query_id="q9").text == "Refund order 1042 <script>x</script>"
