"""Runs: every input kind, dedup, bad input stores nothing, the run page, verdicts, inbox."""

from __future__ import annotations

import copy
import csv
import io
import json

import pytest

from audit.models import AuditRecord, ReviewVerdict, Run
from audit.services import ServiceError, runs, verdicts

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}

CHAT = [
    {"role": "user", "content": "My headphones from order 1042 broke. Can I get a refund?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "lookup_order", "arguments": '{"order_id": "1042"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"placed": "10 days ago"}'},
    {
        "role": "assistant",
        "content": "The email on the order matches yours. It is within the 30-day window,"
        " so I have approved the refund to your original payment method.",
    },
]
TAU = [
    {"name": "lookup_order", "kwargs": {"order_id": "1042"}},
    {"name": "issue_refund", "kwargs": {"order_id": "1042"}},
    {"name": "respond", "kwargs": {"content": "Your refund is approved."}},
]
RESPONSE = (
    "I looked up order 1042 and confirmed the email on it is yours. The order is 10 days"
    " old, within the 30-day window, so I approved the refund to your card."
)


@pytest.fixture
def run_now(django_capture_on_commit_callbacks):
    """runs.run_create with the Celery task executed on commit (eager in tests)."""

    def create(**kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            run, created = runs.run_create(**kwargs)
        run.refresh_from_db()
        return run, created

    return create


def _omission(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    doc["nodes"] = [n for n in doc["nodes"] if n.get("gold") != "verify_owner"]
    return doc


# ---------------------------------------------------------------- input kinds


def test_an_observed_document_runs_to_a_clean_report(audited, users, observed_doc, run_now):
    run, created = run_now(
        contract=audited, user=users["annotator"], query_key="q1", kind="auto", data=observed_doc
    )
    assert created and run.status == "done", run.error
    assert run.input_kind == "observed" and run.verdict == "clean" and run.failure_count == 0
    assert run.report["format"] == "contracteval.report/v1" and run.report["query"] == "q1"
    assert run.required_recall == 1.0 and run.metrics == run.report["metrics"]
    assert run.overlay["format"] == "contracteval.overlay/v1"
    assert run.started_at and run.finished_at and run.created_by == users["annotator"]
    assert AuditRecord.objects.filter(action="run", object_id=str(run.pk)).count() == 1


def test_an_omission_is_stored_as_a_family_column(audited, users, observed_doc, run_now):
    run, _ = run_now(
        contract=audited,
        user=users["annotator"],
        query_key="q1",
        kind="observed",
        data=json.dumps(_omission(observed_doc)),
        mode="oracle",
        model_name="gpt-test",
    )
    assert run.status == "done" and run.verdict == "non_clean"
    assert run.n_omission == 1 and run.families == ["omission"]
    assert ("omission", "verify_owner") in [
        (f["family"], f["location"]) for f in run.report["failures"]
    ]
    assert run.model_name == "gpt-test"


@pytest.mark.parametrize(
    ("kind", "data", "first_line"),
    [
        ("openai", CHAT, "[user] My headphones"),
        ("openai", {"messages": CHAT}, "[user] My headphones"),
        ("tau_bench", TAU, '[tool] lookup_order(order_id="1042")'),
        ("auto", json.dumps(TAU), '[tool] lookup_order(order_id="1042")'),
        ("text", RESPONSE, "I looked up order 1042"),
        ("auto", RESPONSE, "I looked up order 1042"),
    ],
)
def test_transcripts_action_lists_and_text_are_rendered_and_extracted(
    audited, users, run_now, kind, data, first_line
):
    run, created = run_now(
        contract=audited, user=users["annotator"], query_key="q1", kind=kind, data=data
    )
    assert created and run.status == "done", run.error
    assert run.extractor == "heuristic"  # text has no nodes until extracted
    text = run.observed["source"]["text"]
    assert text.startswith(first_line) and run.observed["nodes"] == []
    expected_kind = {"openai": "openai", "tau_bench": "tau_bench", "text": "text"}.get(kind)
    assert run.input_kind == (expected_kind or ("tau_bench" if data != RESPONSE else "text"))
    observed = run.overlay["observed"]
    assert observed, "the extractor found steps"
    for o in observed:  # every observed node cites exact evidence in the stored text
        for s in o["spans"]:
            assert 0 <= s["start"] < s["end"] <= len(run.overlay["trace"]["text"])
    assert run.overlay["trace"]["text"] == text
    output = run.observed.get("output")
    if kind == "openai":
        assert output == CHAT[-1]["content"]
    elif data == TAU or data == json.dumps(TAU):
        assert output == "Your refund is approved."
    else:
        assert output == RESPONSE  # a pasted response is the final answer
    assert run.report["verdict"] in ("clean", "non_clean")


def test_the_llm_extractor_without_a_key_falls_back_and_says_so(
    audited, users, run_now, monkeypatch
):
    for var in ("CONTRACTEVAL_LLM_API_KEY", "OPENAI_API_KEY", "CONTRACTEVAL_LLM_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    run, _ = run_now(
        contract=audited,
        user=users["annotator"],
        query_key="q1",
        kind="text",
        data=RESPONSE,
        extractor="llm",
    )
    assert run.status == "done" and run.extractor == "llm"
    assert any("heuristic" in w for w in run.warnings)


# ---------------------------------------------------------------- dedup


def test_the_same_inputs_give_the_same_run(audited, users, observed_doc, run_now):
    first, created = run_now(
        contract=audited, user=users["annotator"], query_key="q1", kind="auto", data=observed_doc
    )
    # the same document, keys in another order and as text: canonically the same
    shuffled = json.dumps(dict(reversed(list(observed_doc.items()))))
    again, created_again = run_now(
        contract=audited, user=users["reviewer"], query_key="q1", kind="observed", data=shuffled
    )
    assert created and not created_again and again.pk == first.pk
    assert Run.objects.count() == 1
    other_mode, created_other = run_now(
        contract=audited,
        user=users["annotator"],
        query_key="q1",
        kind="auto",
        data=observed_doc,
        mode="oracle",
    )
    assert created_other and other_mode.pk != first.pk and Run.objects.count() == 2


def test_the_database_refuses_a_duplicate_input_hash(audited, users, observed_doc, run_now):
    from django.db import IntegrityError, transaction

    run, _ = run_now(
        contract=audited, user=users["annotator"], query_key="q1", kind="auto", data=observed_doc
    )
    dup = Run(
        project=run.project,
        contract=run.contract,
        query=run.query,
        query_key="q1",
        input_kind="observed",
        observed={},
        input_hash=run.input_hash,
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        dup.save()


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kind", "data", "extra", "message"),
    [
        ("observed", "{not json", {}, "not JSON"),
        ("observed", {"format": "contracteval.observed/v1", "nodes": []}, {}, "source"),
        ("auto", {"hello": 1}, {}, "unrecognised input"),
        ("auto", '{"messages": [', {}, "looks like JSON but is not valid JSON"),
        ("openai", [{"role": "robot", "content": "x"}], {}, "$.messages[0].role"),
        (
            "openai",
            [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{x"}}]}],
            {},
            "arguments are not JSON",
        ),
        ("tau_bench", [], {}, "non-empty list of actions"),
        ("tau_bench", [{"kwargs": {}}], {}, "$[0]"),
        ("text", "   ", {}, "empty"),
        ("text", RESPONSE, {"mode": "oracle"}, "oracle mode"),
        ("auto", RESPONSE, {"query_key": "q99"}, "no query 'q99'"),
        ("auto", RESPONSE, {"mode": "fast"}, "unknown mode"),
        ("auto", RESPONSE, {"mode": "oracle", "extractor": "heuristic"}, "extractor 'none'"),
    ],
)
def test_bad_input_names_the_problem_and_stores_nothing(audited, users, kind, data, extra, message):
    records = AuditRecord.objects.count()
    kwargs = {"query_key": "q1", **extra}
    with pytest.raises(ServiceError) as err:
        runs.run_create(contract=audited, user=users["annotator"], kind=kind, data=data, **kwargs)
    assert message in str(err.value)
    assert Run.objects.count() == 0 and AuditRecord.objects.count() == records


def test_a_draft_contract_cannot_be_run(contract, users, observed_doc):
    with pytest.raises(ServiceError, match="not audited"):
        runs.run_create(
            contract=contract,
            user=users["annotator"],
            query_key="q1",
            kind="auto",
            data=observed_doc,
        )
    assert Run.objects.count() == 0


def test_an_engine_failure_is_shown_and_the_run_can_be_retried(
    audited, users, observed_doc, run_now, monkeypatch, login, django_capture_on_commit_callbacks
):
    real = runs._evaluate

    def broken(run):
        raise ValueError("the engine broke")

    monkeypatch.setattr(runs, "_evaluate", broken)
    run, _ = run_now(
        contract=audited, user=users["annotator"], query_key="q1", kind="auto", data=observed_doc
    )
    assert run.status == "failed" and run.error == "the engine broke"
    page = login("annotator").get(f"/r/{run.pk}/").content.decode()
    assert "the engine broke" in page and "Run again" in page
    monkeypatch.setattr(runs, "_evaluate", real)
    with django_capture_on_commit_callbacks(execute=True):
        r = login("annotator").post(f"/r/{run.pk}/retry/")
    assert r.status_code == 302
    run.refresh_from_db()
    assert run.status == "done" and run.error == "" and Run.objects.count() == 1


# ---------------------------------------------------------------- views


def test_the_form_creates_a_run_and_the_page_shows_report_and_overlay(
    audited, login, observed_doc, django_capture_on_commit_callbacks
):
    client = login("annotator")
    page = client.get("/p/tests/runs/")
    assert page.status_code == 200 and f'value="{audited.pk}|q1"' in page.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(
            "/p/tests/runs/new/",
            {
                "target": f"{audited.pk}|q1",
                "input_kind": "auto",
                "text": json.dumps(_omission(observed_doc)),
                "source_kind": "auto",
                "mode": "token",
                "extractor": "none",
                "model_name": "agent-7",
            },
        )
    run = Run.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/r/{run.pk}/"
    html = client.get(r["Location"]).content.decode()
    assert 'id="overlay-data"' in html and 'data-contracteval-overlay="overlay-data"' in html
    assert "js/overlay.js" in html and "vendor/cytoscape.min.js" in html
    assert 'data-testid="failure-list"' in html and 'data-failure="0"' in html
    assert "verify_owner" in html and "Non-clean" in html
    assert '<mark class="ob ob-paired"' in html  # evidence highlighted in the trace
    assert f"/r/{run.pk}/report.json" in html
    report = client.get(f"/r/{run.pk}/report.json")
    assert report["Content-Disposition"].startswith("attachment")
    assert json.loads(report.content) == run.report


def test_the_form_reports_bad_input_and_stores_nothing(audited, login):
    r = login("annotator").post(
        "/p/tests/runs/new/",
        {
            "target": f"{audited.pk}|q1",
            "input_kind": "openai",
            "text": '[{"role": "robot"}]',
            "source_kind": "auto",
            "mode": "token",
            "extractor": "none",
        },
    )
    assert r.status_code == 400 and Run.objects.count() == 0
    assert "unknown role" in r.content.decode() and 'data-testid="run-error"' in r.content.decode()


def test_a_file_upload_is_accepted(
    audited, login, observed_doc, django_capture_on_commit_callbacks
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("trace.json", json.dumps(TAU).encode(), "application/json")
    with django_capture_on_commit_callbacks(execute=True):
        r = login("reviewer").post(
            "/p/tests/runs/new/",
            {
                "target": f"{audited.pk}|q1",
                "input_kind": "auto",
                "file": upload,
                "source_kind": "auto",
                "mode": "token",
                "extractor": "none",
            },
        )
    assert r.status_code == 302
    assert Run.objects.get().input_kind == "tau_bench"


def test_the_status_poll_swaps_until_done_then_redirects(audited, users, observed_doc, login):
    run, _ = runs.run_create(  # not executed: stays queued
        contract=audited, user=users["annotator"], query_key="q1", kind="auto", data=observed_doc
    )
    client = login("annotator")
    page = client.get(f"/r/{run.pk}/").content.decode()
    assert f'hx-get="/r/{run.pk}/status/"' in page and f'href="/r/{run.pk}/"' in page
    poll = client.get(f"/r/{run.pk}/status/", **HTMX)
    assert poll.status_code == 200 and 'data-status="queued"' in poll.content.decode()
    assert client.get(f"/r/{run.pk}/status/").status_code == 302  # without htmx: the page
    assert client.get(f"/r/{run.pk}/report.json").status_code == 404
    runs.run_execute(run_id=run.pk)
    done = client.get(f"/r/{run.pk}/status/", **HTMX)
    assert done.status_code == 204 and done["HX-Redirect"] == f"/r/{run.pk}/"


def test_user_text_is_escaped(audited, users, observed_doc, run_now, login):
    evil = "<script>alert(1)</script>"
    doc = copy.deepcopy(observed_doc)
    doc["nodes"][0]["label"] = evil
    run, _ = run_now(
        contract=audited,
        user=users["annotator"],
        query_key="q1",
        kind="auto",
        data=doc,
        model_name=evil,
    )
    html = login("reviewer").get(f"/r/{run.pk}/").content.decode()
    assert evil not in html.replace("\\u003Cscript\\u003E", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    inbox = login("reviewer").get("/p/tests/runs/").content.decode()
    assert evil not in inbox


@pytest.mark.parametrize(
    "url",
    [
        "/r/{pk}/",
        "/r/{pk}/status/",
        "/r/{pk}/report.json",
        "/r/{pk}/export.json",
        "/r/{pk}/export.csv",
    ],
)
def test_members_of_other_projects_get_404(audited, users, observed_doc, run_now, login, url):
    run, _ = run_now(
        contract=audited, user=users["annotator"], query_key="q1", kind="auto", data=observed_doc
    )
    assert login("outsider").get(url.format(pk=run.pk)).status_code == 404
    assert login("annotator").get(url.format(pk=run.pk)).status_code in (200, 302)


def test_other_projects_pages_and_mutations_are_404(audited, users, observed_doc, run_now, login):
    run, _ = run_now(
        contract=audited, user=users["annotator"], query_key="q1", kind="auto", data=observed_doc
    )
    client = login("outsider")
    for url in ("/p/tests/runs/", "/p/tests/inbox/", "/p/tests/inbox.csv", "/p/tests/batches/"):
        assert client.get(url).status_code == 404
    assert client.post(f"/r/{run.pk}/verdict/", {"agrees": "yes"}).status_code == 404
    assert client.post("/p/tests/runs/new/", {}).status_code == 404
    assert client.post("/p/tests/batches/new/", {}).status_code == 404
    assert ReviewVerdict.objects.count() == 0


def test_mutations_are_post_only(audited, users, observed_doc, run_now, login):
    run, _ = run_now(
        contract=audited, user=users["annotator"], query_key="q1", kind="auto", data=observed_doc
    )
    client = login("reviewer")
    assert client.get(f"/r/{run.pk}/verdict/").status_code == 302
    assert client.get("/p/tests/runs/new/").status_code == 302
    assert client.get(f"/r/{run.pk}/retry/").status_code == 302


def test_csrf_is_enforced(audited, users, observed_doc, run_now):
    from django.test import Client

    run, _ = run_now(
        contract=audited, user=users["annotator"], query_key="q1", kind="auto", data=observed_doc
    )
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["reviewer"])
    assert client.post(f"/r/{run.pk}/verdict/", {"agrees": "yes"}).status_code == 403
    assert ReviewVerdict.objects.count() == 0


# ---------------------------------------------------------------- verdicts and inbox


@pytest.fixture
def failed_runs(audited, users, observed_doc, run_now):
    """Three non-clean runs (two models) and one clean run."""
    a, _ = run_now(
        contract=audited,
        user=users["annotator"],
        query_key="q1",
        kind="auto",
        data=_omission(observed_doc),
        model_name="model-a",
    )
    reordered = copy.deepcopy(observed_doc)
    steps = [n["step"] for n in reordered["nodes"]]
    for n, s in zip(reordered["nodes"], reversed(steps), strict=True):
        n["step"] = s
    b, _ = run_now(
        contract=audited,
        user=users["annotator"],
        query_key="q1",
        kind="auto",
        data=reordered,
        model_name="model-b",
    )
    c, _ = run_now(
        contract=audited,
        user=users["annotator"],
        query_key="q1",
        kind="tau_bench",
        data=TAU,
        model_name="model-a",
    )
    clean, _ = run_now(
        contract=audited, user=users["annotator"], query_key="q1", kind="auto", data=observed_doc
    )
    assert a.verdict == b.verdict == "non_clean" and clean.verdict == "clean"
    return a, b, c, clean


def test_a_reviewer_records_a_verdict_kept_in_the_audit_record(failed_runs, login, users):
    run = failed_runs[0]
    r = login("reviewer").post(
        f"/r/{run.pk}/verdict/", {"agrees": "no", "note": "The owner check is <b>there</b>."}
    )
    assert r.status_code == 302
    verdict = ReviewVerdict.objects.get()
    assert not verdict.agrees and verdict.reviewer == users["reviewer"]
    record = AuditRecord.objects.get(action="verdict")
    assert record.object_id == str(run.pk) and record.after["agrees"] is False
    assert record.after["report_verdict"] == "non_clean" and record.contract == run.contract
    html = login("reviewer").get(f"/r/{run.pk}/").content.decode()
    assert "&lt;b&gt;there&lt;/b&gt;" in html and 'data-testid="verdict-row"' in html
    with pytest.raises(TypeError):
        record.delete()


def test_a_disagreement_needs_a_note_and_annotators_cannot_judge(failed_runs, login):
    run = failed_runs[0]
    r = login("reviewer").post(f"/r/{run.pk}/verdict/", {"agrees": "no", "note": ""})
    assert r.status_code == 400 and "say why" in r.content.decode()
    assert login("annotator").post(f"/r/{run.pk}/verdict/", {"agrees": "yes"}).status_code == 403
    assert ReviewVerdict.objects.count() == 0


def test_the_inbox_lists_failed_runs_and_filters(failed_runs, login, users):
    a, b, c, clean = failed_runs
    client = login("annotator")

    def listed(query=""):
        html = client.get(f"/p/tests/inbox/{query}").content.decode()
        return {r.pk for r in (a, b, c, clean) if f'href="/r/{r.pk}/"' in html}

    assert listed() == {a.pk, b.pk, c.pk}
    assert listed("?model=model-a") == {a.pk, c.pk}
    assert listed("?family=ordering") == {r.pk for r in (a, b, c) if r.n_ordering}
    assert b.pk in listed("?family=ordering")
    assert listed("?contract=refund-mini&query=q1") == {a.pk, b.pk, c.pk}
    assert listed("?contract=nope") == set()
    assert listed("?family=bogus") == set()
    verdicts.verdict_record(run=a, user=users["reviewer"], agrees=True)
    assert listed("?reviewed=no") == {b.pk, c.pk}
    assert listed("?reviewed=yes") == {a.pk}


def test_the_inbox_offers_a_new_runs_model_at_once(
    failed_runs, login, users, audited, observed_doc, run_now
):
    client = login("reviewer")
    assert ">model-c</option>" not in client.get("/p/tests/inbox/").content.decode()
    data = _omission(observed_doc)
    data["nodes"] = data["nodes"][1:]  # not a copy of an earlier run's input
    run, created = run_now(
        contract=audited,
        user=users["annotator"],
        query_key="q1",
        kind="auto",
        data=data,
        model_name="model-c",
    )
    assert created and run.verdict == "non_clean"
    assert ">model-c</option>" in client.get("/p/tests/inbox/").content.decode()


def test_the_inbox_shows_each_runs_latest_verdict_and_the_run_page_the_next_to_review(
    failed_runs, login, users
):
    a, b, c, clean = failed_runs
    verdicts.verdict_record(run=a, user=users["reviewer"], agrees=True, note="first look")
    verdicts.verdict_record(run=a, user=users["reviewer"], agrees=False, note="second look")
    client = login("reviewer")
    rows = client.get("/p/tests/inbox/").content.decode().split("<tr>")
    row = {r.pk: next(x for x in rows if f'href="/r/{r.pk}/"' in x) for r in (a, b, c)}
    assert "disagrees" in row[a.pk] and "second look" in row[a.pk] and "reviewer" in row[a.pk]
    assert "to review" in row[b.pk] and "to review" in row[c.pk]
    # newest first, never the run itself, never one with a verdict, never a clean one
    Run.objects.filter(pk=c.pk).update(created_at=b.created_at.replace(year=2001))
    Run.objects.filter(pk=clean.pk).update(created_at=b.created_at.replace(year=2999))

    def next_link(run):
        html = client.get(f"/r/{run.pk}/").content.decode()
        link = html.split('data-testid="next-unreviewed"')[0].rsplit('href="', 1)[1]
        return link.split('"')[0]

    assert next_link(a) == f"/r/{b.pk}/"
    assert next_link(b) == f"/r/{c.pk}/"
    verdicts.verdict_record(run=c, user=users["reviewer"], agrees=True)
    assert 'data-testid="next-unreviewed"' not in client.get(f"/r/{b.pk}/").content.decode()


def test_the_inbox_and_a_run_export_as_json_and_csv(failed_runs, login, users):
    a, b, c, clean = failed_runs
    verdicts.verdict_record(run=a, user=users["reviewer"], agrees=True, note="right")
    client = login("annotator")
    data = json.loads(client.get("/p/tests/inbox.json?model=model-a").content)
    assert {r["run"] for r in data["runs"]} == {a.pk, c.pk}
    row = next(r for r in data["runs"] if r["run"] == a.pk)
    assert row["review"] == "agrees" and row["reviewer"] == "reviewer" and row["families"]
    rows = list(csv.DictReader(io.StringIO(client.get("/p/tests/inbox.csv").content.decode())))
    assert {int(r["run"]) for r in rows} == {a.pk, b.pk, c.pk}
    assert {"required_recall", "families", "model", "review_note"} <= set(rows[0])
    assert client.get("/p/tests/inbox.xml").status_code == 404
    run_json = json.loads(client.get(f"/r/{a.pk}/export.json").content)
    assert run_json["report"] == a.report and run_json["verdicts"][0]["note"] == "right"
    lines = list(csv.reader(io.StringIO(client.get(f"/r/{a.pk}/export.csv").content.decode())))
    assert lines[0][:3] == ["run", "contract", "query"]
    assert lines[1][5:7] == ["omission", "verify_owner"]
