"""LLM judge batches and LLM invariant judging in the web app, against the fake server.

The server (``tests/llm/fake_openai.py``) answers ``/v1/chat/completions`` from a
script on 127.0.0.1; the app finds it through the environment. Celery runs eagerly,
so the task's retries run in process.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from llm.fake_openai import completion, error
from rest_framework.test import APIClient

from audit import services
from audit.models import Batch, Run
from audit.services import batches
from matching.suite import load_suite, perturb_suite, write_suite

pytestmark = pytest.mark.django_db
N_CASES = 4


@pytest.fixture(scope="module")
def tiny_suite(tmp_path_factory, fixture_suite) -> Path:
    """One contract of the fixture suite: one clean case and three perturbed ones."""
    suite = load_suite(fixture_suite)
    key = sorted(suite.contracts)[0]
    suite.cases = [c for c in suite.cases if c.contract == key and c.clean][:1]
    suite.contracts = {key: suite.contracts[key]}
    cases, _ = perturb_suite(suite, seed=0)
    clean = [c for c in cases if c.clean][:1]
    perturbed = [c for c in cases if not c.clean][: N_CASES - 1]
    out = tmp_path_factory.mktemp("judge-suite") / "tiny"
    write_suite(out, suite.contracts.values(), clean + perturbed)
    return out


@pytest.fixture(scope="module")
def tiny_zip(tiny_suite) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path in sorted(tiny_suite.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(tiny_suite).as_posix())
    return buf.getvalue()


@pytest.fixture(scope="module")
def truth(tiny_suite) -> list[tuple[bool, str | None]]:
    return [(c.clean, c.family) for c in load_suite(tiny_suite).cases]


def verdict(clean: bool, family: str | None):
    return completion(
        {"clean": clean, "family": family, "rationale": "scripted"},
        prompt_tokens=100,
        completion_tokens=10,
    )


@pytest.fixture
def start_batch(project, login, tiny_zip, django_capture_on_commit_callbacks):
    def post(evaluator: str, role: str = "reviewer"):
        body = {
            "evaluator": evaluator,
            "mode": "oracle",
            "extractor": "none",
            "suite": SimpleUploadedFile("tiny.zip", tiny_zip, "application/zip"),
        }
        with django_capture_on_commit_callbacks(execute=True):
            return login(role).post("/p/tests/batches/new/", body)

    return post


# ------------------------------------------------------------------- judge batches


def test_the_batch_form_offers_every_evaluator(llm_env, project, login):
    page = login("reviewer").get("/p/tests/batches/").content.decode()
    for value in ("contracteval", "judge-output", "judge-trace"):
        assert f'value="{value}"' in page
    assert 'value="judge-trace-checklist"' in page and 'value="judge-expected"' in page
    assert "disabled" not in page.split('name="evaluator"')[1].split("</select>")[0]
    assert "fake-model" in page


def test_a_judge_batch_stores_scores_without_localisation_and_the_usage(
    llm_env, start_batch, login, truth
):
    # right on the clean case and on two perturbed ones, says "clean" on the last
    answers = [verdict(True, None) if c else verdict(False, f) for c, f in truth[:-1]]
    answers.append(verdict(True, None))
    llm_env.push(*answers)
    response = start_batch("judge-trace")
    assert response.status_code == 302, response.content.decode()[:2000]
    batch = Batch.objects.get()
    assert (batch.status, batch.error) == ("done", "")
    assert batch.judge == "trace" and batch.llm_model == "fake-model"
    assert batch.llm_usage["calls"] == N_CASES
    assert batch.llm_usage["prompt_tokens"] == 100 * N_CASES
    assert batch.llm_usage["completion_tokens"] == 10 * N_CASES
    s = batch.scores
    assert s["cases"] == N_CASES and s["judge"] == "trace" and s["model"] == "fake-model"
    assert s["localization"] is None and s["exact_localization"] is None
    assert all(r["localization"] is None for r in s["per_family"].values())
    assert s["detection_accuracy"] == pytest.approx(3 / 4)
    assert len(batch.verdicts) == N_CASES and batch.verdicts[0]["rationale"] == "scripted"
    # the trace-aware judge sees the trace, not the expected graph
    sent = llm_env.user_messages(0)[0]
    assert "### TRACE " in sent and "### EXPECTED GRAPH " not in sent
    page = login("reviewer").get(f"/b/{batch.pk}/").content.decode()
    assert 'data-testid="family-table"' in page
    assert 'data-testid="batch-llm-usage"' in page and "4 calls" in page
    assert "400 prompt + 40 completion tokens" in page
    assert "trace-aware" in page


def test_a_case_whose_call_fails_counts_wrong_and_is_listed(llm_env, start_batch, login, truth):
    answers = [verdict(c, None if c else f) for c, f in truth]
    answers[1] = error(400, "context length exceeded")  # not transient: fails at once
    llm_env.push(*answers)
    start_batch("judge-output")
    batch = Batch.objects.get()
    assert batch.status == "done"
    case_id = batch.verdicts[1]["id"]
    assert "context length exceeded" in batch.verdicts[1]["error"]
    assert [e["id"] for e in batch.scores["errors"]] == [case_id]
    assert batch.scores["detection_accuracy"] == pytest.approx(3 / 4)
    assert batch.llm_usage["failed_calls"] == 1
    page = login("reviewer").get(f"/b/{batch.pk}/").content.decode()
    assert 'data-testid="judge-errors"' in page and case_id in page
    assert "context length exceeded" in page


def test_without_a_key_the_judges_are_disabled_and_rejected(start_batch, login):
    page = login("reviewer").get("/p/tests/batches/").content.decode()
    select = page.split('name="evaluator"')[1].split("</select>")[0]
    assert select.count("disabled") == 4
    assert 'data-testid="judges-disabled"' in page and "no LLM endpoint is configured" in page
    response = start_batch("judge-expected")
    assert response.status_code == 400
    assert batches.NO_LLM_FOR_JUDGES in response.content.decode()
    assert not Batch.objects.exists()
    # ContractEval itself still runs offline
    assert start_batch("contracteval").status_code == 302
    assert Batch.objects.get().judge == ""


def test_an_endpoint_failing_for_good_fails_the_batch_with_the_reason(llm_env, start_batch):
    # no scripted reply: the server answers HTTP 500 to everything
    start_batch("judge-expected")
    batch = Batch.objects.get()
    assert batch.status == "failed"
    assert "fake-model" in batch.error and "500" in batch.error
    assert batch.attempts == 6  # the first try and the task's 5 retries
    assert batch.scores is None and batch.llm_usage["failed_calls"] == batch.llm_usage["calls"]


def test_a_transient_failure_retries_the_batch(llm_env, start_batch, truth):
    # first attempt: three cases x two tries each answer 500, so the batch is retried
    llm_env.push(*[error(500)] * 6, *[verdict(c, None if c else f) for c, f in truth])
    start_batch("judge-trace-checklist")
    batch = Batch.objects.get()
    assert (batch.status, batch.attempts) == ("done", 2)
    assert batch.scores["detection_accuracy"] == 1.0
    assert batch.llm_usage["calls"] == 6 + N_CASES
    assert "### CHECKLIST " in llm_env.user_messages(-1)[0]


def test_unknown_evaluators_are_rejected(llm_env, project, users):
    with pytest.raises(services.ServiceError, match="unknown evaluator"):
        batches.judge_of("judge-vibes")
    with pytest.raises(services.ServiceError, match="unknown judge"):
        batches.batch_create(project=project, user=users["reviewer"], judge="vibes")
    assert not Batch.objects.exists()


# ------------------------------------------------------------------- invariant judging


@pytest.fixture
def unchecked(project, users, refund_doc):
    """The example contract, audited, with its invariant's machine check removed."""
    doc = json.loads(json.dumps(refund_doc))
    for inv in doc["invariants"]:
        inv.pop("check", None)
    contract = services.contract_import(project=project, user=users["admin"], source=doc)
    return services.contract_mark_audited(contract=contract, user=users["reviewer"])


