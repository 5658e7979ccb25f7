"""A project's ingest tokens and routing rules: create, revoke, delete (admins).

A token is shown once, when it is created; only its SHA-256 digest is stored (tokens
are 256 random bits, so a plain digest cannot be reversed by guessing). A routing rule
names a contract by its id, not one version of it: a trace runs against the latest
audited version when it arrives, so auditing a new version needs no new rule.
"""

from __future__ import annotations

import logging
import secrets

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from ..models import (
    Contract,
    IngestToken,
    Project,
    Query,
    QuerySource,
    RoutingRule,
    RunMode,
)
from ..permissions import INGEST, authorize
from ..selectors.ingest import token_digest
from .common import ServiceError, actor

logger = logging.getLogger(__name__)

TOKEN_PREFIX = "ce_"
RULE_MODES = (RunMode.TOKEN, RunMode.SEMANTIC)  # oracle needs gold labels a live trace lacks


def ingest_token_create(*, project: Project, user, name: str) -> tuple[IngestToken, str]:
    """A new ingest token of ``project``: ``(token, secret)``; the secret is never
    stored, so the caller shows it now or never."""
    authorize(user, project.pk, INGEST)
    name = (name or "").strip()
    if not name:
        raise ServiceError("name the token (the agent or service that will send with it)")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = IngestToken.objects.create(
        project=project,
        name=name[:100],
        digest=token_digest(secret),
        prefix=secret[:10],
        created_by=actor(user),
    )
    logger.info("ingest token %s created in %s", token.prefix, project.slug)
    return token, secret


def ingest_token_revoke(*, token: IngestToken, user) -> IngestToken:
    """Revoke ``token``: its next request is a 401. Revoking twice changes nothing."""
    authorize(user, token.project_id, INGEST)
    with transaction.atomic():
        IngestToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
    token.refresh_from_db()
    logger.info("ingest token %s revoked", token.prefix)
    return token


def routing_rule_create(
    *,
    project: Project,
    user,
    attribute: str,
    value: str,
    contract_key: str,
    query_from: str = QuerySource.FIXED,
    query_value: str = "",
    mode: str = RunMode.TOKEN,
) -> RoutingRule:
    """A routing rule of ``project``, after every rule it has."""
    authorize(user, project.pk, INGEST)
    attribute, value = attribute.strip(), value.strip()
    contract_key, query_value = contract_key.strip(), query_value.strip()
    if not attribute or not value:
        raise ServiceError("a rule needs an attribute and the value it matches")
    if not Contract.objects.filter(project=project, key=contract_key).exists():
        raise ServiceError(f"this project has no contract {contract_key!r}")
    if query_from not in QuerySource.values or mode not in RULE_MODES:
        raise ServiceError("choose where the query comes from, and token or semantic mode")
    if query_from == QuerySource.FIXED:
        known = Query.objects.filter(
            contract__project=project, contract__key=contract_key, query_id=query_value
        )
        if not known.exists():
            raise ServiceError(f"{contract_key} has no query {query_value!r}")
    elif query_from == QuerySource.ATTRIBUTE and not query_value:
        raise ServiceError("name the attribute that holds the query id")
    with transaction.atomic():
        last = RoutingRule.objects.filter(project=project).aggregate(m=Max("position"))["m"]
        return RoutingRule.objects.create(
            project=project,
            position=(last or 0) + 1,
            attribute=attribute,
            value=value,
            contract_key=contract_key,
            query_from=query_from,
            query_value="" if query_from == QuerySource.FIRST_USER_MESSAGE else query_value,
            mode=mode,
            created_by=actor(user),
        )


def routing_rule_delete(*, rule: RoutingRule, user) -> None:
    """Delete ``rule``; traces routed by it keep their runs."""
    authorize(user, rule.project_id, INGEST)
    with transaction.atomic():
        RoutingRule.objects.filter(pk=rule.pk).delete()
