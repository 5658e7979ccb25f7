"""Delivering one webhook event: sign the body, POST it, record the attempt.

The signature scheme (docs/connect.md, "Webhooks"): the body is the delivery's payload
as compact JSON; ``X-ContractEval-Timestamp`` is the Unix time of the attempt in
seconds; ``X-ContractEval-Signature`` is ``sha256=`` and the hex HMAC-SHA256, keyed with
the endpoint's secret, of ``<timestamp>.<raw body>``. Signing the timestamp with the
body lets a receiver refuse an old request replayed as it was (it checks the timestamp
is recent); ``X-ContractEval-Delivery`` is the same on every attempt of one event, so a
receiver that saw it already drops the repeat.

Every attempt is a :class:`WebhookAttempt` row. A connection error, a timeout, a 5xx,
a 408 or a 429 raises :class:`WebhookRetry` (the task tries again with backoff) until
``WEBHOOK_MAX_ATTEMPTS``; any other answer is final: 2xx delivered, else failed (a
redirect is not followed, since it could lead to an address the URL check refused).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import http.client
import ipaddress
import json
import logging
import socket
import time
import urllib.error
import urllib.request
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .. import enqueue
from ..models import DeliveryStatus, WebhookAttempt, WebhookDelivery

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-ContractEval-Signature"
TIMESTAMP_HEADER = "X-ContractEval-Timestamp"
DELIVERY_HEADER = "X-ContractEval-Delivery"
EVENT_HEADER = "X-ContractEval-Event"
RETRIED_STATUSES = frozenset({408, 429})
USER_AGENT = "ContractEval-Webhooks/1"


class WebhookRetry(Exception):
    """A transient failure of one attempt: the task sends the delivery again later."""


def body_bytes(payload: dict[str, Any]) -> bytes:
    """The exact bytes sent (and signed) for ``payload``."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value: ``sha256=<hex HMAC of "<timestamp>." + body>``."""
    mac = hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode() + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def url_problem(url: str, *, resolve: bool) -> str | None:
    """Why ``url`` may not receive webhooks, or None.

    Only http and https; no credentials in the URL (the signature authenticates). Unless
    ``WEBHOOK_ALLOW_PRIVATE_ADDRESSES``, the host must not be a private, loopback,
    link-local or reserved address: a literal address or ``localhost`` always checked,
    a name only when ``resolve`` (at delivery, so a name that later points inside is
    still refused then). A name that does not resolve raises OSError (at delivery:
    retried, as a connection that failed)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "this is not a URL"
    if parts.scheme not in ("http", "https"):
        return "only http:// and https:// URLs receive webhooks"
    host = parts.hostname
    if not host:
        return "the URL has no host"
    if parts.username or parts.password:
        return "put no user name or password in the URL: deliveries are signed instead"
    if settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES:
        return None
    for address in _addresses(host, port, resolve=resolve):
        if not address.is_global:
            return (
                f"{host} is a private, loopback or link-local address ({address}); this"
                " site sends webhooks to public addresses only (WEBHOOK_ALLOW_PRIVATE_ADDRESSES)"
            )
    return None


def _addresses(host: str, port: int | None, *, resolve: bool) -> list[Any]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return [ipaddress.ip_address("127.0.0.1")]
    try:  # the C library's other spellings of IPv4: 127.1, 0x7f.1, 2130706433
        return [ipaddress.ip_address(socket.inet_aton(host))]
    except OSError:
        pass
    if not resolve:
        return []
    infos = socket.getaddrinfo(host, port or 443, proto=socket.IPPROTO_TCP)
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A 3xx is the answer: following it could reach an address the check refused."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


@functools.cache
def _opener() -> urllib.request.OpenerDirector:
    """The one opener of every delivery, built on first use: building it loads the
    system's CA certificates, which the web app's start-up does not need."""
    return urllib.request.build_opener(_NoRedirect)


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int | None, str]:
    """POST ``body``: ``(status code, error)``; no status code when nothing answered."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with _opener().open(request, timeout=settings.WEBHOOK_TIMEOUT_SECONDS) as response:
            response.read(4096)
            return response.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, f"HTTP {exc.code} {exc.reason}"[:500]
    except urllib.error.URLError as exc:
        return None, f"connection failed: {exc.reason}"[:500]
    except TimeoutError:
        return None, f"no answer within {settings.WEBHOOK_TIMEOUT_SECONDS} s"
    except (OSError, http.client.HTTPException) as exc:
        return None, f"connection failed: {type(exc).__name__}: {exc}"[:500]


