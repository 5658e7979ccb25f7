"""The reviewer inbox: failed runs with their latest verdict, those that need review
first, filtered and exported."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ..filters import InboxFilter, filter_values
from ..permissions import RUN, project_for
from ..selectors import exports
from ..selectors import runs as run_reads
from .common import LimitFirstPage, attachment
from .runs import ASSESSMENTS, FAMILY_NAMES


@login_required
@require_GET
def inbox(request, slug):
    project, membership = project_for(request.user, slug, RUN)
    qs = InboxFilter(request.GET, queryset=run_reads.inbox(project)).qs
    params = filter_values(InboxFilter, request.GET)
    page = LimitFirstPage(run_reads.list_rows(qs), request.GET.get("page"))
    query = urlencode({k: v for k, v in params.items() if v})
    return render(
        request,
        "audit/inbox.html",
        {
            "project": project,
            "membership": membership,
            "page": page,
            "params": params,
            "choices": run_reads.inbox_choices(project),
            "family_names": FAMILY_NAMES,
            "assessments": ASSESSMENTS,
            "filter_query": query,
        },
    )


@login_required
@require_GET
def inbox_export(request, slug, fmt):
    if fmt not in ("json", "csv"):
        raise Http404("export as .json or .csv")
    project, _ = project_for(request.user, slug, RUN)
    params = filter_values(InboxFilter, request.GET)
    runs = InboxFilter(request.GET, queryset=run_reads.inbox(project)).qs
    rows = [exports.run_row(r) for r in runs]
    if fmt == "csv":
        fields = list(rows[0]) if rows else None
        body = exports.rows_csv(rows, fields)
        return attachment(body, "text/csv; charset=utf-8", f"{project.slug}-inbox.csv")
    body = json.dumps({"project": project.slug, "filters": params, "runs": rows}, indent=1)
    return attachment(body + "\n", "application/json; charset=utf-8", f"{project.slug}-inbox.json")
