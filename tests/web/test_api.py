"""The REST API: every endpoint, token and session auth, 401/403/404, filters, pagination."""

from __future__ import annotations

import copy
import json
from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from audit.models import Batch, Contract, ReviewVerdict, Run

pytestmark = pytest.mark.django_db

TAU = [
    {"name": "lookup_order", "kwargs": {"order_id": "1042"}},
    {"name": "respond", "kwargs": {"content": "Your refund is approved."}},
]
CHAT = [
    {"role": "user", "content": "Refund order 1042, please."},
    {"role": "assistant", "content": "I have refunded order 1042 to your card."},
]


@pytest.fixture
def post_run(django_capture_on_commit_callbacks):
    def post(client, body):
        with django_capture_on_commit_callbacks(execute=True):
            return client.post("/api/runs/", body, format="json")

    return post


@pytest.fixture
def done_run(api, audited, observed_doc, post_run):
    doc = copy.deepcopy(observed_doc)
    doc["nodes"] = [n for n in doc["nodes"] if n.get("gold") != "verify_owner"]
    r = post_run(
        api("annotator"),
        {"contract": audited.pk, "query": "q1", "input": doc, "mode": "oracle", "model": "m1"},
    )
    assert r.status_code == 201, r.content
    return Run.objects.get(pk=r.json()["id"])


@pytest.fixture
def elsewhere(users, refund_doc):
    """An audited contract and a finished run in the outsider's project."""
    from audit import services
    from audit.models import Project
    from audit.services import runs

    other = Project.objects.get(slug="elsewhere")
    doc = dict(refund_doc, id="other-contract")
    contract = services.contract_import(project=other, user=users["outsider"], source=doc)
    contract = services.contract_mark_audited(contract=contract, user=users["outsider"])
    run, _ = runs.run_create(
        contract=contract, user=users["outsider"], query_key="q1", kind="tau_bench", data=TAU
    )
    runs.run_execute(run_id=run.pk)
    return contract, run


# ---------------------------------------------------------------- authentication


ENDPOINTS = [
    "/api/projects/",
    "/api/projects/tests/",
    "/api/contracts/",
    "/api/contracts/{contract}/",
    "/api/contracts/{contract}/export/",
    "/api/queries/",
    "/api/queries/{query}/",
    "/api/runs/",
    "/api/runs/{run}/",
    "/api/runs/{run}/report/",
    "/api/runs/{run}/export/",
    "/api/runs/{run}/verdicts/",
    "/api/batches/",
]


@pytest.mark.parametrize("url", ENDPOINTS)
def test_anonymous_requests_get_401_and_members_200(api, done_run, url):
    url = url.format(contract=done_run.contract_id, query=done_run.query_id, run=done_run.pk)
    r = api(None).get(url)
    assert r.status_code == 401 and r["WWW-Authenticate"].startswith("Token")
    assert api("annotator").get(url).status_code == 200


@pytest.mark.parametrize(
    "url",
    [
        "/api/projects/tests/",
        "/api/contracts/{contract}/",
        "/api/contracts/{contract}/export/",
        "/api/queries/{query}/",
        "/api/runs/{run}/",
        "/api/runs/{run}/report/",
        "/api/runs/{run}/export/",
        "/api/runs/{run}/verdicts/",
    ],
)
def test_other_projects_objects_are_404(api, done_run, url):
    url = url.format(contract=done_run.contract_id, query=done_run.query_id, run=done_run.pk)
    assert api("outsider").get(url).status_code == 404


def test_lists_show_only_the_members_projects(api, done_run, elsewhere):
    other_contract, other_run = elsewhere
    mine = api("annotator")
    assert [p["slug"] for p in mine.get("/api/projects/").json()["results"]] == ["tests"]
    assert mine.get("/api/projects/").json()["results"][0]["role"] == "annotator"
    contracts = {c["id"] for c in mine.get("/api/contracts/").json()["results"]}
    assert done_run.contract_id in contracts and other_contract.pk not in contracts
    runs_ = {r["id"] for r in mine.get("/api/runs/").json()["results"]}
    assert runs_ == {done_run.pk}
    queries = {q["contract"] for q in mine.get("/api/queries/").json()["results"]}
    assert queries == {done_run.contract_id}
    theirs = {r["id"] for r in api("outsider").get("/api/runs/").json()["results"]}
    assert theirs == {other_run.pk}
    assert mine.get(f"/api/runs/{other_run.pk}/").status_code == 404
    assert mine.get(f"/api/contracts/{other_contract.pk}/export/").status_code == 404


def test_session_auth_works_and_enforces_csrf(users, audited, observed_doc):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(users["annotator"])
    assert client.get("/api/contracts/").status_code == 200
    r = client.post(
        "/api/runs/", {"contract": audited.pk, "query": "q1", "input": observed_doc}, format="json"
    )
    assert r.status_code == 403 and "CSRF" in r.json()["detail"]
    assert Run.objects.count() == 0


