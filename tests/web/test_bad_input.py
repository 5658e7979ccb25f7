"""Bad input never gives a 500: a message naming what is wrong, and nothing stored.

Deeply nested JSON, text that is not UTF-8, NUL characters, oversized bodies, DRF
format suffixes, unknown objects and broken spans, in the UI and the API.
"""

from __future__ import annotations

import io
import json
import urllib.parse
import zipfile
from dataclasses import replace

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from .sweep import build_world, row_counts

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
