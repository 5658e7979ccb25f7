"""The verdict bar at the widths reviewers use: a note field wide enough to write in,
beside (not under) its buttons, and a recorded note shown whole."""

from __future__ import annotations

import pytest

from audit import enqueue
from audit.services import runs
from browser.conftest import log_in, reviewer_with_refund_mini

pytestmark = [pytest.mark.browser]
PASSWORD = "pw-for-browser-2"
TRACE = (
    "[user] My order 1042 arrived broken, I want a refund.\n"
    "[assistant] I looked up order 1042 and issued a refund to your original payment.\n"
)
NOTE = (
    "The refund was issued before the ownership check: the email on the order was never"
    " asked for, which the policy requires before any money moves. Second paragraph of"
    " the note, so that a long note is seen whole."
)


@pytest.fixture
def two_runs(django_user_model, monkeypatch):
    monkeypatch.setattr(enqueue, "enqueue_run", lambda run_id: None)
    user, contract = reviewer_with_refund_mini(django_user_model, "rev2", PASSWORD)
    made = []
    for k in range(2):
        run, _ = runs.run_create(
            contract=contract, user=user, query_key="q1", kind="text", data=TRACE + " " * k
        )
        made.append(runs.run_execute(run_id=run.pk))
    return made


@pytest.mark.parametrize("width", [1024, 1440])
def test_the_note_field_is_wide_and_clear_of_the_buttons(live_server, page, two_runs, width):
    page.set_viewport_size({"width": width, "height": 800})
    log_in(page, live_server.url, "rev2", PASSWORD)
    page.goto(f"{live_server.url}/r/{two_runs[0].pk}/")
    page.wait_for_selector("[data-testid=next-unreviewed]")  # the case that squeezed it
    note = page.locator("textarea[name=note]").bounding_box()
    record = page.locator("#verdicts button[type=submit]").bounding_box()
    following = page.locator("[data-testid=next-unreviewed]").bounding_box()
    assert note and record and following
    assert note["width"] >= 240, note
    for button in (record, following):
        apart_x = (
            note["x"] + note["width"] <= button["x"] or button["x"] + button["width"] <= note["x"]
        )
        apart_y = (
            note["y"] + note["height"] <= button["y"] or button["y"] + button["height"] <= note["y"]
        )
        assert apart_x or apart_y, (note, button)

    page.check("input[name=agrees][value=no]")
    page.fill("textarea[name=note]", NOTE)
    page.click("#verdicts button[type=submit]")
    page.wait_for_selector("[data-testid=verdict-row]")
    shown = page.locator("[data-testid=verdict-row] p")
    assert shown.inner_text().replace("\n", " ") == NOTE
    # the whole note is on screen, not clipped by the bar's history box
    clipped = page.evaluate(
        "() => { const h = document.querySelector('#verdicts .verdict-history');"
        " return h.scrollHeight > h.clientHeight + 1; }"
    )
    assert not clipped
