"""What stands between a hostile or broken request and a 500.

- :class:`LimitedJSONParser`: the API's JSON parser, within the size and depth limits
  of the site's input limits (``INPUT_LIMITS``; 413/400 naming the limit, never a
  RecursionError); an oversized body is refused from its ``Content-Length`` before a
  byte of it is read.
- :func:`api_refusal`: a service's refusal as the API's error (409 for a stale write, 413
  past a size limit); :func:`api_call` calls a service and raises it.
- :class:`RequestGuardMiddleware`: a request larger than any upload may be is a 413
  from its ``Content-Length``, before it is read; a NUL character in a query parameter
  is a 400 naming the parameter (PostgreSQL cannot compare with one); a database that
  stayed locked is a 503 asking to try again, not a 500.
- :func:`not_found`: the ``handler404``; an unknown API URL answers in JSON.
- :func:`bad_request`: the ``handler400`` that turns Django's bare "Bad Request" for
  an oversized body into a 413 naming the limit.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework.exceptions import APIException, ParseError, ValidationError
from rest_framework.parsers import JSONParser

from matching.input_limits import (
    BODY_UPLOADS,
    FIELD_UPLOADS,
    REQUEST_ENVELOPE,
    InputRefused,
    load_json,
)

from .services.common import ServiceError
from .services.concurrency import TRANSIENT, ConflictError

logger = logging.getLogger(__name__)


def body_limit() -> int:
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def too_large_message(limit: int, size: int | None = None, names=FIELD_UPLOADS) -> str:
    """The refusal of a request past ``limit`` (``size`` when it is known): the largest
    of the upload limits ``names``, which it names, and the room for the other fields."""
    measured = f"the request is {size:,} bytes" if size else "the request is larger"
    largest = max(names, key=lambda name: getattr(settings.INPUT_LIMITS, name))
    return (
        f"{measured}; the limit is {limit:,} (INPUT_LIMITS {largest}, the largest upload,"
        f" and {REQUEST_ENVELOPE // 1024} KiB for the other fields); send less at once"
    )


def content_length(request: Any) -> int | None:
    """The size the client declares for its body (None when it declares none)."""
    try:
        return int(request.META.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None


def api_refusal(exc: ServiceError, field: str = "detail") -> APIException:
    """A service's refusal as the API's error: 409 for a write based on an old version,
    413 past a size limit, else 400 naming ``field``."""
    if isinstance(exc, ConflictError):
        return Conflict(str(exc))
    if exc.status == 413:
        return RequestTooLarge(str(exc))
    return ValidationError({field: [str(exc)]})


def api_call(fn: Any, **kwargs: Any) -> Any:
    """``fn(**kwargs)``, a service, with its refusal raised as the API's error."""
    try:
        return fn(**kwargs)
    except ServiceError as exc:
        raise api_refusal(exc) from exc


class Conflict(APIException):
    """A write based on a version that is no longer the current one."""

    status_code = 409
    default_code = "conflict"


class RequestTooLarge(APIException):
    status_code = 413
    default_detail = "the request body is too large"
    default_code = "too_large"


class LimitedJSONParser(JSONParser):
    """DRF's JSON parser with a size limit, a depth limit and no NUL in any string."""

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        limit = body_limit()
        request = (parser_context or {}).get("request")
        declared = content_length(request) if request is not None else None
        if declared is not None and declared > limit:
            raise RequestTooLarge(too_large_message(limit, declared))
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise RequestTooLarge(too_large_message(limit))
        try:
            depth = settings.INPUT_LIMITS.json_depth
            return load_json(raw, what="the request body", max_bytes=limit, max_depth=depth)
        except InputRefused as exc:
            if exc.status == 413:
                raise RequestTooLarge(exc.message) from None
            where = "" if exc.path == "$" else f" at {exc.path}"
            raise ParseError(f"{exc.message}{where}") from None


def _answer(request: HttpRequest, message: str, status: int) -> HttpResponse:
    """The message as JSON for the API, as text for a page (never a template)."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message}, status=status)
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


class RequestGuardMiddleware:
    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # a body larger than any upload may be is refused before a byte of it is read
        # (Django would spool its files to disk first)
        declared, cap = content_length(request), settings.INPUT_LIMITS.body_bytes
        if declared is not None and declared > cap:
            return _answer(request, too_large_message(cap, declared, BODY_UPLOADS), 413)
        for key, values in request.GET.lists():
            if any("\x00" in v for v in (key, *values)):
                name = key.replace("\x00", "\\0")
                return _answer(
                    request, f"the parameter {name!r} contains a NUL character", status=400
                )
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> Any:
        if isinstance(exception, OperationalError) and any(
            marker in str(exception).lower() for marker in TRANSIENT
        ):
            logger.warning("database busy on %s: %s", request.path, exception)
            response = _answer(
                request, "the database is busy with other changes; try again in a moment", 503
            )
            response["Retry-After"] = "2"
            return response
        return None


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """``handler404``: an API URL that matches no route answers in JSON, as every other
    API error does (a page for everything else)."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "no such object"}, status=404)
    return defaults.page_not_found(request, exception)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """``handler400``: an oversized or overfull request gets a message naming the limit."""
    if isinstance(exception, RequestDataTooBig):
        return _answer(request, too_large_message(body_limit(), content_length(request)), 413)
    if isinstance(exception, TooManyFieldsSent | TooManyFilesSent):
        return _answer(request, f"the request has too many fields or files ({exception})", 400)
    return defaults.bad_request(request, exception)  # type: ignore[arg-type]
