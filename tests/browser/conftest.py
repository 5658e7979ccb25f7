"""Playwright (sync API) against pytest-django's live server, in the Debian Chromium."""

from __future__ import annotations

import json
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
ROOT = Path(__file__).resolve().parents[2]
# the password of the team walks' people (the fixture ``people``)
PASSWORD = "pw-for-browser-1"
DOCS_IMG = ROOT / "docs" / "img"

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


def log_in(page, base_url: str, username: str, password: str) -> None:
    """Sign in through the login form, as a person would."""
    page.goto(f"{base_url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")


def reviewer_with_refund_mini(user_model, username: str, password: str):
    """A reviewer of a new "demo" project holding the audited refund-mini contract:
    ``(user, contract)``."""
    from audit import services
    from audit.models import Membership, Project

    user = user_model.objects.create_user(username=username, password=password)
    project = Project.objects.create(name="Demo", slug="demo")
    Membership.objects.create(project=project, user=user, role="reviewer")
    doc = json.loads((ROOT / "fixtures" / "demo" / "refund-mini.json").read_text())
    contract = services.contract_import(project=project, user=user, source=doc)
    return user, services.contract_mark_audited(contract=contract, user=user)


@pytest.fixture
def people(django_user_model):
    """A "demo" project of an admin (boss), two annotators (ann1, ann2) and a curator
    (cur), with refund-mini imported and every node proposed: ``(users, contract)``."""
    from audit import services
    from audit.models import Membership, Node, Project

    project = Project.objects.create(name="Demo", slug="demo")
    users = {}
    for name, role in (
        ("boss", "admin"),
        ("ann1", "annotator"),
        ("ann2", "annotator"),
        ("cur", "reviewer"),
    ):
        users[name] = django_user_model.objects.create_user(username=name, password=PASSWORD)
        Membership.objects.create(project=project, user=users[name], role=role)
    doc = json.loads((ROOT / "fixtures" / "demo" / "refund-mini.json").read_text())
    contract = services.contract_import(project=project, user=users["boss"], source=doc)
    Node.objects.filter(contract=contract).update(review_status="proposed")
    return users, contract
