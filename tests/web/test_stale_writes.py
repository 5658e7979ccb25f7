"""Two people editing from the same page: the second write, based on what the first
changed, is refused with a 409 that shows the other change, and nothing is lost.

Every writable object of the workspace is replayed: a write based on the current
version goes through, the same write again (now stale) is refused, and a write that
names no version at all is refused too. Bulk decisions and their undo are replayed the
same way, on the outline as both pages showed it.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
import threading

import pytest
from django.db import connection
from django.test import Client

from audit.models import Node

from .sweep import build_world

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def world(project, users, refund_doc):
    return build_world(users, refund_doc)


def _node_data(node, **changes):
    data = {
        "node_id": node.node_id,
        "type": node.type,
        "label": node.label,
        "description": node.description,
        "required": "on",
        "combine": node.combine,
        "meta": json.dumps(node.meta),
    }
    return data | changes


def _writes(w):
    """(what, url, body without version, version now, how to read the stored value)."""
    pk, node, inv, query = w.draft.pk, w.node, w.invariant, w.query
    other = w.draft.nodes.exclude(pk=node.pk).exclude(pk=w.edge.target_id).first()
    text = w.draft.artifact.text
    start = text.index(text.strip()[:5])
    return [
        ("node edit", f"/c/{pk}/nodes/{node.pk}/edit/", _node_data(node, label="Mine"), node),
        ("node confirm", f"/c/{pk}/nodes/{node.pk}/review/", {"action": "confirm"}, node),
        ("node reject", f"/c/{pk}/nodes/{node.pk}/review/", {"action": "reject"}, node),
        (
            "node evidence",
            f"/c/{pk}/nodes/{node.pk}/evidence/",
            {"start": start, "end": start + 5},
            node,
        ),
        (
            "edge create",
            f"/c/{pk}/nodes/{node.pk}/edges/",
            {"direction": "out", "kind": "enables", "other": other.pk},
            node,
        ),
        (
            "invariant edit",
            f"/c/{pk}/invariants/{inv.pk}/",
            {"inv_id": inv.inv_id, "label": "Mine", "description": "", "check": ""},
            inv,
        ),
        (
            "query edit",
            f"/c/{pk}/queries/",
            {"query_id": query.query_id, "text": "Mine", "intents": query.intents}
            | {f"branch:{d}": o for d, o in query.branches.items()},
            query,
        ),
        (
            "contract details",
            f"/c/{pk}/details/",
            {"title": "Mine", "domain": "", "media_type": "text/markdown"},
            w.draft,
        ),
    ]


def _version(obj) -> int:
    obj.refresh_from_db()
    return getattr(obj, "details_version", None) or obj.version


@pytest.mark.parametrize(
    "what",
    [
        "node edit",
        "node confirm",
        "node reject",
        "node evidence",
        "edge create",
        "invariant edit",
        "query edit",
        "contract details",
    ],
)
def test_a_stale_write_is_409_with_the_other_change_and_a_missing_version_is_refused(
    login, world, what
):
    url, body, obj = next((u, b, o) for name, u, b, o in _writes(world) if name == what)
    if what == "node confirm":
        # confirming a node that is already confirmed changes nothing: start from proposed
        type(obj).objects.filter(pk=obj.pk).update(review_status="proposed")
    based_on = _version(obj)
    # someone else changes the object first (another browser, same starting version);
    # an edge is drawn from a node's panel, so what goes stale under it is that node
    first_url, first_body = url, body
    if what == "edge create":
        first_url = f"/c/{world.draft.pk}/nodes/{obj.pk}/edit/"
        first_body = _node_data(obj, label="Theirs")
    first = login("admin").post(first_url, first_body | {"version": based_on}, **HTMX)
    assert first.status_code == 200, first.content[:600]
    changed = _version(obj)
    assert changed > based_on
    # the annotator's write, based on the page they loaded before that change
    stale = login("annotator").post(url, body | {"version": based_on}, **HTMX)
    assert stale.status_code == 409
    page = stale.content.decode()
    assert "changed by someone else" in page and "admin" in page
    assert _version(obj) == changed
    # a write naming no version is not applied with a guessed one
    unversioned = login("annotator").post(url, body, **HTMX)
    assert unversioned.status_code == 422
    assert "version" in unversioned.content.decode()
    assert _version(obj) == changed


def _outline(contract) -> dict[str, tuple[str, int]]:
    """Each node's status and version, by id."""
    rows = contract.nodes.values_list("node_id", "review_status", "version")
    return {node_id: (status, version) for node_id, status, version in rows}


@pytest.mark.parametrize("action", ["confirm", "reject"])
def test_a_stale_bulk_decision_is_409_with_the_other_change_and_changes_nothing(
    login, world, action
):
    draft = world.draft
    Node.objects.filter(contract=draft).update(review_status="proposed")
    # both pages show the whole outline at these versions
    shown = [f"{pk}:{v}" for pk, v in draft.nodes.order_by("position").values_list("pk", "version")]
    url = f"/c/{draft.pk}/reviews/"
    first = login("admin").post(url, {"action": "reject", "node": shown[:3]}, **HTMX)
    assert first.status_code == 200
    theirs = _outline(draft)
    stale = login("annotator").post(url, {"action": action, "node": shown}, **HTMX)
    assert stale.status_code == 409
    page = stale.content.decode()
    assert "changed by someone else" in page and "admin" in page and "3 of these" in page
    assert _outline(draft) == theirs
    # a reference naming no version is not applied with a guessed one
    unversioned = [ref.split(":")[0] for ref in shown]
    refused = login("annotator").post(url, {"action": action, "node": unversioned}, **HTMX)
    assert refused.status_code == 422 and "version" in refused.content.decode()
    assert _outline(draft) == theirs


