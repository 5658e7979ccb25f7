"""The teaching API: corrections of a run's pairings, the corrected report beside the
automatic one, and a contract's taught enactments. Same roles and answers as the UI:
anonymous 401, outsiders 404, too low a role 403, bad input 400 with nothing stored."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token

from audit import services
from audit.models import AuditRecord, Enactment, Project, Run, RunCorrection

from .test_teaching import STEP, TRACE, _step_of
from .test_teaching import _families as _failures

pytestmark = pytest.mark.django_db


def _finished(contract, user, *, order="1042") -> Run:
    text = TRACE.format(order=order, days="ten", Days="Ten")
    run, _ = services.run_create(
        contract=contract,
        user=user,
        query_key="q1",
        kind="text",
        data=text,
        source_kind="trace",
        mode="token",
        extractor="behaviour",
    )
    run = services.run_execute(run_id=run.pk)
    assert run.status == "done", run.error
    return run


@pytest.fixture
def run(audited, users) -> Run:
    return _finished(audited, users["annotator"])


@pytest.fixture
def enactment(audited, run, users) -> Enactment:
    services.run_pair(
        run=run, user=users["reviewer"], expected_id="check_window", observed_id=_step_of(run, STEP)
    )
    return Enactment.objects.get()


def _counts() -> tuple[int, int, int]:
    return RunCorrection.objects.count(), Enactment.objects.count(), AuditRecord.objects.count()


def _requests(run: Run, enactment: Enactment, step: str):
    contract = enactment.contract_id
    pair = {"action": "pair", "expected": "check_window", "observed": step}
    return [
        ("get", f"/api/runs/{run.pk}/corrections/", None),
        ("post", f"/api/runs/{run.pk}/corrections/", pair),
        ("get", f"/api/contracts/{contract}/enactments/", None),
        ("delete", f"/api/contracts/{contract}/enactments/{enactment.pk}/", None),
    ]


def test_every_teaching_endpoint_answers_401_without_credentials(api, run, enactment):
    before = _counts()
    for method, url, body in _requests(run, enactment, _step_of(run, STEP)):
        r = getattr(api(None), method)(url, body, format="json")
        assert r.status_code == 401, (method, url)
        assert r["WWW-Authenticate"].startswith("Token")
    assert _counts() == before


def test_every_teaching_endpoint_is_a_404_to_a_member_of_another_project(api, run, enactment):
    before = _counts()
    for method, url, body in _requests(run, enactment, _step_of(run, STEP)):
        r = getattr(api("outsider"), method)(url, body, format="json")
        assert r.status_code == 404, (method, url, r.status_code)
        assert "check_window" not in r.content.decode()
    assert _counts() == before


def test_unknown_runs_contracts_and_enactments_are_404(api, run, enactment, users, refund_doc):
    reviewer = api("reviewer")
    pair = {"action": "pair", "expected": "check_window", "observed": "o1"}
    assert reviewer.get("/api/runs/999999/corrections/").status_code == 404
    assert reviewer.post("/api/runs/999999/corrections/", pair, format="json").status_code == 404
    assert reviewer.get("/api/contracts/999999/enactments/").status_code == 404
    c = enactment.contract_id
    assert reviewer.delete(f"/api/contracts/{c}/enactments/999999/").status_code == 404
    assert reviewer.delete(f"/api/contracts/999999/enactments/{enactment.pk}/").status_code == 404
    # an enactment is found only under its own contract, even in the same project
    other = services.contract_import(
        project=Project.objects.get(slug="tests"),
        user=users["admin"],
        source=dict(refund_doc, id="another-contract"),
    )
    url = f"/api/contracts/{other.pk}/enactments/{enactment.pk}/"
    assert reviewer.delete(url).status_code == 404
    assert Enactment.objects.filter(pk=enactment.pk).exists()


def test_an_annotator_may_read_but_not_correct_a_run(api, run):
    annotator = api("annotator")
    assert annotator.get(f"/api/runs/{run.pk}/corrections/").status_code == 200
    body = {"action": "pair", "expected": "check_window", "observed": _step_of(run, STEP)}
    r = annotator.post(f"/api/runs/{run.pk}/corrections/", body, format="json")
    assert r.status_code == 403
    assert "reviewer" in r.json()["detail"]
    assert not RunCorrection.objects.exists() and not Enactment.objects.exists()


def test_pairing_stores_a_corrected_report_beside_the_automatic_one_and_teaches(api, run):
    step = _step_of(run, STEP)
    client = api("reviewer")
    before = client.get(f"/api/runs/{run.pk}/corrections/").json()
    assert before["corrected"] is None
    assert ("omission", "check_window") in _failures(before["automatic"]["report"])
    body = {"action": "pair", "expected": "check_window", "observed": step}
    r = client.post(f"/api/runs/{run.pk}/corrections/", body, format="json")
    assert r.status_code == 201, r.content
    data = r.json()
    assert data["corrected"]["reviewer"] == "reviewer"
    assert data["corrected"]["corrections"] == {
        "pair": [["check_window", step]],
        "unpair": [],
        "commentary": [],
    }
    assert ("omission", "check_window") not in _failures(data["corrected"]["report"])
    assert ("omission", "check_window") in _failures(data["automatic"]["report"])
    assert data["automatic"]["verdict"] == run.verdict
    stored = RunCorrection.objects.get(run=run)
    assert data["corrected"]["id"] == stored.pk and data["corrected"]["verdict"] == stored.verdict
    assert client.get(f"/api/runs/{run.pk}/corrections/").json() == data
    e = Enactment.objects.get()
    assert (e.node_id, e.text, e.run_id, e.step_id) == ("check_window", STEP, run.pk, step)


def test_unpairing_refuses_the_pairing_and_teaches_nothing(api, run):
    paired = {a["expected"]: a["observed"] for a in run.report["alignment"]}
    body = {"action": "unpair", "expected": "verify_owner"}
    r = api("reviewer").post(f"/api/runs/{run.pk}/corrections/", body, format="json")
    assert r.status_code == 201, r.content
    corrected = r.json()["corrected"]
    assert corrected["corrections"]["unpair"] == [["verify_owner", paired["verify_owner"]]]
    assert ("extra_action", paired["verify_owner"]) in _failures(corrected["report"])
    assert not Enactment.objects.exists()


@pytest.mark.parametrize(
    ("body", "field", "names"),
    [
        ({"action": "pair", "expected": "check_window", "observed": "o99"}, "detail", "'o99'"),
        (
            {"action": "pair", "expected": "no_such_node", "observed": "{step}"},
            "detail",
            "'no_such_node'",
        ),
        ({"action": "unpair", "expected": "no_such_node"}, "detail", "'no_such_node'"),
        ({"action": "pair", "expected": "check_window"}, "observed", "observed step"),
        ({"action": "merge", "expected": "check_window"}, "action", "merge"),
        ({"expected": "check_window", "observed": "o1"}, "action", "required"),
        ({"action": "pair", "expected": "", "observed": "o1"}, "expected", "blank"),
    ],
)
def test_a_bad_correction_is_a_400_naming_it_and_stores_nothing(api, run, body, field, names):
    body = {k: v.format(step=_step_of(run, STEP)) for k, v in body.items()}
    before = _counts()
    r = api("reviewer").post(f"/api/runs/{run.pk}/corrections/", body, format="json")
    assert r.status_code == 400, r.content
    assert names in " ".join(r.json()[field])
    assert _counts() == before


def test_the_unpair_of_an_obligation_that_is_not_paired_is_refused(api, run):
    body = {"action": "unpair", "expected": "check_window"}  # omitted in this run
    r = api("reviewer").post(f"/api/runs/{run.pk}/corrections/", body, format="json")
    assert r.status_code == 400
    assert "'check_window' is not paired" in r.json()["detail"][0]
    assert not RunCorrection.objects.exists()


def test_enactments_list_with_provenance_and_an_annotator_removes_one(api, run, enactment):
    c = enactment.contract_id
    listed = api("annotator").get(f"/api/contracts/{c}/enactments/").json()
    assert listed == [
        {
            "id": enactment.pk,
            "node": "check_window",
            "text": STEP,
            "run": run.pk,
            "step": enactment.step_id,
            "reviewer": "reviewer",
            "created_at": listed[0]["created_at"],
        }
    ]
    r = api("annotator").delete(f"/api/contracts/{c}/enactments/{enactment.pk}/")
    assert r.status_code == 204
    assert not Enactment.objects.exists()
    assert AuditRecord.objects.filter(action="enactment_delete", object_id=str(enactment.pk))
    assert api("annotator").get(f"/api/contracts/{c}/enactments/").json() == []
    again = api("annotator").delete(f"/api/contracts/{c}/enactments/{enactment.pk}/")
    assert again.status_code == 404


def test_the_schema_documents_the_teaching_endpoints(api):
    schema = api("annotator").get("/api/schema/", {"format": "json"}).json()
    paths = schema["paths"]
    assert set(paths["/api/runs/{id}/corrections/"]) >= {"get", "post"}
    assert "get" in paths["/api/contracts/{id}/enactments/"]
    assert "delete" in paths["/api/contracts/{id}/enactments/{enactment_pk}/"]
    post = paths["/api/runs/{id}/corrections/"]["post"]
    assert {"201", "400", "401", "403", "404"} <= set(post["responses"])


@pytest.fixture
def wsgi_app():
    """The app as a server runs it, keeping the test's database connection open."""
    from django.core.signals import request_finished, request_started
    from django.core.wsgi import get_wsgi_application
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield get_wsgi_application()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def test_answers_with_real_data_conform_to_the_schema(run, users, wsgi_app):
    """Generated ids rarely name a finished run with a correction, so the success bodies
    are checked here: both reports before and after a correction, the enactments, the
    removal."""
    import schemathesis
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    checks = [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_schema_conformance,
    ]
    token, _ = Token.objects.get_or_create(user=users["reviewer"])
    headers = {"Authorization": f"Token {token.key}"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app, headers=headers)
    corrections = schema["/api/runs/{id}/corrections/"]
    enactments = "/api/contracts/{id}/enactments/"
    pair = {"action": "pair", "expected": "check_window", "observed": _step_of(run, STEP)}
    calls = [
        (corrections["GET"].Case(path_parameters={"id": run.pk}), 200),
        (
            corrections["POST"].Case(
                path_parameters={"id": run.pk}, body=pair, media_type="application/json"
            ),
            201,
        ),
        (corrections["GET"].Case(path_parameters={"id": run.pk}), 200),
        (schema[enactments]["GET"].Case(path_parameters={"id": run.contract_id}), 200),
    ]
    for case, code in calls:
        response = case.call(headers=headers)
        assert response.status_code == code, (case.operation.path, response.status_code)
        case.validate_response(response, checks=checks)
    one = Enactment.objects.get()
    delete = schema[enactments + "{enactment_pk}/"]["DELETE"].Case(
        path_parameters={"id": run.contract_id, "enactment_pk": one.pk}
    )
    response = delete.call(headers=headers)
    assert response.status_code == 204
    delete.validate_response(response, checks=checks)


def test_commentary_and_revert_through_the_api_and_the_run_follows_them(api, run):
    client = api("reviewer")
    step = run.report["alignment"][0]["observed"]
    r = client.post(
        f"/api/runs/{run.pk}/corrections/",
        {"action": "commentary", "observed": step},
        format="json",
    )
    assert r.status_code == 201, r.content
    assert r.json()["corrected"]["corrections"]["commentary"] == [step]
    shown = client.get(f"/api/runs/{run.pk}/").json()
    assert shown["corrected"] is True and shown["automatic"]["verdict"] == run.verdict
    r = client.post(f"/api/runs/{run.pk}/corrections/", {"action": "revert"}, format="json")
    assert r.status_code == 201 and r.json()["corrected"] is None
    shown = client.get(f"/api/runs/{run.pk}/").json()
    assert shown["corrected"] is False and shown["automatic"] is None
    assert shown["verdict"] == run.verdict
    r = client.post(f"/api/runs/{run.pk}/corrections/", {"action": "commentary"}, format="json")
    assert r.status_code == 400 and "observed" in r.json()
