"""Writes by several people at once: no lost update, no half-checked write, no lock 500.

- Every write of an edited object names the version it was based on; a write based on
  an older version raises :class:`ConflictError` (HTTP 409) saying who changed what.
- Every mutating service locks the contract row first (:func:`locked_contract`) and
  checks, inside that transaction, that the contract may still change: an edit can no
  longer land after the contract was marked audited.
- :func:`retry_on_lock` runs a service again when the database reported a lock or a
  serialization failure, a few times with a short pause, before giving up with a
  message (never a 500).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from django.db import OperationalError, connection

from ..models import Contract
from ..selectors.workspace import last_change
from .common import ServiceError, editable, revise

logger = logging.getLogger(__name__)
LOCK_RETRIES = 4
LOCK_PAUSE_SECONDS = 0.05
# What SQLite and PostgreSQL say when a lock or a concurrent transaction got in the way.
TRANSIENT = ("database is locked", "deadlock detected", "could not serialize", "lock timeout")


class ConflictError(ServiceError):
    """A write based on a version that is no longer the current one (HTTP 409)."""

    def __init__(self, message: str, *, current_version: int) -> None:
        super().__init__(message)
        self.current_version = current_version


class DatabaseBusy(ServiceError):
    """The database stayed locked through every retry (HTTP 503)."""


def locked_contract(
    contract_id: int, *, check_editable: bool = True, revised: bool = True
) -> Contract:
    """Contract ``contract_id``, its row locked until the transaction ends, checked to
    be editable under that lock. Call inside ``transaction.atomic()``.

    The lock is taken to change the contract, so its ``revision`` is counted up here
    (rolled back with the transaction if nothing is written): a cached read of the old
    revision can never be served for the new content. ``revised=False`` is for the one
    change the export cannot show (a review between *proposed* and *confirmed*), whose
    service counts the revision itself when it does show."""
    contract = (
        Contract.objects.select_for_update(of=("self",))
        .select_related("artifact", "project")
        .get(pk=contract_id)
    )
    if check_editable:
        editable(contract)
    if revised:
        revise(contract)
    return contract


def check_version(
    current: int,
    expected: int | None,
    *,
    contract_id: int,
    object_type: str,
    object_id: str,
) -> None:
    """Refuse a write based on ``expected`` when the object is at ``current`` now."""
    if expected is None:
        raise ServiceError(
            f"the {object_type} {object_id} was sent without the version it was based on;"
            " reload the page and try again"
        )
    if current == expected:
        return
    change = last_change(contract_id, object_type, object_id)
    raise ConflictError(
        f"{object_type} {object_id} was changed by someone else meanwhile (it is at version"
        f" {current}, your change was based on version {expected})"
        + (f" — {change}" if change else "")
        + ". Your change was not saved: reload it and apply your change again.",
        current_version=current,
    )


def _transient(exc: OperationalError) -> bool:
    text = str(exc).lower()
    return any(marker in text for marker in TRANSIENT)


def retry_on_lock[F: Callable[..., Any]](service: F) -> F:
    """Run ``service`` again when the database reports a lock (SQLite) or a deadlock or
    serialization failure (PostgreSQL); after the last try, :class:`DatabaseBusy`.

    Inside an outer transaction a retry cannot help (that transaction is broken), so
    the error goes up to whoever opened it.
    """

    @functools.wraps(service)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for attempt in range(LOCK_RETRIES):
            try:
                return service(*args, **kwargs)
            except OperationalError as exc:
                if not _transient(exc) or connection.in_atomic_block:
                    raise
                logger.info("%s: %s (attempt %d)", service.__name__, exc, attempt + 1)
                time.sleep(LOCK_PAUSE_SECONDS * (2**attempt))
        raise DatabaseBusy("the database is busy with other changes; try again in a moment")

    return wrapper  # type: ignore[return-value]
