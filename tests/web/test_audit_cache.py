"""The audit the workspace shows is cached per contract revision: after any sequence of
edits it must equal a fresh audit of the contract's export, and the plain-record export
must equal the export built from model instances."""

from __future__ import annotations

import contextlib
import random
import re

import pytest
from django.core.cache import cache

from audit import services
from audit.models import Edge, Node
from audit.selectors.contracts import (
    contract_document,
    document_from_rows,
    export_rows,
    load_contract_rows,
)
from audit.selectors.workspace import contract_audit
from audit.services.reviews import nodes_review
from matching.validate import audit_contract

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def _random_edit(rng: random.Random, contract, user) -> None:
    """One edit through the services, as the workspace makes them."""
    nodes = list(Node.objects.filter(contract=contract).order_by("pk"))
    node = rng.choice(nodes)
    kind = rng.choice(["confirm", "reject", "undo", "label", "edge", "unedge", "details"])
    if kind in ("confirm", "reject", "undo"):
        nodes_review(contract=contract, user=user, action=kind, nodes=[(node.pk, node.version)])
    elif kind == "label":  # a copied label is a warning of the audit
        data = {"label": rng.choice(nodes).label, "parent": node.parent}
        services.node_update(node=node, user=user, data=data, expected_version=node.version)
    elif kind == "edge":
        other = rng.choice([n for n in nodes if n.pk != node.pk])
        # an existing edge or a cycle is refused; the audit must still hold
        with contextlib.suppress(services.ServiceError):
            services.edge_create(
                contract=contract,
                user=user,
                source=node,
                target=other,
                kind=rng.choice(["requires", "enables", "produces"]),
                node=node,
                expected_version=node.version,
            )
    elif kind == "unedge":
        edge = Edge.objects.filter(contract=contract).order_by("?").first()
        if edge is not None:
            services.edge_delete(edge=edge, user=user, expected_version=edge.version)
    else:
        contract.refresh_from_db()
        services.contract_update_details(
            contract=contract,
            user=user,
            title=f"title {rng.randrange(3)}",
            domain="",
            media_type=contract.artifact.media_type,
            expected_version=contract.details_version,
        )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_cached_audit_equals_a_fresh_full_audit_after_random_edits(
    contract, users, seed
) -> None:
    rng = random.Random(seed)
    cache.clear()
    for _ in range(25):
        contract_audit(contract)  # fills the cache at this revision
        _random_edit(rng, contract, users["annotator"])
        fresh = audit_contract(contract_document(contract))
        assert contract_audit(contract)[0].to_dict() == fresh.to_dict()


def test_a_reject_answers_with_the_audit_of_the_export_without_the_node(login, contract) -> None:
    client = login("annotator")
    cache.clear()
    before = client.get(f"/c/{contract.pk}/").content.decode()
    root = Node.objects.get(contract=contract, node_id="handle_refund")
    r = client.post(
        f"/c/{contract.pk}/nodes/{root.pk}/review/",
        {"action": "reject", "version": root.version},
        **HTMX,
    )
    assert r.status_code == 200
    # without the intent, every required node below it has no intent above it
    fresh = audit_contract(contract_document(contract))
    assert [f.rule for f in fresh.warnings].count("no-intent-ancestor") >= 5
    assert "0 warnings" in before
    assert f"{len(fresh.warnings)} warnings" in r.content.decode()


@pytest.mark.parametrize("include_rejected", [False, True])
def test_the_export_from_plain_records_equals_the_export_from_models(
    contract, users, include_rejected
) -> None:
    node = Node.objects.filter(contract=contract).order_by("pk")[1]
    nodes_review(contract=contract, user=users["annotator"], action="reject", nodes=[(node.pk, 1)])
    light = document_from_rows(export_rows(contract), include_rejected=include_rejected)
    full = document_from_rows(load_contract_rows(contract), include_rejected=include_rejected)
    assert light == full


@pytest.mark.parametrize("action", ["confirm", "reject"])
def test_a_review_answer_carries_the_outline_row_and_highlights_a_fresh_page_shows(
    login, contract, users, action
) -> None:
    client = login("annotator")
    node = Node.objects.get(contract=contract, node_id="within_window")  # nested, with text
    nodes_review(  # imported nodes are confirmed; back to proposed first
        contract=contract, user=users["annotator"], action="undo", nodes=[(node.pk, 1)]
    )
    node.refresh_from_db()
    r = client.post(
        f"/c/{contract.pk}/nodes/{node.pk}/review/",
        {"action": action, "version": node.version, "advance": "1"},
        **HTMX,
    )
    answer = r.content.decode().replace(' hx-swap-oob="true"', "")
    page = client.get(f"/c/{contract.pk}/?node=within_window").content.decode()
    row = re.search(rf'<li id="ol-{node.pk}" .*?</li>', answer)
    assert row is not None
    assert row.group(0).replace(" is-sel", "") in page.replace(" is-sel", "")
    pieces = re.findall(r'<span id="s\d+" .*?</span>', answer)
    assert pieces and all(piece in page for piece in pieces)
    assert f"s-{action}ed" in row.group(0)


def test_a_deletion_in_the_admin_counts_the_revision_so_the_old_audit_is_not_shown(
    contract, rf
) -> None:
    from django.contrib.admin.sites import site

    cache.clear()
    before, _ = contract_audit(contract)
    edge = Edge.objects.filter(contract=contract, kind="branches_to").first()
    assert edge is not None and before.ok
    site._registry[Edge].delete_model(rf.post("/"), edge)
    after, _ = contract_audit(contract)
    assert not after.ok  # an outcome without its branches_to edge is an error
    assert after.to_dict() == audit_contract(contract_document(contract)).to_dict()
