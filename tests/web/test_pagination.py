"""The runs list and the inbox page without counting the project's runs."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.views.common import LimitFirstPage


def test_a_page_reads_one_row_more_than_it_shows():
    rows = list(range(120))
    first = LimitFirstPage(rows, None)
    assert list(first) == rows[:50] and first.has_next and not first.has_previous
    last = LimitFirstPage(rows, "3")
    assert list(last) == rows[100:] and not last.has_next and last.previous_page_number == 2
    assert LimitFirstPage(rows, "not a number").number == 1
    assert list(LimitFirstPage(rows, "9")) == [] and not LimitFirstPage(rows, "9").has_next


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/p/tests/runs/", "/p/tests/inbox/", "/p/tests/runs/?page=2"])
def test_the_run_lists_never_count_the_runs(url, project, login):
    client = login("reviewer")
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    assert not [q["sql"] for q in ctx.captured_queries if "COUNT(" in q["sql"].upper()]
