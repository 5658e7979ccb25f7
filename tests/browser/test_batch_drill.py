# ruff: noqa: F811 - the shared fixture is imported, then named as an argument
"""A batch's drill-down in Chromium: a family row's cases, then one case's overlay drawn
under the site's CSP without console errors."""

from __future__ import annotations

import io
import zipfile

import pytest
from web.conftest import ensure_fixture_suite

from audit import enqueue
from audit.models import Batch, Project
from audit.services import batches
from matching.suite import load_suite, perturb_suite, write_suite

from .test_review import _login, reviewer  # noqa: F401 - fixture

pytestmark = [pytest.mark.browser]


def _small_zip(folder) -> bytes:
    suite = load_suite(ensure_fixture_suite())
    keep = sorted(suite.contracts)[:2]
    suite.cases = [c for c in suite.cases if c.contract in keep and c.clean][:6]
    suite.contracts = {k: v for k, v in suite.contracts.items() if k in keep}
    cases, _ = perturb_suite(suite, seed=0)
    write_suite(folder, suite.contracts.values(), cases)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(folder).as_posix())
    return buf.getvalue()


def test_a_family_row_opens_its_cases_and_a_case_its_overlay(
    live_server, page, reviewer, tmp_path, monkeypatch
):
    monkeypatch.setattr(enqueue, "enqueue_batch", lambda batch_id: None)  # run it below
    batch = batches.batch_create(
        project=Project.objects.get(slug="demo"),
        user=reviewer,
        mode="token",
        archive=_small_zip(tmp_path / "s"),
        name="suite.zip",
    )
    batches.batch_execute(batch_id=batch.pk)
    family = next(iter(Batch.objects.get(pk=batch.pk).scores["per_family"]))
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    _login(page, live_server)
    page.goto(f"{live_server.url}/b/{batch.pk}/")
    page.click(f"[data-testid=family-cases-{family}]")
    page.wait_for_selector("[data-testid=case-table]")
    assert page.locator("[data-testid=case-row]").count() > 0
    _assert_outcomes_read_apart(page)
    page.locator("[data-testid=case-row] a.case-link").first.click()
    page.wait_for_selector("#overlay[data-rendered-nodes]", timeout=20_000)
    assert int(page.get_attribute("#overlay", "data-rendered-nodes")) > 0
    assert family in page.inner_text("[data-testid=case-facts]")
    assert not errors, errors


# Each outcome's chip, as the page's stylesheet draws it: its colours and its icon.
OUTCOME_STYLES = """() => ["localised", "detected", "missed"].map((o) => {
  const chip = document.createElement("span");
  chip.className = `outcome o-${o}`;
  chip.innerHTML = '<span class="o-icon" aria-hidden="true">?</span>' + o;
  document.querySelector("main").appendChild(chip);
  const cs = getComputedStyle(chip);
  const out = {outcome: o, color: cs.color, background: cs.backgroundColor, border: cs.borderTopColor};
  chip.remove();
  return out;
})"""


def _rgb(css: str) -> tuple[int, ...]:
    return tuple(int(v) for v in css[css.index("(") + 1 : -1].split(",")[:3])


def _contrast(a, b) -> float:
    def lum(rgb):
        c = [v / 255 for v in rgb]
        c = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _assert_outcomes_read_apart(page) -> None:
    rows = page.locator("[data-testid=case-row]")
    first = rows.first.locator("[data-testid=outcome]")
    assert first.locator(".o-icon").inner_text().strip()  # an icon beside the word
    assert rows.first.get_attribute("data-outcome") in first.inner_text()
    styles = page.evaluate(OUTCOME_STYLES)
    for s in styles:
        assert _contrast(_rgb(s["color"]), _rgb(s["background"])) >= 4.5, s
    assert len({s["background"] for s in styles}) == 3  # three outcomes, three colours
    assert len({s["border"] for s in styles}) == 3
