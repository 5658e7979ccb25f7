"""Queries of a contract: the user request that conditions it to an expected graph."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import transaction

from matching.conditioning import condition
from matching.errors import ContractEvalError
from matching.formats import contract_from_data

from ..models import Contract, Query
from ..permissions import EDIT, authorize
from ..selectors.contracts import contract_document
from .common import ServiceError, editable, next_position, record, touch
from .concurrency import check_version, locked_contract, retry_on_lock

NEW = 0  # the version a client sends for a query it creates


def _snapshot(query: Query) -> dict[str, Any]:
    return {"text": query.text, "intents": query.intents, "branches": query.branches}


def query_document(query_id: str, text: str, intents: Iterable[str], branches: Mapping[str, str]):
    return {
        "id": query_id,
        "text": text,
        "intents": list(intents),
        "branches": {k: v for k, v in branches.items() if v},
    }


@retry_on_lock
def query_save(
    *, contract: Contract, user, document: Mapping[str, Any], expected_version: int | None
) -> Query:
    """Save (create or replace) a query; the engine must be able to condition on it.

    ``expected_version`` is the version of the query the user edited, or :data:`NEW`
    (0) for a new one: a query created or changed by someone else meanwhile is a
    conflict, not silently replaced.
    """
    authorize(user, contract.project_id, EDIT)
    editable(contract)
    _check_conditions(contract, document)
    with transaction.atomic():
        contract = locked_contract(contract.pk)
        query = contract.queries.filter(query_id=document["id"]).first()
        check_version(
            query.version if query is not None else NEW,
            expected_version,
            contract_id=contract.pk,
            object_type="query",
            object_id=document["id"],
        )
        before = None
        if query is None:
            query = Query(
                contract=contract,
                query_id=document["id"],
                position=next_position(contract.queries),
                version=NEW,
            )
        else:
            before = _snapshot(query)
        query.version += 1
        query.text = document.get("text", "")
        query.intents = list(document.get("intents", []))
        query.branches = dict(document.get("branches", {}))
        query.save()
        record(
            contract,
            user,
            "save",
            "query",
            query.query_id,
            before=before,
            after={"text": query.text, "intents": query.intents, "branches": query.branches},
        )
        touch(contract)
    return query


def _check_conditions(contract: Contract, document: Mapping[str, Any]) -> None:
    """Raise unless the contract audits clean and the engine can condition on the query."""
    from matching.validate import audit_contract  # the engine loads with the first save

    doc = {**contract_document(contract), "queries": []}
    structure = audit_contract(doc)
    if structure.errors:
        raise ServiceError(
            f"fix the contract's {len(structure.errors)} audit error(s) before saving queries"
            f" (first: {structure.errors[0].message})"
        )
    try:
        condition(contract_from_data(doc), dict(document))
    except ContractEvalError as exc:
        raise ServiceError(exc.message) from exc


@retry_on_lock
def query_delete(*, query: Query, user, expected_version: int | None) -> None:
    authorize(user, query.contract.project_id, EDIT)
    with transaction.atomic():
        contract = locked_contract(query.contract_id)
        query = Query.objects.select_for_update(of=("self",)).get(pk=query.pk)
        check_version(
            query.version,
            expected_version,
            contract_id=contract.pk,
            object_type="query",
            object_id=query.query_id,
        )
        before = _snapshot(query)
        query_id = query.query_id
        query.delete()
        record(contract, user, "delete", "query", query_id, before=before)
        touch(contract)
