"""The review workflow through the views, as htmx calls it."""

from __future__ import annotations

import pytest

from audit import services
from audit.models import AuditRecord, Contract, ProposalRun

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def propose(django_capture_on_commit_callbacks):
    """POST "Propose obligations"; the task runs when the transaction commits."""

    def run(client, contract):
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(f"/c/{contract.pk}/propose/", **HTMX)

    return run


@pytest.fixture
def draft(project, users, refund_doc):
    """The example artifact with no nodes yet."""
    return services.contract_create(
        project=project, user=users["admin"], key="draft", text=refund_doc["artifact"]["text"]
    )


def test_propose_runs_the_heuristic_task_and_adds_only_proposed_nodes(login, draft, propose):
    response = propose(login("annotator"), draft)
    assert response.status_code == 200
    run = ProposalRun.objects.get(contract=draft)
    assert run.status == "done" and run.created_nodes == draft.nodes.count() > 5
    assert set(draft.nodes.values_list("review_status", flat=True)) == {"proposed"}
    assert draft.nodes.filter(proposer="heuristic", score__gt=0).count() == run.created_nodes
    assert draft.edges.filter(kind="branches_to").count() == 2
    assert draft.invariants.count() == 1
    page = response.content.decode()
    assert 'id="ws-outline"' in page and 'hx-swap-oob="true"' in page


def test_proposing_twice_adds_nothing_new(login, draft, propose):
    client = login("annotator")
    propose(client, draft)
    count = draft.nodes.count()
    propose(client, draft)
    assert draft.nodes.count() == count
    assert ProposalRun.objects.filter(contract=draft, status="done").count() == 2


def test_proposing_on_a_curated_contract_skips_the_proposals_that_duplicate_its_nodes(
    login, project, users, refund_doc, propose
):
    curated = services.contract_import(project=project, user=users["admin"], source=refund_doc)
    before = curated.nodes.count()
    propose(login("annotator"), curated)
    run = ProposalRun.objects.get(contract=curated)
    duplicates = [d for d in run.discarded if d["reason"].startswith("duplicates node ")]
    print(f"{before} curated nodes; {run.created_nodes} added, {len(duplicates)} skipped")
    assert run.status == "done" and len(duplicates) >= before // 2
    assert curated.nodes.count() == before + run.created_nodes
    assert run.created_nodes < len(duplicates)
    page = login("annotator").get(f"/c/{curated.pk}/").content.decode()
    assert 'data-testid="run-discarded"' in page and "duplicates node" in page


def test_a_proposal_inside_a_longer_node_is_no_duplicate(login, draft, users, propose):
    """A node whose evidence is the whole text does not swallow the sentences
    inside it: only spans sharing half of the longer one are the same evidence."""
    text = draft.artifact.text
    data = {"node_id": "everything", "type": "intent", "label": "The whole policy"}
    whole = services.node_create(
        contract=draft, user=users["admin"], data=data, start=0, end=len(text)
    )
    assert whole.pk
    propose(login("annotator"), draft)
    run = ProposalRun.objects.get(contract=draft)
    assert run.created_nodes > 5
    assert not [d for d in run.discarded if d["reason"].startswith("duplicates node")]


def test_confirm_and_reject_update_the_node_and_append_history(login, draft, users, propose):
    propose(login("annotator"), draft)
    client = login("annotator")
    first, second = draft.nodes.all()[:2]
    r = client.post(
        f"/c/{draft.pk}/nodes/{first.pk}/review/", {"action": "confirm", "version": 1}, **HTMX
    )
    assert r.status_code == 200 and 'data-testid="node-status">Confirmed' in r.content.decode()
    client.post(
        f"/c/{draft.pk}/nodes/{second.pk}/review/", {"action": "reject", "version": 1}, **HTMX
    )
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.review_status, first.version) == ("confirmed", 2)
    assert second.review_status == "rejected"
    record = AuditRecord.objects.filter(contract=draft, action="reject").get()
    assert record.user == users["annotator"]
    assert record.before["review_status"] == "proposed"
    assert record.after["review_status"] == "rejected"
    history = client.get(f"/c/{draft.pk}/").content.decode()
    assert history.index("rejected") < history.rindex("confirmed")


