"""Deploy-ready settings: a clean ``check --deploy``, a Content-Security-Policy the pages
keep, login lockout, API throttles, real password rules, no public superuser."""

from __future__ import annotations

import io
import os
import re
import secrets
import subprocess
import sys

import pytest
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management import call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from .conftest import PASSWORD, ROOT
from .sweep import build_world

# What this checks does not depend on the database engine: CI runs it on SQLite only.
pytestmark = [pytest.mark.django_db, pytest.mark.any_database]


def test_check_deploy_is_clean_with_debug_off_and_https_on(tmp_path):
    env = {
        **os.environ,
        "DEBUG": "0",
        "HTTPS": "1",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "contracteval.example.org",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'deploy.sqlite3'}",
    }
    # the browser tests set this in the test process; a deployment never does
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.fixture
def world(project, users, refund_doc):
    return build_world(users, refund_doc)


def test_every_page_sends_a_strict_csp_and_has_no_inline_script_or_style(client, users, world):
    client.force_login(users["admin"])
    pages = [
        "/login/",
        "/p/tests/",
        f"/c/{world.draft.pk}/?node={world.node.node_id}",
        f"/c/{world.audited.pk}/",
        "/p/tests/runs/",
        f"/r/{world.run.pk}/",
        "/p/tests/inbox/",
        "/p/tests/batches/",
        f"/b/{world.batch.pk}/",
        "/p/tests/new/",
        "/api/docs/",
    ]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        policy = response["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "style-src 'self'" in policy, url
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, url
        html = response.content.decode()
        # data blocks (json_script) are not run, so the CSP allows them
        assert not re.search(r"<script(?![^>]*\b(?:src=|type=\"application/json))[^>]*>", html), url
        assert not re.search(r"<style[\s>]", html), url
        assert not re.search(r"\sstyle=", html), url
        assert not re.search(r"\son[a-z]+=", html), url


def test_wrong_passwords_lock_the_user_out_even_with_the_right_one_after(client, users):
    for _ in range(5):
        response = client.post("/login/", {"username": "annotator", "password": "wrong-one"})
        assert "_auth_user_id" not in client.session
    response = client.post("/login/", {"username": "annotator", "password": PASSWORD})
    assert response.status_code in (403, 429)
    assert "Too many failed sign-ins" in response.content.decode()
    assert "_auth_user_id" not in client.session
    # another user from the same address is not locked out by them
    response = client.post("/login/", {"username": "reviewer", "password": PASSWORD})
    assert response.status_code == 302 and "_auth_user_id" in client.session


def test_the_api_throttles_a_client_that_sends_too_many_requests(users, monkeypatch):
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"user": "3/min", "anon": "3/min"})
    api = APIClient()
    token, _ = Token.objects.get_or_create(user=users["annotator"])
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    statuses = [api.get("/api/projects/").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]


@pytest.mark.parametrize("password", ["password123", "12345678901", "short-1", "annotator1"])
def test_weak_passwords_are_refused(users, password):
    with pytest.raises(ValidationError):
        validate_password(password, user=users["annotator"])


def test_load_demo_makes_no_superuser_unless_asked_and_says_the_passwords_are_local(
    django_user_model,
):
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    admin = django_user_model.objects.get(username="admin")
    assert not admin.is_superuser and not admin.is_staff
    assert "for local use only" in out.getvalue()
    call_command("load_demo", "--superuser", stdout=io.StringIO())
    admin.refresh_from_db()
    assert admin.is_superuser and admin.is_staff


def test_an_audited_contract_is_read_only_in_the_admin(client, django_user_model, world):
    root = django_user_model.objects.create_superuser("root", password="x-Root-pw-2024")
    client.force_login(root)
    audited, draft = world.audited, world.draft
    node = audited.nodes.first()
    for model, obj in (
        ("contract", audited),
        ("node", node),
        ("edge", audited.edges.first()),
        ("invariant", audited.invariants.first()),
        ("query", audited.queries.first()),
    ):
        page = client.get(f"/admin/audit/{model}/{obj.pk}/change/")
        assert page.status_code == 200
        assert 'name="_save"' not in page.content.decode(), model
        assert (
            client.post(f"/admin/audit/{model}/{obj.pk}/delete/", {"post": "yes"}).status_code
            == 403
        )
    response = client.post(f"/admin/audit/node/{node.pk}/change/", {"label": "forged"})
    assert response.status_code == 403
    node.refresh_from_db()
    assert node.label != "forged"
    editable = client.get(f"/admin/audit/node/{draft.nodes.first().pk}/change/")
    assert 'name="_save"' in editable.content.decode()


def test_a_contract_with_a_history_cannot_be_deleted_with_it(world):
    from django.db.models import ProtectedError

    with pytest.raises(ProtectedError):
        world.draft.delete()
