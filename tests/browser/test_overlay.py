"""The run overlay in headless Chromium (static/js/overlay.js on the harness page of
tests/browser/overlay_harness): renders without console errors, draws every node, links a
clicked node to its source span and its trace evidence (and back), keeps user text as text,
and lays out a 300-node expected graph. Saves docs/img/overlay-refund-mini.png and
docs/img/overlay-300.png.

Needs /usr/bin/chromium (never downloaded) and the vendored libraries (``make static``).
Skipped without them, unless CONTRACTEVAL_REQUIRE_SERVICES=1, where that is a failure.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .overlay_harness.harness import XSS, build_payloads, serve

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
VENDOR = ROOT / "static" / "vendor"
SHOTS = ROOT / "docs" / "img"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _unavailable(reason: str) -> None:
    if os.environ.get("CONTRACTEVAL_REQUIRE_SERVICES") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def payloads(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("overlay-payloads")
    return folder, build_payloads(folder)


@pytest.fixture(scope="module")
def base_url(payloads: tuple[Path, dict[str, Any]]) -> Iterator[str]:
    with serve(payloads[0]) as url:
        yield url


@pytest.fixture(scope="module")
def chromium(browser: Any) -> Any:
    """The session's Chromium (tests/browser/conftest.py): one sync Playwright per process,
    since a second one would start inside the first one's event loop."""
    missing = [
        n
        for n in ("cytoscape.min.js", "dagre.min.js", "cytoscape-dagre.js")
        if not (VENDOR / n).exists()
    ]
    if missing:
        _unavailable(f"static/vendor lacks {', '.join(missing)}: run `make static`")
    return browser


class Page:
    """A page on the harness that records console errors and page errors."""

    def __init__(self, browser: Any, base_url: str) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 900})
        self.base_url = base_url
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def open(self, name: str, **params: str) -> Any:
        query = "".join(f"&{k}={v}" for k, v in params.items())
        self.page.goto(f"{self.base_url}/?p={name}{query}")
        self.page.wait_for_selector("body[data-ready]", timeout=30_000)
        assert self.page.evaluate("document.body.dataset.ready") == "1", self.page.evaluate(
            "document.body.dataset.error"
        )
        return self.page

    def root_attr(self, name: str) -> str | None:
        return self.page.evaluate(f"document.getElementById('overlay').dataset.{name}")

    def click_node(self, node_id: str) -> None:
        """A real mouse click on the node's drawn position."""
        point = self.page.evaluate(
            """(id) => {
                const cy = window.overlay.cy;
                const n = cy.getElementById(id);
                const box = cy.container().getBoundingClientRect();
                const p = n.renderedPosition();
                return {x: box.left + p.x, y: box.top + p.y};
            }""",
            node_id,
        )
        self.page.mouse.click(point["x"], point["y"])

    def close(self) -> None:
        self.page.close()


@pytest.fixture
def view(chromium: Any, base_url: str) -> Iterator[Page]:
    p = Page(chromium, base_url)
    yield p
    p.close()


def test_refund_mini_renders_every_node_and_links_node_source_and_trace(
    view: Page, payloads: tuple[Path, dict[str, Any]]
) -> None:
    payload = payloads[1]["refund-mini"]
    pg = view.open("refund-mini")
    assert view.root_attr("renderedNodes") == str(len(payload["nodes"])) == "11"
    assert view.root_attr("layout") == "nested-dagre"
    # 3 failures listed, the extra action beside the graph, the ordering edge drawn red
    assert pg.locator(".ce-fail").count() == len(payload["failures"]) == 3
    assert pg.locator(".ce-extra[data-observed='x1']").count() == 1
    red = pg.evaluate("window.overlay.cy.edges('.violation').map(e => e.data('eid'))")
    assert red == ["verify_owner->approve_refund"]

    # clicking a graph node highlights its source span and its trace evidence
    view.click_node("verify_owner")
    assert view.root_attr("selected") == "node:verify_owner"
    art = payload["artifact"]["text"]
    node = next(n for n in payload["nodes"] if n["id"] == "verify_owner")
    (span,) = node["spans"]
    selected = pg.locator(".ce-text--artifact mark.is-selected")
    assert selected.count() >= 1
    assert "".join(selected.all_text_contents()) == art[span["start"] : span["end"]]
    trace = pg.locator(".ce-text--trace mark.is-selected")
    assert "The email on order 1042 matches" in "".join(trace.all_text_contents())
    assert pg.locator(".ce-details").inner_text().count("Verify the purchase belongs") == 1

    # and back: clicking a trace highlight selects the paired graph node
    pg.locator(".ce-text--trace mark[data-owner='observed:o1']").first.click()
    assert view.root_attr("selected") == "observed:o1"
    assert pg.evaluate("window.overlay.cy.getElementById('lookup_order').hasClass('sel')")

    # a failure selects its place in the graph
    pg.locator(".ce-fail[data-failure='0']").click()
    assert pg.evaluate("window.overlay.cy.edges('.sel').map(e => e.data('eid'))") == [
        "verify_owner->approve_refund"
    ]
    pg.locator(".ce-fail[data-failure='1']").click()
    assert pg.locator(".ce-text--trace mark.is-selected").first.inner_text().startswith("x1")

    # metrics shown as in the payload
    recall = pg.locator(".ce-metric[data-metric='observed_precision'] dd").inner_text()
    assert recall == f"{round(payload['metrics']['observed_precision'] * 1000) / 10}%"
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.locator(".ce-fail[data-failure='0']").click()
    pg.mouse.move(5, 5)
    pg.wait_for_timeout(400)
    pg.screenshot(path=str(SHOTS / "overlay-refund-mini.png"))
    assert view.errors == []


