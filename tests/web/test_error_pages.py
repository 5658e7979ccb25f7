"""Requests that went astray get the app's own pages: a styled 404 and 403 with a way
back, and a GET of a form-only address sent to the page that holds the form."""

from __future__ import annotations

import pytest

# What this checks does not depend on the database engine: CI runs it on SQLite only.
pytestmark = [pytest.mark.django_db, pytest.mark.any_database]


def test_an_unknown_page_is_a_styled_404_that_escapes_the_path(login):
    response = login("annotator").get("/nowhere/<script>alert(1)</script>/")
    assert response.status_code == 404
    body = response.content.decode()
    assert 'data-testid="error-page"' in body and "Back to your projects" in body
    i = body.find("<script>alert")
    assert i < 0, body[i - 200 : i + 40]


def test_an_unknown_api_address_still_answers_json(api):
    response = api("annotator").get("/api/nowhere/")
    assert response.status_code == 404 and response.json() == {"detail": "no such object"}


def test_a_page_of_another_project_is_a_styled_403(login, contract):
    response = login("outsider").get(f"/c/{contract.pk}/")
    assert response.status_code in (403, 404)
    assert 'data-testid="error-page"' in response.content.decode()


def test_a_visit_to_a_form_only_address_goes_to_the_page_holding_the_form(login, contract):
    client = login("annotator")
    response = client.get(f"/c/{contract.pk}/reviews/")
    assert response.status_code == 302 and response["Location"] == f"/c/{contract.pk}/"
    page = client.get(response["Location"])
    assert "only takes a form&#x27;s submission" in page.content.decode()


def test_the_api_keeps_its_plain_405(api, contract):
    response = api("admin").delete("/api/projects/")
    assert response.status_code == 405 and "detail" in response.json()


def test_every_page_starts_with_a_skip_link_to_its_content(login, contract):
    body = login("annotator").get(f"/c/{contract.pk}/").content.decode()
    first_link = body.index("<a ")
    assert body[first_link:].startswith('<a class="skip-link" href="#ws-doc"')
    assert 'id="ws-doc"' in body
    projects = login("annotator").get("/", follow=True).content.decode()
    assert 'href="#main"' in projects and 'id="main"' in projects
