"""Database constraints, the append-only history, and access rules of every view."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.test import Client

from audit.models import AuditRecord, Node, Span

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def test_span_must_start_before_it_ends(contract):
    node = contract.nodes.first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Span.objects.create(node=node, start=10, end=10)


def test_span_needs_exactly_one_owner(contract):
    node, invariant = contract.nodes.first(), contract.invariants.first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Span.objects.create(node=node, invariant=invariant, start=0, end=3)


def test_node_ids_are_unique_per_contract(contract):
    with pytest.raises(IntegrityError), transaction.atomic():
        Node.objects.create(contract=contract, node_id="lookup_order", type="action", label="x")


def test_audit_records_are_append_only(contract):
    record = AuditRecord.objects.filter(contract=contract).first()
    record.action = "forged"
    with pytest.raises(TypeError):
        record.save()
    with pytest.raises(TypeError):
        record.delete()
    with pytest.raises(TypeError):
        AuditRecord.objects.filter(contract=contract).update(action="forged")
    with pytest.raises(TypeError):
        AuditRecord.objects.filter(contract=contract).delete()


def _urls(contract):
    node = contract.nodes.get(node_id="verify_owner")
    return node, [
        f"/c/{contract.pk}/",
        f"/c/{contract.pk}/export.json",
        f"/c/{contract.pk}/nodes/{node.pk}/",
        f"/c/{contract.pk}/queries/preview/",
    ]


def test_a_user_of_another_project_gets_404_everywhere(login, contract):
    client = login("outsider")
    node, urls = _urls(contract)
    for url in urls:
        assert client.get(url, **HTMX).status_code == 404, url
    posts = [
        (f"/c/{contract.pk}/nodes/{node.pk}/review/", {"action": "confirm", "version": 1}),
        (f"/c/{contract.pk}/propose/", {}),
        (f"/c/{contract.pk}/status/", {"action": "audited"}),
        (f"/c/{contract.pk}/new-version/", {}),
        ("/p/tests/import/", {"document": "{}"}),
    ]
    for url, data in posts:
        assert client.post(url, data, **HTMX).status_code == 404, url
    assert client.get("/p/tests/").status_code == 404
    node.refresh_from_db()
    assert node.review_status == "confirmed" and node.version == 1


def test_anonymous_users_are_sent_to_login(client, contract):
    response = client.get(f"/c/{contract.pk}/")
    assert response.status_code == 302 and response.url.startswith("/login/")


def test_mutations_refuse_get(login, contract):
    """A GET changes nothing: it is sent to the page holding the form."""
    client = login("admin")
    node = contract.nodes.first()
    version, nodes = node.version, contract.nodes.count()
    response = client.get(f"/c/{contract.pk}/nodes/{node.pk}/review/")
    assert response.status_code == 302 and response.url == f"/c/{contract.pk}/nodes/{node.pk}/"
    response = client.get(f"/c/{contract.pk}/propose/")
    assert response.status_code == 302 and response.url == f"/c/{contract.pk}/"
    node.refresh_from_db()
    assert node.version == version and contract.nodes.count() == nodes


def test_mutations_need_the_csrf_token(users, contract):
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["admin"])
    node = contract.nodes.first()
    response = client.post(
        f"/c/{contract.pk}/nodes/{node.pk}/review/", {"action": "reject", "version": 1}
    )
    assert response.status_code == 403
    node.refresh_from_db()
    assert node.review_status == "confirmed"


def test_an_annotator_may_not_mark_audited_or_import(login, contract, refund_doc):
    client = login("annotator")
    response = client.post(f"/c/{contract.pk}/status/", {"action": "audited"}, **HTMX)
    assert response.status_code == 403
    assert client.post("/p/tests/import/", {"document": "{}"}).status_code == 403
    contract.refresh_from_db()
    assert contract.status == "draft"


def test_user_text_is_escaped_in_the_workspace(login, contract, users):
    from audit import services
    from audit.forms import NodeForm

    node = contract.nodes.get(node_id="lookup_order")
    data = NodeForm.initial_for(node) | {"label": "<script>alert(1)</script>", "parent": None}
    services.node_update(node=node, user=users["annotator"], data=data, expected_version=1)
    page = login("annotator").get(f"/c/{contract.pk}/?node=lookup_order").content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
