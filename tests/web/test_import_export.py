"""Import is engine-validated (bad → engine message, nothing stored); export round-trips."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from audit import services
from audit.models import Artifact, AuditRecord, Contract, Node, Span
from audit.selectors.contracts import contract_document
from audit.services.reviews import ANY_STATE
from matching.formats import read_contract

ROOT = Path(__file__).resolve().parents[2]
SUITE_FILES = sorted((ROOT / "fixtures" / "clean" / "contracts").glob("*.json")) + [
    ROOT / "fixtures" / "demo" / "refund-mini.json"
]

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", SUITE_FILES, ids=lambda p: p.stem)
def test_export_import_export_gives_the_same_document(project, users, path):
    first = services.contract_import(project=project, user=users["admin"], source=path.read_bytes())
    exported = contract_document(first)
    second = services.contract_import(project=project, user=users["admin"], source=exported)
    assert second.version == first.version + 1
    assert contract_document(second) == exported
    # and the export is the engine's canonical form of the imported file
    assert exported == read_contract(path).to_dict()


def test_bad_contract_gets_the_engine_message_and_nothing_is_stored(project, users, refund_doc):
    bad = copy.deepcopy(refund_doc)
    bad["nodes"][1]["evidence"][0]["end"] = 10_000
    before = (Contract.objects.count(), Node.objects.count(), Span.objects.count())
    with pytest.raises(services.ServiceError) as err:
        services.contract_import(project=project, user=users["admin"], source=bad, file="bad.json")
    assert "bad.json" in str(err.value) and "$.nodes[1].evidence[0]" in str(err.value)
    assert "span-out-of-range" in str(err.value)
    after = (Contract.objects.count(), Node.objects.count(), Span.objects.count())
    assert after == before
    assert not Artifact.objects.exists() and not AuditRecord.objects.exists()


def test_schema_violation_is_refused_with_its_json_path(project, users, refund_doc):
    bad = copy.deepcopy(refund_doc)
    bad["nodes"][0]["type"] = "wish"
    with pytest.raises(services.ServiceError, match=r"\$\.nodes\[0\]\.type"):
        services.contract_import(project=project, user=users["admin"], source=bad)
    assert not Contract.objects.exists()


def test_import_view_shows_the_engine_message_and_stores_nothing(login, project, refund_doc):
    bad = copy.deepcopy(refund_doc)
    bad["edges"].append({"source": "ghost", "target": "lookup_order", "kind": "requires"})
    client = login("reviewer")
    response = client.post("/p/tests/import/", {"document": json.dumps(bad)})
    assert response.status_code == 400
    assert "edge source &#x27;ghost&#x27; is not a node" in response.content.decode()
    assert not Contract.objects.exists()


def test_import_view_stores_a_good_file_and_opens_it(login, project, refund_doc):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = login("reviewer")
    upload = SimpleUploadedFile("c.json", json.dumps(refund_doc).encode(), "application/json")
    response = client.post("/p/tests/import/", {"file": upload})
    contract = Contract.objects.get()
    assert response.status_code == 302 and response.url == f"/c/{contract.pk}/"
    assert contract.nodes.count() == len(refund_doc["nodes"])
    assert AuditRecord.objects.filter(contract=contract, action="import").exists()


def test_rejected_nodes_are_not_exported_and_their_children_move_up(contract, users):
    window = contract.nodes.get(node_id="check_window")
    owner = contract.nodes.get(node_id="verify_owner")
    services.nodes_review(
        contract=contract,
        user=users["annotator"],
        action="reject",
        nodes=[(owner.pk, owner.version), (window.pk, window.version)],
        from_states=ANY_STATE,
    )
    doc = contract_document(contract)
    ids = [n["id"] for n in doc["nodes"]]
    assert "verify_owner" not in ids and "check_window" not in ids
    parents = {n["id"]: n["parent"] for n in doc["nodes"]}
    assert parents["within_window"] == "handle_refund"
    assert all("verify_owner" not in (e["source"], e["target"]) for e in doc["edges"])
    assert all("check_window" not in (e["source"], e["target"]) for e in doc["edges"])


def test_export_view_downloads_the_document(login, contract):
    response = login("annotator").get(f"/c/{contract.pk}/export.json")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="refund-mini-v1.json"'
    assert json.loads(response.content) == contract_document(contract)


def test_a_new_version_copies_everything_including_review_state(contract, users):
    credit = contract.nodes.get(node_id="offer_credit")
    services.nodes_review(
        contract=contract,
        user=users["annotator"],
        action="reject",
        nodes=[(credit.pk, credit.version)],
        from_states=ANY_STATE,
    )
    new = services.contract_new_version(contract=contract, user=users["annotator"])
    assert (new.version, new.status, new.previous_id) == (2, "draft", contract.pk)
    assert contract_document(new, include_rejected=True) == contract_document(
        contract, include_rejected=True
    )
    assert new.nodes.get(node_id="offer_credit").review_status == "rejected"
