"""Bad input never gives a 500: a message naming what is wrong, and nothing stored.

Deeply nested JSON, text that is not UTF-8, NUL characters, oversized bodies, traces
and tool lists past the input limits (refused in well under a second, naming the limit
and the measured value), ids no database can hold, DRF format suffixes, unknown objects
and broken spans, in the UI and the API.
"""

from __future__ import annotations

import io
import json
import re
import time
import urllib.parse
import zipfile
from dataclasses import replace

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from .sweep import HOSTILE_TOOLS, MIB, build_world, row_counts, trace_of

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
DEEP = "[" * 100_000 + "]" * 100_000  # past Python's own recursion limit
NESTED = "[" * 200 + "]" * 200  # parses, but deeper than any document needs
DEPTH = "nested deeper than 64 levels"


@pytest.fixture
def world(project, users, refund_doc):
    return build_world(users, refund_doc)


def _text(response) -> str:
    return response.content.decode(errors="replace")


# ---------------------------------------------------------------- contract import


@pytest.mark.parametrize("body", [DEEP, f'{{"format": "contracteval.contract/v1", "x": {NESTED}}}'])
def test_import_of_deeply_nested_json_is_refused_naming_the_depth(login, world, body):
    before = row_counts()
    pasted = login("reviewer").post("/p/tests/import/", {"document": body})
    uploaded = login("reviewer").post(
        "/p/tests/import/", {"file": SimpleUploadedFile("deep.json", body.encode())}
    )
    for response in (pasted, uploaded):
        assert response.status_code == 400
        assert DEPTH in _text(response)
    assert row_counts() == before


def test_api_import_of_deeply_nested_json_is_400_naming_the_depth(api, world):
    before = row_counts()
    body = '{"project": "tests", "document": ' + DEEP + "}"
    response = api("reviewer").post("/api/contracts/import/", body, content_type="application/json")
    assert response.status_code == 400
    assert DEPTH in _text(response)
    assert row_counts() == before


