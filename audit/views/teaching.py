"""A reviewer's corrections of a run's pairings, and removing a taught enactment."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from .. import services
from ..models import Enactment
from ..permissions import TEACH, UNTEACH, contract_for, run_for
from ..selectors import similar as similar_reads
from .runs import run_context


def _answer(request, run, membership, message: str, failed: bool):
    """htmx: the run's reading re-rendered in place (report, graph, corrections);
    otherwise back to the run page with the message."""
    if request.htmx:
        run.refresh_from_db()
        ctx = run_context(run, membership)
        ctx |= {"correction_message": message, "correction_failed": failed}
        ctx["correction_open"] = True
        return render(request, "audit/run.html#reading", ctx, status=400 if failed else 200)
    (messages.error if failed else messages.success)(request, message)
    return redirect(f"{reverse('audit:run_detail', args=[run.pk])}#correction")


def _correct(request, pk, **decisions):
    run, membership = run_for(request.user, pk, TEACH)
    try:
        services.run_correct(run=run, user=request.user, **decisions)
    except services.ServiceError as exc:
        return _answer(request, run, membership, str(exc), True)
    return _answer(
        request, run, membership, "Corrections applied: this is the run's report now.", False
    )


@login_required
@require_POST
def run_pair(request, pk):
    expected_id = request.POST.get("expected", "").strip()
    observed_id = request.POST.get("observed", "").strip()
    return _correct(
        request, pk, pair=[(expected_id, observed_id)] if expected_id and observed_id else []
    )


@login_required
@require_POST
def run_unpair(request, pk):
    expected_id = request.POST.get("expected", "").strip()
    return _correct(request, pk, unpair=[expected_id] if expected_id else [])


@login_required
@require_POST
def run_correct(request, pk):
    """Many decisions at once: ``pair-<step>`` = obligation, ``unpair`` = obligations,
    ``commentary`` = steps."""
    pair = [
        (value.strip(), key.removeprefix("pair-"))
        for key, value in request.POST.items()
        if key.startswith("pair-") and value.strip()
    ]
    return _correct(
        request,
        pk,
        pair=pair,
        unpair=[e for e in request.POST.getlist("unpair") if e.strip()],
        commentary=[o for o in request.POST.getlist("commentary") if o.strip()],
    )


@login_required
@require_POST
def run_revert(request, pk):
    run, membership = run_for(request.user, pk, TEACH)
    try:
        services.run_revert(run=run, user=request.user)
    except services.ServiceError as exc:
        return _answer(request, run, membership, str(exc), True)
    return _answer(
        request, run, membership, "Reverted: the engine's reading is the run's again.", False
    )


@login_required
@require_http_methods(["GET", "POST"])
def run_similar(request, pk):
    """The same steps in the contract's other runs: listed (GET), the ticked ones
    corrected (POST)."""
    run, membership = run_for(request.user, pk, TEACH)
    if request.method == "POST":
        try:
            done, problems = services.runs_correct_similar(
                source=run, user=request.user, chosen=request.POST.getlist("apply")
            )
        except services.ServiceError as exc:
            messages.error(request, str(exc))
        else:
            for p in problems:
                messages.warning(request, p)
            messages.success(request, f"{done} other run{'s' if done != 1 else ''} corrected.")
        return redirect("audit:run_similar", pk=run.pk)
    ctx: dict[str, Any] = {"run": run, "project": run.project, "membership": membership}
    ctx["suggestions"] = similar_reads.similar_corrections(run)
    ctx |= {"searched": similar_reads.RUNS_SEARCHED, "bar": similar_reads.SAME_WORDS}
    return render(request, "audit/run_similar.html", ctx)


@login_required
@require_POST
def enactment_delete(request, pk, enactment_pk):
    contract, _ = contract_for(request.user, pk, UNTEACH)
    enactment = Enactment.objects.filter(pk=enactment_pk, contract=contract).first()
    if enactment is None:
        raise Http404("no such enactment")
    services.enactment_delete(enactment=enactment, user=request.user)
    messages.success(request, f"Enactment of {enactment.node_id} removed.")
    return redirect(f"{reverse('audit:workspace', args=[contract.pk])}#enactments")