def test_edit_sets_fields_marks_edited_and_refuses_a_stale_version(login, contract):
    client = login("annotator")
    node = contract.nodes.get(node_id="confirm_outcome")
    parent = contract.nodes.get(node_id="check_window")
    data = {
        "node_id": "tell_customer",
        "type": "action",
        "label": "Tell the customer",
        "description": "",
        "parent": parent.pk,
        "explicit": "on",
        "combine": "any",
        "meta": '{"tool": "send_email"}',
        "version": 1,
    }
    r = client.post(f"/c/{contract.pk}/nodes/{node.pk}/edit/", data, **HTMX)
    assert r.status_code == 200
    node.refresh_from_db()
    assert (node.node_id, node.parent_id, node.required, node.explicit, node.combine) == (
        "tell_customer",
        parent.pk,
        False,
        True,
        "any",
    )
    assert node.meta == {"tool": "send_email"} and node.review_status == "edited"
    # the panel shows meta as the JSON the edit form takes, not a Python dict
    assert "{&quot;tool&quot;: &quot;send_email&quot;}" in r.content.decode()
    stale = client.post(f"/c/{contract.pk}/nodes/{node.pk}/edit/", data | {"label": "x"}, **HTMX)
    assert stale.status_code == 409 and "changed by someone else" in stale.content.decode()


def test_edit_refuses_a_parent_cycle(login, contract):
    root = contract.nodes.get(node_id="handle_refund")
    child = contract.nodes.get(node_id="check_window")
    data = {
        "node_id": root.node_id,
        "type": "intent",
        "label": root.label,
        "parent": child.pk,
        "required": "on",
        "combine": "all",
        "version": root.version,
    }
    r = login("annotator").post(f"/c/{contract.pk}/nodes/{root.pk}/edit/", data, **HTMX)
    assert r.status_code == 422 and "cycle" in r.content.decode()
    root.refresh_from_db()
    assert root.parent_id is None


def test_new_node_from_selection_raises_coverage_in_the_audit_panel(login, draft):
    client = login("annotator")
    before = client.get(f"/c/{draft.pk}/").context["audit"].coverage
    text = draft.artifact.text
    start = text.index("Look up the order")
    end = text.index("gives.") + len("gives.")
    form = client.get(f"/c/{draft.pk}/nodes/new/?start={start}&end={end}", **HTMX)
    assert "Look up the order using the order number" in form.content.decode()
    r = client.post(
        f"/c/{draft.pk}/nodes/new/",
        {
            "start": start,
            "end": end,
            "node_id": "lookup",
            "type": "action",
            "label": "Look up the order",
            "required": "on",
            "combine": "all",
        },
        **HTMX,
    )
    assert r.status_code == 200
    node = draft.nodes.get(node_id="lookup")
    assert node.review_status == "confirmed" and node.proposer == "annotator:annotator"
    assert r.context["audit"].coverage > before


def test_set_as_evidence_adds_a_span_and_whitespace_is_trimmed(login, contract):
    node = contract.nodes.get(node_id="reply_json")
    text = contract.artifact.text
    start = text.index("Never reveal") - 2
    end = start + 20
    r = login("annotator").post(
        f"/c/{contract.pk}/nodes/{node.pk}/evidence/",
        {"start": start, "end": end, "version": node.version},
        **HTMX,
    )
    assert r.status_code == 200
    spans = list(node.spans.order_by("position").values_list("start", "end"))
    assert spans[-1] == (start + 2, end)


def test_edges_can_be_added_and_removed(login, contract):
    client = login("annotator")
    source = contract.nodes.get(node_id="lookup_order")
    target = contract.nodes.get(node_id="confirm_outcome")
    r = client.post(
        f"/c/{contract.pk}/nodes/{source.pk}/edges/",
        {"direction": "out", "kind": "requires", "other": target.pk, "version": source.version},
        **HTMX,
    )
    assert r.status_code == 200
    edge = contract.edges.get(source=source, target=target, kind="requires")
    client.post(
        f"/c/{contract.pk}/edges/{edge.pk}/delete/",
        {"node": source.pk, "version": edge.version},
        **HTMX,
    )
    assert not contract.edges.filter(pk=edge.pk).exists()


def test_audit_panel_links_each_finding_to_its_node(login, contract):
    client = login("annotator")
    node = contract.nodes.get(node_id="outside_window")
    client.post(
        f"/c/{contract.pk}/nodes/{node.pk}/review/", {"action": "reject", "version": 1}, **HTMX
    )
    page = client.get(f"/c/{contract.pk}/").content.decode()
    decision = contract.nodes.get(node_id="check_window")
    assert "decision-outcomes" in page
    assert f'hx-get="/c/{contract.pk}/nodes/{decision.pk}/"' in page