def test_a_latin_1_import_is_refused_and_a_byte_order_mark_accepted(login, world, refund_doc):
    client = login("reviewer")
    before = row_counts()
    doc = dict(refund_doc, id="refund-latin", title="Remboursement café")
    latin = json.dumps(doc, ensure_ascii=False).encode("latin-1")
    response = client.post("/p/tests/import/", {"file": SimpleUploadedFile("c.json", latin)})
    assert response.status_code == 400
    assert "not UTF-8 text" in _text(response)
    # pasted: the browser sent bytes that are not UTF-8 in a form field
    raw = "document=" + urllib.parse.quote_from_bytes(latin)
    response = client.post(
        "/p/tests/import/", raw, content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 400
    assert "not UTF-8 text" in _text(response)
    assert row_counts() == before
    bom = b"\xef\xbb\xbf" + json.dumps(doc, ensure_ascii=False).encode()
    response = client.post("/p/tests/import/", {"file": SimpleUploadedFile("c.json", bom)})
    assert response.status_code == 302
    from audit.models import Contract

    assert Contract.objects.get(key="refund-latin").title == "Remboursement café"


def test_an_import_over_the_size_limit_is_413_naming_the_limit(login, api, world, settings):
    before = row_counts()
    big = '{"x": "' + "a" * (5 * 1024 * 1024) + '"}'
    response = login("reviewer").post("/p/tests/import/", {"document": big})
    assert response.status_code == 413
    assert "the limit is 4,259,840 (INPUT_LIMITS upload_bytes, the largest upload" in _text(
        response
    )
    body = '{"project": "tests", "document": ' + big + "}"
    response = api("reviewer").post("/api/contracts/import/", body, content_type="application/json")
    assert response.status_code == 413
    assert f"the request is {len(body):,} bytes; the limit is 4,259,840" in _text(response)
    settings.INPUT_LIMITS = replace(settings.INPUT_LIMITS, document_bytes=1024 * 1024)
    doc = '{"x": "' + "a" * (2 * 1024 * 1024) + '"}'
    named = "the limit is 1,048,576 (INPUT_LIMITS document_bytes)"
    for data in ({"document": doc}, {"file": SimpleUploadedFile("c.json", doc.encode())}):
        response = login("reviewer").post("/p/tests/import/", data)
        assert response.status_code == 413 and named in _text(response)
    body = '{"project": "tests", "document": ' + doc + "}"
    response = api("reviewer").post("/api/contracts/import/", body, content_type="application/json")
    assert response.status_code == 413 and named in _text(response)
    assert row_counts() == before


# ---------------------------------------------------------------- runs and batches


def test_a_deeply_nested_run_input_is_refused_in_the_ui_and_the_api(login, api, world):
    before = row_counts()
    target = f"{world.audited.pk}|q1"
    for body in (DEEP, NESTED):
        response = login("annotator").post(
            "/p/tests/runs/new/",
            {"target": target, "input_kind": "auto", "mode": "token", "extractor": "none"}
            | {"source_kind": "auto", "file": SimpleUploadedFile("t.json", body.encode())},
        )
        assert response.status_code == 400
        assert DEPTH in _text(response)
    body = f'{{"contract": {world.audited.pk}, "query": "q1", "input": {DEEP}}}'
    response = api("annotator").post("/api/runs/", body, content_type="application/json")
    assert response.status_code == 400
    assert DEPTH in _text(response)
    assert row_counts() == before


def _suite_zip(refund_doc, cases: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("contracts/refund-mini.json", json.dumps(refund_doc))
        zf.writestr("cases.jsonl", cases)
    return out.getvalue()


def _queued_batch_fails(client, response, reason: str) -> None:
    """The suite was read by the worker (a batch's request only checks the zip's shape):
    the batch failed with ``reason``, its page says so, and no case was stored."""
    from audit.models import Batch, BatchChunk

    batch = Batch.objects.latest("pk")
    assert batch.status == "failed" and reason in batch.error, batch.error
    assert not BatchChunk.objects.filter(batch=batch).exists()
    assert reason in client.get(f"/b/{batch.pk}/").content.decode()


@pytest.mark.parametrize("cases", [b"\xff\xfe\x00\x00binary", "café\n".encode("latin-1")])
def test_a_suite_whose_cases_are_not_utf8_fails_its_batch_with_the_reason(
    login, api, world, refund_doc, cases, django_capture_on_commit_callbacks
):
    archive = _suite_zip(refund_doc, cases)
    client = login("reviewer")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/p/tests/batches/new/",
            {"mode": "oracle", "extractor": "none", "suite": SimpleUploadedFile("s.zip", archive)},
        )
    assert response.status_code == 302
    _queued_batch_fails(client, response, "cases.jsonl is not UTF-8 text")
    with django_capture_on_commit_callbacks(execute=True):
        response = api("reviewer").post(
            "/api/batches/",
            {"project": "tests", "mode": "oracle", "suite": SimpleUploadedFile("s.zip", archive)},
            format="multipart",
        )
    assert response.status_code == 201
    _queued_batch_fails(client, response, "cases.jsonl is not UTF-8 text")


def test_a_suite_contract_nested_too_deeply_fails_its_batch_with_the_reason(
    login, world, refund_doc, django_capture_on_commit_callbacks
):
    doc = dict(refund_doc, nodes=[dict(refund_doc["nodes"][0], meta=json.loads(NESTED))])
    archive = _suite_zip(doc, b"")
    client = login("reviewer")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/p/tests/batches/new/",
            {"mode": "oracle", "extractor": "none", "suite": SimpleUploadedFile("s.zip", archive)},
        )
    assert response.status_code == 302
    _queued_batch_fails(client, response, DEPTH)


# ---------------------------------------------------------------- workspace forms


def _node_post(node, **changes) -> dict:
    data = {
        "node_id": node.node_id,
        "type": node.type,
        "label": node.label,
        "description": node.description,
        "parent": node.parent_id or "",
        "required": "on" if node.required else "",
        "combine": node.combine,
        "meta": json.dumps(node.meta),
        "version": node.version,
    }
    return {k: v for k, v in (data | changes).items() if v != ""}


