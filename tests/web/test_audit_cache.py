"""The audit the workspace shows is cached per contract revision: after any sequence of
edits it must equal a fresh audit of the contract's export, and the plain-record export
must equal the export built from model instances."""

from __future__ import annotations

import contextlib
import copy
import random
import re

import pytest
from django.core.cache import cache
from django.db import transaction
from django.db.models import F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit import services
from audit.models import Contract, Edge, Node
from audit.selectors import audits
from audit.selectors.audits import audit_rows, contract_audit
from audit.selectors.contracts import (
    contract_document,
    document_from_rows,
    export_rows,
    load_contract_rows,
    revision_stamp,
)
from audit.services.reviews import ANY_STATE, nodes_review
from matching.validate import audit_contract

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def reject_one(contract, user, pk: int, version: int) -> None:
    """Reject one node whatever its status, as the key r on its panel does."""
    nodes_review(
        contract=contract,
        user=user,
        action="reject",
        nodes=[(pk, version)],
        from_states=ANY_STATE,
    )


def _random_edit(rng: random.Random, contract, user) -> None:
    """One edit through the services, as the workspace makes them."""
    nodes = list(Node.objects.filter(contract=contract).order_by("pk"))
    node = rng.choice(nodes)
    kind = rng.choice(["confirm", "reject", "undo", "label", "edge", "unedge", "details"])
    if kind in ("confirm", "reject"):  # a key pressed on one node: from any status
        nodes_review(
            contract=contract,
            user=user,
            action=kind,
            nodes=[(node.pk, node.version)],
            from_states=ANY_STATE,
        )
    elif kind == "undo":  # refused unless the node's last change was a decision
        with contextlib.suppress(services.ServiceError):
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
        # chosen by the test's own random generator: hypothesis replays it exactly
        edges = list(Edge.objects.filter(contract=contract).order_by("pk"))
        edge = rng.choice(edges) if edges else None
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
        assert contract_audit(contract).audit.to_dict() == fresh.to_dict()


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
    reject_one(contract, users["annotator"], node.pk, 1)
    light = document_from_rows(export_rows(contract), include_rejected=include_rejected)
    full = document_from_rows(load_contract_rows(contract), include_rejected=include_rejected)
    assert light == full


@pytest.mark.parametrize("action", ["confirm", "reject"])
def test_a_review_answer_carries_the_outline_row_and_highlights_a_fresh_page_shows(
    login, contract, users, action
) -> None:
    client = login("annotator")
    node = Node.objects.get(contract=contract, node_id="within_window")  # nested, with text
    # imported nodes are confirmed; back to proposed first (no decision to undo yet)
    Node.objects.filter(pk=node.pk).update(review_status="proposed")
    cache.clear()
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
    before = contract_audit(contract).audit
    edge = Edge.objects.filter(contract=contract, kind="branches_to").first()
    assert edge is not None and before.ok
    site._registry[Edge].delete_model(rf.post("/"), edge)
    after = contract_audit(contract).audit
    assert not after.ok  # an outcome without its branches_to edge is an error
    assert after.to_dict() == audit_contract(contract_document(contract)).to_dict()


# ------------------------------------------------- the audit derived after reviews
#
# A review moves nodes into or out of *rejected* only: its audit is derived from the
# export base cached for the contract's content revision (audit.selectors.audits). These
# properties drive random sequences of reviews (single and bulk), edits, reads of the
# page and cache evictions, and a read racing a change, through the services; after
# each step the audit (and the links read with it) must be those of a fresh export.

STEP_KINDS = [
    "reject",
    "undo",
    "confirm",
    "bulk_reject",
    "bulk_undo",
    "label",
    "reparent",
    "edge",
    "unedge",
    "details",
    "page",
    "evict_audits",
    "clear",
    "race_review",
    "race_edit",
]
steps = st.lists(
    st.tuples(st.sampled_from(STEP_KINDS), st.integers(0, 2**16), st.integers(1, 2**11)),
    min_size=1,
    max_size=10,
)


@pytest.fixture
def rich_contract(project, users, refund_doc):
    """refund-mini with an invariant applying to three nodes and a tool catalogue on its
    root: rejecting the root moves the catalogue to the next root of the export."""
    doc = copy.deepcopy(refund_doc)
    doc["invariants"][0]["applies_to"] = ["approve_refund", "reply_json", "offer_credit"]
    doc["nodes"][0]["meta"] = {"tools": [{"type": "function", "function": {"name": "refund"}}]}
    return services.contract_import(project=project, user=users["admin"], source=doc)


class _Rollback(Exception):
    """Ends an example: its changes are rolled back, so the next starts afresh."""


def _links_now(contract) -> list[tuple]:
    return list(
        Node.objects.filter(contract=contract)
        .order_by("position", "pk")
        .values_list("pk", "parent_id", "review_status", "node_id")
    )


def _fresh(contract) -> dict:
    return audit_contract(contract_document(contract)).to_dict()


