"""Suite batches: the list and the new-batch form, a batch's scores and its progress poll."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from .. import services
from ..fields import form_status
from ..forms import BatchForm
from ..permissions import BATCH, RUN, batch_for, has_role, project_for
from ..selectors import batches as batch_reads
from ..selectors import runs as run_reads
from .common import poll
from .runs import FAMILY_NAMES

CASES_PER_PAGE = 50


def _batches_context(project, membership, form=None, error=""):
    return {
        "project": project,
        "membership": membership,
        "batches": list(project.batches.defer("archive")[:50]),
        "form": form or BatchForm(),
        "can_batch": has_role(membership.role, BATCH),
        "error": error,
        "fixture_suite": f"fixtures/{services.fixture_suite_dir().name}",
    }


@login_required
@require_GET
def batch_list(request, slug):
    project, membership = project_for(request.user, slug, RUN)
    return render(request, "audit/batches.html", _batches_context(project, membership))


@login_required
@require_POST
def batch_create(request, slug):
    project, membership = project_for(request.user, slug, BATCH)
    form = BatchForm(request.POST, request.FILES)
    error, status = "", form_status(form)
    if form.is_valid():
        upload = form.cleaned_data.get("suite")  # within the archive limit (the form)
        try:
            batch = services.batch_create(
                project=project,
                user=request.user,
                mode=form.cleaned_data["mode"],
                extractor=form.cleaned_data["extractor"],
                archive=upload.read() if upload is not None else None,
                name=upload.name if upload is not None else "",
                judge=services.judge_of(form.cleaned_data["evaluator"]),
            )
        except services.ServiceError as exc:
            error, status = str(exc), exc.status or status
        else:
            return redirect("audit:batch_detail", pk=batch.pk)
    ctx = _batches_context(project, membership, form=form, error=error)
    return render(request, "audit/batches.html", ctx, status=status)


def _batch_context(batch, membership):
    scores = batch.scores or {}
    return {
        "project": batch.project,
        "membership": membership,
        "batch": batch,
        "scores": scores,
        "rows": run_reads.family_rows(scores) if scores else [],
        "clean_family": batch_reads.CLEAN,
        "family_names": FAMILY_NAMES,
        "judge_label": dict(services.EVALUATORS).get(f"judge-{batch.judge}", "")
        if batch.judge
        else "",
    }


@login_required
@require_GET
def batch_detail(request, pk):
    batch, membership = batch_for(request.user, pk)
    return render(request, "audit/batch.html", _batch_context(batch, membership))


@login_required
@vary_on_headers("HX-Request")
@require_GET
def batch_status(request, pk):
    batch, _ = batch_for(request.user, pk)
    return poll(request, batch, "audit:batch_detail", "audit/batch.html#progress", {"batch": batch})


@login_required
@require_GET
def batch_scores(request, pk):
    batch, _ = batch_for(request.user, pk)
    if batch.scores is None:
        raise Http404("this batch has no scores yet")
    response = JsonResponse(batch.scores, json_dumps_params={"indent": 1})
    response["Content-Disposition"] = f'attachment; filename="batch-{batch.pk}-scores.json"'
    return response


@login_required
@require_GET
def batch_family(request, pk, family):
    batch, membership = batch_for(request.user, pk)
    found = batch_reads.batch_family_cases(batch, family)
    wanted = request.GET.get("outcome", "")
    rows = [r for r in found.rows if r.outcome == wanted] if wanted else found.rows
    page = Paginator(rows, CASES_PER_PAGE).get_page(request.GET.get("page"))
    ctx = {
        "project": batch.project,
        "membership": membership,
        "batch": batch,
        "found": found,
        "family_name": FAMILY_NAMES.get(family, "Clean cases not passed"),
        "outcome": wanted,
        "outcomes": batch_reads.OUTCOMES if family != batch_reads.CLEAN else (),
        "page": page,
        "params": {"outcome": wanted},
    }
    return render(request, "audit/batch_family.html", ctx)


@login_required
@require_GET
def batch_case(request, pk, case_id):
    batch, membership = batch_for(request.user, pk)
    view = batch_reads.batch_case_view(batch, case_id)
    ctx = {"project": batch.project, "membership": membership, "batch": batch, "view": view}
    return render(request, "audit/batch_case.html", ctx)
