"""The enactment loop in the browser: a reviewer pairs a step the matcher left unpaired
(a token-mode run: semantic mode pairs even this loosely worded check, with doubt), the
corrected report becomes the run's in place (no reload), with the automatic one kept, and the next semantic run of a
similar trace pairs that step on its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit import enqueue, services
from audit.models import Enactment, Membership, Project, Run, RunCorrection
from audit.services import runs

pytestmark = [pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "pw-for-browser-1"
TRACE = """[user] Hi, I'd like a refund for order {order} please, it arrived {days} days ago.
[tool] lookup_order(order_id="{order}")
[result] {{"order_id": "{order}", "email": "sam@example.com", "total": 59.00}}
[assistant] The email on order {order} matches the one you wrote from, so I can confirm the purchase is yours.
[assistant] {Days} days is nothing, we are good there.
[tool] issue_refund(order_id="{order}", amount=59.00, to="original_payment")
[result] {{"refund_id": "RF-88", "status": "approved"}}
[assistant] Your refund of $59.00 is approved and should arrive within 5 business days.
"""


@pytest.fixture
def setup(django_user_model, monkeypatch):
    user = django_user_model.objects.create_user(username="rev", password=PASSWORD)
    project = Project.objects.create(name="Demo", slug="demo")
    Membership.objects.create(project=project, user=user, role="reviewer")
    doc = json.loads((ROOT / "fixtures" / "demo" / "refund-mini.json").read_text())
    contract = services.contract_import(project=project, user=user, source=doc)
    services.contract_mark_audited(contract=contract, user=user)
    contract.refresh_from_db()
    monkeypatch.setattr(enqueue, "enqueue_run", lambda run_id: runs.run_execute(run_id=run_id))
    return user, contract


def _run(user, contract, order: str, days: str, mode: str = "semantic") -> Run:
    run, _ = services.run_create(
        contract=contract,
        user=user,
        query_key="q1",
        kind="text",
        data=TRACE.format(order=order, days=days, Days=days.capitalize()),
        source_kind="trace",
        mode=mode,
        extractor="behaviour",
    )
    run.refresh_from_db()
    assert run.status == "done", run.error
    return run


def _step(run: Run, words: str) -> str:
    text = run.overlay["trace"]["text"]
    return next(
        o["id"]
        for o in run.overlay["observed"]
        if any(words in text[s["start"] : s["end"]] for s in o["spans"])
    )


def test_a_pairing_corrected_in_the_browser_is_paired_by_the_next_run(live_server, page, setup):
    user, contract = setup
    first = _run(user, contract, "1042", "ten", mode="token")
    step = _step(first, "Ten days is nothing")
    assert step not in {a["observed"] for a in first.report["alignment"]}
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "rev")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/r/{first.pk}/")
    page.locator("[data-testid=run-correction] > summary").click()
    form = page.locator("[data-testid=pair-form]")
    form.locator("select[name=observed]").select_option(step)
    form.locator("select[name=expected]").select_option("check_window")
    form.locator("button[type=submit]").click()
    page.wait_for_selector("[data-testid=corrected-report]")
    assert page.inner_text("[data-testid=corrected-by]") == "rev"
    assert Enactment.objects.filter(node_id="check_window", run=first).exists()

    later = _run(user, contract, "2077", "twelve")
    paired = {a["expected"]: a["observed"] for a in later.report["alignment"]}
    assert paired.get("check_window") == _step(later, "Twelve days is nothing")
    page.goto(f"{live_server.url}/r/{later.pk}/")
    page.wait_for_selector("[data-testid=weak-total]")
    assert ("omission", "check_window") not in {
        (f["family"], f["location"]) for f in later.report["failures"]
    }


def _login(page, live_server, username: str = "rev") -> None:
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")


def _click_graph(page, element: str, along: float | None = None) -> None:
    """A real mouse click on a drawn node (a box: in its left padding, where no child or
    edge is drawn), or on an edge ``along`` its way from the source; the graph scrolled
    into the window and the element fitted into the graph's pane first."""
    page.locator(".ce-cy").scroll_into_view_if_needed()
    point = page.evaluate(
        """([id, along]) => {
            const view = window.ContractEvalOverlay.views[0];
            const cy = view.cy;
            const el = cy.getElementById(id);
            if (!el.length) return null;
            view.fit(el.isEdge() ? el.connectedNodes() : el);
            const box = cy.container().getBoundingClientRect();
            let p = el.renderedPosition ? el.renderedPosition() : null;
            if (el.isNode() && el.isParent()) {
                const bb = el.renderedBoundingBox({includeLabels: false});
                p = {x: bb.x1 + Math.max(3, 6 * cy.zoom()), y: (bb.y1 + bb.y2) / 2};
            }
            if (el.isEdge()) {
                const s = el.renderedSourceEndpoint(), t = el.renderedTargetEndpoint();
                p = {x: s.x + along * (t.x - s.x), y: s.y + along * (t.y - s.y)};
            }
            return {x: box.left + p.x, y: box.top + p.y};
        }""",
        [element, along],
    )
    assert point is not None, f"{element} is not drawn"
    page.mouse.click(point["x"], point["y"])


