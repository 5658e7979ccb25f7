"""The three-way assessment of semantic runs: P(violation) read with the project's review
thresholds, stored on the run, listed needs-review first in the inbox, filtered, shown on
the run page, served by the API and the exports; the thresholds' form and who may use it.

The engine's P(violation) is stubbed here (as test_runs.py stubs ``_evaluate``): the
real token-mode evaluation with a chosen P(violation) and failure probabilities, and
chosen shipped thresholds, so each test decides which side of the thresholds a run
falls on. test_semantic_runs.py runs the real semantic engine.
"""

from __future__ import annotations

import copy
import csv
import importlib
import io
import json

import pytest

from audit.models import Project, Run
from audit.services import runs
from matching.pair_model import Thresholds

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def _omission(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    doc["nodes"] = [n for n in doc["nodes"] if n.get("gold") != "verify_owner"]
    return doc


def _variant(doc: dict, i: int) -> dict:
    """The omission document, made a distinct input (a run per input) by its trace."""
    doc = _omission(doc)
    doc["source"]["text"] += " " * i
    return doc


class _Model:
    """A stand-in for the shipped pair model: only its thresholds are read here."""

    def __init__(self, thresholds: Thresholds) -> None:
        self.thresholds = thresholds


@pytest.fixture
def engine(monkeypatch):
    """The engine with a chosen P(violation) (``engine.p``, for the next evaluation) and
    chosen shipped thresholds (``engine.ship(...)``): the real token-mode evaluation,
    in semantic mode with its failures given a probability of 0.4 and its confidence."""
    evaluate = importlib.import_module("matching.evaluate")  # the module, not the function
    pair_model = importlib.import_module("matching.pair_model")
    pipeline = importlib.import_module("matching.pipeline")
    real = pipeline.evaluate_detailed

    class Engine:
        p: float = 0.62
        calls = 0

        def ship(self, clean_below: float, violation_from: float) -> None:
            model = _Model(Thresholds(clean_below, violation_from))
            for module in (pair_model, evaluate):
                monkeypatch.setattr(module, "load_model", lambda path=None: model)

        def __call__(self, expected, observed, mode, **_):
            self.calls += 1
            evaluation = real(expected, observed, mode="token")
            if mode != "semantic":
                return evaluation
            for f in evaluation.failures:
                f["probability"] = 0.4
            # the shipped verdict; the service reads p_violation with the project's own
            evaluation.confidence = {"p_violation": self.p, "verdict": "violation"}
            return evaluation

    stub = Engine()
    stub.ship(0.5, 0.5)
    monkeypatch.setattr(pipeline, "evaluate_detailed", stub)
    return stub


@pytest.fixture
def thresholds(project):
    Project.objects.filter(pk=project.pk).update(review_clean_below=0.3, review_violation_from=0.8)
    project.refresh_from_db()
    return project


@pytest.fixture
def semantic_run(audited, users, observed_doc, engine, django_capture_on_commit_callbacks):
    """A semantic run of refund-mini q1 with P(violation) ``p`` (a distinct input each)."""
    made = []

    def make(p: float, mode: str = "semantic") -> Run:
        engine.p = p
        with django_capture_on_commit_callbacks(execute=True):
            run, created = runs.run_create(
                contract=audited,
                user=users["annotator"],
                query_key="q1",
                kind="auto",
                data=_variant(observed_doc, len(made)),
                mode=mode,
            )
        assert created
        run.refresh_from_db()
        assert run.status == "done", run.error
        made.append(run)
        return run

    return make


def test_a_semantic_run_stores_p_violation_read_with_the_projects_thresholds(
    thresholds, semantic_run
):
    run = semantic_run(0.62)
    assert run.p_violation == 0.62 and run.assessment == "needs_review"
    assert run.report["confidence"]["p_violation"] == 0.62
    assert run.report["failures"] and all(f["probability"] == 0.4 for f in run.report["failures"])
    assert run.verdict == "non_clean"  # the clean/non-clean verdict is unchanged
    assert semantic_run(0.85).assessment == "violation"
    assert semantic_run(0.1).assessment == "clean"


def test_a_token_run_has_no_assessment(audited, users, observed_doc, semantic_run):
    run = semantic_run(0.9, mode="token")
    assert run.mode == "token" and run.assessment == "" and run.p_violation is None


def test_without_its_own_thresholds_a_project_reads_with_the_shipped_ones(
    project, semantic_run, engine
):
    engine.ship(0.2, 0.7)
    assert semantic_run(0.5).assessment == "needs_review"
    assert semantic_run(0.7).assessment == "violation"
    assert semantic_run(0.19).assessment == "clean"


def _inbox_order(client, query: str = "") -> list[int]:
    html = client.get(f"/p/tests/inbox/{query}").content.decode()
    table = html.split('data-testid="inbox"')[1]
    return [int(part.split("/")[0]) for part in table.split('href="/r/')[1:]]


def test_the_inbox_lists_needs_review_first_then_violations_then_clean_then_the_rest(
    thresholds, semantic_run, login
):
    token = semantic_run(0.9, mode="token")
    clean = semantic_run(0.1)
    violation = semantic_run(0.9)
    review_old = semantic_run(0.5)
    review_new = semantic_run(0.6)
    order = _inbox_order(login("reviewer"))
    assert order == [review_new.pk, review_old.pk, violation.pk, clean.pk, token.pk]


def test_next_unreviewed_follows_the_inbox_order(thresholds, semantic_run, login):
    violation = semantic_run(0.9)
    review = semantic_run(0.5)
    token = semantic_run(0.9, mode="token")  # the newest, yet last in the inbox
    client = login("reviewer")

    def next_link(run):
        html = client.get(f"/r/{run.pk}/").content.decode()
        link = html.split('data-testid="next-unreviewed"')[0].rsplit('href="', 1)[1]
        return link.split('"')[0]

    assert next_link(token) == f"/r/{review.pk}/"
    assert next_link(review) == f"/r/{violation.pk}/"
    assert next_link(violation) == f"/r/{review.pk}/"


def test_the_inbox_the_run_list_and_the_api_filter_on_the_assessment(
    thresholds, semantic_run, login, api
):
    clean, review, violation = semantic_run(0.1), semantic_run(0.5), semantic_run(0.9)
    token = semantic_run(0.5, mode="token")
    client = login("annotator")
    assert _inbox_order(client, "?assessment=needs_review") == [review.pk]
    assert _inbox_order(client, "?assessment=violation") == [violation.pk]
    assert _inbox_order(client, "?assessment=bogus") == []
    html = client.get("/p/tests/runs/?assessment=clean").content.decode()
    assert f'href="/r/{clean.pk}/"' in html and f'href="/r/{review.pk}/"' not in html
    assert f'href="/r/{token.pk}/"' not in html
    body = api("annotator").get("/api/runs/?assessment=needs_review").json()
    assert [r["id"] for r in body["results"]] == [review.pk]


def test_the_run_page_shows_the_assessment_beside_the_verdict_and_each_failures_probability(
    thresholds, semantic_run, login
):
    client = login("annotator")
    page = client.get(f"/r/{semantic_run(0.62).pk}/").content.decode()
    summary = page.split('data-testid="run-verdict"')[1].split("</div>")[0]
    assert "Non-clean" in summary and "Needs review · P(violation) 0.62" in summary
    assert 'data-testid="failure-probability"' in page and "40%" in page
    violation = client.get(f"/r/{semantic_run(0.9).pk}/").content.decode()
    assert ">Violation</span>" in violation
    clean = client.get(f"/r/{semantic_run(0.1).pk}/").content.decode()
    assert ">Clean</span>" in clean
    token = client.get(f"/r/{semantic_run(0.1, mode='token').pk}/").content.decode()
    assert 'data-testid="run-assessment"' not in token
    assert 'data-testid="failure-probability"' not in token


def test_the_api_returns_the_assessment_p_violation_and_failure_probabilities(
    thresholds, semantic_run, api
):
    run = semantic_run(0.62)
    client = api("annotator")
    listed = client.get("/api/runs/").json()["results"][0]
    assert listed["assessment"] == "needs_review" and listed["p_violation"] == 0.62
    detail = client.get(f"/api/runs/{run.pk}/").json()
    assert detail["assessment"] == "needs_review" and detail["p_violation"] == 0.62
    assert all(f["probability"] == 0.4 for f in detail["report"]["failures"])
    report = client.get(f"/api/runs/{run.pk}/report/").json()
    assert report["confidence"]["p_violation"] == 0.62
    assert all("probability" in f for f in report["failures"])
    export = client.get(f"/api/runs/{run.pk}/export/").json()
    assert export["assessment"] == "needs_review" and export["p_violation"] == 0.62


def test_the_openapi_schema_documents_the_assessment_fields_and_filter(client):
    doc = json.loads(
        client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content
    )
    run = doc["components"]["schemas"]["Run"]["properties"]
    assert {"assessment", "p_violation"} <= set(run)
    assert run["p_violation"]["nullable"] is True
    params = {p["name"] for p in doc["paths"]["/api/runs/"]["get"]["parameters"]}
    assert "assessment" in params


def test_the_exports_carry_the_assessment_and_the_failure_probabilities(
    thresholds, semantic_run, login
):
    run = semantic_run(0.62)
    client = login("annotator")
    rows = json.loads(client.get("/p/tests/inbox.json").content)["runs"]
    assert rows[0]["assessment"] == "needs_review" and rows[0]["p_violation"] == 0.62
    inbox_csv = list(csv.DictReader(io.StringIO(client.get("/p/tests/inbox.csv").content.decode())))
    assert inbox_csv[0]["assessment"] == "needs_review" and inbox_csv[0]["p_violation"] == "0.62"
    lines = list(
        csv.DictReader(io.StringIO(client.get(f"/r/{run.pk}/export.csv").content.decode()))
    )
    first = lines[0]
    assert first["probability"] == "0.4" and first["assessment"] == "needs_review"
    exported = json.loads(client.get(f"/r/{run.pk}/export.json").content)
    assert exported["p_violation"] == 0.62
    assert all(f["probability"] == 0.4 for f in exported["report"]["failures"])


# ---------------------------------------------------------------- the thresholds


def test_an_admin_sets_the_thresholds_and_the_runs_are_read_again_without_the_engine(
    thresholds, semantic_run, login, engine
):
    review, violation = semantic_run(0.5), semantic_run(0.9)
    calls = engine.calls
    client = login("admin")
    assert 'data-testid="review-thresholds"' in client.get("/p/tests/").content.decode()
    r = client.post("/p/tests/review-thresholds/", {"clean_below": "0.6", "violation_from": "0.95"})
    assert r.status_code == 302 and r["Location"].endswith("/p/tests/#review-thresholds")
    thresholds.refresh_from_db()
    assert (thresholds.review_clean_below, thresholds.review_violation_from) == (0.6, 0.95)
    review.refresh_from_db()
    violation.refresh_from_db()
    assert review.assessment == "clean" and violation.assessment == "needs_review"
    assert engine.calls == calls  # read from the stored P(violation): no evaluation


def test_reading_again_agrees_with_the_engines_thresholds_at_their_edges(
    thresholds, semantic_run, login
):
    made = [semantic_run(p) for p in (0.0, 0.39, 0.4, 0.69, 0.7, 1.0)]
    r = login("admin").post(
        "/p/tests/review-thresholds/", {"clean_below": "0.4", "violation_from": "0.7"}
    )
    assert r.status_code == 302
    engine_says = Thresholds(0.4, 0.7)
    for run in made:
        run.refresh_from_db()
        assert run.assessment == engine_says.verdict(run.p_violation), run.p_violation


def test_the_form_refuses_clean_below_above_violation_from_naming_it_and_stores_nothing(
    thresholds, semantic_run, login
):
    run = semantic_run(0.5)
    client = login("admin")
    r = client.post("/p/tests/review-thresholds/", {"clean_below": "0.9", "violation_from": "0.2"})
    assert r.status_code == 400
    error = r.content.decode().split('data-testid="thresholds-error">')[1].split("<")[0]
    assert "Clean below (0.9) must not be above Violation from (0.2)" in error
    thresholds.refresh_from_db()
    assert (thresholds.review_clean_below, thresholds.review_violation_from) == (0.3, 0.8)
    run.refresh_from_db()
    assert run.assessment == "needs_review"
    # htmx swaps the card with the error (422); a value outside [0, 1] names its field
    r = client.post("/p/tests/review-thresholds/", {"violation_from": "1.5"}, **HTMX)
    card = r.content.decode()
    assert r.status_code == 422 and 'id="review-thresholds"' in card and "<html" not in card
    after_field = card.split('name="violation_from"')[1]
    assert "less than or equal to 1" in after_field.split('data-testid="thresholds-error">')[1]


def test_the_project_refuses_thresholds_out_of_order_in_the_database(thresholds):
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        Project.objects.filter(pk=thresholds.pk).update(
            review_clean_below=0.9, review_violation_from=0.1
        )


def test_clearing_the_thresholds_goes_back_to_the_shipped_ones(
    thresholds, semantic_run, login, engine
):
    run = semantic_run(0.5)
    engine.ship(0.55, 0.55)
    r = login("admin").post(
        "/p/tests/review-thresholds/", {"clean_below": "", "violation_from": ""}, **HTMX
    )
    assert r.status_code == 200 and 'data-testid="thresholds-saved"' in r.content.decode()
    thresholds.refresh_from_db()
    assert thresholds.review_clean_below is None and thresholds.review_violation_from is None
    run.refresh_from_db()
    assert run.assessment == "clean"


@pytest.mark.parametrize(
    ("role", "status"), [("reviewer", 403), ("annotator", 403), ("outsider", 404)]
)
def test_only_a_project_admin_may_set_the_thresholds(thresholds, engine, login, role, status):
    client = login(role)
    r = client.post("/p/tests/review-thresholds/", {"clean_below": "0.1", "violation_from": "0.2"})
    assert r.status_code == status
    thresholds.refresh_from_db()
    assert (thresholds.review_clean_below, thresholds.review_violation_from) == (0.3, 0.8)
    if role != "outsider":
        page = client.get("/p/tests/").content.decode()
        assert 'data-testid="review-thresholds"' not in page
    assert client.get("/p/tests/review-thresholds/").status_code == 302
