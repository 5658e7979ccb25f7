"""Every hx-get link also works as a plain link (no JavaScript): it opens the same thing
in the whole workspace page."""

from __future__ import annotations

import pytest

from audit.models import Invariant, Query

# What this checks does not depend on the database engine: CI runs it on SQLite only.
pytestmark = [pytest.mark.django_db, pytest.mark.any_database]


def test_opening_a_saved_query_without_htmx_renders_the_workspace_on_the_queries_tab(
    login, contract
):
    client = login("annotator")
    query = Query.objects.filter(contract=contract).order_by("pk").first()
    assert query is not None
    page = client.get(f"/c/{contract.pk}/queries/preview/", {"load": query.pk})
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-tab="queries"' in html and 'id="ws-outline"' in html
    assert page.context["query_form"]["text"].value() == query.text


def test_the_saved_query_links_have_a_real_address(login, contract):
    html = login("annotator").get(f"/c/{contract.pk}/").content.decode()
    assert f'href="/c/{contract.pk}/queries/preview/?load=' in html


def test_editing_an_invariant_without_htmx_renders_the_form_in_the_whole_workspace(login, contract):
    client = login("annotator")
    invariant = Invariant.objects.filter(contract=contract).first()
    page = client.get(f"/c/{contract.pk}/invariants/{invariant.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="ws-outline"' in html and invariant.label in html
    assert page.context["edit_invariant"] == invariant


def test_a_page_that_answers_htmx_and_plain_requests_differently_says_so_to_caches(login, contract):
    client = login("annotator")
    invariant = Invariant.objects.filter(contract=contract).first()
    url = f"/c/{contract.pk}/invariants/{invariant.pk}/"
    plain = client.get(url)
    partial = client.get(url, headers={"HX-Request": "true"})
    assert 'id="ws-outline"' in plain.content.decode()
    assert 'id="ws-outline"' not in partial.content.decode()
    for response in (plain, partial):
        assert "HX-Request" in response["Vary"]
