"""Edges are written and read as sentences from the node on screen; a cycle is named
before saving and refused on save, inline beside the edge form."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def _ordering(contract):
    return set(
        contract.edges.filter(kind="requires").values_list("source__node_id", "target__node_id")
    )


def test_must_happen_after_stores_the_other_node_as_source(login, contract):
    client = login("annotator")
    node = contract.nodes.get(node_id="confirm_outcome")
    r = client.post(
        f"/c/{contract.pk}/nodes/{node.pk}/edges/",
        {"version": node.version, "relation": "in:requires", "other": "lookup_order"},
        **HTMX,
    )
    assert r.status_code == 200
    assert ("lookup_order", "confirm_outcome") in _ordering(contract)
    page = r.content.decode()
    assert 'must happen before</span> <span class="this">this node</span>' in page


def test_the_check_names_the_sentence_or_the_cycle_before_saving(login, contract):
    client = login("annotator")
    a = contract.nodes.get(node_id="lookup_order")
    b = contract.nodes.get(node_id="confirm_outcome")
    url = f"/c/{contract.pk}/nodes/{a.pk}/edges/check/"
    ok = client.get(url, {"relation": "out:requires", "other": "confirm_outcome"}, **HTMX)
    assert "Adds: " in ok.content.decode() and "must happen before" in ok.content.decode()
    client.post(
        f"/c/{contract.pk}/nodes/{a.pk}/edges/",
        {"version": a.version, "relation": "out:requires", "other": "confirm_outcome"},
        **HTMX,
    )
    back = f"/c/{contract.pk}/nodes/{b.pk}/edges/check/"
    cycle = client.get(back, {"relation": "out:requires", "other": "lookup_order"}, **HTMX)
    assert "makes a cycle" in cycle.content.decode()
    missing = client.get(back, {"relation": "out:requires", "other": "nope"}, **HTMX)
    assert "no other node with the id &#x27;nope&#x27;" in missing.content.decode()


def test_saving_a_cycle_is_refused_inline_and_stores_nothing(login, contract):
    client = login("annotator")
    a = contract.nodes.get(node_id="lookup_order")
    b = contract.nodes.get(node_id="confirm_outcome")
    data = {"relation": "out:enables", "other": "confirm_outcome"}
    client.post(f"/c/{contract.pk}/nodes/{a.pk}/edges/", data | {"version": a.version}, **HTMX)
    count = contract.edges.count()
    r = client.post(
        f"/c/{contract.pk}/nodes/{b.pk}/edges/",
        {"version": b.version, "relation": "out:requires", "other": "lookup_order"},
        **HTMX,
    )
    assert r.status_code == 422
    page = r.content.decode()
    assert 'id="edge-check" class="edge-check error-text"' in page and "makes a cycle" in page
    assert 'value="lookup_order"' in page  # what was typed stays in the form
    assert contract.edges.count() == count


def test_the_node_panel_has_no_select_of_every_node(login, contract):
    client = login("annotator")
    node = contract.nodes.get(node_id="lookup_order")
    page = client.get(f"/c/{contract.pk}/nodes/{node.pk}/", **HTMX).content.decode()
    assert 'list="ws-node-ids"' in page and '<option value="confirm_outcome"' not in page
    full = client.get(f"/c/{contract.pk}/").content.decode()
    assert '<datalist id="ws-node-ids">' in full and '<option value="confirm_outcome">' in full
