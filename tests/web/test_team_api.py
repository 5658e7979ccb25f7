"""The team API: roles enforced, blind decisions unreadable by the other annotator,
adjudication and comments, every endpoint in the OpenAPI schema."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from .team_helpers import decide_all

pytestmark = pytest.mark.django_db


def api(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def base(contract):
    return f"/api/contracts/{contract.pk}"


def test_every_team_endpoint_is_in_the_openapi_schema(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    text = schema.content.decode()
    for path in (
        "/api/queue/",
        "/api/contracts/{id}/assignments/",
        "/api/assignments/{id}/",
        "/api/contracts/{id}/double-annotation/",
        "/api/contracts/{id}/decisions/",
        "/api/contracts/{id}/agreement/",
        "/api/contracts/{id}/adjudication/",
        "/api/contracts/{id}/curation/",
        "/api/contracts/{id}/comments/",
        "/api/comments/{id}/resolve/",
        "/api/projects/{slug}/agreement/",
    ):
        assert path in text, path


def test_an_annotator_reads_only_their_own_decisions_through_the_api(team):
    contract = team["contract"]
    decide_all(contract, team["ann1"], {"verify_owner": ("reject", None)})
    response = api(team["ann2"]).post(
        f"{base(contract)}/decisions/", {"node": "verify_owner", "action": "confirm"}, format="json"
    )
    assert response.status_code == 200
    rows = api(team["ann2"]).get(f"{base(contract)}/decisions/").json()
    assert {r["user"] for r in rows} == {"ann2"}
    assert api(team["ann2"]).get(f"{base(contract)}/agreement/").status_code == 403
    assert api(team["ann2"]).get(f"{base(contract)}/adjudication/").status_code == 403
    curator_rows = api(team["curator"]).get(f"{base(contract)}/decisions/").json()
    assert {r["user"] for r in curator_rows} == {"ann1", "ann2"}


def test_a_bad_decision_is_a_400_naming_the_problem_and_stores_nothing(team):
    contract = team["contract"]
    response = api(team["ann1"]).post(
        f"{base(contract)}/decisions/",
        {"node": "verify_owner", "action": "edit", "fields": {"colour": "red"}},
        format="json",
    )
    assert response.status_code == 400 and "colour" in response.json()["detail"][0]
    assert api(team["ann1"]).get(f"{base(contract)}/decisions/").json() == []


def test_the_api_walks_adjudication_to_an_audited_contract(team):
    contract = team["contract"]
    decide_all(contract, team["ann1"])
    decide_all(contract, team["ann2"], {"decline_refund": ("reject", None)})
    curator = api(team["curator"])
    started = curator.post(f"{base(contract)}/adjudication/").json()
    assert started["path_changing"] == 1
    rows = curator.get(f"{base(contract)}/adjudication/").json()
    assert rows[0]["node"] == "decline_refund" and rows[0]["disagreement"]["path_changing"]
    chosen = curator.post(
        f"{base(contract)}/curation/", {"node": "decline_refund", "pick": "ann1"}, format="json"
    )
    assert chosen.json()["result"] == {"action": "confirm"}
    # once adjudication started, the annotators may read each other's decisions
    assert {r["user"] for r in api(team["ann1"]).get(f"{base(contract)}/decisions/").json()} == {
        "ann1",
        "ann2",
    }
    assert api(team["ann1"]).get(f"{base(contract)}/agreement/").json()["kappa"] is not None


def test_roles_are_enforced_on_team_mutations(team, users):
    contract = team["contract"]
    annotator = api(team["ann1"])
    assert (
        annotator.post(
            f"{base(contract)}/assignments/", {"username": "ann2", "role": "annotator"}
        ).status_code
        == 403
    )
    assert (
        annotator.put(f"{base(contract)}/double-annotation/", {"enabled": False}).status_code == 403
    )
    assert annotator.post(f"{base(contract)}/adjudication/").status_code == 403
    outsider = api(users["outsider"])
    assert outsider.get(f"{base(contract)}/comments/").status_code == 404
    assert outsider.get(f"{base(contract)}/decisions/").status_code == 404


def test_comments_through_the_api_mention_resolve_and_block_audited(contract, users):
    from audit import services
    from audit.services import ServiceError

    node = contract.nodes.get(node_id="verify_owner")
    made = api(users["annotator"]).post(
        f"{base(contract)}/comments/",
        {"target": "node", "target_id": node.pk, "body": "@admin is this explicit?"},
        format="json",
    )
    assert made.status_code == 201 and made.json()["mentions"] == ["admin"]
    with pytest.raises(ServiceError, match="open"):
        services.contract_mark_audited(contract=contract, user=users["reviewer"])
    resolved = api(users["reviewer"]).post(
        f"/api/comments/{made.json()['id']}/resolve/", {"resolved": True}, format="json"
    )
    assert resolved.json()["resolved"] is True


def test_my_queue_through_the_api(team):
    rows = api(team["ann1"]).get("/api/queue/").json()
    assert [(r["key"], r["role"], r["phase"]) for r in rows] == [
        ("refund-mini", "annotator", "annotating")
    ]