def _claim(delivery_id: int) -> WebhookDelivery | None:
    """The pending delivery with its attempt counted, or None (gone or finished)."""
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(of=("self",))
            .select_related("endpoint")
            .filter(pk=delivery_id)
            .first()
        )
        if delivery is None or delivery.status != DeliveryStatus.PENDING:
            return None
        delivery.attempts += 1
        delivery.save(update_fields=["attempts"])
    return delivery


def _send(delivery: WebhookDelivery) -> tuple[int | None, str, bool]:
    """One POST of ``delivery``: ``(status code, error, retryable)``."""
    endpoint = delivery.endpoint
    try:
        problem = url_problem(endpoint.url, resolve=True)
    except OSError as exc:
        return None, f"connection failed: the host does not resolve ({exc})"[:500], True
    if problem:
        return None, problem, False
    body = body_bytes(delivery.payload)
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        EVENT_HEADER: delivery.event,
        DELIVERY_HEADER: str(delivery.uid),
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: sign(endpoint.secret, timestamp, body),
    }
    status, error = post(endpoint.url, body, headers)
    retryable = status is None or status >= 500 or status in RETRIED_STATUSES
    return status, error, retryable


def webhook_deliver(*, delivery_id: int) -> WebhookAttempt | None:
    """Make one attempt at delivery ``delivery_id`` and record it (called by the task).

    Raises :class:`WebhookRetry` after a transient failure while attempts remain; a
    finished or deleted delivery is left alone (None)."""
    delivery = _claim(delivery_id)
    if delivery is None:
        return None
    started = time.monotonic()
    status, error, retryable = _send(delivery)
    duration = int((time.monotonic() - started) * 1000)
    ok = status is not None and 200 <= status < 300
    will_retry = not ok and retryable and delivery.attempts < settings.WEBHOOK_MAX_ATTEMPTS
    with transaction.atomic():
        attempt = WebhookAttempt.objects.create(
            delivery=delivery,
            number=delivery.attempts,
            status_code=status,
            duration_ms=duration,
            error="" if ok else error or f"HTTP {status}",
            will_retry=will_retry,
        )
        if not will_retry:
            final = DeliveryStatus.DELIVERED if ok else DeliveryStatus.FAILED
            WebhookDelivery.objects.filter(pk=delivery.pk).update(status=final)
    logger.info(
        "webhook delivery %s attempt %s: %s %s", delivery.uid, attempt.number, status, error
    )
    if will_retry:
        raise WebhookRetry(attempt.error)
    return attempt


def webhooks_sweep_unsent() -> int:
    """Queue again the deliveries never attempted for ``JOB_STALE_AFTER`` seconds (the
    broker was unreachable when their event committed); how many. One already waiting
    in a long queue may then be attempted twice: the receiver drops the repeat by its
    delivery id, and the attempts stay within ``WEBHOOK_MAX_ATTEMPTS``."""
    before = timezone.now() - timedelta(seconds=settings.JOB_STALE_AFTER)
    unsent = WebhookDelivery.objects.filter(
        status=DeliveryStatus.PENDING, attempts=0, created_at__lt=before
    )
    ids = list(unsent.order_by("pk").values_list("pk", flat=True)[:500])
    for pk in ids:
        enqueue.enqueue_webhook(pk)
    if ids:
        logger.warning("%s unsent webhook deliveries queued again", len(ids))
    return len(ids)
