"""Invariants of a contract: rules that hold over the whole trace."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from ..models import Contract, Invariant, Span
from ..selectors.contracts import invariant_snapshot
from .common import ServiceError, check_span, next_position, record, touch
from .concurrency import check_version, locked_contract, retry_on_lock


def _locked(invariant: Invariant, expected_version: int | None) -> Invariant:
    contract = locked_contract(invariant.contract_id)
    invariant = Invariant.objects.select_for_update(of=("self",)).get(pk=invariant.pk)
    invariant.contract = contract
    check_version(
        invariant.version,
        expected_version,
        contract_id=contract.pk,
        object_type="invariant",
        object_id=invariant.inv_id,
    )
    return invariant


def _clean_check(check: Any) -> dict[str, Any] | None:
    if check in (None, "", {}):
        return None
    if not isinstance(check, dict):
        raise ServiceError("check must be a JSON object")
    return check


@retry_on_lock
def invariant_create(
    *, contract: Contract, user, data: Mapping[str, Any], start: int, end: int
) -> Invariant:
    with transaction.atomic():
        contract = locked_contract(contract.pk)
        start, end = check_span(contract, start, end)
        if contract.invariants.filter(inv_id=data["inv_id"]).exists():
            raise ServiceError(f"the invariant id {data['inv_id']!r} is already taken")
        inv = Invariant.objects.create(
            contract=contract,
            inv_id=data["inv_id"],
            label=data["label"],
            description=data.get("description", ""),
            machine_check=_clean_check(data.get("check")),
            position=next_position(contract.invariants),
        )
        inv.applies_to.set(data.get("applies_to") or [])
        Span.objects.create(invariant=inv, start=start, end=end)
        record(contract, user, "create", "invariant", inv.inv_id, after=invariant_snapshot(inv))
        touch(contract)
    return inv


@retry_on_lock
def invariant_update(
    *, invariant: Invariant, user, data: Mapping[str, Any], expected_version: int | None
) -> Invariant:
    with transaction.atomic():
        invariant = _locked(invariant, expected_version)
        contract = invariant.contract
        new_id = data.get("inv_id", invariant.inv_id)
        if new_id != invariant.inv_id and contract.invariants.filter(inv_id=new_id).exists():
            raise ServiceError(f"the invariant id {new_id!r} is already taken")
        before = invariant_snapshot(invariant)
        invariant.inv_id = new_id
        invariant.label = data.get("label", invariant.label)
        invariant.description = data.get("description", invariant.description)
        invariant.machine_check = _clean_check(data.get("check"))
        invariant.version += 1
        invariant.save()
        if "applies_to" in data:
            invariant.applies_to.set(data["applies_to"])
        record(
            contract,
            user,
            "edit",
            "invariant",
            invariant.inv_id,
            before=before,
            after=invariant_snapshot(invariant),
        )
        touch(contract)
    return invariant


@retry_on_lock
def invariant_delete(*, invariant: Invariant, user, expected_version: int | None) -> None:
    with transaction.atomic():
        invariant = _locked(invariant, expected_version)
        contract = invariant.contract
        before = invariant_snapshot(invariant)
        invariant.delete()
        record(contract, user, "delete", "invariant", before["id"], before=before)
        touch(contract)