def test_wrong_branch_and_clean_variants_render(view: Page) -> None:
    pg = view.open("refund-wrong-branch")
    assert pg.evaluate(
        "window.overlay.cy.getElementById('check_window').hasClass('st-wrong_branch')"
    )
    assert pg.locator(".ce-extra[data-observed='w1']").count() == 1
    pg = view.open("refund-clean")
    assert pg.locator(".ce-verdict--clean").count() == 1
    assert pg.locator(".ce-fail").count() == 0
    assert view.errors == []


def test_user_text_renders_as_text_never_as_html(view: Page) -> None:
    dialogs: list[str] = []
    view.page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    pg = view.open("xss")
    art = pg.locator(".ce-text--artifact")
    assert XSS in art.inner_text()
    assert XSS in pg.locator(".ce-text--trace").inner_text()
    assert pg.locator(".ce-ov script").count() == 0
    assert pg.locator(".ce-ov img").count() == 0
    assert pg.locator(".ce-ov b").count() == 0
    # a node label with markup, selected: the details card shows it as text
    view.click_node("lookup_order")
    assert XSS in pg.locator(".ce-details").inner_text()
    pg.locator(".ce-extra[data-observed='x1']").click()
    assert XSS in pg.locator(".ce-details").inner_text()
    pg.wait_for_timeout(200)
    assert dialogs == []
    assert view.errors == []


def test_a_300_node_expected_graph_lays_out_without_errors(
    view: Page, payloads: tuple[Path, dict[str, Any]]
) -> None:
    payload = payloads[1]["big-300"]
    assert len(payload["nodes"]) >= 300
    pg = view.open("big-300", collapse="0")  # everything drawn
    assert view.root_attr("layout") == "nested-dagre"
    assert view.root_attr("renderedNodes") == str(len(payload["nodes"]))
    check = """() => {
        const cy = window.overlay.cy;
        const bad = cy.nodes().filter(n => !Number.isFinite(n.position('x')) || !Number.isFinite(n.position('y')));
        // leaves of different boxes never overlap
        const leaves = cy.nodes().filter(n => !n.isParent()).map(n => n.boundingBox({includeLabels: false}));
        let overlaps = 0;
        for (let i = 0; i < leaves.length; i++) for (let j = i + 1; j < leaves.length; j++) {
          const a = leaves[i], b = leaves[j];
          if (a.x1 < b.x2 - 1 && b.x1 < a.x2 - 1 && a.y1 < b.y2 - 1 && b.y1 < a.y2 - 1) overlaps++;
        }
        return {bad: bad.length, overlaps, zoom: cy.zoom(), extent: cy.elements().renderedBoundingBox()};
    }"""
    got = pg.evaluate(check)
    assert got["bad"] == 0 and got["overlaps"] == 0
    assert int(pg.evaluate("document.body.dataset.mountMs")) < 20_000

    # the default view collapses inactive subtrees; it still fits and selects
    pg = view.open("big-300")
    shown = int(view.root_attr("renderedNodes") or 0)
    hidden = sum(
        1
        for n in payload["nodes"]
        if not n["active"] and n["parent"] is not None and not _top_inactive(payload, n)
    )
    assert shown == len(payload["nodes"]) - hidden
    got = pg.evaluate(check)
    assert got["bad"] == 0 and got["overlaps"] == 0
    ext = got["extent"]
    box = pg.locator(".ce-cy").bounding_box()
    assert ext["w"] <= box["width"] + 2 and ext["h"] <= box["height"] + 2  # fits the view
    omitted = [f for f in payload["failures"] if f["family"] == "omission"]
    assert omitted
    # the screenshot: the whole graph, the first omission selected in place
    pg.evaluate("window.overlay.select('failure', '0', {keepView: true})")
    pg.mouse.move(5, 5)
    pg.wait_for_timeout(300)
    pg.screenshot(path=str(SHOTS / "overlay-300.png"))
    pg.locator(".ce-fail").first.click()
    target = omitted[0]["location"]
    assert pg.evaluate(f"window.overlay.cy.getElementById({json.dumps(target)}).hasClass('sel')")
    assert pg.locator(".ce-text--artifact mark.is-selected").count() >= 1
    assert view.errors == []


def _top_inactive(payload: dict[str, Any], node: dict[str, Any]) -> bool:
    by_id = {n["id"]: n for n in payload["nodes"]}
    return bool(by_id[node["parent"]]["active"])
