"""The tool catalogue of a contract: import, suggested bindings, read-only lookups,
export round trip, permissions and bad input."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from audit import services
from audit.models import AuditRecord, Contract, Node
from audit.selectors.contracts import contract_document
from matching.input_limits import Limits
from matching.validate import load_contract

pytestmark = pytest.mark.django_db

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": "Look up an order by its number",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    },
    {"name": "check_owner", "description": "Verify that a purchase belongs to a customer"},
    {"name": "search_faq", "description": "Search the help centre articles"},
]


@pytest.fixture(autouse=True)
def _token_suggestions(monkeypatch):
    # Suggestions read the sentence encoder only when its model is installed; the
    # expectations below are the token scores, so the model is switched off here.
    monkeypatch.setenv("CONTRACTEVAL_EMBED_MODEL_DIR", "")


def _import(contract, users, tools=TOOLS):
    services.tool_catalogue_import(contract=contract, user=users["annotator"], source=tools)
    contract.refresh_from_db()


def test_web_import_stores_the_canonical_catalogue_and_records_it(login, contract):
    client = login("annotator")
    url = reverse("audit:tools_import", args=[contract.pk])
    resp = client.post(url, {"tools_json": json.dumps(TOOLS)}, HTTP_HX_REQUEST="true")
    assert resp.status_code == 200
    contract.refresh_from_db()
    names = [t["function"]["name"] for t in contract.tool_catalogue]
    assert names == ["get_order", "check_owner", "search_faq"]
    assert contract.tool_catalogue[1]["type"] == "function"
    rec = AuditRecord.objects.filter(contract=contract, action="import_tools").get()
    assert rec.after == {"tools": names}
    assert "search_faq" in resp.content.decode()


def test_the_page_suggests_bindings_for_actions_and_validations(login, contract, users):
    _import(contract, users)
    html = login("annotator").get(reverse("audit:tools", args=[contract.pk])).content.decode()
    assert "<code>lookup_order</code>" in html and "<code>get_order</code>" in html
    assert "<code>verify_owner</code>" in html and "<code>check_owner</code>" in html
    assert (
        'data-testid="tools-link"'
        in login("annotator").get(reverse("audit:workspace", args=[contract.pk])).content.decode()
    )


def test_confirming_a_suggestion_sets_meta_tool_through_the_node_service(login, contract, users):
    _import(contract, users)
    node = contract.nodes.get(node_id="lookup_order")
    resp = login("annotator").post(
        reverse("audit:tool_bind", args=[contract.pk]),
        {"node": node.pk, "tool": "get_order", "version": node.version},
    )
    assert resp.status_code == 302
    after = Node.objects.get(pk=node.pk)
    assert after.meta == {"tool": "get_order"}
    assert after.version == node.version + 1
    edit = AuditRecord.objects.filter(contract=contract, action="edit", object_id="lookup_order")
    assert edit.get().after["meta"] == {"tool": "get_order"}
    html = login("annotator").get(reverse("audit:tools", args=[contract.pk])).content.decode()
    assert "?node=lookup_order" in html  # listed as bound, no longer suggested


def test_confirming_a_stale_version_or_an_unknown_tool_changes_nothing(contract, users):
    _import(contract, users)
    node = contract.nodes.get(node_id="lookup_order")
    with pytest.raises(services.ServiceError, match="changed by someone else"):
        services.tool_binding_confirm(
            node=node, user=users["annotator"], tool="get_order", expected_version=node.version + 5
        )
    with pytest.raises(services.ServiceError, match="'nope' is not a tool"):
        services.tool_binding_confirm(
            node=node, user=users["annotator"], tool="nope", expected_version=node.version
        )
    intent = contract.nodes.get(node_id="handle_refund")
    with pytest.raises(services.ServiceError, match="only actions and validations"):
        services.tool_binding_confirm(
            node=intent, user=users["annotator"], tool="get_order", expected_version=intent.version
        )
    assert Node.objects.get(pk=node.pk).meta == {}


def test_read_only_tools_become_permitted_lookups_under_the_root_intent(login, contract, users):
    _import(contract, users)
    resp = login("annotator").post(
        reverse("audit:tools_read_only", args=[contract.pk]),
        {"names": ["search_faq"]},
        HTTP_HX_REQUEST="true",
    )
    assert resp.status_code == 200
    node = contract.nodes.get(meta__tool="search_faq")
    assert (node.type, node.required, node.parent.node_id) == ("action", False, "handle_refund")
    assert node.node_id == "tool_search_faq"
    assert node.spans.count() == 1
    doc = contract_document(contract)
    parsed = load_contract(doc)
    assert any(n.id == "tool_search_faq" and not n.required for n in parsed.nodes)
    again = services.tools_declare_read_only
    with pytest.raises(services.ServiceError, match="already declared"):
        again(contract=contract, user=users["annotator"], names=["search_faq"])


def test_export_carries_the_catalogue_in_the_root_meta_and_reimport_restores_it(
    contract, users, project
):
    _import(contract, users)
    doc = contract_document(contract)
    assert doc["nodes"][0]["id"] == "handle_refund"
    assert [t["function"]["name"] for t in doc["nodes"][0]["meta"]["tools"]] == [
        "get_order",
        "check_owner",
        "search_faq",
    ]
    load_contract(doc)  # still a valid contract document
    again = services.contract_import(project=project, user=users["admin"], source=doc)
    assert again.version == contract.version + 1
    assert again.tool_catalogue == Contract.objects.get(pk=contract.pk).tool_catalogue
    assert again.nodes.get(node_id="handle_refund").meta == {}
    assert contract_document(again)["nodes"] == doc["nodes"]


def test_a_new_version_keeps_the_catalogue(audited, users):
    audited.tool_catalogue = [{"type": "function", "function": {"name": "a"}}]
    audited.save()
    new = services.contract_new_version(contract=audited, user=users["annotator"])
    assert new.tool_catalogue[0]["function"]["name"] == "a"


def test_importing_a_document_with_a_bad_catalogue_stores_nothing(project, users, refund_doc):
    refund_doc["nodes"][0]["meta"] = {"tools": [{"name": "a"}, {"name": "a"}]}
    with pytest.raises(services.ServiceError, match="meta.tools: the tool name 'a' appears"):
        services.contract_import(project=project, user=users["admin"], source=refund_doc)
    assert not Contract.objects.filter(project=project).exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{nope", "not JSON"),
        ('[{"description": "x"}]', "tool 1: the &#x27;name&#x27; is missing"),
        ('[{"name": "a"}, {"name": "a"}]', "the tool name &#x27;a&#x27; appears more than once"),
        (
            json.dumps([{"name": "a", "description": "x" * Limits().tools_bytes}]),
            "the limit is 524,288 (INPUT_LIMITS tools_bytes)",
        ),
        ("", "paste a tools list or choose a file"),
    ],
)
def test_bad_tools_lists_are_refused_with_the_reason_and_nothing_stored(
    login, contract, users, text, message
):
    _import(contract, users, [{"name": "kept"}])
    resp = login("annotator").post(
        reverse("audit:tools_import", args=[contract.pk]),
        {"tools_json": text},
        HTTP_HX_REQUEST="true",
    )
    assert resp.status_code == 422
    assert message in resp.content.decode()
    contract.refresh_from_db()
    assert [t["function"]["name"] for t in contract.tool_catalogue] == ["kept"]


def test_audited_contracts_refuse_tool_changes(login, audited, users):
    resp = login("annotator").post(
        reverse("audit:tools_import", args=[audited.pk]),
        {"tools_json": json.dumps(TOOLS)},
        HTTP_HX_REQUEST="true",
    )
    assert resp.status_code == 422
    assert "read-only" in resp.content.decode()
    audited.refresh_from_db()
    assert audited.tool_catalogue == []
    page = login("annotator").get(reverse("audit:tools", args=[audited.pk])).content.decode()
    assert 'data-testid="import-tools"' not in page


def test_outsiders_see_nothing_and_change_nothing(login, contract):
    client = login("outsider")
    assert client.get(reverse("audit:tools", args=[contract.pk])).status_code == 404
    url = reverse("audit:tools_import", args=[contract.pk])
    assert client.post(url, {"tools_json": json.dumps(TOOLS)}).status_code == 404
    assert client.get(f"/api/contracts/{contract.pk}/tools/").status_code == 404
    contract.refresh_from_db()
    assert contract.tool_catalogue == []


def test_the_api_imports_binds_and_declares_read_only_tools(login, contract):
    client = login("annotator")
    base = f"/api/contracts/{contract.pk}/tools/"
    resp = client.put(base, {"tools": TOOLS}, content_type="application/json")
    assert resp.status_code == 200, resp.content
    suggestion = {s["node"]: s for s in resp.json()["suggestions"]}["lookup_order"]
    assert suggestion["tool"] == "get_order"
    bound = client.post(
        base + "bindings/",
        {"node": "lookup_order", "tool": "get_order", "version": suggestion["version"]},
        content_type="application/json",
    )
    assert bound.status_code == 200 and bound.json()["meta"] == {"tool": "get_order"}
    made = client.post(
        base + "read-only/", {"tools": ["search_faq"]}, content_type="application/json"
    )
    assert made.status_code == 201
    assert made.json() == {"nodes": [{"id": "tool_search_faq", "tool": "search_faq"}]}
    got = client.get(base).json()
    assert got["bindings"]["get_order"] == ["lookup_order"]
    assert got["bindings"]["search_faq"] == ["tool_search_faq"]


def test_the_api_refuses_bad_input_naming_it(login, contract):
    client = login("annotator")
    resp = client.put(
        f"/api/contracts/{contract.pk}/tools/",
        {"tools": [{"name": "a"}, {"name": "a"}]},
        content_type="application/json",
    )
    assert resp.status_code == 400
    assert "appears more than once" in resp.content.decode()
    contract.refresh_from_db()
    assert contract.tool_catalogue == []


def test_the_schema_documents_the_tool_endpoints(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    text = schema.content.decode()
    assert "/api/contracts/{id}/tools/" in text or "/api/contracts/{pk}/tools/" in text
    assert "tools/read-only/" in text


def test_a_declared_lookup_is_neither_an_extra_action_nor_an_omission(contract, users, refund_doc):
    from matching.evaluate import evaluate
    from matching.formats import read_observed
    from tests.engine.helpers import edit_trace, refund_observed_doc

    _import(contract, users)
    services.tools_declare_read_only(
        contract=contract, user=users["annotator"], names=["search_faq"]
    )
    declared = load_contract(contract_document(contract))
    clean = refund_observed_doc()
    node = {"id": "o9", "label": "Searched", "description": "", "type": "action"}
    line = '[tool] search_faq(query="refund policy")'
    with_lookup = edit_trace(clean, insert=("o1", line, node))
    for obs in (clean, with_lookup):
        report = evaluate(declared, "q1", read_observed(obs), mode="token")
        assert report["failures"] == [], report["failures"]
    undeclared = load_contract(refund_doc)
    bare = evaluate(undeclared, "q1", read_observed(with_lookup), mode="token")
    assert [f["family"] for f in bare["failures"]] == ["extra_action"]
    report = evaluate(declared, "q1", read_observed(with_lookup), mode="token")
    pairs = {a["expected"]: a["observed"] for a in report["alignment"]}
    assert pairs["tool_search_faq"] == "o9"
