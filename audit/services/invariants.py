"""Invariants of a contract: rules that hold over the whole trace."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from ..models import Contract, Invariant, Span
from ..selectors.contracts import invariant_snapshot
from .common import ServiceError, check_span, editable, next_position, record, touch


def _clean_check(check: Any) -> dict[str, Any] | None:
    if check in (None, "", {}):
        return None
    if not isinstance(check, dict):
        raise ServiceError("check must be a JSON object")
    return check


def invariant_create(
    *, contract: Contract, user, data: Mapping[str, Any], start: int, end: int
) -> Invariant:
    editable(contract)
    start, end = check_span(contract, start, end)
    with transaction.atomic():
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


def invariant_update(*, invariant: Invariant, user, data: Mapping[str, Any]) -> Invariant:
    contract = invariant.contract
    editable(contract)
    with transaction.atomic():
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


def invariant_delete(*, invariant: Invariant, user) -> None:
    contract = invariant.contract
    editable(contract)
    with transaction.atomic():
        before = invariant_snapshot(invariant)
        invariant.delete()
        record(contract, user, "delete", "invariant", before["id"], before=before)
        touch(contract)
