"""Shared fixtures of the web tests: a project, one user per role, the example contract."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFUND_MINI = ROOT / "fixtures" / "demo" / "refund-mini.json"
PASSWORD = "pw-for-tests-1"


def require_service(available: bool, reason: str) -> None:
    """Skip when a service is missing, unless CONTRACTEVAL_REQUIRE_SERVICES=1 (CI): fail."""
    if available:
        return
    if os.environ.get("CONTRACTEVAL_REQUIRE_SERVICES") == "1":
        pytest.fail(f"required service missing: {reason}")
    pytest.skip(reason)


@pytest.fixture
def refund_doc() -> dict:
    return json.loads(REFUND_MINI.read_text())


@pytest.fixture
def users(django_user_model):
    return {
        role: django_user_model.objects.create_user(username=role, password=PASSWORD)
        for role in ("annotator", "reviewer", "admin", "outsider")
    }


@pytest.fixture
def api(users):
    """An API client authenticated by token as the given role (None: anonymous)."""
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    def as_role(role: str | None) -> APIClient:
        client = APIClient()
        if role is not None:
            token, _ = Token.objects.get_or_create(user=users[role])
            client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    return as_role


@pytest.fixture
def project(users):
    from audit.models import Membership, Project

    project = Project.objects.create(name="Tests", slug="tests")
    for role in ("annotator", "reviewer", "admin"):
        Membership.objects.create(project=project, user=users[role], role=role)
    other = Project.objects.create(name="Elsewhere", slug="elsewhere")
    Membership.objects.create(project=other, user=users["outsider"], role="admin")
    return project


@pytest.fixture
def contract(project, users, refund_doc):
    from audit import services

    return services.contract_import(project=project, user=users["admin"], source=refund_doc)


@pytest.fixture
def login(client, users):
    def as_role(role: str):
        client.force_login(users[role])
        return client

    return as_role


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


# ---------------------------------------------------------------- runs

OBSERVED_Q1 = ROOT / "matching" / "data" / "refund-mini-observed-q1.json"


@pytest.fixture
def observed_doc() -> dict:
    """A clean observed document of refund-mini q1 (oracle labels included)."""
    return json.loads(OBSERVED_Q1.read_text())


@pytest.fixture
def audited(contract, users):
    """The example contract, audited (runs use audited contract versions only)."""
    from audit import services

    return services.contract_mark_audited(contract=contract, user=users["reviewer"])


def ensure_fixture_suite() -> Path:
    """The fixture suite (fixtures/suite, else fixtures/clean), built from
    fixtures/authoring when a fresh clone has neither (as `make suite` does)."""
    import subprocess
    import sys

    from filelock import FileLock

    from audit.services.batches import fixture_suite_dir

    folder = fixture_suite_dir()
    if (folder / "cases.jsonl").is_file():
        return folder
    # parallel test processes (pytest -n) build it once: the others wait, then read it
    with FileLock(str(ROOT / "fixtures" / ".build.lock")):
        if not (fixture_suite_dir() / "cases.jsonl").is_file():
            subprocess.run([sys.executable, "-m", "fixtures.authoring.build"], cwd=ROOT, check=True)
    return fixture_suite_dir()


@pytest.fixture(scope="session")
def fixture_suite() -> Path:
    return ensure_fixture_suite()


# ---------------------------------------------------------------- an LLM endpoint (fake)


@pytest.fixture(autouse=True)
def no_llm_env(monkeypatch):
    """No test sees a developer's real LLM key: the offline default unless a test opts in."""
    from llm.fake_openai import ENV_NAMES

    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def fake():
    """A real OpenAI-compatible server on 127.0.0.1 answering from a script."""
    from llm.fake_openai import FakeOpenAI

    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def llm_env(monkeypatch, fake):
    """The app configured, through its environment, to use the fake server."""
    from llm.fake_openai import point_env_at

    point_env_at(monkeypatch, fake)
    return fake


@pytest.fixture(autouse=True)
def _fresh_cache():
    """API throttle counts and login lockouts live in the cache: none carries over
    from one test to the next."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


# ---------------------------------------------------------------- team annotation


@pytest.fixture
def team(project, users, contract, django_user_model):
    """Two assigned annotators and a curator on a double-annotated contract whose nodes
    are all proposed."""
    from audit import services
    from audit.models import Membership, Node

    ann = {}
    for name in ("ann1", "ann2"):
        ann[name] = django_user_model.objects.create_user(username=name, password="pw-team-1")
        Membership.objects.create(project=project, user=ann[name], role="annotator")
    Node.objects.filter(contract=contract).update(review_status="proposed")
    admin = users["admin"]
    for name in ann:
        services.assignment_create(
            project=project, contract=contract, user=ann[name], by=admin, role="annotator"
        )
    services.assignment_create(
        project=project, contract=contract, user=users["reviewer"], by=admin, role="reviewer"
    )
    services.double_annotation_set(contract=contract, by=admin, enabled=True)
    return {"contract": contract, "curator": users["reviewer"], **ann}
