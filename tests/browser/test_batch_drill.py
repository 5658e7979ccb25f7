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
    page.locator("[data-testid=case-row] a.case-link").first.click()
    page.wait_for_selector("#overlay[data-rendered-nodes]", timeout=20_000)
    assert int(page.get_attribute("#overlay", "data-rendered-nodes")) > 0
    assert family in page.inner_text("[data-testid=case-facts]")
    assert not errors, errors
