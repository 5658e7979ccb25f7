"""What every view shares: the workspace URL, one-line form errors,
downloads, and the status poll of queued work."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from ..htmx import HtmxHttpRequest


def workspace_url(contract: Any, node: Any = None) -> str:
    url = reverse("audit:workspace", args=[contract.pk])
    return f"{url}?node={node.node_id}" if node is not None else url


def form_errors(form: Any) -> str:
    """Every error of ``form`` in one line, each named by its field's label."""
    parts = []
    for name, errors in form.errors.items():
        label = form[name].label if name in form.fields else ""
        parts += [f"{label}: {e}" if label else str(e) for e in errors]
    return "; ".join(parts)


def error_status(exc: Exception) -> int:
    """The HTTP status of a refused change: 409 for a write based on an old version,
    503 when the database stayed busy, 422 for anything else the user can fix."""
    from ..services.concurrency import ConflictError, DatabaseBusy

    if isinstance(exc, ConflictError):
        return 409
    if isinstance(exc, DatabaseBusy):
        return 503
    return 422


def attachment(body: str, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def poll(request: HtmxHttpRequest, obj: Any, detail: str, partial: str, ctx: dict) -> HttpResponse:
    """A status poll: the partial while work goes on, then a redirect to the detail page
    (``HX-Redirect`` for htmx; a plain request goes there at once)."""
    url = reverse(detail, args=[obj.pk])
    if not request.htmx:
        return redirect(url)
    if obj.is_finished:
        return HttpResponseClientRedirect(url, status=204)  # nothing to swap
    return render(request, partial, ctx)


OFFSET_MAX = 2**62  # well inside the signed 64-bit integers of SQLite and PostgreSQL


class LimitFirstPage:
    """One page of a list read as ``LIMIT size + 1 OFFSET …``, never ``COUNT(*)``.

    With an index serving the filter and the order, a page costs its own rows, however
    many the project holds (a count reads them all); the extra row says whether an
    older page exists. Iterates like a Django ``Page``.
    """

    def __init__(self, qs: Any, number: Any, size: int = 50) -> None:
        try:
            self.number = max(1, int(number or 1))
        except (TypeError, ValueError):
            self.number = 1
        start = (self.number - 1) * size
        # an offset past what a database integer holds is past every row (an empty page),
        # not a query the database refuses
        rows = list(qs[start : start + size + 1]) if start < OFFSET_MAX else []
        self.object_list = rows[:size]
        self.has_next = len(rows) > size
        self.has_previous = self.number > 1
        self.next_page_number = self.number + 1
        self.previous_page_number = self.number - 1

    def __iter__(self):
        return iter(self.object_list)

    def __len__(self) -> int:
        return len(self.object_list)