def test_the_browsable_api_and_the_openapi_schema(users, client):
    client.force_login(users["annotator"])
    root = client.get("/api/", HTTP_ACCEPT="text/html")
    assert root.status_code == 200 and b"/api/runs/" in root.content
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    doc = json.loads(schema.content)
    assert doc["openapi"].startswith("3.")
    for path in (
        "/api/projects/",
        "/api/contracts/",
        "/api/contracts/import/",
        "/api/contracts/{id}/export/",
        "/api/queries/",
        "/api/runs/",
        "/api/runs/{id}/report/",
        "/api/runs/{id}/verdicts/",
        "/api/batches/",
    ):
        assert path in doc["paths"], path
    assert {"tokenAuth", "cookieAuth"} <= set(doc["components"]["securitySchemes"])


# ---------------------------------------------------------------- contracts and queries


def test_contracts_get_filter_and_export(api, audited, refund_doc):
    client = api("annotator")
    listed = client.get("/api/contracts/?project=tests&status=audited").json()
    assert listed["count"] == 1 and listed["results"][0]["queries"] == ["q1", "q2"]
    assert client.get("/api/contracts/?key=nope").json()["count"] == 0
    one = client.get(f"/api/contracts/{audited.pk}/").json()
    assert one["key"] == "refund-mini" and one["status"] == "audited"
    exported = client.get(one["export_url"]).json()
    assert exported["format"] == "contracteval.contract/v1" and exported["id"] == "refund-mini"
    assert exported["artifact"]["text"] == refund_doc["artifact"]["text"]


def test_contract_import_needs_the_reviewer_role_and_a_valid_document(api, project, refund_doc):
    body = {"project": "tests", "document": refund_doc}
    assert api(None).post("/api/contracts/import/", body, format="json").status_code == 401
    assert api("annotator").post("/api/contracts/import/", body, format="json").status_code == 403
    assert api("outsider").post("/api/contracts/import/", body, format="json").status_code == 404
    assert Contract.objects.count() == 0
    r = api("reviewer").post("/api/contracts/import/", body, format="json")
    assert r.status_code == 201 and r.json()["key"] == "refund-mini" and r.json()["version"] == 1
    bad = copy.deepcopy(refund_doc)
    bad["nodes"][0]["evidence"][0]["end"] = 10**6
    r = api("reviewer").post(
        "/api/contracts/import/", {"project": "tests", "document": bad}, format="json"
    )
    assert r.status_code == 400 and "$.nodes[0].evidence[0]" in r.json()["document"][0]
    assert Contract.objects.count() == 1
    again = api("reviewer").post("/api/contracts/import/", body, format="json")
    assert again.status_code == 201 and again.json()["version"] == 2


def test_queries_list_filter_and_get(api, audited):
    client = api("annotator")
    listed = client.get(f"/api/queries/?contract={audited.pk}").json()
    assert [q["query"] for q in listed["results"]] == ["q1", "q2"]
    q = client.get(f"/api/queries/{listed['results'][0]['id']}/").json()
    assert q["contract"] == audited.pk and q["text"]
    assert client.get("/api/queries/?contract=x").status_code == 400


# ---------------------------------------------------------------- runs


@pytest.mark.parametrize(
    ("kind", "data", "stored_kind"),
    [
        ("auto", "observed", "observed"),
        ("openai", CHAT, "openai"),
        ("auto", {"messages": CHAT}, "openai"),
        ("tau_bench", TAU, "tau_bench"),
        ("text", "I looked up order 1042 and refunded it to your card.", "text"),
    ],
)
def test_runs_are_created_from_every_input_kind(
    api, audited, observed_doc, post_run, kind, data, stored_kind
):
    body = {"contract": audited.pk, "query": "q1", "input_kind": kind, "model": "agent-x"}
    body["input"] = observed_doc if data == "observed" else data
    r = post_run(api("annotator"), body)
    assert r.status_code == 201, r.content
    run = r.json()
    assert run["input_kind"] == stored_kind and run["model"] == "agent-x"
    detail = api("annotator").get(run["url"]).json()
    assert detail["status"] == "done" and detail["report"]["format"] == "contracteval.report/v1"
    report = api("annotator").get(run["report_url"]).json()
    assert report == detail["report"] and set(detail["metrics"]) == set(report["metrics"])


def test_the_same_inputs_return_the_existing_run(api, audited, observed_doc, post_run):
    body = {"contract": audited.pk, "query": "q1", "input": observed_doc}
    first = post_run(api("annotator"), body)
    second = post_run(api("reviewer"), body)
    assert first.status_code == 201 and second.status_code == 200
    assert first.json()["id"] == second.json()["id"] and Run.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"input": {"format": "contracteval.observed/v1"}}, "'source' is a required property"),
        ({"input": [{"colour": "red"}]}, "unrecognised input"),
        ({"input_kind": "openai", "input": [{"role": "robot"}]}, "unknown role"),
        ({"input": TAU, "mode": "oracle"}, "oracle mode"),
        ({"query": "zz", "input": TAU}, "no query 'zz'"),
    ],
)
def test_bad_run_input_is_400_and_stores_nothing(api, audited, body, message):
    body = {"contract": audited.pk, "query": "q1", **body}
    r = api("annotator").post("/api/runs/", body, format="json")
    assert r.status_code == 400 and message in r.json()["input"][0]
    assert Run.objects.count() == 0


