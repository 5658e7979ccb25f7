"""A node made from a selection starts with the type its words suggest and the node
whose evidence holds the selection as parent."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def _form(client, contract, quote):
    start = contract.artifact.text.index(quote)
    return client.get(
        f"/c/{contract.pk}/nodes/new/", {"start": start, "end": start + len(quote)}, **HTMX
    )


def test_a_selection_inside_a_step_gets_that_step_as_parent_and_its_cue_type(login, contract):
    client = login("annotator")
    span = contract.nodes.get(node_id="lookup_order").spans.first()
    quote = contract.artifact.text[span.start : span.end]
    words = quote.split()
    inner = " ".join(words[1:4])
    r = _form(client, contract, inner)
    assert r.status_code == 200
    form = r.context["form"]
    assert form.initial["parent"] == contract.nodes.get(node_id="lookup_order").pk


def test_a_never_sentence_suggests_an_invariant(login, contract):
    client = login("annotator")
    text = contract.artifact.text
    sentence = next(
        line.strip(" -*")
        for line in text.splitlines()
        if line.strip(" -*").lower().startswith(("never", "do not"))
    )
    r = _form(client, contract, sentence)
    assert 'data-testid="reads-as-invariant"' in r.content.decode()
