"""Team pages: queue, blind annotation, adjudication, comments, reports, export."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from audit.models import AnnotatorDecision, Node

from .team_helpers import decide_all

pytestmark = pytest.mark.django_db


def url(name, *args):
    return reverse(f"audit:{name}", args=args)


def test_my_queue_lists_assigned_contracts_with_progress(client, team):
    contract = team["contract"]
    node = contract.nodes.get(node_id="handle_refund")
    client.force_login(team["ann1"])
    client.post(url("decide", contract.pk, node.pk), {"action": "confirm"})
    page = client.get(url("my_queue")).content.decode()
    assert contract.title in page and "9%" in page  # 1 of 11 nodes decided


def test_project_page_shows_progress_per_contract(client, users, contract):
    contract.nodes.filter(node_id="offer_credit").update(review_status="proposed")
    client.force_login(users["reviewer"])
    page = client.get(url("project_detail", contract.project.slug)).content.decode()
    assert "90%" in page  # 10 of 11 reviewed


def test_an_annotator_sees_only_their_own_decisions_on_every_page(client, team):
    contract = team["contract"]
    decide_all(contract, team["ann1"], {"verify_owner": ("edit", {"label": "SECRET-LABEL-1"})})
    client.force_login(team["ann2"])
    pages = [
        url("annotate", contract.pk),
        url("team", contract.pk),
        url("workspace", contract.pk),
        url("my_queue"),
        url("contract_export", contract.pk),
    ]
    for page in pages:
        body = client.get(page).content.decode()
        assert "SECRET-LABEL-1" not in body, page
    assert client.get(url("adjudicate", contract.pk)).status_code == 403
    assert client.get(url("agreement_report", contract.pk, "json")).status_code == 403
    rows = json.loads(client.get(url("project_agreement", contract.project.slug, "json")).content)
    assert rows == []


def test_a_decision_through_the_page_is_stored_for_that_annotator_only(client, team):
    contract = team["contract"]
    node = contract.nodes.get(node_id="verify_owner")
    client.force_login(team["ann1"])
    response = client.post(
        url("decide", contract.pk, node.pk),
        {"action": "edit", "label": "Check the email", "evidence_start": 149, "evidence_end": 189},
    )
    assert response.status_code == 302
    mine = AnnotatorDecision.objects.get(node=node, user=team["ann1"])
    assert mine.fields == {"label": "Check the email", "evidence": [[149, 189]]}
    assert Node.objects.get(pk=node.pk).label != "Check the email"


def test_a_bad_edit_through_the_page_is_refused_with_the_field_named(client, team):
    contract = team["contract"]
    node = contract.nodes.get(node_id="verify_owner")
    client.force_login(team["ann1"])
    response = client.post(
        url("decide", contract.pk, node.pk), {"action": "edit", "evidence_start": 3}, follow=True
    )
    assert "evidence: give both the start and the end" in response.content.decode()
    assert not AnnotatorDecision.objects.filter(node=node).exists()


def test_the_curator_adjudicates_path_changing_first_and_marks_audited(client, team):
    contract = team["contract"]
    decide_all(contract, team["ann1"], {"lookup_order": ("edit", {"label": "Find the order"})})
    decide_all(contract, team["ann2"], {"approve_refund": ("reject", None)})
    client.force_login(team["curator"])
    client.post(url("adjudication_start", contract.pk))
    page = client.get(url("adjudicate", contract.pk)).content.decode()
    assert page.index('data-node="approve_refund"') < page.index('data-node="lookup_order"')
    assert "path-changing" in page
    for node_id, pick in (("approve_refund", "ann1"), ("lookup_order", "ann1")):
        node = contract.nodes.get(node_id=node_id)
        client.post(url("curate", contract.pk, node.pk), {"pick": pick})
    client.post(url("adjudication_audited", contract.pk))
    contract.refresh_from_db()
    assert contract.status == "audited"
    assert contract.nodes.get(node_id="lookup_order").label == "Find the order"
    doc = json.loads(client.get(url("contract_export", contract.pk)).content)
    audit = doc["nodes"][0]["meta"]["audit"]
    assert audit["annotators"] == ["ann1", "ann2"] and audit["curator"] == "reviewer"
    assert audit["agreement"]["path_changing"] == 1


def test_the_exported_provenance_keeps_the_document_valid(client, team):
    from matching.validate import load_contract

    contract = team["contract"]
    decide_all(contract, team["ann1"])
    decide_all(contract, team["ann2"])
    client.force_login(team["curator"])
    client.post(url("adjudication_start", contract.pk))
    client.post(url("adjudication_audited", contract.pk))
    doc = json.loads(client.get(url("contract_export", contract.pk)).content)
    assert load_contract(doc).nodes[0].meta["audit"]["agreement"]["kappa"] == 1.0


def test_agreement_reports_after_adjudication_starts(client, team):
    contract = team["contract"]
    decide_all(contract, team["ann1"])
    decide_all(contract, team["ann2"], {"offer_credit": ("reject", None)})
    client.force_login(team["curator"])
    client.post(url("adjudication_start", contract.pk))
    client.force_login(team["ann2"])  # after the start, annotators may read it too
    body = client.get(url("agreement_report", contract.pk, "csv")).content.decode()
    [row] = list(csv.DictReader(io.StringIO(body)))
    assert row["contract"] == contract.key and row["path_changing"] == "1"
    assert row["annotators"] == "ann1 ann2"
    report = json.loads(client.get(url("agreement_report", contract.pk, "json")).content)
    assert report["disagreement_list"][0]["node"] == "offer_credit"


def test_comments_with_mentions_block_audited_until_resolved(client, users, contract):
    node = contract.nodes.get(node_id="verify_owner")
    client.force_login(users["annotator"])
    client.post(
        url("comment_new", contract.pk),
        {"about": f"node:{node.pk}", "body": "@reviewer <b>why</b>?"},
    )
    page = client.get(url("team", contract.pk)).content.decode()
    assert "&lt;b&gt;why&lt;/b&gt;" in page and "@reviewer" in page
    client.force_login(users["reviewer"])
    response = client.post(url("contract_status", contract.pk), {"action": "audited"})
    contract.refresh_from_db()
    assert contract.status != "audited", response.status_code
    comment = contract.comments.get()
    client.post(url("comment_resolve", comment.pk), {"resolved": "on"})
    client.post(url("contract_status", contract.pk), {"action": "audited"})
    contract.refresh_from_db()
    assert contract.status == "audited"


def test_outsiders_get_404_on_every_team_page(client, users, contract):
    client.force_login(users["outsider"])
    for name in ("team", "annotate", "adjudicate"):
        assert client.get(url(name, contract.pk)).status_code == 404


def test_only_admins_assign(client, users, contract):
    client.force_login(users["reviewer"])
    response = client.post(
        url("assign", contract.pk), {"username": "annotator", "role": "annotator"}
    )
    assert response.status_code == 403
    client.force_login(users["admin"])
    client.post(url("assign", contract.pk), {"username": "annotator", "role": "annotator"})
    assert contract.assignments.get().user == users["annotator"]


def test_the_project_report_pools_alpha_over_its_contracts(client, team):
    contract = team["contract"]
    decide_all(contract, team["ann1"])
    decide_all(contract, team["ann2"], {"offer_credit": ("reject", None)})
    client.force_login(team["curator"])
    client.post(url("adjudication_start", contract.pk))
    rows = json.loads(client.get(url("project_agreement", contract.project.slug, "json")).content)
    assert [r["contract"] for r in rows] == ["refund-mini", "(project)"]
    assert rows[1]["alpha"] == pytest.approx(rows[0]["alpha"])
    assert rows[1]["path_changing"] == 1 and rows[1]["nodes"] == 11
    body = client.get(url("project_agreement", contract.project.slug, "csv")).content.decode()
    assert body.splitlines()[0].startswith("contract,version,annotators,nodes,kappa,alpha")
