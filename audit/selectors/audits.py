"""The engine's audit of a contract's export, cached.

Two caches, both keyed by counters that every change counts up under the contract's
lock (``Contract.revision``, and the content revision: ``revision - review_revision``,
the changes that were not reviews; see :func:`audit.selectors.contracts.revision_stamp`):

- ``ce-audit:v1:<revision>``: the audit of the export at that revision;
- ``ce-export:v1:<content revision>``: the :class:`~audit.selectors.documents.ExportBase`
  (the export of every node, rejected or not). A review only moves nodes into or out
  of *rejected*, which counts the revision but not the content revision: the new
  export is the cached base without the nodes rejected now, read in the same
  statement as the revision. Reading every row again was most of a reject.

Both paths build the document with :meth:`ExportBase.document`, so an audit derived
from the cached base is the audit a fresh export gives (tests/web/test_audit_cache.py
checks it after random sequences of changes).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.cache import cache

from ..models import Contract, ReviewStatus
from .contracts import ContractRows, document_from_rows, export_rows, stamps
from .documents import ExportBase, export_base, rejected_ids

if TYPE_CHECKING:
    from matching.validate import Audit

AUDIT_CACHE_SECONDS = 3600
# The cache outlives a deploy and holds pickles: a change to ExportBase or to the
# engine's Audit must move these prefixes, or new code would read old objects.
AUDIT_KEY = "ce-audit:v1:"
EXPORT_KEY = "ce-export:v1:"
# (pk, parent pk, review status, id) of a node, in declaration order
Link = tuple[int, int | None, str, str]


def _audit(doc: dict[str, Any]) -> Audit:
    # the validator (networkx, jsonschema) loads with the first audit, not at start-up
    from matching.validate import audit_contract

    return audit_contract(doc)


def cached_audit(doc: dict[str, Any]) -> Audit:
    """The engine's audit of any document, computed once per distinct document (the
    key is a hash of the document itself)."""
    body = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return _audit_under(AUDIT_KEY + hashlib.sha256(body.encode()).hexdigest(), lambda: doc)


def _audit_under(key: str, document: Callable[[], dict[str, Any]]) -> Audit:
    """The audit cached under ``key``, or the audit of ``document()`` stored there."""
    audit = cache.get(key)
    if audit is None:
        audit = _audit(document())
        cache.set(key, audit, AUDIT_CACHE_SECONDS)
    return audit


def _store_base(content_stamp: str, base: ExportBase) -> None:
    cache.set(f"{EXPORT_KEY}{content_stamp}", base, AUDIT_CACHE_SECONDS)


def audit_rows(rows: ContractRows) -> Audit:
    """The engine's audit of the rows' export, computed once per contract revision.

    The key is the revision the rows were read at (``rows.stamp``); every service that
    may change the export counts the revision up under the contract's lock, so a stale
    audit is never served, and reviews the export cannot show (confirm, undo to
    *proposed*) keep it. Hashing the whole document instead cost as much as loading it.
    The export base is stored too, for the reviews that follow.
    """
    if not rows.stamp:  # a partial read: nothing to key on
        return cached_audit(document_from_rows(rows))

    def document() -> dict[str, Any]:
        base = export_base(rows)
        _store_base(rows.content_stamp, base)
        return base.document(rejected_ids(rows))

    return _audit_under(f"{AUDIT_KEY}{rows.stamp}", document)


@dataclass
class AuditRead:
    """The audit of a contract now, and its nodes' :data:`Link` as of that audit."""

    audit: Audit
    links: list[Link]


def _links(contract: Contract) -> tuple[str, str, list[Link]]:
    """The contract's two stamps and its nodes' links, in one statement (one snapshot):
    the statuses are those of the revision read with them. The creation time is the
    instance's: it never changes, and reading it on every row (a date parsed per node)
    doubled the cost of the statement."""
    found = list(
        Contract.objects.filter(pk=contract.pk)
        .order_by("nodes__position", "nodes__pk")
        .values_list(
            "revision",
            "review_revision",
            "nodes__pk",
            "nodes__parent_id",
            "nodes__review_status",
            "nodes__node_id",
        )
    )
    revision, reviews = found[0][:2]
    stamp, content_stamp = stamps(contract.pk, contract.created_at, revision, reviews)
    links = [row[2:] for row in found if row[2] is not None]
    return stamp, content_stamp, links


def contract_audit(contract: Contract) -> AuditRead:
    """The engine's audit of ``contract`` as it is now, with its nodes' links.

    When the audit of the current revision is not cached, it is derived from the export
    base of the current content revision (cached, or read and stored) and the nodes
    rejected now; only if the content changed between the two reads is it the audit of
    the rows read (with their links).
    """
    stamp, content_stamp, links = _links(contract)
    audit = cache.get(f"{AUDIT_KEY}{stamp}")
    if audit is not None:
        return AuditRead(audit, links)
    base = cache.get(f"{EXPORT_KEY}{content_stamp}")
    if base is None:
        rows = export_rows(contract)
        if rows.content_stamp != content_stamp:  # changed meanwhile: audit what was read
            links = [(n.pk, n.parent_id, n.review_status, n.node_id) for n in rows.nodes]
            return AuditRead(audit_rows(rows), links)
        base = export_base(rows)
        _store_base(content_stamp, base)
    rejected = {node_id for _, _, status, node_id in links if status == ReviewStatus.REJECTED}
    return AuditRead(_audit_under(f"{AUDIT_KEY}{stamp}", lambda: base.document(rejected)), links)