@pytest.fixture
def post_run(login, django_capture_on_commit_callbacks):
    def post(contract, observed, role="annotator", **fields):
        body = {
            "target": f"{contract.pk}|q1",
            "input_kind": "observed",
            "text": json.dumps(observed),
            "source_kind": "auto",
            "mode": "oracle",
            "extractor": "none",
            **fields,
        }
        with django_capture_on_commit_callbacks(execute=True):
            return login(role).post("/p/tests/runs/new/", body)

    return post


def test_invariant_judging_stores_the_models_score(
    llm_env, unchecked, observed_doc, post_run, login
):
    observed_doc.pop("invariants", None)
    post_run(unchecked, observed_doc)
    plain = Run.objects.get()
    assert plain.report["unjudged_invariants"] == ["no_full_card"]
    assert plain.judged_invariants is None and plain.llm_model == ""

    llm_env.push(completion({"score": 0.0, "rationale": "it printed the whole card number"}))
    response = post_run(unchecked, observed_doc, judge_invariants="on")
    assert response.status_code == 302
    run = Run.objects.exclude(pk=plain.pk).get()
    assert run.status == "done", run.error
    assert run.judge_invariants and run.judged_invariants == {"no_full_card": 0.0}
    assert run.report["unjudged_invariants"] == []
    assert "invariant_violation" in run.families and run.verdict == "non_clean"
    assert run.llm_model == "fake-model" and run.llm_usage["calls"] == 1
    assert "Never reveal a full card number" in llm_env.user_messages(0)[0]
    page = login("annotator").get(f"/r/{run.pk}/").content.decode()
    assert 'data-testid="run-llm-judged"' in page and "fake-model" in page


