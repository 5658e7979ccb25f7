"""A project's webhooks page: its endpoints, a new one (its secret shown once), delete,
a test event, and the latest delivery attempts. Project admins only, the page too:
an endpoint's URL can be a credential."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from .. import services
from ..forms import WebhookForm
from ..permissions import WEBHOOKS, project_for, webhook_for
from ..selectors.webhooks import webhooks_page

PAGE = "audit/webhooks.html"


def _context(project, membership, **extra):
    return {
        "project": project,
        "membership": membership,
        "form": WebhookForm(),
        **webhooks_page(project),
        **extra,
    }


def _answer(request, ctx, partial: str, status: int = 200):
    """The section ``partial`` for htmx, else the whole page."""
    if request.htmx:
        return render(request, f"{PAGE}#{partial}", ctx, status=status)
    return render(request, PAGE, ctx, status=status)


@login_required
@require_GET
def webhooks(request, slug):
    """The page; the delivery log alone for its own poll (htmx, while one is pending)."""
    project, membership = project_for(request.user, slug, WEBHOOKS)
    ctx = _context(project, membership)
    if request.htmx and request.htmx.target == "webhook-log":
        return render(request, f"{PAGE}#log", ctx)
    return render(request, PAGE, ctx)


@login_required
@require_POST
def webhook_create(request, slug):
    """A new endpoint; its secret is on the page that answers, and never again."""
    project, membership = project_for(request.user, slug, WEBHOOKS)
    form = WebhookForm(request.POST)
    if form.is_valid():
        try:
            endpoint, secret = services.webhook_create(
                project=project, user=request.user, **form.cleaned_data
            )
        except services.ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            ctx = _context(project, membership, new_endpoint=endpoint, new_secret=secret)
            return _answer(request, ctx, "endpoints")
    ctx = _context(project, membership, form=form)
    return _answer(request, ctx, "endpoints", status=422 if request.htmx else 400)


@login_required
@require_POST
def webhook_delete(request, slug, hook_pk):
    endpoint = webhook_for(request.user, slug, hook_pk)
    services.webhook_delete(endpoint=endpoint, user=request.user)
    return _done(request, slug, "endpoints")


@login_required
@require_POST
def webhook_new_secret(request, slug, hook_pk):
    """A new secret for an endpoint, on the page that answers and never again."""
    project, membership = project_for(request.user, slug, WEBHOOKS)
    endpoint = webhook_for(request.user, slug, hook_pk)
    endpoint, secret = services.webhook_new_secret(endpoint=endpoint, user=request.user)
    ctx = _context(project, membership, new_endpoint=endpoint, new_secret=secret)
    return _answer(request, ctx, "endpoints")


@login_required
@require_POST
def webhook_test(request, slug, hook_pk):
    """Queue a test event; the log shows its attempt once the worker made it."""
    endpoint = webhook_for(request.user, slug, hook_pk)
    services.webhook_send_test(endpoint=endpoint, user=request.user)
    return _done(request, slug, "log")


def _done(request, slug, partial: str):
    """After a change: the section again for htmx, the page for a plain form."""
    if request.htmx:
        project, membership = project_for(request.user, slug, WEBHOOKS)
        return render(request, f"{PAGE}#{partial}", _context(project, membership))
    return redirect("audit:webhooks", slug=slug)
