"""Reads of live ingestion: the token a request presents, and a project's ingest page
(tokens, routing rules, the queue of unrouted traces, the latest traces)."""

from __future__ import annotations

import hashlib
from typing import Any

from ..models import Contract, IngestedTrace, IngestToken, Project, RoutingRule, TraceStatus

LATEST = 20


def token_digest(secret: str) -> str:
    """What is stored of a token: its SHA-256 (tokens are 256 random bits, so a plain
    digest cannot be reversed by guessing)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def active_token(secret: str) -> IngestToken | None:
    """The unrevoked token ``secret`` is, with its project (None: a 401)."""
    if not secret:
        return None
    return (
        IngestToken.objects.select_related("project")
        .filter(digest=token_digest(secret), revoked_at__isnull=True)
        .first()
    )


def ingest_page(project: Project) -> dict[str, Any]:
    """What the ingest page of ``project`` shows."""
    traces = IngestedTrace.objects.filter(project=project).defer("spans")
    return {
        "tokens": list(IngestToken.objects.filter(project=project)),
        "rules": list(RoutingRule.objects.filter(project=project)),
        "queue": list(traces.filter(status=TraceStatus.UNROUTED)[:100]),
        "queue_count": traces.filter(status=TraceStatus.UNROUTED).count(),
        "latest": list(traces.select_related("contract")[:LATEST]),  # the run by id only
        "contract_keys": sorted(
            set(Contract.objects.filter(project=project).values_list("key", flat=True))
        ),
    }
