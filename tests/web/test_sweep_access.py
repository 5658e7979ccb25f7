"""Every URL pattern and API route, tried as an anonymous user, a member of another
project and a member whose role is too low: nothing is shown, nothing changes."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from .sweep import build_world, routes, row_counts

# What this checks does not depend on the database engine: CI runs it on SQLite only.
pytestmark = [pytest.mark.django_db, pytest.mark.any_database]
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def world(project, users, refund_doc):
    return build_world(users, refund_doc)


def _api(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def _try(client, route, method: str):
    if method == "get":
        return client.get(route.url, **HTMX)
    body = {"action": "confirm", "project": "tests", "agrees": "yes", "note": "x"}
    if route.is_api:
        return client.post(route.url, {**body, "document": {}, "agrees": True}, format="json")
    return client.post(route.url, body, **HTMX)


def test_the_walk_covers_every_kind_of_object(world):
    urls = {r.url for r in routes(world)}
    for expected in (
        f"/c/{world.draft.pk}/nodes/{world.node.pk}/edit/",
        f"/c/{world.draft.pk}/edges/{world.edge.pk}/delete/",
        f"/r/{world.run.pk}/export.json",
        f"/b/{world.batch.pk}/scores.json",
        f"/api/runs/{world.run.pk}/verdicts.json",
        f"/api/contracts/{world.draft.pk}/export/",
        "/p/tests/inbox.json",
        f"/p/tests/ingest/tokens/{world.ingest_token.pk}/revoke/",
        f"/p/tests/ingest/traces/{world.ingested_trace.pk}/route/",
        f"/p/tests/webhooks/{world.webhook.pk}/test/",
        "/v1/traces",
        f"/c/{world.draft.pk}/analytics/",
        f"/c/{world.draft.pk}/analytics/obligations.json",
        f"/api/contracts/{world.draft.pk}/analytics/compare/",
    ):
        assert expected in urls
    assert len(urls) > 60


def test_anonymous_users_get_the_login_page_or_401_everywhere(client, world):
    before = row_counts()
    wrong, tries = [], 0
    for route in routes(world):
        for method in ("get", "post"):
            response = _try(_api() if route.is_api else client, route, method)
            tries += 1
            if route.is_api:
                ok = response.status_code in (401, 403)
            else:
                ok = response.status_code == 302 and response.url.startswith("/login/")
            if not ok:
                wrong.append((method, route.url, response.status_code))
    assert wrong == []
    assert row_counts() == before
    assert tries > 120


def test_a_member_of_another_project_gets_404_for_every_object(client, users, world):
    client.force_login(users["outsider"])
    api = _api(users["outsider"])
    before = row_counts()
    wrong = []
    for route in routes(world):
        for method in ("get", "post"):
            response = _try(api if route.is_api else client, route, method)
            if method == "get" and response.status_code == 302 and not route.is_api:
                # a visit to a form-only address goes to the page above it: which is
                # the other project's, so it must be a 404 too
                response = client.get(response.url, follow=True)
            body = response.content.decode(errors="replace")
            # 405: a method the route never takes, answered before any lookup
            allowed = (404, 405) if route.has_object else range(200, 500)
            if response.status_code not in allowed:
                wrong.append((method, route.url, response.status_code))
            elif "refund" in body.lower() or world.draft.artifact.text[:40] in body:
                wrong.append((method, route.url, "shows the other project's data"))
    assert wrong == []
    assert row_counts() == before


LOWER_ROLE = [
    # (role, UI or API, method, url template, body)
    ("annotator", "ui", "post", "/p/tests/import/", {"document": "{}"}),
    ("annotator", "ui", "post", "/c/{draft}/status/", {"action": "audited"}),
    ("annotator", "ui", "post", "/p/tests/batches/new/", {"mode": "oracle"}),
    ("annotator", "ui", "post", "/r/{run}/verdict/", {"agrees": "yes"}),
    ("reviewer", "ui", "get", "/p/tests/new/", {}),
    ("reviewer", "ui", "post", "/p/tests/ingest/tokens/", {"name": "x"}),
    ("reviewer", "ui", "post", "/p/tests/ingest/tokens/{token}/revoke/", {}),
    ("reviewer", "ui", "post", "/p/tests/ingest/rules/", {"attribute": "a", "value": "b"}),
    ("reviewer", "ui", "post", "/p/tests/ingest/rules/{rule}/delete/", {}),
    ("reviewer", "ui", "post", "/p/tests/new/", {"title": "x", "text": "y"}),
    ("reviewer", "ui", "get", "/p/tests/webhooks/", {}),
    ("reviewer", "ui", "post", "/p/tests/webhooks/new/", {"name": "x", "url": "https://e.com"}),
    ("reviewer", "ui", "post", "/p/tests/webhooks/{hook}/delete/", {}),
    ("reviewer", "ui", "post", "/p/tests/webhooks/{hook}/test/", {}),
    ("reviewer", "ui", "post", "/p/tests/webhooks/{hook}/secret/", {}),
    ("annotator", "ui", "get", "/p/tests/webhooks/", {}),
    ("reviewer", "ui", "post", "/p/tests/members/add/", {"username": "outsider", "role": "admin"}),
    ("reviewer", "ui", "post", "/p/tests/members/{member}/role/", {"role": "admin"}),
    ("reviewer", "ui", "post", "/p/tests/members/{member}/remove/", {}),
    ("annotator", "api", "post", "/api/contracts/import/", {"project": "tests", "document": {}}),
    ("annotator", "api", "post", "/api/batches/", {"project": "tests", "mode": "oracle"}),
    ("annotator", "api", "post", "/api/runs/{run}/verdicts/", {"agrees": True, "note": "x"}),
]


@pytest.mark.parametrize(("role", "where", "method", "url", "body"), LOWER_ROLE)
def test_a_member_whose_role_is_too_low_gets_403(
    client, users, world, role, where, method, url, body
):
    url = url.format(
        draft=world.draft.pk,
        run=world.run.pk,
        token=world.ingest_token.pk,
        rule=world.routing_rule.pk,
        hook=world.webhook.pk,
        member=world.membership.pk,
    )
    before = row_counts()
    if where == "api":
        response = getattr(_api(users[role]), method)(url, body, format="json")
    else:
        client.force_login(users[role])
        response = getattr(client, method)(url, body, **HTMX)
    assert response.status_code == 403
    assert row_counts() == before
