"""Review decisions name the node and the version on screen; bulk decisions move only
the statuses they name; undo brings back what each node was."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.core.cache import cache
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit import services
from audit.models import AuditRecord, Node, ReviewStatus
from audit.selectors.contracts import node_snapshot
from audit.services.concurrency import ConflictError
from audit.services.reviews import ANY_STATE, DECISIONS, DEFAULT_FROM, nodes_review
from matching.propose import propose_heuristic

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
REJECTED_BY_HAND = ("approve_refund", "offer_credit")


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


# ------------------------------------------------ bulk decisions are moves, not overwrites


@pytest.fixture
def mixed(login, contract):
    """refund-mini with every node proposed, except approve_refund and offer_credit,
    which the annotator rejected with the key r."""
    Node.objects.filter(contract=contract).update(review_status="proposed")
    cache.clear()  # the statuses changed outside the services: no cached audit holds
    client = login("annotator")
    for node in contract.nodes.filter(node_id__in=REJECTED_BY_HAND):
        assert _review(client, contract, node, "reject").status_code == 200
    return contract


def _shown(page: str) -> list[str]:
    """The ``pk:version`` of every outline row of a workspace page, as the bulk buttons
    send them when the outline filter shows any status."""
    return [
        f"{pk}:{version}"
        for pk, version in re.findall(
            r'<li id="ol-\d+" [^>]*data-pk="(\d+)" data-version="(\d+)"', page
        )
    ]


def _undo_refs(answer: str) -> list[str]:
    """The nodes the Undo button of an answer takes back."""
    form = re.search(r'<form id="ws-undo".*?</form>', answer, re.S)
    assert form is not None
    return re.findall(r'name="node" value="(\d+:\d+)"', form.group(0))


def _statuses(contract) -> dict[str, str]:
    return dict(contract.nodes.values_list("node_id", "review_status"))


def test_confirming_all_shown_under_any_status_keeps_two_rejections_and_so_does_its_undo(
    login, mixed
):
    client = login("annotator")
    page = client.get(f"/c/{mixed.pk}/").content.decode()
    shown = _shown(page)
    assert len(shown) == 11
    # the buttons say what they move and what they leave
    assert "Confirm <span data-bulk-count>9</span> <span data-bulk-from>proposed</span>" in page
    assert "2 rejected left as they are" in page
    rejected = {n.pk: n.version for n in mixed.nodes.filter(node_id__in=REJECTED_BY_HAND)}

    r = client.post(f"/c/{mixed.pk}/reviews/", {"action": "confirm", "node": shown}, **HTMX)
    assert r.status_code == 200
    assert "Confirmed 9 proposed; 2 rejected left as they were." in r.content.decode()
    after = _statuses(mixed)
    assert {k: v for k, v in after.items() if k in REJECTED_BY_HAND} == dict.fromkeys(
        REJECTED_BY_HAND, "rejected"
    )
    assert {v for k, v in after.items() if k not in REJECTED_BY_HAND} == {"confirmed"}
    undo = _undo_refs(r.content.decode())
    assert len(undo) == 9 and not {int(ref.split(":")[0]) for ref in undo} & set(rejected)

    r = client.post(f"/c/{mixed.pk}/reviews/", {"action": "undo", "node": undo}, **HTMX)
    assert r.status_code == 200
    assert "Undone: 9 back to proposed." in r.content.decode()
    after = _statuses(mixed)
    assert [k for k, v in after.items() if v == "rejected"] == list(REJECTED_BY_HAND)
    assert list(after.values()).count("proposed") == 9
    # the rejections were never written to: same version, no record since
    assert dict(mixed.nodes.filter(pk__in=rejected).values_list("pk", "version")) == rejected
    assert AuditRecord.objects.filter(contract=mixed, action="undo").count() == 9


def test_confirming_rejected_nodes_picked_in_the_filter_moves_them_and_undo_rejects_them_again(
    login, mixed
):
    client = login("annotator")
    nodes = list(mixed.nodes.order_by("position"))
    picked = [n for n in nodes if n.node_id in REJECTED_BY_HAND]
    before = {n.pk: (n.version, n.label) for n in picked}
    everything = [f"{n.pk}:{n.version}" for n in nodes]
    r = client.post(
        f"/c/{mixed.pk}/reviews/",
        {"action": "confirm", "from": "rejected", "node": everything},
        **HTMX,
    )
    assert "Confirmed 2 rejected; 9 proposed left as they were." in r.content.decode()
    after = _statuses(mixed)
    assert [k for k, v in after.items() if v == "confirmed"] == list(REJECTED_BY_HAND)
    r = client.post(
        f"/c/{mixed.pk}/reviews/",
        {"action": "undo", "node": _undo_refs(r.content.decode())},
        **HTMX,
    )
    assert "Undone: 2 back to rejected." in r.content.decode()
    assert [k for k, v in _statuses(mixed).items() if v == "rejected"] == list(REJECTED_BY_HAND)
    for n in mixed.nodes.filter(pk__in=before):  # versions only go up, an undo too
        assert n.version == before[n.pk][0] + 2 and n.label == before[n.pk][1]
    record = AuditRecord.objects.filter(contract=mixed, action="undo").latest("pk")
    assert (record.before["review_status"], record.after["review_status"]) == (
        "confirmed",
        "rejected",
    )


def test_bulk_reject_leaves_confirmed_and_rejected_nodes_alone(login, mixed):
    client = login("annotator")
    first = mixed.nodes.exclude(node_id__in=REJECTED_BY_HAND).order_by("position").first()
    assert _review(client, mixed, first, "confirm").status_code == 200
    everything = [f"{pk}:{v}" for pk, v in mixed.nodes.values_list("pk", "version")]
    r = client.post(f"/c/{mixed.pk}/reviews/", {"action": "reject", "node": everything}, **HTMX)
    assert "Rejected 8 proposed; 1 confirmed, 2 rejected left as they were." in r.content.decode()
    assert _statuses(mixed)[first.node_id] == "confirmed"
    assert AuditRecord.objects.filter(contract=mixed, action="reject").count() == 2 + 8


def test_a_key_pressed_on_a_rejected_node_confirms_it_and_undo_rejects_it_again(login, mixed):
    client = login("annotator")
    node = mixed.nodes.get(node_id="approve_refund")
    r = _review(client, mixed, node, "confirm")
    assert r.status_code == 200 and "Confirmed 1 rejected." in r.content.decode()
    node.refresh_from_db()
    assert node.review_status == "confirmed"
    undo = _undo_refs(r.content.decode())
    assert undo == [f"{node.pk}:{node.version}"]
    client.post(f"/c/{mixed.pk}/reviews/", {"action": "undo", "node": undo}, **HTMX)
    node.refresh_from_db()
    assert node.review_status == "rejected"


def test_undo_of_a_node_whose_last_change_was_no_decision_is_refused(login, mixed, users):
    client = login("annotator")
    node = mixed.nodes.get(node_id="lookup_order")
    node = services.node_update(
        node=node,
        user=users["annotator"],
        data={"label": "Look the order up", "parent": node.parent},
        expected_version=node.version,
    )
    r = client.post(
        f"/c/{mixed.pk}/reviews/", {"action": "undo", "node": [f"{node.pk}:{node.version}"]}, **HTMX
    )
    assert r.status_code == 422 and "no decision to undo" in r.content.decode()
    node.refresh_from_db()
    assert node.review_status == "edited" and node.label == "Look the order up"


def test_a_bulk_decision_from_an_unknown_status_is_refused(login, mixed):
    node = mixed.nodes.first()
    r = login("annotator").post(
        f"/c/{mixed.pk}/reviews/",
        {"action": "confirm", "from": "maybe", "node": [f"{node.pk}:{node.version}"]},
        **HTMX,
    )
    assert r.status_code == 422 and "maybe" in r.content.decode()
    assert set(_statuses(mixed).values()) == {"proposed", "rejected"}


# ------------------------------------------------- no decision is ever lost (property)
#
# Two reviewers, each with a page loaded at some moment (the versions it shows, and its
# Undo button), press keys on single nodes, confirm or reject a selection in bulk (from
# the statuses they picked, or *proposed*), undo their last decision, edit a node and
# reload. A model of what each step may do is kept beside the database; after every
# step they must agree, and the audit trail must show that every status that changed
# was changed by an action that named it (its status among those picked, its version
# the one on screen), and that an undo brought back exactly the node as it was.

STATUSES: list[str] = list(ReviewStatus.values)
review_steps = st.lists(
    st.tuples(
        st.sampled_from(["key", "bulk", "bulk", "undo", "undo", "edit", "reload"]),
        st.sampled_from(["annotator", "admin"]),
        st.sampled_from(sorted(DECISIONS)),
        st.integers(0, 2**11 - 1),  # the node of a key or edit; the selection of a bulk
        st.sets(st.sampled_from(STATUSES), max_size=2),  # picked in the filter, or none
    ),
    min_size=1,
    max_size=12,
)


@dataclass
class Page:
    """One reviewer's browser: the version of each node on screen, the nodes its Undo
    button takes back, and those nodes as they were before that decision."""

    seen: dict[int, int]
    undo: list[tuple[int, int]] = field(default_factory=list)
    before: dict[int, dict[str, Any]] = field(default_factory=dict)


class _Rollback(Exception):
    """Ends an example: its changes are rolled back, so the next starts afresh."""


def _state(contract) -> dict[int, dict[str, Any]]:
    nodes = Node.objects.filter(contract=contract).select_related("parent")
    return {n.pk: node_snapshot(n) for n in nodes.prefetch_related("spans")}


def _unversioned(snapshot: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in snapshot.items() if k != "version"}


def _request(kind, action, number, picked, pks, page):
    """(action, nodes with the versions on screen, statuses it may move) of a step."""
    if kind == "key":  # a key names one node: a deliberate choice, whatever its status
        pk = pks[number % len(pks)]
        return action, [(pk, page.seen[pk])], ANY_STATE
    if kind == "bulk":  # no bit set: the whole outline, as "any status" shows it
        chosen = [pk for i, pk in enumerate(pks) if number >> i & 1] or pks
        return action, [(pk, page.seen[pk]) for pk in chosen], tuple(picked) or DEFAULT_FROM
    return "undo", list(page.undo), ()


def _expected(now, action, refs, sources, page) -> dict[int, tuple[str, int]]:
    """The (status, version) of each node after the step, by the rules alone."""
    out = {pk: (s["review_status"], s["version"]) for pk, s in now.items()}
    if any(now[pk]["version"] != seen for pk, seen in refs):
        return out  # a stale copy: nothing changes
    for pk, _ in refs:
        status = now[pk]["review_status"]
        if action == "undo":
            out[pk] = (page.before[pk]["review_status"], now[pk]["version"] + 1)
        elif status in sources and status != DECISIONS[action]:
            out[pk] = (DECISIONS[action], now[pk]["version"] + 1)
    return out


def _decide(contract, user, kind, action, number, picked, page):
    """One review step of ``user`` from ``page``; checks the rules and its records."""
    now, last = _state(contract), AuditRecord.objects.order_by("-pk").values("pk").first()
    action, refs, sources = _request(kind, action, number, picked, sorted(now), page)
    if not refs:
        return  # no Undo button on the page
    expected = _expected(now, action, refs, sources, page)
    try:
        outcome = nodes_review(
            contract=contract,
            user=user,
            action=action,
            nodes=refs,
            from_states=sources or DEFAULT_FROM,
        )
    except ConflictError:
        assert any(now[pk]["version"] != seen for pk, seen in refs)
        outcome = None
    after = _state(contract)
    assert {pk: (s["review_status"], s["version"]) for pk, s in after.items()} == expected
    named = dict(refs)
    for record in AuditRecord.objects.filter(pk__gt=last["pk"] if last else 0):
        pk = next(pk for pk in named if now[pk]["id"] == record.object_id)
        assert record.action == action and record.before["version"] == named[pk]
        if action == "undo":  # exactly the node as it was before the decision undone
            assert _unversioned(record.after) == _unversioned(page.before[pk])
            assert _unversioned(after[pk]) == _unversioned(page.before[pk])
        else:
            assert record.before["review_status"] in sources
    if outcome is not None:
        page.seen.update((n.pk, n.version) for n, _ in outcome.changed)
        undone = action == "undo"
        page.undo = [] if undone else [(n.pk, n.version) for n, _ in outcome.changed]
        page.before = {} if undone else {n.pk: now[n.pk] for n, _ in outcome.changed}


def _edit(contract, user, number, page) -> None:
    """``user`` edits a node's label from ``page``: it becomes *edited*, or a stale
    copy is refused and nothing changes."""
    now = _state(contract)
    pk = sorted(now)[number % len(now)]
    node = Node.objects.select_related("parent").get(pk=pk)
    data = {"label": f"Edited {number}", "parent": node.parent}
    try:
        services.node_update(node=node, user=user, data=data, expected_version=page.seen[pk])
    except ConflictError:
        assert now[pk]["version"] != page.seen[pk]
        expected = now
    else:
        page.seen[pk] = now[pk]["version"] + 1
        expected = {**now, pk: {**now[pk], "label": data["label"], "review_status": "edited"}}
        expected[pk]["version"] += 1
    assert _state(contract) == expected


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(start=st.lists(st.sampled_from(STATUSES), min_size=11, max_size=11), steps=review_steps)
def test_no_decision_is_lost_by_any_sequence_of_reviews_undos_and_edits_of_two_reviewers(
    contract, users, start, steps
) -> None:
    with contextlib.suppress(_Rollback), transaction.atomic():
        for pk, status in zip(
            contract.nodes.order_by("pk").values_list("pk", flat=True), start, strict=True
        ):
            Node.objects.filter(pk=pk).update(review_status=status)
        loaded = dict(contract.nodes.values_list("pk", "version"))
        pages = {who: Page(seen=dict(loaded)) for who in ("annotator", "admin")}
        for kind, who, action, number, picked in steps:
            page, user = pages[who], users[who]
            if kind == "reload":
                page.seen = dict(contract.nodes.values_list("pk", "version"))
            elif kind == "edit":
                _edit(contract, user, number, page)
            else:
                _decide(contract, user, kind, action, number, picked, page)
        raise _Rollback