def test_a_reviewer_pairs_and_unpairs_by_clicking_in_the_graph(live_server, page, setup):
    user, contract = setup
    run = _run(user, contract, "1042", "ten", mode="token")
    step = _step(run, "Ten days is nothing")
    assert step not in {a["observed"] for a in run.report["alignment"]}
    blocked: list[str] = []
    page.on("console", lambda m: blocked.append(m.text) if "Content Security" in m.text else None)
    _login(page, live_server)
    page.goto(f"{live_server.url}/r/{run.pk}/")
    page.wait_for_selector("#overlay[data-rendered-nodes]")
    page.click("[data-testid=teach-toggle]")
    page.wait_for_selector("#overlay[data-teach-steps]")

    # the pane may still resize (and refit) just after pairing mode opens: a person whose
    # click landed beside the step clicks again once it has settled
    for _ in range(3):
        _click_graph(page, f"obs:{step}")
        if f"Step {step} chosen" in page.inner_text("[data-testid=teach-bar]"):
            break
        page.wait_for_timeout(300)
    assert f"Step {step} chosen" in page.inner_text("[data-testid=teach-bar]")
    _click_graph(page, "check_window")
    bar = page.inner_text("[data-testid=teach-bar]")
    assert f"Pair step {step} with obligation check_window?" in bar
    page.evaluate("window.__samePage = true")  # the correction re-renders in place
    page.click("[data-testid=teach-confirm]")
    page.wait_for_selector("[data-testid=corrected-report]")
    assert page.evaluate("window.__samePage") is True
    fix = RunCorrection.objects.filter(run=run).first()
    assert fix is not None and fix.reviewer == user
    assert fix.corrections["pair"] == [["check_window", step]]
    assert ("omission", "check_window") not in {
        (f["family"], f["location"]) for f in fix.report["failures"]
    }
    assert Enactment.objects.filter(node_id="check_window", run=run, step_id=step).exists()

    # the pairing just made is a line in the graph; clicking it unpairs
    page.wait_for_selector("#overlay[data-rendered-nodes]")
    page.click("[data-testid=teach-toggle]")
    page.wait_for_selector("#overlay[data-teach-steps]")
    _click_graph(page, "pair:check_window", along=0.15)
    assert f"Unpair step {step} from obligation check_window?" in page.inner_text(
        "[data-testid=teach-bar]"
    )
    page.click("[data-testid=teach-confirm]")
    page.wait_for_selector(
        f"[data-testid=unpair-form][data-expected=check_window][data-observed={step}]",
        state="detached",
    )
    assert page.evaluate("window.__samePage") is True
    latest = RunCorrection.objects.filter(run=run).first()
    assert latest is not None and latest.pk != fix.pk
    assert ["check_window", step] in latest.corrections["unpair"]
    assert blocked == []


def test_many_corrections_at_once_change_the_headline_in_place_and_revert(
    live_server, page, setup, shot
):
    user, contract = setup
    run = _run(user, contract, "1042", "ten", mode="token")
    step = _step(run, "Ten days is nothing")
    paired = {a["expected"]: a["observed"] for a in run.report["alignment"]}
    chatter = paired["verify_owner"]
    _login(page, live_server)
    page.goto(f"{live_server.url}/r/{run.pk}/")
    page.wait_for_selector("#overlay[data-rendered-nodes]")
    before = page.inner_text("[data-testid=run-verdict]")
    page.evaluate("window.__samePage = true")
    page.locator("[data-testid=run-correction] > summary").click()
    form = page.locator("[data-testid=correct-form]")
    form.locator(f"input[name='pair-{step}']").fill("check_window")
    form.locator(f"input[name=commentary][value='{chatter}']").check()
    form.locator("button[type=submit]").click()
    page.wait_for_selector("[data-testid=run-corrected]")
    assert page.evaluate("window.__samePage") is True
    page.wait_for_selector("#overlay[data-rendered-nodes]")  # the graph is drawn again
    run.refresh_from_db()
    assert run.is_corrected and ("omission", "verify_owner") in {
        (f["family"], f["location"]) for f in run.report["failures"]
    }
    assert f"{run.failure_count} failure" in page.inner_text("[data-testid=run-verdict]")
    page.locator("[data-testid=corrected-report]").scroll_into_view_if_needed()
    shot(page, "review-corrections")
    page.click("[data-testid=revert-form] button")
    page.wait_for_selector("[data-testid=run-corrected]", state="detached")
    assert page.inner_text("[data-testid=run-verdict]") == before
    assert page.evaluate("window.__samePage") is True
    run.refresh_from_db()
    assert not run.is_corrected


def test_the_graph_takes_the_whole_window_and_gives_it_back(live_server, page, setup):
    user, contract = setup
    run = _run(user, contract, "1042", "ten", mode="token")
    page.set_viewport_size({"width": 1024, "height": 768})
    _login(page, live_server)
    page.goto(f"{live_server.url}/r/{run.pk}/")
    page.wait_for_selector("#overlay[data-rendered-nodes]")
    before = page.locator("#overlay .ce-cy").bounding_box()
    page.click("[data-testid=overlay-maximise]")
    box = page.locator("#overlay").bounding_box()
    assert box and box["width"] >= 1000 and box["height"] >= 740
    after = page.locator("#overlay .ce-cy").bounding_box()
    assert before and after and after["height"] > before["height"]
    assert page.get_attribute("[data-testid=overlay-maximise]", "aria-pressed") == "true"
    page.keyboard.press("Escape")
    assert page.get_attribute("[data-testid=overlay-maximise]", "aria-pressed") == "false"
    restored = page.locator("#overlay").bounding_box()
    assert restored and restored["height"] < 740


def test_the_graph_offers_no_pairing_to_an_annotator(live_server, page, setup, django_user_model):
    user, contract = setup
    run = _run(user, contract, "1042", "ten")
    other = django_user_model.objects.create_user(username="ann", password=PASSWORD)
    Membership.objects.create(project=contract.project, user=other, role="annotator")
    _login(page, live_server, "ann")
    page.goto(f"{live_server.url}/r/{run.pk}/")
    page.wait_for_selector("#overlay[data-rendered-nodes]")
    assert page.locator("[data-testid=teach-toggle]").count() == 0
    assert page.locator("[data-testid=pair-form]").count() == 0