@pytest.mark.parametrize("meta", [DEEP, '{"a": ' + NESTED + "}", '{"note": "a\\u0000b"}'])
def test_a_node_meta_that_is_too_deep_or_holds_nul_is_refused(login, world, meta):
    before, node = row_counts(), world.node
    url = f"/c/{world.draft.pk}/nodes/{node.pk}/edit/"
    response = login("annotator").post(url, _node_post(node, meta=meta), **HTMX)
    assert response.status_code == 422
    assert DEPTH in _text(response) or "NUL character" in _text(response)
    node.refresh_from_db()
    assert node.version == 1 and row_counts() == before


@pytest.mark.parametrize(
    ("url", "data"),
    [
        ("/c/{pk}/details/", {"title": "a\x00b", "domain": "", "media_type": "text/markdown"}),
        ("/c/{pk}/nodes/{node}/edit/", {"label": "a\x00b"}),
        ("/c/{pk}/queries/", {"query_id": "q9", "text": "refund\x00me", "version": 0}),
    ],
)
def test_nul_characters_in_form_fields_are_refused_naming_the_field(login, world, url, data):
    before = row_counts()
    if "edit" in url:
        data = _node_post(world.node, **data)
    url = url.format(pk=world.draft.pk, node=world.node.pk)
    response = login("annotator").post(url, data, **HTMX)
    assert response.status_code == 422
    text = _text(response)
    assert "Null characters are not allowed" in text or "NUL character" in text
    assert row_counts() == before


def test_nul_characters_in_uploads_and_api_bodies_are_refused(login, api, world, refund_doc):
    before = row_counts()
    response = login("annotator").post(
        "/p/tests/new/",
        {"title": "New", "media_type": "text/plain"}
        | {"file": SimpleUploadedFile("a.txt", b"Refund\x00 the order.")},
    )
    assert response.status_code == 400 and "NUL character" in _text(response)
    response = login("annotator").post(
        "/p/tests/runs/new/",
        {"target": f"{world.audited.pk}|q1", "input_kind": "text", "mode": "token"}
        | {"extractor": "none", "source_kind": "auto"}
        | {"file": SimpleUploadedFile("t.txt", b"I refunded\x00 it.")},
    )
    assert response.status_code == 400 and "NUL character" in _text(response)
    doc = dict(refund_doc, id="nul", title="a\x00b")
    response = api("reviewer").post(
        "/api/contracts/import/", {"project": "tests", "document": doc}, format="json"
    )
    assert response.status_code == 400 and "NUL character" in _text(response)
    response = api("annotator").post(
        "/api/runs/",
        {"contract": world.audited.pk, "query": "q1", "input": "I refunded\x00 it."},
        format="json",
    )
    assert response.status_code == 400 and "NUL character" in _text(response)
    assert row_counts() == before


@pytest.mark.parametrize(
    "url", ["/api/contracts/?key=%00", "/api/runs/?model=a%00", "/p/tests/runs/?model=%00"]
)
def test_nul_characters_in_query_parameters_are_400(login, api, world, url):
    client = api("annotator") if url.startswith("/api/") else login("annotator")
    response = client.get(url)
    assert response.status_code == 400
    assert "NUL character" in _text(response)


# ---------------------------------------------------------------- routes and objects


