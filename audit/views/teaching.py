"""A reviewer's corrections of a run's pairings, and removing a taught enactment."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from .. import services
from ..models import Enactment
from ..permissions import TEACH, UNTEACH, contract_for, run_for


def _back(run_pk: int):
    return redirect(f"{reverse('audit:run_detail', args=[run_pk])}#correction")


@login_required
@require_POST
def run_pair(request, pk):
    run, _ = run_for(request.user, pk, TEACH)
    expected_id = request.POST.get("expected", "").strip()
    observed_id = request.POST.get("observed", "").strip()
    if not expected_id or not observed_id:
        messages.error(request, "choose an observed step and an obligation to pair it with")
        return _back(run.pk)
    try:
        services.run_pair(
            run=run, user=request.user, expected_id=expected_id, observed_id=observed_id
        )
    except services.ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"Paired {observed_id} with {expected_id}: corrected report stored."
        )
    return _back(run.pk)


@login_required
@require_POST
def run_unpair(request, pk):
    run, _ = run_for(request.user, pk, TEACH)
    try:
        services.run_unpair(
            run=run, user=request.user, expected_id=request.POST.get("expected", "").strip()
        )
    except services.ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Pairing refused: corrected report stored.")
    return _back(run.pk)


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
