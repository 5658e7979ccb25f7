"""``POST /v1/traces``: OTLP/HTTP trace exports from an agent, authenticated by a
project's ingest token (``Authorization: Bearer …``).

Each refusal says why, in JSON: 401 without a valid token, 429 past
``OTLP_REQUESTS_PER_MINUTE`` for the token, 415 for another content type or encoding,
413 past ``OTLP_MAX_BODY_BYTES`` (compressed or not), 400 for a body that is not an
export. An accepted export answers as OTLP asks: an empty export response in the
request's encoding. Nothing of a refused request is stored.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from .. import otlp, services
from ..guards import content_length
from ..models import IngestToken
from ..selectors.ingest import active_token


@csrf_exempt
def traces(request):
    try:
        token = _token(request)
        if request.method != "POST":
            return HttpResponse(status=405, headers={"Allow": "POST"})
        _throttle(token)
        media = otlp.media_type(request.headers.get("Content-Type"))
        body = _body(request, settings.OTLP_MAX_BODY_BYTES)
        message = otlp.decode(body, media)
        spans = otlp.spans_by_trace(message)
    except otlp.OtlpRefused as exc:
        return _refusal(exc)
    try:
        services.spans_ingest(token=token, traces=spans)
    except services.ServiceError as exc:
        return _refusal(otlp.OtlpRefused(exc.status or 400, str(exc)))
    return HttpResponse(otlp.success_body(media), content_type=media)


def _token(request) -> IngestToken:
    scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
    token = active_token(secret.strip()) if scheme.lower() == "bearer" else None
    if token is None:
        raise otlp.OtlpRefused(401, "send a valid ingest token: Authorization: Bearer <token>")
    return token


def _throttle(token: IngestToken) -> None:
    """At most ``OTLP_REQUESTS_PER_MINUTE`` requests per token in each clock minute."""
    key = f"otlp-rate:{token.pk}:{int(time.time() // 60)}"
    if cache.add(key, 1, timeout=120):
        return
    try:
        count = cache.incr(key)
    except ValueError:  # expired between the two calls
        cache.set(key, 1, timeout=120)
        return
    if count > settings.OTLP_REQUESTS_PER_MINUTE:
        raise otlp.OtlpRefused(
            429,
            f"more than {settings.OTLP_REQUESTS_PER_MINUTE} requests this minute for this"
            " token (OTLP_REQUESTS_PER_MINUTE); retry later",
        )


def _body(request, limit: int) -> bytes:
    """The body, decompressed, refused past ``limit`` before it is read when its
    declared length says so."""
    declared = content_length(request)
    if declared is not None and declared > limit:
        raise otlp.too_large(limit)
    raw = request.read(limit + 1)
    if len(raw) > limit:
        raise otlp.too_large(limit)
    return otlp.unpack(raw, request.headers.get("Content-Encoding"), limit)


def _refusal(exc: otlp.OtlpRefused) -> JsonResponse:
    response = JsonResponse({"code": exc.status, "message": exc.message}, status=exc.status)
    if exc.status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="otlp"'
    elif exc.status == 429:
        response["Retry-After"] = str(60 - int(time.time()) % 60)
    return response