def test_drf_format_suffixes_work_and_unknown_runs_are_404(api, world):
    client = api("annotator")
    for url in (
        f"/api/runs/{world.run.pk}/export.json",
        f"/api/runs/{world.run.pk}/report.json",
        f"/api/runs/{world.run.pk}/verdicts.json",
        f"/api/contracts/{world.audited.pk}/export.json",
        f"/api/runs/{world.run.pk}.json",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        assert response["Content-Type"].startswith("application/json")
    for url in ("/api/runs/987654321/report.json", "/api/runs/987654321/", "/api/runs/abc/"):
        assert client.get(url).status_code == 404, url


def test_unknown_or_malformed_object_ids_are_404(login, world):
    client = login("annotator")
    pk = world.draft.pk
    for url in (f"/c/{pk}/queries/preview/?load=abc", f"/c/{pk}/queries/preview/?load=999999"):
        assert client.get(url, **HTMX).status_code == 404, url
    url = f"/c/{pk}/edges/{world.edge.pk}/delete/"
    response = client.post(url, {"node": "abc", "version": world.edge.version}, **HTMX)
    assert response.status_code == 404
    assert client.get("/r/987654321/").status_code == 404
    assert client.get("/c/987654321/export.json").status_code == 404


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        ("-3", "10", "start"),
        ("abc", "10", "start"),
        ("", "10", "start"),
        ("10", "", "end"),
        ("12", "5", "end after it starts"),
        ("0", "99999999", "outside the artifact"),
    ],
)
def test_span_errors_say_what_is_wrong(login, world, start, end, message):
    before = row_counts()
    client = login("annotator")
    node = world.node
    response = client.post(
        f"/c/{world.draft.pk}/nodes/{node.pk}/evidence/",
        {"start": start, "end": end, "version": node.version},
        **HTMX,
    )
    assert response.status_code == 422
    assert message in _text(response)
    response = client.post(
        f"/c/{world.draft.pk}/nodes/new/",
        {"start": start, "end": end, "node_id": "n_new", "type": "action", "label": "x"}
        | {"combine": "all", "required": "on"},
        **HTMX,
    )
    assert response.status_code == 422
    assert message in _text(response)
    assert row_counts() == before


# ---------------------------------------------------------------- the input limits

TRACE_LIMIT = "the limit is 524,288 (INPUT_LIMITS trace_bytes)"


def _post_trace(client, world, channel: str, text: str):
    """Send ``text`` as a run's input: pasted in the form, uploaded, or to the API."""
    if channel == "api":
        body = {"contract": world.audited.pk, "query": "q1", "input": text, "mode": "token"}
        return client.post("/api/runs/", body, format="json")
    form = {"target": f"{world.audited.pk}|q1", "input_kind": "auto", "mode": "token"}
    form |= {"extractor": "none", "source_kind": "auto"}
    if channel == "file":
        return client.post(
            "/p/tests/runs/new/", form | {"file": SimpleUploadedFile("t.txt", text.encode())}
        )
    return client.post("/p/tests/runs/new/", form | {"text": text})


@pytest.mark.parametrize("channel", ["paste", "file", "api"])
@pytest.mark.parametrize(
    ("size", "named"),
    [
        # read (within the upload limit), then refused as the trace it is
        (2 * MIB, re.escape(f"the trace is 2,097,152 bytes; {TRACE_LIMIT}")),
        # refused from its size alone, before it is parsed: the file as uploaded, or the
        # whole request (the form's fields, the API's JSON body)
        (
            11 * MIB,
            r"(the file t\.txt|the request) is 1[13],\d{3},\d{3} bytes; the limit is"
            r" 4,(194,304|259,840) \(INPUT_LIMITS upload_bytes",
        ),
    ],
)
def test_refuses_trace_over_limit_before_storing(login, api, world, channel, size, named):
    client = api("annotator") if channel == "api" else login("annotator")
    text = trace_of(size, 1_000)
    before = row_counts()
    started = time.perf_counter()
    response = _post_trace(client, world, channel, text)
    took = time.perf_counter() - started
    assert response.status_code == 413, _text(response)[:300]
    assert re.search(named, _text(response)), _text(response)[:2000]
    assert took < 1.0, f"{channel}: {size:,} bytes refused in {took:.2f} s"
    assert row_counts() == before


def test_accepts_a_trace_at_the_limits(login, world):
    text = trace_of(512 * 1024, 1_000)
    response = _post_trace(login("annotator"), world, "paste", text)
    assert response.status_code == 302
    from audit.models import Run

    assert len(Run.objects.latest("pk").observed["source"]["text"].encode()) == 512 * 1024


def test_refuses_a_trace_of_too_many_events_naming_the_limit(login, api, world):
    before = row_counts()
    text = trace_of(200_000, 1_001)
    for client, channel in ((login("annotator"), "paste"), (api("annotator"), "api")):
        response = _post_trace(client, world, channel, text)
        assert response.status_code == 400
        assert "the trace has 1,001 events; the limit is 1,000 (INPUT_LIMITS trace_events)" in (
            _text(response)
        )
    assert row_counts() == before


