"""Pages for requests that went astray, in the app's own look.

Django renders ``404.html`` and ``403.html`` from ``templates/`` itself. A 405 needs
this middleware: a GET of an address that only takes a form's submission (a reload
after a failed form, a pasted link) is sent to the nearest page above it, where the
form lives, with a line saying why; the API keeps its plain 405.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import Resolver404, resolve


def page_above(path: str) -> str | None:
    """The nearest address above ``path`` that names a page, or None.

    >>> page_above("/nowhere/at/all/") is None
    True
    """
    parts = [p for p in path.split("/") if p]
    while parts:
        parts.pop()
        candidate = "/" + "".join(f"{p}/" for p in parts)
        try:
            resolve(candidate)
        except Resolver404:
            continue
        return candidate
    return None


class FormOnlyMiddleware:
    """A GET that meets a 405 goes to the page holding the form instead."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code != 405
            or request.method not in ("GET", "HEAD")
            or request.path.startswith("/api/")
        ):
            return response
        back = page_above(request.path)
        if back is not None and back != "/":
            messages.info(request, "That address only takes a form's submission; here is its page.")
            return HttpResponseRedirect(back)
        allowed = response.get("Allow", "POST")
        return render(request, "405.html", {"allowed": allowed, "back": back or "/"}, status=405)
