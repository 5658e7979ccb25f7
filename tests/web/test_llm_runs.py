"""Runs that use the LLM extractor, and uploads in the import formats, through the API
and the pages, against the fake server of ``tests/llm/fake_openai.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm.fake_openai import completion
from rest_framework.test import APIClient

from audit.models import Run

pytestmark = pytest.mark.django_db
SAMPLES = Path(__file__).resolve().parents[1] / "importers" / "samples"

# refund-mini q1, as an Anthropic transcript (written for this test).
TRANSCRIPT = {
    "system": "You are the refunds agent.",
    "messages": [
        {"role": "user", "content": "Please refund order 1042, it arrived broken."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I will look up order 1042 first."},
                {"type": "tool_use", "id": "t1", "name": "lookup_order", "input": {"id": "1042"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "10 days old"}],
        },
        {"role": "assistant", "content": "The order is within 30 days, so I approved the refund."},
    ],
}


def step(quote: str, label: str, type_: str | None = "action") -> dict[str, object]:
    return {"quote": quote, "label": label, "description": "", "type": type_}


GOOD = {
    "nodes": [
        step('lookup_order(id="1042")', "Looked up the order"),
        step("The order is within 30 days, so I approved the refund.", "Approved the refund"),
    ]
}
USERS_WORDS = {
    "nodes": [
        step("Please refund order 1042, it arrived broken.", "Asked for a refund"),
        step("10 days old", "Order age", None),
        step("I approved the refund", "Approved", "action"),
    ]
}


@pytest.fixture
def api(users):
    def as_role(role: str) -> APIClient:
        client = APIClient()
        client.force_authenticate(users[role])
        return client

    return as_role


@pytest.fixture
def post(api, audited, django_capture_on_commit_callbacks):
    def run(data, **fields):
        body = {"contract": audited.pk, "query": "q1", "input": data, **fields}
        with django_capture_on_commit_callbacks(execute=True):
            return api("annotator").post("/api/runs/", body, format="json")

    return run


def test_an_llm_extractor_run_counts_its_calls_and_keeps_the_quote_counts(
    llm_env, post, api, login
):
    llm_env.push(completion(GOOD, prompt_tokens=300, completion_tokens=40))
    response = post(TRANSCRIPT, extractor="llm")
    assert response.status_code == 201, response.content
    got = api("annotator").get(f"/api/runs/{response.data['id']}/").data
    assert got["status"] == "done" and got["input_kind"] == "anthropic"
    assert got["llm_model"] == "fake-model"
    assert (got["llm_usage"]["calls"], got["llm_usage"]["prompt_tokens"]) == (1, 300)
    assert got["extraction"]["kept"] == 2 and got["extraction"]["unreliable"] is False
    page = login("annotator").get(f"/r/{got['id']}/").content.decode()
    assert 'data-testid="run-extraction"' in page and "kept 2 of 2 quotes" in page
    assert 'data-testid="run-unreliable"' not in page


def test_another_model_is_another_run(llm_env, post, monkeypatch):
    llm_env.push(completion(GOOD), completion(GOOD))
    first = post(TRANSCRIPT, extractor="llm")
    again = post(TRANSCRIPT, extractor="llm")
    assert (first.status_code, again.status_code) == (201, 200)  # same inputs, same run
    monkeypatch.setenv("CONTRACTEVAL_LLM_MODEL", "other-model")
    other = post(TRANSCRIPT, extractor="llm")
    assert other.status_code == 201 and other.data["id"] != first.data["id"]
    assert Run.objects.get(pk=other.data["id"]).llm_model == "other-model"
    heuristic = post(TRANSCRIPT, extractor="heuristic")  # no LLM: the model does not matter
    monkeypatch.setenv("CONTRACTEVAL_LLM_MODEL", "fake-model")
    assert post(TRANSCRIPT, extractor="heuristic").data["id"] == heuristic.data["id"]


def test_a_run_whose_quotes_are_mostly_discarded_is_marked_unreliable(llm_env, post, login):
    llm_env.push(completion(USERS_WORDS))
    response = post(TRANSCRIPT, extractor="llm")
    run = Run.objects.get(pk=response.data["id"])
    assert run.status == "done"
    assert run.extraction["unreliable"] is True
    assert run.extraction["reasons"] == {"wrong_event": 2, "too_short": 1}
    assert any("unreliable" in w for w in run.warnings)
    page = login("annotator").get(f"/r/{run.pk}/").content.decode()
    assert 'data-testid="run-unreliable"' in page
    assert "quote is not inside one [assistant] or [tool] event" in page


def test_an_html_endpoint_fails_the_run_with_one_reason(llm_env, post):
    llm_env.switch("html")
    response = post(TRANSCRIPT, extractor="llm")
    run = Run.objects.get(pk=response.data["id"])
    assert run.status == "failed" and run.report is None
    assert "returned an HTML page (HTTP 200)" in run.error
    assert run.llm_usage["failed_calls"] == 1


def test_a_tau_bench_results_file_needs_a_chosen_trajectory(post):
    results = json.loads((SAMPLES / "tau_results.json").read_text())
    response = post(results, extractor="heuristic")
    assert response.status_code == 400
    assert "task_id=0,trial=1 (reward 0.0)" in str(response.data["input"])
    assert not Run.objects.exists()
    response = post(results, extractor="heuristic", select="task_id=4,trial=0")
    assert response.status_code == 201, response.content
    run = Run.objects.get()
    assert run.input_kind == "tau_bench_results"
    assert "#W9034" in run.observed["source"]["text"]
    assert run.observed["output"].startswith("The return of the desk lamp is requested")


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("openai_responses.json", "openai_responses"),
        ("langchain_model_dump.json", "langchain"),
        ("otel_semconv.json", "otel"),
        ("openai_legacy.json", "openai"),
    ],
)
def test_uploads_in_every_import_format(post, name: str, kind: str):
    data = json.loads((SAMPLES / name).read_text())
    response = post(data, extractor="heuristic")
    assert response.status_code == 201, response.content
    assert Run.objects.get().input_kind == kind


def test_the_reference_actions_are_refused_on_upload(post):
    task = json.loads((SAMPLES / "tau_task.json").read_text())
    response = post(task)
    assert response.status_code == 400 and "reference solution" in str(response.data)
    assert not Run.objects.exists()


def test_the_form_takes_a_results_file_and_a_trajectory(
    audited, login, django_capture_on_commit_callbacks
):
    body = {
        "target": f"{audited.pk}|q1",
        "input_kind": "auto",
        "text": (SAMPLES / "tau_results.json").read_text(),
        "source_kind": "auto",
        "mode": "token",
        "extractor": "heuristic",
        "select": "task_id=0,trial=1",
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = login("annotator").post("/p/tests/runs/new/", body)
    assert response.status_code == 302
    assert Run.objects.get().input_kind == "tau_bench_results"


def test_a_proposal_run_of_invented_quotes_says_it_is_unreliable(
    llm_env, project, users, refund_doc, login, django_capture_on_commit_callbacks
):
    from audit import services
    from audit.models import ProposalRun

    draft = services.contract_create(
        project=project, user=users["admin"], key="draft", text=refund_doc["artifact"]["text"]
    )
    invented = [
        {
            "key": f"k{i}",
            "type": "action",
            "label": f"Invented step {i}",
            "description": "",
            "quote": f"Step {i} that the artifact never states in these words.",
            "parent": None,
            "required": True,
            "score": 0.5,
            "justification": "made up",
        }
        for i in range(3)
    ]
    llm_env.push(completion({"nodes": invented, "edges": [], "invariants": []}))
    with django_capture_on_commit_callbacks(execute=True):
        login("annotator").post(
            f"/c/{draft.pk}/propose/", {"proposer": "llm"}, HTTP_HX_REQUEST="true"
        )
    run = ProposalRun.objects.get(contract=draft)
    assert run.status == "done" and run.created_nodes == 0
    assert run.notice.startswith("unreliable: most of the model's quotes were not anchored")
    assert "kept 0 of 3 quotes; discarded: 3 not found" in run.notice
    page = login("annotator").get(f"/c/{draft.pk}/").content.decode()
    assert 'data-testid="run-unreliable"' in page


def test_an_engine_batch_with_the_llm_extractor_records_its_usage(
    llm_env, project, users, tmp_path, django_capture_on_commit_callbacks
):
    import io
    import zipfile

    from llm.helpers import clean_case, contract, gold_extraction_answer

    from audit.models import Batch
    from audit.services import batches
    from matching.suite import write_suite

    write_suite(tmp_path, [contract()], [clean_case()])
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path in sorted(tmp_path.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(tmp_path).as_posix())
    llm_env.push(completion(gold_extraction_answer(clean_case()), prompt_tokens=500))
    with django_capture_on_commit_callbacks(execute=True):
        batches.batch_create(
            project=project,
            user=users["reviewer"],
            mode="token",
            extractor="llm",
            archive=buf.getvalue(),
            name="one.zip",
        )
    batch = Batch.objects.get()
    assert batch.status == "done", batch.error
    assert batch.llm_model == "fake-model"
    assert (batch.llm_usage["calls"], batch.llm_usage["prompt_tokens"]) == (1, 500)
    assert batch.scores["llm"]["calls"] == 1
