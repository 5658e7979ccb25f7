"""The workspace fits the window: a resizable outline (mouse and keyboard, remembered),
and highlights reachable by Tab whose focus is visible and whose Enter opens the node."""

from __future__ import annotations

import pytest

from browser.test_workspace import PASSWORD, draft  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser]

# The window itself never scrolls: every pane scrolls inside itself.
WINDOW_SCROLLS = """() => document.scrollingElement.scrollHeight > window.innerHeight + 1
  || document.scrollingElement.scrollWidth > window.innerWidth + 1"""


def _open(live_server, page, contract):
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "ann")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/c/{contract.pk}/")
    page.wait_for_selector("#ws-text")


def _outline_width(page) -> float:
    return page.evaluate(
        "() => document.querySelector('.ws-outline').getBoundingClientRect().width"
    )


def _now(page) -> int:
    return int(page.get_attribute("#ws-split", "aria-valuenow"))


def test_the_outline_is_resized_by_dragging_the_splitter_and_remembered(
    live_server,
    page,
    draft,  # noqa: F811
):
    _open(live_server, page, draft)
    split = page.locator("#ws-split")
    assert split.get_attribute("role") == "separator"
    assert split.get_attribute("aria-orientation") == "vertical"
    before = _outline_width(page)
    assert abs(before - _now(page)) <= 1
    box = split.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 60, y, steps=6)
    page.mouse.move(x + 120, y, steps=6)
    page.mouse.up()
    after = _outline_width(page)
    assert after == pytest.approx(before + 120, abs=4)
    assert _now(page) == pytest.approx(after, abs=1)
    assert not page.evaluate(WINDOW_SCROLLS)

    # dragged far past the window the outline stops where the artifact keeps its room
    box = split.bounding_box()
    page.mouse.move(box["x"] + 4, y)
    page.mouse.down()
    page.mouse.move(1400, y, steps=8)
    page.mouse.up()
    widest = _outline_width(page)
    assert widest == int(split.get_attribute("aria-valuemax"))
    doc = page.evaluate("() => document.querySelector('.ws-doc').getBoundingClientRect().width")
    assert doc >= 320
    assert not page.evaluate(WINDOW_SCROLLS)

    # the width survives a reload
    page.reload()
    page.wait_for_selector("#ws-text")
    assert _outline_width(page) == pytest.approx(widest, abs=1)


def test_the_splitter_moves_with_the_arrow_keys(live_server, page, draft):  # noqa: F811
    _open(live_server, page, draft)
    page.focus("#ws-split")
    start = _now(page)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert _now(page) == start + 32
    assert _outline_width(page) == pytest.approx(start + 32, abs=1)
    page.keyboard.press("ArrowLeft")
    assert _now(page) == start + 16
    page.keyboard.press("Home")
    assert _now(page) == int(page.get_attribute("#ws-split", "aria-valuemin"))
    page.keyboard.press("End")
    assert _now(page) == int(page.get_attribute("#ws-split", "aria-valuemax"))
    # arrow keys on the splitter do not reach the review keys
    assert page.get_attribute("#ws-detail", "data-node") is None
    assert not page.evaluate(WINDOW_SCROLLS)
    page.reload()
    page.wait_for_selector("#ws-text")
    assert _now(page) == int(page.get_attribute("#ws-split", "aria-valuemax"))


def test_outline_labels_show_in_full_on_hover(live_server, page, draft):  # noqa: F811
    _open(live_server, page, draft)
    link = page.locator("#ws-outline li.ol-item a").nth(2)
    assert link.get_attribute("title") == link.locator(".ol-label").inner_text()


def test_tab_reaches_a_highlight_with_a_visible_ring_and_enter_opens_its_node(
    live_server,
    page,
    draft,  # noqa: F811
):
    _open(live_server, page, draft)
    first = page.locator("#ws-text .hl").first
    target = first.get_attribute("data-p")
    # Tab from the splitter (the stop just before the artifact) lands on a highlight
    page.focus("#ws-split")
    page.keyboard.press("Tab")
    focused = page.evaluate(
        """() => { const el = document.activeElement;
        const cs = getComputedStyle(el);
        return {hl: el.classList.contains("hl"), p: el.dataset.p,
                visible: el.matches(":focus-visible"),
                outline: cs.outlineStyle, width: parseFloat(cs.outlineWidth), color: cs.outlineColor}; }"""
    )
    assert focused["hl"] and focused["p"] == target
    assert focused["visible"] and focused["outline"] == "solid" and focused["width"] >= 2
    r, g, b = (
        int(v) for v in focused["color"][focused["color"].index("(") + 1 : -1].split(",")[:3]
    )
    assert _contrast((r, g, b), (0xFF, 0xFE, 0xFB)) >= 3
    page.keyboard.press("Enter")
    page.wait_for_function(
        f"() => document.querySelector('#ws-detail').dataset.node === {target!r}"
    )
    assert page.locator("[data-testid=node-card]").count() == 1
    # focus stays in the text, so Tab goes on to the next highlight
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.classList.contains('hl')")


def _contrast(a, b) -> float:
    def lum(rgb):
        def ch(c):
            c = c / 255
            return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

        r, g, b = (ch(c) for c in rgb)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)