def test_run_creation_checks_the_contract(api, audited, contract, elsewhere, observed_doc):
    other_contract, _ = elsewhere
    body = {"contract": other_contract.pk, "query": "q1", "input": TAU}
    assert api("annotator").post("/api/runs/", body, format="json").status_code == 404
    assert api(None).post("/api/runs/", body, format="json").status_code == 401
    missing = api("annotator").post("/api/runs/", {"query": "q1"}, format="json")
    assert missing.status_code == 400 and "contract" in missing.json()
    assert Run.objects.filter(project__slug="tests").count() == 0


def test_a_queued_run_has_no_report_yet(api, audited, observed_doc):
    r = api("annotator").post(  # without executing on-commit callbacks: stays queued
        "/api/runs/", {"contract": audited.pk, "query": "q1", "input": observed_doc}, format="json"
    )
    assert r.status_code == 201 and r.json()["status"] == "queued"
    report = api("annotator").get(r.json()["report_url"])
    assert report.status_code == 404 and "queued" in report.json()["detail"]


def _ids(client, url: str) -> list[int]:
    return [r["id"] for r in client.get(url).json()["results"]]


def test_run_list_filters(api, audited, observed_doc, post_run, done_run):
    post_run(api("annotator"), {"contract": audited.pk, "query": "q1", "input": observed_doc})
    client = api("annotator")
    page = client.get("/api/runs/").json()
    assert set(page) == {"next", "previous", "results"} and len(page["results"]) == 2
    assert _ids(client, "/api/runs/?verdict=non_clean") == [done_run.pk]
    assert _ids(client, "/api/runs/?family=omission") == [done_run.pk]
    assert _ids(client, "/api/runs/?model=m1") == [done_run.pk]
    assert len(_ids(client, "/api/runs/?contract=refund-mini&query=q1&status=done")) == 2
    assert _ids(client, "/api/runs/?project=elsewhere") == []


def test_run_list_pages_by_cursor_newest_first_each_run_once(api, done_run):
    # 129 runs, several created in the same instant: the cursor must neither skip nor
    # repeat runs that tie on the creation time.
    stamp = done_run.created_at
    for i in range(128):
        clone = copy.copy(done_run)
        clone.pk, clone.input_hash = None, f"clone-{i}"
        clone.save()
        Run.objects.filter(pk=clone.pk).update(created_at=stamp - timedelta(seconds=i // 3))
    expected = list(Run.objects.order_by("-created_at", "-pk").values_list("pk", flat=True))
    client, url, seen, first = api("annotator"), "/api/runs/", [], None
    while url:
        page = client.get(url).json()
        assert "count" not in page and len(page["results"]) <= 50
        seen += [r["id"] for r in page["results"]]
        first = first or page
        last, url = page, page["next"]
    assert seen == expected
    assert first["previous"] is None and last["previous"]
    back = client.get(last["previous"]).json()["results"]
    assert [r["id"] for r in back] == expected[50:100]
    assert client.get("/api/runs/?cursor=bogus").status_code == 404


def test_verdicts_by_role(api, done_run):
    url = f"/api/runs/{done_run.pk}/verdicts/"
    body = {"agrees": False, "note": "verify_owner is evidenced in step 2"}
    assert api(None).post(url, body, format="json").status_code == 401
    assert api("outsider").post(url, body, format="json").status_code == 404
    assert api("annotator").post(url, body, format="json").status_code == 403
    r = api("reviewer").post(url, body, format="json")
    assert r.status_code == 201 and r.json()["reviewer"] == "reviewer"
    assert api("reviewer").post(url, {"agrees": False}, format="json").status_code == 400
    assert ReviewVerdict.objects.count() == 1
    listed = api("annotator").get(url).json()
    assert [v["note"] for v in listed] == [body["note"]]
    export = api("annotator").get(f"/api/runs/{done_run.pk}/export/").json()
    assert export["verdicts"][0]["agrees"] is False and export["report"] == done_run.report


# ---------------------------------------------------------------- batches


def test_batches_by_role(api, project, django_capture_on_commit_callbacks, fixture_suite):
    body = {"project": "tests", "mode": "oracle", "extractor": "none"}
    assert api(None).post("/api/batches/", body, format="json").status_code == 401
    assert api("annotator").post("/api/batches/", body, format="json").status_code == 403
    assert api("outsider").post("/api/batches/", body, format="json").status_code == 404
    bad = api("reviewer").post("/api/batches/", {**body, "extractor": "heuristic"}, format="json")
    assert bad.status_code == 400 and Batch.objects.count() == 0
    with django_capture_on_commit_callbacks(execute=True):
        r = api("reviewer").post("/api/batches/", body, format="json")
    assert r.status_code == 201
    batch = api("annotator").get(f"/api/batches/{r.json()['id']}/").json()
    assert batch["status"] == "done" and batch["done"] == batch["total"] > 0
    assert batch["scores"]["cases"] == batch["total"]
    assert api("outsider").get(f"/api/batches/{batch['id']}/").status_code == 404