def test_mark_audited_needs_no_proposed_nodes_and_no_errors(login, draft, contract, propose):
    client = login("reviewer")
    propose(client, draft)
    r = client.post(f"/c/{draft.pk}/status/", {"action": "audited"}, **HTMX)
    assert r.status_code == 422 and "still proposed" in r.content.decode()
    draft.refresh_from_db()
    assert draft.status == "draft"
    r = client.post(f"/c/{contract.pk}/status/", {"action": "audited"}, **HTMX)
    assert r.status_code == 200
    contract.refresh_from_db()
    assert contract.status == "audited"


def test_an_audited_contract_is_read_only_and_changes_start_a_new_version(login, contract, users):
    services.contract_mark_audited(contract=contract, user=users["reviewer"])
    client = login("annotator")
    node = contract.nodes.get(node_id="lookup_order")
    r = client.post(
        f"/c/{contract.pk}/nodes/{node.pk}/review/", {"action": "reject", "version": 1}, **HTMX
    )
    assert r.status_code == 422 and "read-only" in r.content.decode()
    node.refresh_from_db()
    assert node.review_status == "confirmed"
    page = client.get(f"/c/{contract.pk}/").content.decode()
    assert "Start new version" in page and 'data-key="c"' not in page
    r = client.post(f"/c/{contract.pk}/new-version/", **HTMX)
    new = Contract.objects.get(key=contract.key, version=2)
    assert r.status_code == 204 and r["HX-Redirect"] == f"/c/{new.pk}/"
    assert new.status == "draft"


def test_query_preview_offers_active_decisions_and_shows_pruned_nodes(login, contract):
    client = login("annotator")
    url = f"/c/{contract.pk}/queries/preview/"
    r = client.get(url, {"query_id": "q9", "text": "refund?", "intents": "handle_refund"}, **HTMX)
    preview = r.context["preview"]
    assert [d.node.node_id for d in preview.decisions] == ["check_window"]
    assert preview.decisions[0].needs_choice and preview.expected is None
    r = client.get(
        url,
        {
            "query_id": "q9",
            "text": "refund?",
            "intents": "handle_refund",
            "branch:check_window": "outside_window",
        },
        **HTMX,
    )
    expected = r.context["preview"].expected
    assert expected.pruned == ["within_window", "approve_refund"]
    assert "pruned" in r.content.decode()


def test_the_queries_tab_offers_a_new_query_form_based_on_version_0(login, contract):
    client = login("annotator")
    r = client.get(f"/c/{contract.pk}/queries/preview/", **HTMX)
    form = r.context["query_form"]
    assert not form.is_bound and form["version"].value() == 0
    assert 'name="version" value="0"' in r.content.decode()


def test_saving_a_query_stores_only_active_decisions(login, contract):
    client = login("annotator")
    r = client.post(
        f"/c/{contract.pk}/queries/",
        {
            "query_id": "q9",
            "text": "Late return",
            "intents": "handle_refund",
            "branch:check_window": "outside_window",
            "branch:ghost": "nothing",
            "version": 0,
        },
        **HTMX,
    )
    assert r.status_code == 200
    query = contract.queries.get(query_id="q9")
    assert query.branches == {"check_window": "outside_window"}
    assert query.intents == ["handle_refund"]
    assert AuditRecord.objects.filter(contract=contract, object_type="query").exists()


def test_a_query_with_an_unchosen_decision_is_not_saved(login, contract):
    r = login("annotator").post(
        f"/c/{contract.pk}/queries/", {"query_id": "q9", "text": "?", "version": 0}, **HTMX
    )
    assert r.status_code == 422
    assert not contract.queries.filter(query_id="q9").exists()


def test_a_contract_without_a_query_cannot_be_marked_audited(project, users, refund_doc):
    from audit import services
    from audit.services.common import ServiceError

    doc = {**refund_doc, "queries": []}
    contract = services.contract_import(project=project, user=users["admin"], source=doc)
    with pytest.raises(ServiceError, match="no query yet"):
        services.contract_mark_audited(contract=contract, user=users["admin"])
    contract.refresh_from_db()
    assert contract.status != "audited"
