"""A long artifact with many nodes renders in a bounded number of queries."""

from __future__ import annotations

import pytest

from audit.models import Artifact, Contract, Edge, Node, Span
from audit.selectors.contracts import load_contract_rows
from audit.selectors.workspace import segments

pytestmark = pytest.mark.django_db
MAX_QUERIES = 16


@pytest.fixture
def big_contract(project):
    lines = [
        f"{i + 1}. Step {i}: verify the record number {i} and log the outcome." for i in range(300)
    ]
    text = "# Big procedure\n\n" + "\n".join(lines) + "\n"
    text += "Filler paragraph with more words to read. " * ((30_000 - len(text)) // 42 + 1)
    assert len(text) >= 30_000
    artifact = Artifact.objects.create(project=project, text=text, media_type="text/markdown")
    contract = Contract.objects.create(project=project, artifact=artifact, key="big")
    root = Node.objects.create(contract=contract, node_id="root", type="intent", label="Big")
    Span.objects.create(node=root, start=2, end=16)
    nodes = Node.objects.bulk_create(
        Node(
            contract=contract,
            node_id=f"n{i}",
            type="validation",
            label=f"Step {i}",
            parent=root,
            position=i + 1,
            review_status="proposed" if i % 3 else "confirmed",
        )
        for i in range(299)
    )
    spans, pos = [], text.index("1. ")
    for node, line in zip(nodes, lines, strict=False):
        start = text.index(line, pos)
        spans.append(Span(node=node, start=start, end=start + len(line)))
        pos = start + len(line)
    Span.objects.bulk_create(spans)
    Edge.objects.bulk_create(
        Edge(contract=contract, source=a, target=b, kind="enables", position=i)
        for i, (a, b) in enumerate(zip(nodes, nodes[1:], strict=False))
    )
    return contract


def test_workspace_with_300_nodes_and_30k_chars_renders_in_bounded_queries(
    login, big_contract, django_assert_max_num_queries
):
    client = login("annotator")
    with django_assert_max_num_queries(MAX_QUERIES) as queries:
        response = client.get(f"/c/{big_contract.pk}/?node=n150")
    print(
        f"workspace of 300 nodes / {len(big_contract.artifact.text)} chars: {len(queries)} queries"
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert page.count('hx-swap="outerHTML" data-node="n') == 299
    assert 'data-n="n150"' in page


def test_highlight_segments_cover_the_text_exactly_once(big_contract):
    rows = load_contract_rows(big_contract)
    pieces = segments(rows)
    assert "".join(p.text for p in pieces) == rows.text
    assert all(a.start + len(a.text) == b.start for a, b in zip(pieces, pieces[1:], strict=False))