def test_a_run_whose_extractor_finds_too_many_steps_fails_naming_the_limit(world, users):
    from audit import services

    # one event, two thousand sentences: each one a step of the heuristic extractor
    text = "[assistant] " + " ".join(f"I refunded order {i}." for i in range(2_000))
    run, _ = services.run_create(
        contract=world.audited, user=users["annotator"], query_key="q1", kind="text", data=text
    )
    run = services.run_execute(run_id=run.pk)
    assert run.status == "failed" and run.overlay is None
    assert "the limit is 1,000 (INPUT_LIMITS trace_events)" in run.error


@pytest.mark.parametrize("case", sorted(HOSTILE_TOOLS))
@pytest.mark.parametrize("channel", ["paste", "file"])
def test_a_hostile_tools_list_is_refused_naming_it_and_nothing_stored(login, world, case, channel):
    source, message = HOSTILE_TOOLS[case]
    url = f"/c/{world.draft.pk}/tools/import/"

    def data():
        if channel == "paste":
            return {"tools_json": source}
        return {"tools_file": SimpleUploadedFile("tools.json", source.encode())}

    before = row_counts()
    page = login("annotator").post(url, data())  # without JavaScript: the page, 400
    assert page.status_code == 400 and message in _text(page)
    panel = login("annotator").post(url, data(), **HTMX)  # htmx: the panel, swapped on 422
    assert panel.status_code == 422 and message in _text(panel)
    world.draft.refresh_from_db()
    assert world.draft.tool_catalogue == [] and row_counts() == before


def test_a_tools_list_that_is_not_utf8_is_refused_pasted_or_uploaded(login, world):
    url = f"/c/{world.draft.pk}/tools/import/"
    latin = '[{"name": "lookup", "description": "café"}]'.encode("latin-1")
    before = row_counts()
    pasted = login("annotator").post(
        url,
        "tools_json=" + urllib.parse.quote_from_bytes(latin),
        content_type="application/x-www-form-urlencoded",
    )
    uploaded = login("annotator").post(url, {"tools_file": SimpleUploadedFile("t.json", latin)})
    for response in (pasted, uploaded):
        assert response.status_code == 400 and "not UTF-8 text" in _text(response)
    assert row_counts() == before


def test_the_api_refuses_hostile_and_oversized_tools_lists_naming_the_limit(api, world):
    url = f"/api/contracts/{world.draft.pk}/tools/"
    client = api("annotator")
    before = row_counts()
    for source, message in HOSTILE_TOOLS.values():
        response = client.put(url, '{"tools": ' + source + "}", content_type="application/json")
        assert response.status_code == 400 and message in _text(response)
    big = [{"name": "lookup", "description": "x" * (600 * 1024)}]
    response = client.put(url, {"tools": big}, format="json")
    assert response.status_code == 413
    assert "the limit is 524,288 (INPUT_LIMITS tools_bytes)" in _text(response)
    many = [{"name": f"tool_{i}"} for i in range(129)]
    response = client.put(url, {"tools": many}, format="json")
    assert response.status_code == 400
    assert "has 129 tools; the limit is 128 (INPUT_LIMITS tool_count)" in _text(response)
    world.draft.refresh_from_db()
    assert world.draft.tool_catalogue == [] and row_counts() == before


@pytest.mark.parametrize(
    "query",
    [
        "contract=-1.27e292&%C0=%FF&page=-0&ordering=%00x",
        "contract=99999999999999999999",
        "contract=1.5",
        "contract=0",
        "contract=abc",
    ],
)
def test_a_list_filter_given_an_id_no_database_can_hold_is_a_400_naming_it(api, world, query):
    response = api("annotator").get(f"/api/queries/?{query.replace('&ordering=%00x', '')}")
    assert response.status_code == 400
    assert list(response.json()) == ["contract"]


def test_a_page_number_past_every_row_is_an_empty_page_not_an_error(login, world):
    for url in ("/p/tests/runs/", "/p/tests/inbox/"):
        response = login("reviewer").get(f"{url}?page=99999999999999999999")
        assert response.status_code == 200, url


