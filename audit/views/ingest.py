"""The live ingestion page of a project: ingest tokens, routing rules, the queue of
traces no rule routed, and the latest traces. Tokens and rules are an admin's; the
traces are anyone's who sees runs."""

from __future__ import annotations

import contextlib

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from .. import services
from ..forms import IngestTokenForm, RoutingRuleForm
from ..permissions import (
    INGEST,
    RUN,
    has_role,
    ingest_token_for,
    ingested_trace_for,
    project_for,
    routing_rule_for,
)
from ..selectors.ingest import ingest_page

PAGE = "audit/ingest.html"


def _context(request, project, membership, **extra):
    reads = ingest_page(project)
    return {
        "project": project,
        "membership": membership,
        "can_manage": has_role(membership.role, INGEST),
        "endpoint": request.build_absolute_uri("/v1/traces"),
        "token_form": IngestTokenForm(),
        "rule_form": RoutingRuleForm(contract_keys=reads["contract_keys"]),
        **reads,
        **extra,
    }


def _answer(request, ctx, partial: str, ok: bool):
    """The section ``partial`` for htmx (422 with the errors), else the whole page."""
    if request.htmx:
        return render(request, f"{PAGE}#{partial}", ctx, status=200 if ok else 422)
    return render(request, PAGE, ctx, status=200 if ok else 400)


@login_required
@require_GET
def ingest(request, slug):
    project, membership = project_for(request.user, slug, RUN)
    return render(request, PAGE, _context(request, project, membership))


@login_required
@require_POST
def token_create(request, slug):
    """A new token, shown once on the page that answers (never stored, never sent again)."""
    project, membership = project_for(request.user, slug, INGEST)
    form, extra = IngestTokenForm(request.POST), {}
    if form.is_valid():
        try:
            token, secret = services.ingest_token_create(
                project=project, user=request.user, name=form.cleaned_data["name"]
            )
            extra = {"new_token": token, "new_secret": secret}
        except services.ServiceError as exc:
            form.add_error(None, str(exc))
    ctx = _context(request, project, membership, **extra)
    if not extra:
        ctx["token_form"] = form
    return _answer(request, ctx, "tokens", bool(extra))


@login_required
@require_POST
def token_revoke(request, slug, token_pk):
    token = ingest_token_for(request.user, slug, token_pk, INGEST)
    services.ingest_token_revoke(token=token, user=request.user)
    return _done(request, slug, "tokens")


@login_required
@require_POST
def rule_create(request, slug):
    project, membership = project_for(request.user, slug, INGEST)
    keys = ingest_page(project)["contract_keys"]
    form = RoutingRuleForm(request.POST, contract_keys=keys)
    if form.is_valid():
        try:
            services.routing_rule_create(project=project, user=request.user, **form.cleaned_data)
        except services.ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            return _done(request, slug, "rules")
    ctx = _context(request, project, membership, rule_form=form)
    return _answer(request, ctx, "rules", False)


@login_required
@require_POST
def rule_delete(request, slug, rule_pk):
    rule = routing_rule_for(request.user, slug, rule_pk, INGEST)
    services.routing_rule_delete(rule=rule, user=request.user)
    return _done(request, slug, "rules")


@login_required
@require_POST
def trace_reroute(request, slug, trace_pk):
    """Route a queued trace again: a rule added or a contract audited since may route it."""
    trace = ingested_trace_for(request.user, slug, trace_pk, RUN)
    # an error means it was routed meanwhile: the page shows where it went
    with contextlib.suppress(services.ServiceError):
        services.ingested_trace_reroute(trace=trace, user=request.user)
    return _done(request, slug, "queue")


def _done(request, slug, partial: str):
    """After a change: the section again for htmx, the page for a plain form."""
    if request.htmx:
        project, membership = project_for(request.user, slug, RUN)
        return render(request, f"{PAGE}#{partial}", _context(request, project, membership))
    return redirect("audit:ingest", slug=slug)
