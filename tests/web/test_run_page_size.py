"""The page of the largest run the input limits accept stays small and cheap to render.

The largest accepted trace is ``trace_bytes`` long in ``trace_events`` events, each one
step of the heuristic extractor and each step an extra action (a failure): the most a
run's page can show. No response of its page may reach 1 MB: the page inlines the first
part of the trace and the overlay's payload is fetched on its own; the parts, loaded one
after the other, give back the whole trace, each step's highlight intact; no part is
served outside the run's project; and the page renders within a bounded amount of
memory. A trace past either limit never becomes a run.
"""

from __future__ import annotations

import html
import json
import re
import tracemalloc

import pytest

from audit import services
from audit.selectors.trace import TRACE_PART_BYTES, trace_part
from audit.templatetags.audit_text import text_content
from matching.input_limits import Limits

from .sweep import trace_of

pytestmark = pytest.mark.django_db
RESPONSE_MAX = 1_000_000
# Python's peak allocation while the page renders: 12 MB measured with the whole trace
# inline (the page, the overlay's JSON and the template's pieces of the trace, a few
# times over). Four times that leaves room for other Python and Django versions and
# still catches a page that grows with its trace again (a 1 MiB trace peaked at 126 MB
# before the page was bounded).
RENDER_PEAK_MAX = 48 * 1024 * 1024
PART = re.compile(r'<span class="trace-part" data-part="(\d+)"[^>]*>(.*?)</span>', re.S)
MORE = re.compile(r'<a class="trace-more" href="([^"]+)" hx-get="\1"')


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


def _text(part_html: str) -> str:
    return html.unescape(re.sub(r"</?mark[^>]*>", "", part_html))


def _parts(client, page: str) -> tuple[list[str], list[int]]:
    """The trace's parts as HTML, following each part's link from the page's first, and
    the size of each response."""
    parts, sizes = [], []
    body = page
    while True:
        found = PART.findall(body)
        assert [int(i) for i, _ in found] == [len(parts)]  # one part a response, in order
        parts.append(found[0][1])
        more = MORE.search(body)
        if more is None:
            return parts, sizes
        response = client.get(more.group(1), HTTP_HX_REQUEST="true")
        assert response.status_code == 200
        sizes.append(len(response.content))
        body = response.content.decode()


@pytest.mark.parametrize("role", ["annotator", "reviewer"])  # a reviewer sees the teach forms
def test_the_largest_accepted_trace_loads_in_parts_each_response_under_1_mb(
    largest_run, login, role
):
    run, text = largest_run
    client = login(role)
    response = client.get(f"/r/{run.pk}/")
    assert response.status_code == 200
    size = len(response.content)
    page = response.content.decode()
    parts, sizes = _parts(client, page)
    overlay = client.get(f"/r/{run.pk}/overlay.json")
    print(
        f"run page of a {len(text.encode()):,}-byte trace ({role}): {size:,} bytes, "
        f"{len(parts)} parts of at most {max(sizes):,} bytes, overlay {len(overlay.content):,}"
    )
    assert size < RESPONSE_MAX and max(sizes) < RESPONSE_MAX
    assert max(sizes) < 2 * TRACE_PART_BYTES and len(parts) > 2
    assert "".join(_text(p) for p in parts) == text  # the whole trace, once, in order
    # the payload is fetched, without the trace's text
    assert 'data-overlay-url="/r/' in page and 'id="overlay-data"' not in page
    assert overlay.status_code == 200 and len(overlay.content) < RESPONSE_MAX
    payload = json.loads(overlay.content)
    assert payload["trace"]["text"] is None
    assert len(payload["observed"]) == len(run.overlay["observed"])


def test_every_step_is_highlighted_and_each_part_ends_with_its_line(largest_run, login):
    run, _ = largest_run
    client = login("annotator")
    parts, _ = _parts(client, client.get(f"/r/{run.pk}/").content.decode())
    marks = [re.findall(r'<mark class="ob [^"]*" data-o="([^"]+)"', p) for p in parts]
    steps = [ids for part in marks for ids in part]
    assert {s.split()[0] for s in steps} == {o["id"] for o in run.overlay["observed"]}
    for part in parts[:-1]:
        assert part.endswith(("\n", "\n</mark>"))  # a part ends with its line


def test_a_step_cut_between_two_parts_keeps_its_mark_on_both_sides():
    lines = [f"[tool] result line {i} " + "x" * 60 + "\n" for i in range(40)]
    text = "[user] hi\n" + "".join(lines) + "[assistant] done\n"
    start = len("[user] hi\n")
    step = {
        "id": "o2",
        "status": "paired",
        "spans": [{"start": start, "end": start + len("".join(lines))}],
    }
    budget = 1024  # a part holds about twelve of the step's forty lines
    parts = []
    while (part := trace_part(text, [step], len(parts), budget)) is not None:
        parts.append(part)
    assert "".join(s["text"] for p in parts for s in p.segments) == text
    marked = [i for i, p in enumerate(parts) if any(s["ids"] == "o2" for s in p.segments)]
    assert len(marked) >= 3 and marked == list(range(marked[0], marked[-1] + 1))
    for p in parts[:-1]:
        assert p.segments[-1]["text"].endswith("\n")  # cut after a line, inside the step


def test_parts_escape_the_trace_and_a_carriage_return_is_sent_as_a_reference(audited, users, login):
    line = '[assistant] I sent <script>alert("x")</script> & checked the <b>order</b>.\r\n'
    text = (line + "  a & b <i>more</i>\r\n" * 9) * (3 * TRACE_PART_BYTES // (10 * len(line)))
    run, _ = services.run_create(
        contract=audited, user=users["annotator"], query_key="q1", kind="text", data=text
    )
    run = services.run_execute(run_id=run.pk)
    assert run.status == "done", run.error
    client = login("annotator")
    page = client.get(f"/r/{run.pk}/").content.decode()
    parts, _ = _parts(client, page)
    joined, trace = "".join(parts), run.overlay["trace"]["text"]
    assert len(parts) > 2 and "<script>" not in joined and "<b>" not in joined
    assert "".join(_text(p) for p in parts) == trace
    assert ("\r" in trace) == ("&#13;" in joined)  # the engine may normalise line ends
    # a carriage return the parts carry comes back as one: the HTML parser keeps it
    assert text_content("a\r\nb <c>") == "a&#13;\nb &lt;c&gt;"


def test_no_part_and_no_overlay_outside_the_runs_project(largest_run, login):
    run, _ = largest_run
    client = login("outsider")
    for url in (f"/r/{run.pk}/trace/1/", f"/r/{run.pk}/overlay.json", f"/r/{run.pk}/"):
        assert client.get(url).status_code in (403, 404), url
    member = login("annotator")
    assert member.get(f"/r/{run.pk}/trace/999/").status_code == 404


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
