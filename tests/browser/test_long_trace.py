"""The run page of the longest trace the input limits accept, in the browser: the trace
comes in parts, the text view and the overlay's trace pane scroll to its last line,
and a failure whose evidence is in a part not loaded yet loads it and shows it."""

from __future__ import annotations

import pytest
from web.sweep import trace_of

from audit import enqueue
from audit.services import runs
from browser.conftest import log_in, reviewer_with_refund_mini
from matching.input_limits import Limits

pytestmark = [pytest.mark.browser]
PASSWORD = "pw-for-browser-long"


@pytest.fixture
def long_run(django_user_model, monkeypatch):
    monkeypatch.setattr(enqueue, "enqueue_run", lambda run_id: None)
    user, contract = reviewer_with_refund_mini(django_user_model, "rev-long", PASSWORD)
    limits = Limits()
    text = trace_of(limits.trace_bytes, limits.trace_events)
    run, _ = runs.run_create(contract=contract, user=user, query_key="q1", kind="text", data=text)
    return runs.run_execute(run_id=run.pk), text


# The pane's text without the step badges the overlay draws at each step's start.
WITHOUT_BADGES = """el => Array.from(el.querySelectorAll('.ce-trace-part'), (part) => {
  const copy = part.cloneNode(true);
  copy.querySelectorAll('.ce-badge').forEach((b) => b.remove());
  return copy.textContent;
}).join('')"""

# Whether the last characters of the trace in the box are drawn inside the box's view.
LAST_CHARACTERS_SHOWN = """box => {
  const parts = box.querySelectorAll('.trace-part, .ce-trace-part');
  const walk = document.createTreeWalker(parts[parts.length - 1], NodeFilter.SHOW_TEXT);
  let last = null;
  while (walk.nextNode()) if (walk.currentNode.data.trim()) last = walk.currentNode;
  const range = document.createRange();
  range.setStart(last, Math.max(0, last.data.trimEnd().length - 10));
  range.setEnd(last, last.data.trimEnd().length);
  const r = range.getBoundingClientRect();
  const b = box.getBoundingClientRect();
  return r.height > 0 && r.top >= b.top && r.bottom <= b.bottom + 1;
}"""


def _open(page, live_server, run):
    log_in(page, live_server.url, "rev-long", PASSWORD)
    page.goto(f"{live_server.url}/r/{run.pk}/")
    page.wait_for_selector(".ce-text--trace .ce-trace-part")  # the overlay, fetched


def _scroll_to_the_end(page, box: str, more: str) -> None:
    """Scroll ``box`` down until no ``more`` link is left in it."""
    for _ in range(60):
        # a reader's wheel: up a little, then down to the end, so the link comes into view
        page.locator(box).evaluate(
            "el => { el.scrollTop = el.scrollHeight - 2 * el.clientHeight; }"
        )
        page.locator(box).evaluate("el => { el.scrollTop = el.scrollHeight; }")
        page.wait_for_timeout(150)
        if page.locator(f"{box} {more}").count() == 0:
            break
    else:
        count = page.locator(f"{box} .trace-part, {box} .ce-trace-part").count()
        raise AssertionError(f"{box} still loading after 60 scrolls ({count} parts)")
    for _ in range(3):  # the parts it passed are laid out as they show: their height moves
        page.locator(box).evaluate("el => { el.scrollTop = el.scrollHeight; }")
        page.wait_for_timeout(100)


def test_both_views_of_a_long_trace_scroll_to_its_last_line(live_server, page, long_run):
    run, text = long_run
    _open(page, live_server, run)
    assert page.locator("pre#run-trace .trace-part").count() == 1  # the first part only

    # the text view: htmx loads each next part as its link comes into view
    page.click("[data-testid=run-text] summary")
    page.locator("pre#run-trace").evaluate("el => el.scrollIntoView({block: 'end'})")
    _scroll_to_the_end(page, "pre#run-trace", "a.trace-more")
    assert "".join(page.locator("pre#run-trace .trace-part").all_text_contents()) == text
    assert page.locator("pre#run-trace").evaluate(LAST_CHARACTERS_SHOWN)

    # the overlay's pane: the parts the text view loaded, and then its own end
    page.click("[data-testid=run-text] summary")
    page.locator(".ce-text--trace").evaluate("el => el.scrollIntoView({block: 'end'})")
    pane = ".ce-text--trace"
    _scroll_to_the_end(page, pane, "[data-testid=overlay-trace-more]")
    assert page.locator(pane).evaluate(WITHOUT_BADGES) == text
    assert page.locator(f"{pane} .ce-trace-part").count() > 2  # a block a part
    assert page.locator(pane).evaluate(LAST_CHARACTERS_SHOWN)


def test_a_failure_whose_evidence_is_in_a_late_part_loads_it_and_shows_it(
    live_server, page, long_run
):
    run, _ = long_run
    last = run.overlay["observed"][-1]
    index = next(i for i, f in enumerate(run.overlay["failures"]) if last["id"] in f["observed"])
    _open(page, live_server, run)
    pane = page.locator(".ce-text--trace")
    assert pane.locator(".ce-trace-part").count() == 1  # not loaded yet
    page.locator(f".ce-side button.ce-fail[data-failure='{index}']").click()
    selected = pane.locator("mark.is-selected").first
    selected.wait_for(state="visible", timeout=20_000)
    assert f"observed:{last['id']}" in (selected.get_attribute("data-owners") or "").split()
    # scrolled to it inside the pane
    box, mark = pane.bounding_box(), selected.bounding_box()
    assert box and mark and box["y"] <= mark["y"] <= box["y"] + box["height"], (box, mark)