def test_without_a_key_invariant_judging_is_refused_and_nothing_stored(
    unchecked, observed_doc, post_run, login
):
    page = login("annotator").get("/p/tests/runs/").content.decode()
    box = page.split('name="judge_invariants"')[0].rsplit("<input", 1)[1]
    assert "disabled" in page.split('name="judge_invariants"')[1].split(">")[0] + box
    assert "stay unjudged" in page
    response = post_run(unchecked, observed_doc, judge_invariants="on")
    assert response.status_code == 400
    assert "stay unjudged" in response.content.decode()
    assert not Run.objects.exists()


def test_an_invariant_judge_failing_for_good_fails_the_run(
    llm_env, unchecked, observed_doc, post_run
):
    observed_doc.pop("invariants", None)
    post_run(unchecked, observed_doc, judge_invariants="on")
    run = Run.objects.get()
    assert run.status == "failed" and "500" in run.error and "fake-model" in run.error
    assert run.attempts == 6


# ------------------------------------------------------------------- API


@pytest.fixture
def api(users):
    def as_role(role: str) -> APIClient:
        client = APIClient()
        client.force_authenticate(users[role])
        return client

    return as_role


def test_the_api_runs_a_judge_batch_and_validates_the_evaluator(
    llm_env, api, project, truth, tiny_suite, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(batches, "fixture_suite_dir", lambda: tiny_suite)
    llm_env.push(*[verdict(c, None if c else f) for c, f in truth])
    with django_capture_on_commit_callbacks(execute=True):
        response = api("reviewer").post(
            "/api/batches/", {"project": "tests", "evaluator": "judge-expected"}, format="json"
        )
    assert response.status_code == 201, response.content
    assert response.data["evaluator"] == "judge-expected"
    got = api("reviewer").get(f"/api/batches/{response.data['id']}/").data
    assert got["status"] == "done" and got["judge"] == "expected"
    assert got["llm_model"] == "fake-model" and got["llm_usage"]["calls"] == N_CASES
    assert got["scores"]["localization"] is None
    assert "### EXPECTED GRAPH " in llm_env.user_messages(0)[0]
    bad = api("reviewer").post(
        "/api/batches/", {"project": "tests", "evaluator": "judge-vibes"}, format="json"
    )
    assert bad.status_code == 400 and "unknown evaluator" in str(bad.data)


def test_the_api_refuses_judges_without_a_key(api, project):
    response = api("reviewer").post(
        "/api/batches/", {"project": "tests", "evaluator": "judge-output"}, format="json"
    )
    assert response.status_code == 400
    assert batches.NO_LLM_FOR_JUDGES in str(response.data)
    assert not Batch.objects.exists()


def test_the_api_creates_a_run_with_invariant_judging(
    llm_env, api, unchecked, observed_doc, django_capture_on_commit_callbacks
):
    observed_doc.pop("invariants", None)
    llm_env.push(completion({"score": 1.0, "rationale": "last four digits only"}))
    body = {
        "contract": unchecked.pk,
        "query": "q1",
        "input_kind": "observed",
        "input": observed_doc,
        "mode": "oracle",
        "judge_invariants": True,
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = api("annotator").post("/api/runs/", body, format="json")
    assert response.status_code == 201, response.content
    got = api("annotator").get(f"/api/runs/{response.data['id']}/").data
    assert got["judge_invariants"] is True and got["judged_invariants"] == {"no_full_card": 1.0}
    assert got["llm_model"] == "fake-model" and got["llm_usage"]["calls"] == 1
    assert got["report"]["unjudged_invariants"] == []
