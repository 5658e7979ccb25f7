"""The page of the largest run the input limits accept stays small and cheap to render.

The largest accepted trace is ``trace_bytes`` long in ``trace_events`` events, each one
step of the heuristic extractor and each step an extra action (a failure): the most a
run's page can show. Its page must stay under 1.5 MB, carry the whole trace, and render
within a bounded amount of memory; a trace past either limit never becomes a run.
"""

from __future__ import annotations

import html
import re
import tracemalloc

import pytest

from audit import services
from matching.input_limits import Limits

from .sweep import trace_of

pytestmark = pytest.mark.django_db
PAGE_MAX = 1_500_000
# Python's peak allocation while the page renders: 12 MB measured (the page, the
# overlay's JSON and the template's pieces of the trace, a few times over). Four times
# that leaves room for other Python and Django versions and still catches a page that
# grows with its trace again (a 1 MiB trace peaked at 126 MB before the page was bounded).
RENDER_PEAK_MAX = 48 * 1024 * 1024


@pytest.fixture
def largest_run(audited, users):
    limits = Limits()
    text = trace_of(limits.trace_bytes, limits.trace_events)
    run, _ = services.run_create(
        contract=audited, user=users["annotator"], query_key="q1", kind="text", data=text
    )
    run = services.run_execute(run_id=run.pk)
    assert run.status == "done", run.error
    assert len(run.overlay["observed"]) == limits.trace_events  # every event is a step
    return run, text


def _trace_in(page: str) -> str:
    pre = re.search(r'<pre class="trace" id="run-trace"[^>]*>(.*?)</pre>', page, re.S)
    assert pre is not None
    return html.unescape(re.sub(r"</?mark[^>]*>", "", pre.group(1)))


@pytest.mark.parametrize("role", ["annotator", "reviewer"])  # a reviewer sees the teach forms
def test_the_largest_accepted_trace_renders_a_run_page_under_1_5_mb(largest_run, login, role):
    run, text = largest_run
    response = login(role).get(f"/r/{run.pk}/")
    assert response.status_code == 200
    size = len(response.content)
    print(f"run page of a {len(text.encode()):,}-byte trace ({role}): {size:,} bytes")
    assert size < PAGE_MAX
    page = response.content.decode()
    assert _trace_in(page) == text  # the whole trace, once
    assert '"text": null' in page and 'data-trace-text="run-trace"' in page


def test_rendering_the_largest_run_page_allocates_a_bounded_amount_of_memory(largest_run, login):
    run, _ = largest_run
    client = login("reviewer")
    client.get(f"/r/{run.pk}/")  # templates compiled, caches warm
    tracemalloc.start()
    try:
        response = client.get(f"/r/{run.pk}/")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(f"rendering the largest run page: {peak / 2**20:.1f} MiB at the peak")
    assert response.status_code == 200
    assert peak < RENDER_PEAK_MAX
