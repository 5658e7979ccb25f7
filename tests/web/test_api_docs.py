"""The API's browsable docs are Swagger UI served from our own static files."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

# What this checks does not depend on the database engine: CI runs it on SQLite only.
pytestmark = [pytest.mark.django_db, pytest.mark.any_database]


def test_api_docs_page_loads_swagger_ui_from_vendored_static_files(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/vendor/swagger-ui/swagger-ui-bundle.js" in html
    assert "/static/vendor/swagger-ui/swagger-ui.css" in html
    # the page's own script is a file too (the CSP refuses inline scripts); it loads
    # the schema
    assert '<script src="/api/docs/?script="></script>' in html
    assert "<script>" not in html
    assert "/api/schema/" in client.get("/api/docs/?script=").content.decode()
    for cdn in ("cdn.jsdelivr.net", "unpkg.com", "cdnjs"):
        assert cdn not in html


def test_api_docs_page_points_at_a_schema_that_describes_the_runs_endpoint(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    assert "/api/runs/" in schema.content.decode()


def test_the_app_serves_its_static_files_with_caching_headers(client):
    from django.conf import settings

    assert settings.SERVE_STATIC  # the default: no web server in front
    response = client.get("/static/vendor/swagger-ui/swagger-ui.css")
    assert response.status_code == 200
    assert "max-age" in response["Cache-Control"]
    assert b"".join(response.streaming_content)


def test_the_schema_documents_every_list_filter(client):
    doc = _schema(client)

    def params(path):
        return {p["name"] for p in doc["paths"][path]["get"].get("parameters", [])}

    assert {"project", "contract", "query", "model", "status", "verdict", "family"} <= params(
        "/api/runs/"
    )
    assert "reviewed" in params("/api/runs/")
    assert {"project", "key", "status"} <= params("/api/contracts/")
    assert {"project", "contract"} <= params("/api/queries/")
    assert "project" in params("/api/batches/")


def test_the_schema_documents_the_run_list_as_paged_by_cursor_without_a_count(client):
    doc = _schema(client)
    runs = doc["paths"]["/api/runs/"]["get"]
    assert "cursor" in {p["name"] for p in runs["parameters"]}
    assert "page" not in {p["name"] for p in runs["parameters"]}
    page = runs["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    fields = doc["components"]["schemas"][page.rsplit("/", 1)[1]]["properties"]
    assert set(fields) == {"next", "previous", "results"}
    contracts = doc["paths"]["/api/contracts/"]["get"]  # the other lists keep page numbers
    assert "page" in {p["name"] for p in contracts["parameters"]}


def _schema(client) -> dict:
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return json.loads(response.content)


def test_the_views_annotations_recorded_at_import_reach_the_schema(client):
    # the views record drf-spectacular's annotations and the generator applies them
    # (audit/openapi.py): without them these operations would read as plain model views
    paths = _schema(client)["paths"]
    create = paths["/api/runs/"]["post"]["requestBody"]["content"]["application/json"]
    assert create["schema"]["$ref"].endswith("/RunCreate")  # not the model serializer, Run
    verdicts = paths["/api/runs/{id}/verdicts/"]
    assert (
        verdicts["get"]["responses"]["200"]["content"]["application/json"]["schema"]["type"]
        == "array"
    )
    assert verdicts["post"]["responses"]["201"]["content"]["application/json"]["schema"][
        "$ref"
    ].endswith("/Verdict")
    assert "204" in paths["/api/assignments/{id}/"]["delete"]["responses"]


def test_two_schemas_generated_at_once_are_the_same(client):
    from audit.api_schema import SchemaGenerator

    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(lambda _: SchemaGenerator().get_schema(public=True), range(2))
    assert first == second
    assert first["paths"]["/api/runs/"]["post"]["requestBody"]


def test_the_schema_documents_an_id_filter_as_a_whole_number_in_range_or_a_400(client):
    doc = _schema(client)
    operation = doc["paths"]["/api/queries/"]["get"]
    contract = next(p for p in operation["parameters"] if p["name"] == "contract")
    assert contract["schema"] == {"type": "integer", "minimum": 1, "maximum": 2**63 - 1}
    assert "a 400" in contract["description"]
    assert "400" in operation["responses"]
