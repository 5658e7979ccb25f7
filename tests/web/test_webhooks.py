"""Outgoing webhooks: a real HTTP server on 127.0.0.1 receives the signed deliveries
(sent by the real Celery task, in-process), retries and the delivery log, the page's
permissions, escaping and refusals."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from audit import services
from audit.models import (
    DeliveryStatus,
    Run,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
)
from audit.services.webhooks import run_event

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
SECRET = "a-receiver-secret-0123456789"
# a token trace of refund-mini q1 that skips most of the procedure: non-clean
TAU = [
    {"name": "lookup_order", "kwargs": {"order_id": "1042"}},
    {"name": "respond", "kwargs": {"content": "Your refund is approved."}},
]


class Receiver:
    """An HTTP server answering each POST with the next scripted status (then 200),
    keeping every request's headers and raw body."""

    def __init__(self) -> None:
        self.statuses: list[int] = []
        self.requests: list[tuple[Message, bytes]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                owner.requests.append((self.headers, body))  # case-insensitive names
                status = owner.statuses.pop(0) if owner.statuses else 200
                self.send_response(status)
                if status in (301, 302, 307):
                    self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        """Stop listening; stopping twice is harmless (a test may stop it first)."""
        if self.thread.is_alive():
            self.server.shutdown()
            self.server.server_close()


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _loopback_allowed(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    settings.WEBHOOK_TIMEOUT_SECONDS = 2
    settings.WEBHOOK_MAX_ATTEMPTS = 4


def _endpoint(project, users, url, events=("run.violation",)) -> WebhookEndpoint:
    endpoint, _ = services.webhook_create(
        project=project,
        user=users["admin"],
        name="alerts",
        url=url,
        events=list(events),
        secret=SECRET,
    )
    return endpoint


def _violating_run(audited, users, capture) -> Run:
    run, _ = services.run_create(
        contract=audited, user=users["annotator"], query_key="q1", kind="tau_bench", data=TAU
    )
    with capture(execute=True):
        run = services.run_execute(run_id=run.pk)
    assert run.verdict == "non_clean"
    return run


def _verify(headers: Message, body: bytes, secret: str = SECRET) -> bool:
    """What a receiver does (docs/connect.md): HMAC of "<timestamp>." + raw body."""
    timestamp = headers["X-ContractEval-Timestamp"]
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return hmac.compare_digest(
        "sha256=" + expected.hexdigest(), headers["X-ContractEval-Signature"]
    )


def test_a_violation_reaches_the_endpoint_signed_with_the_run_in_the_body(
    project, users, audited, receiver, django_capture_on_commit_callbacks
):
    _endpoint(project, users, receiver.url)
    run = _violating_run(audited, users, django_capture_on_commit_callbacks)
    assert len(receiver.requests) == 1
    headers, body = receiver.requests[0]
    assert _verify(headers, body)
    assert not _verify(headers, body + b" ")
    assert headers["X-ContractEval-Event"] == "run.violation"
    payload = json.loads(body)
    assert headers["X-ContractEval-Delivery"] == payload["delivery"]
    assert payload["event"] == "run.violation"
    assert payload["project"] == {"slug": "tests", "name": "Tests"}
    assert payload["contract"]["key"] == "refund-mini" and payload["query"] == "q1"
    assert payload["run"]["id"] == run.pk and payload["run"]["verdict"] == "non_clean"
    assert payload["run"]["url"].endswith(f"/r/{run.pk}/")
    assert payload["run"]["failure_count"] == run.failure_count > 0
    assert sum(payload["run"]["failures"].values()) == run.failure_count
    assert payload["text"].startswith("Violation in Tests: refund-mini v1, query q1")
    assert set(payload) == {
        "event", "text", "project", "contract", "query", "run", "delivery", "occurred_at"
    }  # fmt: skip
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == DeliveryStatus.DELIVERED and delivery.run_id == run.pk
    # the same run finishing again (a retried task) does not send a second event
    with django_capture_on_commit_callbacks(execute=True):
        assert services.run_notify(run=run) == []
    assert len(receiver.requests) == 1


def test_an_endpoint_not_subscribed_to_the_event_receives_nothing(
    project, users, audited, receiver, django_capture_on_commit_callbacks
):
    _endpoint(project, users, receiver.url, events=("run.needs_review",))
    _violating_run(audited, users, django_capture_on_commit_callbacks)
    assert receiver.requests == [] and not WebhookDelivery.objects.exists()


def test_a_500_then_a_200_is_retried_by_the_task_and_logged_twice(
    project, users, audited, receiver, login, django_capture_on_commit_callbacks
):
    receiver.statuses = [500]
    _endpoint(project, users, receiver.url)
    _violating_run(audited, users, django_capture_on_commit_callbacks)
    attempts = list(WebhookAttempt.objects.order_by("number"))
    assert [(a.number, a.status_code, a.will_retry) for a in attempts] == [
        (1, 500, True),
        (2, 200, False),
    ]
    assert "500" in attempts[0].error and attempts[1].error == ""
    assert WebhookDelivery.objects.get().status == DeliveryStatus.DELIVERED
    ids = {h["X-ContractEval-Delivery"] for h, _ in receiver.requests}
    assert len(receiver.requests) == 2 and len(ids) == 1  # one delivery id: idempotent
    page = login("admin").get("/p/tests/webhooks/").content.decode()
    assert page.count('data-testid="webhook-attempt"') == 2
    assert '<td data-testid="webhook-last"><span class="badge">delivered</span>' in page


@pytest.mark.parametrize("status", [400, 401, 404, 410, 422, 302])
def test_a_4xx_or_a_redirect_is_final_after_one_attempt(
    project, users, audited, receiver, status, django_capture_on_commit_callbacks
):
    receiver.statuses = [status]
    _endpoint(project, users, receiver.url)
    _violating_run(audited, users, django_capture_on_commit_callbacks)
    attempt = WebhookAttempt.objects.get()
    assert attempt.status_code == status and not attempt.will_retry
    assert WebhookDelivery.objects.get().status == DeliveryStatus.FAILED
    assert len(receiver.requests) == 1


@pytest.mark.parametrize("status", [408, 429, 503])
def test_408_429_and_5xx_are_retried(
    project, users, audited, receiver, status, django_capture_on_commit_callbacks
):
    receiver.statuses = [status, status]
    _endpoint(project, users, receiver.url)
    _violating_run(audited, users, django_capture_on_commit_callbacks)
    codes = list(WebhookAttempt.objects.order_by("number").values_list("status_code", flat=True))
    assert codes == [status, status, 200]


def test_attempts_stop_at_the_limit_and_a_dead_endpoint_is_logged(
    project, users, audited, receiver, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_MAX_ATTEMPTS = 3
    url = receiver.url
    receiver.stop()  # nothing listens there any more: connection refused
    _endpoint(project, users, url)
    _violating_run(audited, users, django_capture_on_commit_callbacks)
    attempts = list(WebhookAttempt.objects.order_by("number"))
    assert [a.number for a in attempts] == [1, 2, 3]
    assert all(a.status_code is None and "connection failed" in a.error for a in attempts)
    assert [a.will_retry for a in attempts] == [True, True, False]
    assert WebhookDelivery.objects.get().status == DeliveryStatus.FAILED


def test_the_page_creates_an_endpoint_shows_its_secret_once_and_sends_a_test_event(
    login, project, receiver, django_capture_on_commit_callbacks
):
    client = login("admin")
    form = {"name": "chat", "url": receiver.url, "events": ["run.violation", "run.needs_review"]}
    response = client.post("/p/tests/webhooks/new/", form, **HTMX)
    assert response.status_code == 200
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret.startswith("whsec_") and endpoint.secret in response.content.decode()
    assert endpoint.events == ["run.violation", "run.needs_review"]
    assert endpoint.secret not in client.get("/p/tests/webhooks/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/p/tests/webhooks/{endpoint.pk}/test/", **HTMX)
    assert response.status_code == 200
    headers, body = receiver.requests[0]
    assert _verify(headers, body, endpoint.secret)
    assert json.loads(body)["event"] == "test" and "text" in json.loads(body)
    page = client.get("/p/tests/webhooks/").content.decode()
    assert page.count('data-testid="webhook-attempt"') == 1
    response = client.post(f"/p/tests/webhooks/{endpoint.pk}/delete/")
    assert response.status_code == 302 and not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("ftp://example.com/hook", "only http:// and https://"),
        ("javascript:alert(1)", "only http:// and https://"),
        ("not a url", "only http:// and https://"),
        ("https:///no-host", "the URL has no host"),
        ("https://user:pw@example.com/hook", "no user name or password"),
        ("http://127.0.0.1:8000/hook", "private, loopback or link-local"),
        ("http://[::1]/hook", "private, loopback or link-local"),
        ("http://169.254.169.254/latest/meta-data", "private, loopback or link-local"),
        ("http://localhost/hook", "private, loopback or link-local"),
        ("http://2130706433/hook", "private, loopback or link-local"),
        ("http://0x7f.1/hook", "private, loopback or link-local"),
        ("http://[::ffff:127.0.0.1]/hook", "private, loopback or link-local"),
        ("http://10.1.2.3/hook", "private, loopback or link-local"),
    ],
)
def test_a_bad_url_is_refused_with_a_clear_error_and_nothing_stored(
    login, project, settings, url, error
):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    form = {"name": "x", "url": url, "events": ["run.violation"]}
    response = login("admin").post("/p/tests/webhooks/new/", form)
    assert response.status_code == 400
    assert error in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize(
    ("form", "error"),
    [
        ({"name": " ", "url": "https://example.com/h", "events": ["run.violation"]}, "required"),
        ({"name": "x", "url": "https://example.com/h", "events": ["run.nope"]}, "valid choice"),
        ({"name": "x", "url": "https://example.com/h"}, "required"),
        (
            {
                "name": "x",
                "url": "https://example.com/h",
                "events": ["run.violation"],
                "secret": "short",
            },
            "16 to 200 printable characters",
        ),
    ],
)
def test_a_bad_name_event_or_secret_is_refused(login, project, form, error):
    response = login("admin").post("/p/tests/webhooks/new/", form, **HTMX)
    assert response.status_code == 422
    assert error in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


def test_a_private_address_is_refused_at_delivery_when_not_allowed(
    project, users, audited, receiver, settings, django_capture_on_commit_callbacks
):
    _endpoint(project, users, receiver.url)
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    _violating_run(audited, users, django_capture_on_commit_callbacks)
    attempt = WebhookAttempt.objects.get()
    assert "loopback" in attempt.error and not attempt.will_retry
    assert receiver.requests == []


def test_only_admins_see_the_page_and_outsiders_get_404(login, project, users):
    endpoint = _endpoint(project, users, "https://example.com/hook")
    urls = [
        ("get", "/p/tests/webhooks/"),
        ("post", "/p/tests/webhooks/new/"),
        ("post", f"/p/tests/webhooks/{endpoint.pk}/delete/"),
        ("post", f"/p/tests/webhooks/{endpoint.pk}/test/"),
        ("post", f"/p/tests/webhooks/{endpoint.pk}/secret/"),
    ]
    form = {"name": "x", "url": "https://example.com/h", "events": ["run.violation"]}
    for role, status in (("annotator", 403), ("reviewer", 403), ("outsider", 404)):
        client = login(role)
        for method, url in urls:
            response = getattr(client, method)(url, form if method == "post" else None)
            assert response.status_code == status, (role, url)
    assert list(WebhookEndpoint.objects.all()) == [endpoint]
    assert WebhookEndpoint.objects.get().secret == SECRET
    assert not WebhookDelivery.objects.exists()
    assert "Webhooks</a>" not in login("reviewer").get("/p/tests/ingest/").content.decode()
    assert "Webhooks</a>" in login("admin").get("/p/tests/ingest/").content.decode()


def test_names_and_urls_come_back_escaped(login, project):
    client = login("admin")
    name = '<script>alert("x")</script>'
    url = 'https://example.com/h?q="><svg/onload=alert(3)>'
    response = client.post(
        "/p/tests/webhooks/new/", {"name": name, "url": url, "events": ["run.violation"]}
    )
    assert response.status_code == 200
    page = client.get("/p/tests/webhooks/").content.decode()
    assert name not in page and "<svg/onload" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page


def test_which_event_a_finished_run_raises():
    def event(**fields):
        return run_event(Run(status=fields.pop("status", "done"), **fields))

    assert event(verdict="non_clean") == "run.violation"
    assert event(verdict="clean") is None
    assert event(verdict="non_clean", assessment="violation") == "run.violation"
    assert event(verdict="non_clean", assessment="needs_review") == "run.needs_review"
    assert event(verdict="non_clean", assessment="clean") is None
    assert event(status="failed", verdict="") is None


def _finished_batch(project, capture, clean_reads: int, *, mode: str = "token"):
    """A suite batch of ten cases, the first ``clean_reads`` read clean, scored."""
    from audit.models import Batch, BatchChunk
    from audit.services.batches import batch_finalize

    batch = Batch.objects.create(
        project=project, source="upload", name="nightly.zip", mode=mode, total=10, status="running"
    )
    rows = [[f"c{i}", True, None, None, "non_clean", [], None] for i in range(10)]
    for row in rows[:clean_reads]:
        row[4] = "clean"
    BatchChunk.objects.create(
        batch=batch, index=0, cases=[], total=10, done=10, status="done", results=rows
    )
    with capture(execute=True):
        return batch_finalize(batch_id=batch.pk)


def test_a_batch_reading_fewer_cases_clean_than_the_suites_last_one_is_a_regression(
    project, users, receiver, django_capture_on_commit_callbacks
):
    _endpoint(project, users, receiver.url, events=("batch.regression",))
    capture = django_capture_on_commit_callbacks
    first = _finished_batch(project, capture, 8)
    assert first.status == "done" and receiver.requests == []  # nothing to compare with
    _finished_batch(project, capture, 8, mode="semantic")  # another mode: another suite
    assert receiver.requests == []
    second = _finished_batch(project, capture, 6)
    assert len(receiver.requests) == 1
    headers, body = receiver.requests[0]
    assert _verify(headers, body) and headers["X-ContractEval-Event"] == "batch.regression"
    payload = json.loads(body)
    assert payload["batch"]["id"] == second.pk and payload["previous"]["id"] == first.pk
    assert (payload["batch"]["clean_rate"], payload["previous"]["clean_rate"]) == (0.6, 0.8)
    assert payload["batch"]["url"].endswith(f"/b/{second.pk}/")
    assert "read 60% of its 10 cases clean, down from 80%" in payload["text"]
    _finished_batch(project, capture, 6)  # no drop from the last batch
    _finished_batch(project, capture, 7)  # a rise
    assert len(receiver.requests) == 1


def test_a_webhook_that_cannot_be_queued_never_fails_the_run(
    project, users, audited, receiver, monkeypatch, django_capture_on_commit_callbacks
):
    from audit.services import webhooks

    def broken(*args, **kwargs):
        raise RuntimeError("a bug in the body")

    monkeypatch.setattr(webhooks, "run_body", broken)
    _endpoint(project, users, receiver.url)
    run = _violating_run(audited, users, django_capture_on_commit_callbacks)
    run.refresh_from_db()
    assert run.status == "done" and run.error == ""
    assert receiver.requests == [] and not WebhookDelivery.objects.exists()


def test_a_delivery_whose_first_attempt_never_came_is_queued_again_by_the_sweep(
    project, users, receiver, settings
):
    from datetime import timedelta

    from django.utils import timezone

    from audit.tasks import sweep_unsent_webhooks

    endpoint = _endpoint(project, users, receiver.url)
    # queued while the broker was away: stored, never sent
    old = services.webhook_send_test(endpoint=endpoint, user=users["admin"])
    fresh = services.webhook_send_test(endpoint=endpoint, user=users["admin"])
    stale = timezone.now() - timedelta(seconds=settings.JOB_STALE_AFTER + 1)
    WebhookDelivery.objects.filter(pk=old.pk).update(created_at=stale)
    assert sweep_unsent_webhooks() == {"requeued": 1}
    old.refresh_from_db()
    fresh.refresh_from_db()
    assert (old.status, fresh.status) == (DeliveryStatus.DELIVERED, DeliveryStatus.PENDING)
    assert len(receiver.requests) == 1
    assert sweep_unsent_webhooks() == {"requeued": 0}


def test_a_host_that_does_not_resolve_is_retried_as_a_failed_connection(
    project, users, audited, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    settings.WEBHOOK_MAX_ATTEMPTS = 2
    _endpoint(project, users, "https://hooks.invalid/ce")  # .invalid never resolves
    _violating_run(audited, users, django_capture_on_commit_callbacks)
    attempts = list(WebhookAttempt.objects.order_by("number"))
    assert [(a.number, a.will_retry) for a in attempts] == [(1, True), (2, False)]
    assert all("does not resolve" in a.error for a in attempts)


def test_the_log_polls_while_a_delivery_is_pending_and_answers_its_poll_alone(
    login, project, users, receiver
):
    client = login("admin")
    endpoint = _endpoint(project, users, receiver.url)
    assert 'hx-trigger="every 2s"' not in client.get("/p/tests/webhooks/").content.decode()
    pending = services.webhook_send_test(endpoint=endpoint, user=users["admin"])  # not sent
    page = client.get("/p/tests/webhooks/").content.decode()
    assert 'hx-get="/p/tests/webhooks/" hx-trigger="every 2s"' in page
    poll = client.get("/p/tests/webhooks/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="webhook-log")
    body = poll.content.decode()
    assert body.lstrip().startswith('<section class="card" id="webhook-log"')
    assert "webhook-endpoints" not in body
    from audit.tasks import deliver_webhook

    deliver_webhook.delay(pending.pk)
    poll = client.get("/p/tests/webhooks/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="webhook-log")
    body = poll.content.decode()
    assert 'hx-trigger="every 2s"' not in body and body.count('data-testid="webhook-attempt"') == 1


def test_a_new_secret_is_shown_once_and_signs_from_then_on(
    login, project, users, receiver, django_capture_on_commit_callbacks
):
    client = login("admin")
    endpoint = _endpoint(project, users, receiver.url)
    response = client.post(f"/p/tests/webhooks/{endpoint.pk}/secret/", **HTMX)
    assert response.status_code == 200
    endpoint.refresh_from_db()
    assert endpoint.secret != SECRET and endpoint.secret in response.content.decode()
    assert endpoint.secret not in client.get("/p/tests/webhooks/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/p/tests/webhooks/{endpoint.pk}/test/", **HTMX)
    headers, body = receiver.requests[0]
    assert _verify(headers, body, endpoint.secret) and not _verify(headers, body, SECRET)