def _review_some(contract, user, action: str, pick: int, mask: int, undo: list) -> None:
    """``action`` on one node (``mask`` 0) or on the nodes whose bit is set in ``mask``,
    whatever their status (the imported nodes are all confirmed); undo takes back the
    last decision (``undo`` holds the nodes it changed, as the page's Undo button does)."""
    if action == "undo":
        if undo:
            with contextlib.suppress(services.ServiceError):  # changed since: refused
                nodes_review(contract=contract, user=user, action=action, nodes=list(undo))
        undo.clear()
        return
    nodes = list(Node.objects.filter(contract=contract).order_by("pk"))
    chosen = [n for i, n in enumerate(nodes) if mask >> i & 1] or [nodes[pick % len(nodes)]]
    outcome = nodes_review(
        contract=contract,
        user=user,
        action=action,
        nodes=[(n.pk, n.version) for n in chosen],
        from_states=ANY_STATE,
    )
    undo[:] = [(n.pk, n.version) for n, _ in outcome.changed]


def _apply(kind: str, pick: int, mask: int, contract, user, undo: list) -> None:
    """One change through the services (reviews, or an edit of the content)."""
    nodes = list(Node.objects.filter(contract=contract).order_by("pk"))
    node = nodes[pick % len(nodes)]
    if kind in ("reject", "undo", "confirm"):
        _review_some(contract, user, kind, pick, 0, undo)
    elif kind in ("bulk_reject", "bulk_undo"):
        _review_some(contract, user, kind.removeprefix("bulk_"), pick, mask, undo)
    elif kind == "reparent":  # a node moves under another (a cycle is refused)
        parent = nodes[mask % len(nodes)]
        with contextlib.suppress(services.ServiceError):
            data = {"parent": None if parent.pk == node.pk else parent}
            services.node_update(node=node, user=user, data=data, expected_version=node.version)
    else:
        _random_edit(random.Random(pick * 4099 + mask), contract, user)


def _race(kind: str, pick: int, mask: int, contract, user, monkeypatch) -> None:
    """A read of the audit with the export base not cached, while another request
    changes the contract between the read of the statuses and the read of the rows: a
    review leaves the content as it was (the audit is the one of the statuses read), an
    edit does not (the audit is the one of the rows read, with their links)."""
    cache.clear()
    before, links_before = _fresh(contract), _links_now(contract)
    real = audits.export_rows

    def racing(c):
        monkeypatch.setattr(audits, "export_rows", real)
        if kind == "race_review":
            _apply("reject", pick, mask, contract, user, [])
        else:  # a copied label: the content changes, and the audit warns of it
            nodes = list(Node.objects.filter(contract=contract).order_by("pk"))
            node, other = nodes[pick % len(nodes)], nodes[mask % len(nodes)]
            data = {"label": other.label + " ", "parent": node.parent}
            services.node_update(node=node, user=user, data=data, expected_version=node.version)
        return real(c)

    monkeypatch.setattr(audits, "export_rows", racing)
    read = contract_audit(contract)
    if kind == "race_review":
        assert (read.audit.to_dict(), read.links) == (before, links_before)
    else:
        assert (read.audit.to_dict(), read.links) == (_fresh(contract), _links_now(contract))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=steps)
def test_the_audit_derived_after_reviews_equals_a_fresh_full_audit(
    rich_contract, users, monkeypatch, steps
) -> None:
    user, contract = users["annotator"], rich_contract
    undo: list[tuple[int, int]] = []
    with contextlib.suppress(_Rollback), transaction.atomic():
        cache.clear()  # the rolled-back revisions of earlier examples are counted again
        for kind, pick, mask in steps:
            if kind == "page":
                audit_rows(load_contract_rows(contract))
            elif kind == "evict_audits":  # only the export base is left
                cache.delete_many([k for k in _keys() if k.startswith("ce-audit:")])
            elif kind == "clear":
                cache.clear()
            elif kind.startswith("race_"):
                _race(kind, pick, mask, contract, user, monkeypatch)
            else:
                _apply(kind, pick, mask, contract, user, undo)
            read = contract_audit(contract)
            assert read.audit.to_dict() == _fresh(contract)
            assert read.links == _links_now(contract)
        raise _Rollback


def _keys() -> list[str]:
    """The keys of the local-memory cache the tests run with (without their prefix)."""
    return [k.split(":", 2)[2] for k in cache._cache]  # type: ignore[attr-defined]


def test_a_review_keeps_the_content_revision_and_an_edit_or_a_bare_revision_counts_it(
    contract, users
) -> None:
    user = users["annotator"]
    node = Node.objects.filter(contract=contract).order_by("pk")[3]
    revision, content = revision_stamp(contract.pk)
    reject_one(contract, user, node.pk, node.version)
    rejected = revision_stamp(contract.pk)
    assert rejected[0] != revision and rejected[1] == content
    node.refresh_from_db()
    services.node_update(
        node=node, user=user, data={"parent": node.parent}, expected_version=node.version
    )
    edited = revision_stamp(contract.pk)
    assert edited[0] != rejected[0] and edited[1] != content
    # a writer that counts only the revision (the admin) changes the content count too
    Contract.objects.filter(pk=contract.pk).update(revision=F("revision") + 1)
    assert revision_stamp(contract.pk)[1] != edited[1]


def test_a_reject_is_audited_without_reading_the_rows_again(contract, users, monkeypatch) -> None:
    cache.clear()
    contract_audit(contract)  # the export base of this content is cached now
    monkeypatch.setattr(audits, "export_rows", None)  # would fail if called
    node = Node.objects.get(contract=contract, node_id="check_window")
    reject_one(contract, users["annotator"], node.pk, 1)
    monkeypatch.undo()
    assert contract_audit(contract).audit.to_dict() == _fresh(contract)
