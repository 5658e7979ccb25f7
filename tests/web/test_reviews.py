"""Review decisions name the node and the version on screen; bulk decisions and undo."""

from __future__ import annotations

import pytest

from audit import services
from audit.models import AuditRecord
from matching.propose import propose_heuristic

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def draft(project, users, refund_doc):
    contract = services.contract_create(
        project=project, user=users["admin"], key="draft", text=refund_doc["artifact"]["text"]
    )
    services.contract_apply_proposals(
        contract=contract,
        user=users["admin"],
        proposals=propose_heuristic(refund_doc["artifact"]["text"]),
    )
    return contract


def _review(client, contract, node, action, version=None, **extra):
    data = {"action": action, "version": node.version if version is None else version, **extra}
    return client.post(f"/c/{contract.pk}/nodes/{node.pk}/review/", data, **HTMX)


def test_a_decision_on_a_stale_copy_is_refused_with_409_and_changes_nothing(login, draft):
    client = login("annotator")
    node = draft.nodes.first()
    r = _review(client, draft, node, "confirm", version=node.version + 1)
    assert r.status_code == 409
    assert "changed meanwhile" in r.content.decode()
    node.refresh_from_db()
    assert node.review_status == "proposed" and node.version == 1
    assert not AuditRecord.objects.filter(contract=draft, action="confirm").exists()


def test_confirm_with_advance_opens_the_next_proposed_node(login, draft):
    client = login("annotator")
    first, second = draft.nodes.order_by("position")[:2]
    r = _review(client, draft, first, "confirm", advance="1")
    page = r.content.decode()
    assert r.status_code == 200
    assert f'data-node="{second.node_id}" data-pk="{second.pk}"' in page
    first.refresh_from_db()
    assert first.review_status == "confirmed"
    # only the changed outline row comes back, not the whole outline
    assert f'id="ol-{first.pk}"' in page and f'id="ol-{second.pk}"' not in page
    assert 'id="ws-outline"' not in page
    assert f'name="node" value="{first.pk}:2"' in page  # the undo button


def test_bulk_confirm_writes_one_record_per_node_and_one_undo_restores_them(login, draft):
    client = login("annotator")
    nodes = list(draft.nodes.order_by("position")[:5])
    already = nodes[0]
    _review(client, draft, already, "confirm")
    already.refresh_from_db()
    refs = [f"{n.pk}:{n.version}" for n in [already, *nodes[1:]]]
    r = client.post(f"/c/{draft.pk}/reviews/", {"action": "confirm", "node": refs}, **HTMX)
    assert r.status_code == 200
    assert AuditRecord.objects.filter(contract=draft, action="confirm").count() == 5
    assert set(
        draft.nodes.filter(pk__in=[n.pk for n in nodes]).values_list("review_status", flat=True)
    ) == {"confirmed"}
    page = r.content.decode()
    undo = [f"{n.pk}:2" for n in nodes[1:]]
    assert all(f'name="node" value="{ref}"' in page for ref in undo)
    r = client.post(f"/c/{draft.pk}/reviews/", {"action": "undo", "node": undo}, **HTMX)
    assert r.status_code == 200
    assert AuditRecord.objects.filter(contract=draft, action="undo").count() == 4
    statuses = dict(
        draft.nodes.filter(pk__in=[n.pk for n in nodes]).values_list("pk", "review_status")
    )
    assert statuses == {already.pk: "confirmed", **{n.pk: "proposed" for n in nodes[1:]}}


def test_a_bulk_decision_with_one_stale_node_changes_none(login, draft):
    client = login("annotator")
    a, b = draft.nodes.order_by("position")[:2]
    refs = [f"{a.pk}:{a.version}", f"{b.pk}:{b.version + 3}"]
    r = client.post(f"/c/{draft.pk}/reviews/", {"action": "reject", "node": refs}, **HTMX)
    assert r.status_code == 409 and b.node_id in r.content.decode()
    assert set(draft.nodes.values_list("review_status", flat=True)) == {"proposed"}


def test_bulk_refuses_nodes_of_another_contract_and_malformed_references(login, draft, contract):
    client = login("annotator")
    other = contract.nodes.first()
    r = client.post(
        f"/c/{draft.pk}/reviews/", {"action": "confirm", "node": [f"{other.pk}:1"]}, **HTMX
    )
    assert r.status_code == 422
    r = client.post(f"/c/{draft.pk}/reviews/", {"action": "confirm", "node": ["x:1"]}, **HTMX)
    assert r.status_code == 422 and "malformed" in r.content.decode()
    other.refresh_from_db()
    assert other.version == 1


def test_a_user_outside_the_project_cannot_bulk_review(login, draft):
    node = draft.nodes.first()
    r = login("outsider").post(
        f"/c/{draft.pk}/reviews/", {"action": "confirm", "node": [f"{node.pk}:1"]}, **HTMX
    )
    assert r.status_code == 404
    node.refresh_from_db()
    assert node.review_status == "proposed"


def test_history_says_just_now_rather_than_zero_minutes(login, draft):
    page = login("annotator").get(f"/c/{draft.pk}/").content.decode()
    assert "just now" in page and "0\xa0minutes ago" not in page
