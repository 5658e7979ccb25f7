"""Team annotation services: assignments, blind decisions, adjudication, comments."""

from __future__ import annotations

import pytest

from audit import services
from audit.models import AuditRecord, CurationChoice, Node, ReviewStatus
from audit.services import ServiceError

from .team_helpers import decide_all

pytestmark = pytest.mark.django_db


def test_only_admins_assign_and_only_members_are_assigned(project, users, contract):
    with pytest.raises(Exception, match="admin"):
        services.assignment_create(
            project=project,
            contract=contract,
            user=users["annotator"],
            by=users["reviewer"],
            role="annotator",
        )
    with pytest.raises(ServiceError, match="not a member"):
        services.assignment_create(
            project=project,
            contract=contract,
            user=users["outsider"],
            by=users["admin"],
            role="annotator",
        )
    with pytest.raises(ServiceError, match="reviewer"):
        services.assignment_create(
            project=project, user=users["annotator"], by=users["admin"], role="reviewer"
        )


def test_a_blind_decision_leaves_the_shared_node_and_the_history_untouched(team):
    contract, node = team["contract"], team["contract"].nodes.get(node_id="verify_owner")
    records = AuditRecord.objects.filter(contract=contract).count()
    services.decision_record(node=node, user=team["ann1"], action="reject")
    node.refresh_from_db()
    assert node.review_status == ReviewStatus.PROPOSED
    assert AuditRecord.objects.filter(contract=contract).count() == records


def test_shared_nodes_cannot_be_reviewed_while_annotation_is_blind(team):
    node = team["contract"].nodes.get(node_id="verify_owner")
    with pytest.raises(ServiceError, match="double-annotated"):
        services.nodes_review(
            contract=team["contract"],
            user=team["ann1"],
            action="confirm",
            nodes=[(node.pk, node.version)],
        )


def test_an_unassigned_member_cannot_annotate_an_assigned_contract(team, users):
    node = team["contract"].nodes.first()
    with pytest.raises(ServiceError, match="not assigned"):
        services.decision_record(node=node, user=users["annotator"], action="confirm")


def test_an_edit_decision_names_a_bad_field(team):
    node = team["contract"].nodes.get(node_id="verify_owner")
    with pytest.raises(ServiceError, match="type"):
        services.decision_record(
            node=node, user=team["ann1"], action="edit", fields={"type": "wish"}
        )
    with pytest.raises(ServiceError, match="outside the artifact"):
        services.decision_record(
            node=node, user=team["ann1"], action="edit", fields={"evidence": [[5, 99999]]}
        )


def test_adjudication_waits_for_every_independent_audit(team):
    decide_all(team["contract"], team["ann1"])
    with pytest.raises(ServiceError, match="1 of 2 annotators"):
        services.adjudication_start(contract=team["contract"], user=team["curator"])


def test_an_annotator_cannot_adjudicate_their_own_contract(team, users):
    team["ann1"].memberships.update(role="reviewer")
    decide_all(team["contract"], team["ann1"])
    decide_all(team["contract"], team["ann2"])
    with pytest.raises(ServiceError, match="annotator of this contract"):
        services.adjudication_start(contract=team["contract"], user=team["ann1"])


def test_adjudication_produces_the_audited_curated_version(team):
    contract = team["contract"]
    decide_all(contract, team["ann1"])
    decide_all(contract, team["ann2"], {"approve_refund": ("reject", None)})
    started = services.adjudication_start(contract=contract, user=team["curator"])
    assert started.agreement["path_changing"] == 1
    assert started.agreement["disagreement_list"][0]["node"] == "approve_refund"
    assert Node.objects.get(contract=contract, node_id="approve_refund").review_status == (
        ReviewStatus.PROPOSED
    )
    node = contract.nodes.get(node_id="approve_refund")
    services.curation_choose(node=node, user=team["curator"], pick="ann1")
    last = AuditRecord.objects.filter(contract=contract, action="curate").first()
    assert last.after["annotators"] == {
        "ann1": {"action": "confirm"},
        "ann2": {"action": "reject"},
    }
    audited = services.contract_mark_audited(contract=contract, user=team["curator"])
    assert audited.status == "audited"
    assert not contract.nodes.filter(review_status=ReviewStatus.PROPOSED).exists()
    assert CurationChoice.objects.filter(contract=contract).count() == contract.nodes.count()
    contract.double_annotation.refresh_from_db()
    assert contract.double_annotation.phase == "adjudicated"


def test_a_double_annotated_contract_is_not_audited_before_adjudication(team):
    contract = team["contract"]
    contract.nodes.update(review_status="confirmed")
    with pytest.raises(ServiceError, match="adjudicated"):
        services.contract_mark_audited(contract=contract, user=team["curator"])


def test_an_open_comment_blocks_audited_until_resolved(contract, users):
    comment = services.comment_create(
        contract=contract,
        user=users["annotator"],
        body="Is this step really required?",
        target="node",
        obj=contract.nodes.get(node_id="verify_owner"),
    )
    with pytest.raises(ServiceError, match="1 comment"):
        services.contract_mark_audited(contract=contract, user=users["reviewer"])
    services.comment_set_resolved(comment=comment, user=users["reviewer"], resolved=True)
    assert services.contract_mark_audited(contract=contract, user=users["reviewer"]).status == (
        "audited"
    )


def test_mentions_link_project_members_only(contract, users):
    comment = services.comment_create(
        contract=contract, user=users["annotator"], body="@reviewer and @outsider, look."
    )
    assert [u.username for u in comment.mentions.all()] == ["reviewer"]


def test_a_comment_on_another_contracts_node_is_refused(contract, users, project, refund_doc):
    other = services.contract_import(
        project=project, user=users["admin"], source={**refund_doc, "id": "other"}
    )
    with pytest.raises(ServiceError, match="not part of this contract"):
        services.comment_create(
            contract=contract,
            user=users["annotator"],
            body="x",
            target="node",
            obj=other.nodes.first(),
        )
