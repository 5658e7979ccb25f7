"""Playwright (sync API) against pytest-django's live server, in the Debian Chromium."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from web.conftest import require_service

CHROMIUM = os.environ.get("CONTRACTEVAL_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"

# Playwright's sync API runs an event loop in this thread; the ORM calls the test makes
# around it are still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(items):
    """The browser walks test the pages and scripts over views whose data layer the
    web tests already run on both engines, so CI runs them on SQLite only."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.any_database)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session")
def browser():
    available = Path(CHROMIUM).exists() or shutil.which(CHROMIUM) is not None
    require_service(available, f"Chromium not found at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


@pytest.fixture
def shot(tmp_path):
    """Save a screenshot; into docs/img/ when CONTRACTEVAL_SCREENSHOTS=1."""
    folder = DOCS_IMG if os.environ.get("CONTRACTEVAL_SCREENSHOTS") == "1" else tmp_path

    def take(page, name: str) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.png"
        page.screenshot(path=str(path))
        return path

    return take
