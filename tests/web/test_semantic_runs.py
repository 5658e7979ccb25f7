"""Semantic mode from the run form and the API: a pasted clean trace shows no omission or
extra action, and a missing embedding model is a clear error that stores nothing."""

from __future__ import annotations

import pytest

from audit.models import Run
from matching import embed

pytestmark = pytest.mark.django_db

PASTED_CLEAN = """[user] Hi, I'd like a refund for order 1042 please, it arrived ten days ago.
[assistant] Hello! I can help with that. Let me look up your order.
[tool] lookup_order(order_id="1042")
[result] {"order_id": "1042", "email": "sam@example.com", "placed": "10 days ago", "total": 59.00}
[assistant] Thanks for waiting. The email on order 1042 matches the one you wrote from, so I can confirm the purchase is yours.
[assistant] The order was placed 10 days ago, which is inside our 30-day return window.
[tool] issue_refund(order_id="1042", amount=59.00, to="original_payment")
[result] {"refund_id": "RF-88", "status": "approved"}
[assistant] Your refund of $59.00 to the card ending 4242 is approved and should arrive within 5 business days. Is there anything else I can help with?
"""


def _families(run: Run) -> set[tuple[str, str]]:
    return {(f["family"], f["location"]) for f in run.report["failures"]}


def _form(audited, mode: str = "semantic") -> dict[str, str]:
    return {
        "target": f"{audited.pk}|q1",
        "input_kind": "text",
        "text": PASTED_CLEAN,
        "source_kind": "trace",
        "mode": mode,
        "extractor": "behaviour",
        "model_name": "agent-7",
    }


def test_the_run_form_runs_a_pasted_trace_in_semantic_mode(
    audited, login, django_capture_on_commit_callbacks
):
    client = login("annotator")
    page = client.get("/p/tests/runs/").content.decode()
    assert 'value="semantic"' in page and 'value="behaviour"' in page
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post("/p/tests/runs/new/", _form(audited))
    assert r.status_code == 302
    run = Run.objects.get()
    assert r.status_code == 302 and run.status == "done", run.error
    assert run.mode == "semantic" and run.report["mode"] == "semantic"
    # a pasted trace has no final JSON record: that is the only failure
    assert _families(run) == {("output_contract", "reply_json")}
    # P(violation) is kept, read with the shipped thresholds (the project set none)
    confidence = run.report["confidence"]
    assert run.p_violation == confidence["p_violation"]
    assert run.assessment == confidence["verdict"]
    assert all(0.0 <= f["probability"] <= 1.0 for f in run.report["failures"])


def test_without_the_model_the_form_names_make_model_and_stores_nothing(
    audited, login, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(embed.MODEL_ENV, "")
    r = login("annotator").post("/p/tests/runs/new/", _form(audited))
    assert r.status_code == 400 and "make model" in r.content.decode()
    assert Run.objects.count() == 0


def test_the_api_takes_semantic_mode_and_refuses_it_without_the_model(
    audited, api, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks
):
    client = api("annotator")
    body = {
        "contract": audited.pk,
        "query": "q1",
        "input_kind": "text",
        "input": PASTED_CLEAN,
        "source_kind": "trace",
        "mode": "semantic",
        "extractor": "behaviour",
    }
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post("/api/runs/", body, format="json")
    assert r.status_code == 201, r.content
    assert _families(Run.objects.get()) == {("output_contract", "reply_json")}
    monkeypatch.setenv(embed.MODEL_ENV, "")
    body["extractor"] = "heuristic"
    r = client.post("/api/runs/", body, format="json")
    assert r.status_code == 400 and "make model" in r.content.decode()
    assert Run.objects.count() == 1


FINAL_RECORD = '{"order_id": "1042", "resolution": "refunded"}'


def test_a_pasted_clean_trace_with_its_final_record_is_clean_in_semantic_mode(
    audited, login, django_capture_on_commit_callbacks
):
    form = _form(audited) | {"output": FINAL_RECORD}
    with django_capture_on_commit_callbacks(execute=True):
        r = login("annotator").post("/p/tests/runs/new/", form)
    assert r.status_code == 302
    run = Run.objects.get()
    assert run.observed["output"] == FINAL_RECORD
    assert run.report["failures"] == [] and run.verdict == "clean", run.report["failures"]


def test_the_api_takes_the_final_output_beside_a_pasted_trace(
    audited, api, django_capture_on_commit_callbacks
):
    client = api("annotator")
    body = {
        "contract": audited.pk,
        "query": "q1",
        "input": PASTED_CLEAN,
        "mode": "semantic",
        "extractor": "behaviour",
        "output": '{"order_id": "1042"}',  # the record lacks its resolution
    }
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post("/api/runs/", body, format="json")
    assert r.status_code == 201, r.content
    assert _families(Run.objects.get()) == {("output_contract", "reply_json")}
    observed = {
        "format": "contracteval.observed/v1",
        "contract": "refund-mini",
        "query": "q1",
        "source": {"kind": "trace", "text": PASTED_CLEAN},
        "nodes": [],
    }
    r = client.post("/api/runs/", body | {"input": observed, "mode": "token"}, format="json")
    assert r.status_code == 400 and "own 'output' field" in r.content.decode()
    assert Run.objects.count() == 1