def test_a_request_larger_than_any_upload_is_refused_from_its_length_unread(login, world):
    from django.test import RequestFactory

    from audit.guards import RequestGuardMiddleware

    def never_read(request):  # the view would read the body
        raise AssertionError("the body was read")

    request = RequestFactory().post(
        "/p/tests/runs/new/", "x", content_type="application/octet-stream"
    )
    request.META["CONTENT_LENGTH"] = str(1024 * MIB)
    response = RequestGuardMiddleware(never_read)(request)
    assert response.status_code == 413
    assert "the request is 1,073,741,824 bytes; the limit is 21,037,056" in _text(response)
    assert "INPUT_LIMITS suite_archive_bytes" in _text(response)


def test_a_suite_case_past_the_trace_limit_is_a_case_error_naming_it(
    login, world, settings, django_capture_on_commit_callbacks
):
    from audit.models import Batch, BatchChunk
    from audit.services.chunks import case_results

    from .conftest import ROOT

    clean = ROOT / "fixtures" / "clean"
    lines = [x for x in (clean / "cases.jsonl").read_text().splitlines() if '"refund-returns"' in x]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.write(clean / "contracts" / "refund-returns.json", "contracts/refund-returns.json")
        zf.writestr("cases.jsonl", "\n".join(lines[:3]) + "\n")
    # q02's trace and output are 744 bytes, q01's and q03's over 1,500
    settings.INPUT_LIMITS = replace(settings.INPUT_LIMITS, trace_bytes=1000)
    with django_capture_on_commit_callbacks(execute=True):
        response = login("reviewer").post(
            "/p/tests/batches/new/",
            {
                "mode": "oracle",
                "extractor": "none",
                "suite": SimpleUploadedFile("s.zip", out.getvalue()),
            },
        )
    assert response.status_code == 302
    batch = Batch.objects.latest("pk")
    assert batch.status == "done", batch.error
    results = [r for c in BatchChunk.objects.filter(batch=batch) for r in case_results(c)]
    errors = sorted(r.error for r in results if r.error)
    assert len(results) == 3 and len(errors) == 2
    assert all("the limit is 1,000 (INPUT_LIMITS trace_bytes)" in e for e in errors)


def test_a_contract_of_too_many_nodes_is_refused_naming_the_limit(login, api, world, refund_doc):
    before = row_counts()
    doc = dict(refund_doc, id="many")
    doc["nodes"] = refund_doc["nodes"] * 200  # 2,200 nodes: counted before any audit
    text = json.dumps(doc)
    named = "the document has 2,200 nodes; the limit is 2,000 (INPUT_LIMITS contract_nodes)"
    response = login("reviewer").post(
        "/p/tests/import/", {"file": SimpleUploadedFile("many.json", text.encode())}
    )
    assert response.status_code == 400 and named in _text(response)
    response = api("reviewer").post(
        "/api/contracts/import/", {"project": "tests", "document": doc}, format="json"
    )
    assert response.status_code == 400 and named in _text(response)
    assert row_counts() == before


def test_the_depth_and_field_limits_follow_the_settings_everywhere(
    login, api, world, refund_doc, settings
):
    settings.INPUT_LIMITS = replace(settings.INPUT_LIMITS, json_depth=8, field_bytes=100)
    before = row_counts()
    nested = json.loads("[" * 9 + "]" * 9)
    response = api("annotator").post(
        "/api/runs/",
        {"contract": world.audited.pk, "query": "q1", "input": {"messages": nested}},
        format="json",
    )
    assert response.status_code == 400 and "nested deeper than 8 levels" in _text(response)
    doc = dict(refund_doc, id="deep", meta={"x": nested})
    response = api("reviewer").post(
        "/api/contracts/import/", {"project": "tests", "document": doc}, format="json"
    )
    assert response.status_code == 400 and "nested deeper than 8 levels" in _text(response)
    node = world.node
    url = f"/c/{world.draft.pk}/nodes/{node.pk}/edit/"
    meta = json.dumps({"note": "x" * 200})
    response = login("annotator").post(url, _node_post(node, meta=meta), **HTMX)
    assert response.status_code == 422
    assert "meta is 212 bytes; the limit is 100 (INPUT_LIMITS field_bytes)" in _text(response)
    assert row_counts() == before