@pytest.mark.parametrize("meanwhile", ["reject", "edit"])
def test_undo_of_a_decision_someone_changed_since_is_409_and_changes_nothing(
    login, world, meanwhile
):
    draft = world.draft
    Node.objects.filter(contract=draft).update(review_status="proposed")
    url = f"/c/{draft.pk}/reviews/"
    shown = [f"{pk}:{v}" for pk, v in draft.nodes.values_list("pk", "version")]
    mine = login("annotator").post(url, {"action": "confirm", "node": shown}, **HTMX)
    undo = re.findall(r'name="node" value="(\d+:\d+)"', mine.content.decode())
    assert len(undo) == len(shown)
    # someone else changes one of those nodes before the annotator presses Undo
    node = world.node
    node.refresh_from_db()
    if meanwhile == "reject":
        body, their_url = {"action": "reject"}, f"/c/{draft.pk}/nodes/{node.pk}/review/"
    else:
        body, their_url = _node_data(node, label="Theirs"), f"/c/{draft.pk}/nodes/{node.pk}/edit/"
    their = login("admin").post(their_url, body | {"version": node.version}, **HTMX)
    assert their.status_code == 200
    theirs = _outline(draft)
    stale = login("annotator").post(url, {"action": "undo", "node": undo}, **HTMX)
    assert stale.status_code == 409
    page = stale.content.decode()
    assert "changed by someone else" in page and "admin" in page and node.node_id in page
    assert _outline(draft) == theirs  # the other nodes stay confirmed, theirs as they left it


@pytest.mark.parametrize("what", ["edge", "invariant", "query", "span"])
def test_a_stale_delete_is_refused_and_deletes_nothing(login, world, what):
    pk = world.draft.pk
    if what == "span":
        node = world.node
        text = world.draft.artifact.text
        start = text.index(text.strip()[:5])
        body = {"start": start, "end": start + 5, "version": node.version}
        login("admin").post(f"/c/{pk}/nodes/{node.pk}/evidence/", body, **HTMX)
        obj, version = node.spans.first(), node.version  # node is one version further now
        url = f"/c/{pk}/spans/{obj.pk}/delete/"
    else:
        obj = {"edge": world.edge, "invariant": world.invariant, "query": world.query}[what]
        version = obj.version
        if what == "invariant":
            edit = {"inv_id": obj.inv_id, "label": "x", "check": "", "version": obj.version}
            login("admin").post(f"/c/{pk}/invariants/{obj.pk}/", edit, **HTMX)
        elif what == "query":
            edit = {"query_id": obj.query_id, "text": "x", "intents": obj.intents}
            edit |= {f"branch:{d}": o for d, o in obj.branches.items()}
            login("admin").post(f"/c/{pk}/queries/", edit | {"version": obj.version}, **HTMX)
        else:
            version = 0  # edges never change: any other number is not their version
        url = {
            "edge": f"/c/{pk}/edges/{obj.pk}/delete/",
            "invariant": f"/c/{pk}/invariants/{obj.pk}/delete/",
            "query": f"/c/{pk}/queries/{obj.pk}/delete/",
        }[what]
    response = login("annotator").post(url, {"version": version}, **HTMX)
    assert response.status_code == 409
    assert type(obj).objects.filter(pk=obj.pk).exists()


def test_a_query_created_meanwhile_by_someone_else_is_not_overwritten(login, world):
    pk = world.draft.pk
    body = {
        "query_id": "q_new",
        "text": "First",
        "intents": "handle_refund",
        "branch:check_window": "within_window",
        "version": 0,
    }
    assert login("admin").post(f"/c/{pk}/queries/", body, **HTMX).status_code == 200
    stale = login("annotator").post(f"/c/{pk}/queries/", body | {"text": "Second"}, **HTMX)
    assert stale.status_code == 409
    assert world.draft.queries.get(query_id="q_new").text == "First"


@pytest.mark.django_db(transaction=True)
def test_concurrent_stale_edits_give_one_success_and_conflicts_never_a_500(
    project, users, refund_doc
):
    """Eight people save the same node at once from the same page: one wins, every
    other one gets a 409 (on SQLite the writers queue for the lock instead of failing
    with "database is locked")."""
    world = build_world(users, refund_doc)
    node = world.node
    url = f"/c/{world.draft.pk}/nodes/{node.pk}/edit/"
    statuses: list[int] = []
    barrier = threading.Barrier(8)

    def edit(i: int) -> None:
        client = Client()
        client.force_login(users["annotator"])
        barrier.wait()
        body = _node_data(node, label=f"Edit {i}") | {"version": node.version}
        statuses.append(client.post(url, body, **HTMX).status_code)
        connection.close()

    threads = [threading.Thread(target=edit, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [200] + [409] * 7
    node.refresh_from_db()
    assert node.version == 2


def test_every_service_that_locks_a_contract_retries_when_the_database_is_busy():
    """A write that takes the contract's row lock can meet another writer's lock; each
    such public service is wrapped in retry_on_lock (the ``locked_*`` helpers they call
    inside their transaction are not)."""

    import audit.services as services_package

    unwrapped = []
    for info in pkgutil.iter_modules(services_package.__path__):
        module = importlib.import_module(f"audit.services.{info.name}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if name.startswith(("_", "locked_")) or fn.__module__ != module.__name__:
                continue
            source = inspect.getsource(inspect.unwrap(fn))
            if "locked_contract(" in source and not hasattr(fn, "__wrapped__"):
                unwrapped.append(f"{info.name}.{name}")
    assert unwrapped == []
