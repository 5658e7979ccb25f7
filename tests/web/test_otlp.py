"""Live ingestion over OTLP/HTTP: ``POST /v1/traces`` (auth, content types, gzip,
limits, idempotency), routing to runs or to the queue, the quiet sweep, and the
permissions of the token and rule pages."""

from __future__ import annotations

import base64
import gzip
import json
from datetime import timedelta

import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from audit import services
from audit.models import IngestedTrace, IngestToken, RoutingRule, Run, TraceStatus
from audit.selectors.ingest import token_digest

from .otlp_agent import CARELESS_REFUND, QUERY_Q1, provider, run_agent
from .sweep import row_counts

pytestmark = pytest.mark.django_db
URL = "/v1/traces"
PROTOBUF = "application/x-protobuf"


def _spans(script=None, **agent):
    """The finished spans of one scripted agent run (the SDK's own span objects)."""
    exporter = InMemorySpanExporter()
    tp = provider(exporter, service=agent.pop("service", "refund-service"))
    run_agent(tp, **({"script": script} if script else {}), **agent)
    return list(exporter.get_finished_spans())


def _protobuf(spans) -> bytes:
    return encode_spans(spans).SerializeToString()


def _json(spans) -> bytes:
    """OTLP/JSON as the spec writes it: hex trace and span ids."""
    data = json_format.MessageToDict(encode_spans(spans))

    def hexed(node):
        if isinstance(node, list):
            return [hexed(x) for x in node]
        if isinstance(node, dict):
            return {
                k: base64.b64decode(v).hex()
                if k in ("traceId", "spanId", "parentSpanId")
                else hexed(v)
                for k, v in node.items()
            }
        return node

    return json.dumps(hexed(data)).encode()


@pytest.fixture
def ingest(project, users, audited):
    """An ingest token of the project and a rule routing refund-bot to refund-mini q1."""
    _, secret = services.ingest_token_create(project=project, user=users["admin"], name="bot")
    services.routing_rule_create(
        project=project,
        user=users["admin"],
        attribute="gen_ai.agent.name",
        value="refund-bot",
        contract_key="refund-mini",
        query_value="q1",
    )
    return secret


@pytest.fixture
def export(client, ingest, django_capture_on_commit_callbacks):
    """POST a body to /v1/traces with the token, its tasks run as the request commits."""

    def send(body: bytes, media: str = PROTOBUF, token: str | None = None, **headers):
        auth = {"HTTP_AUTHORIZATION": f"Bearer {token or ingest}"} if token != "" else {}
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(URL, data=body, content_type=media, **auth, **headers)

    return send


# ---------------------------------------------------------------- the endpoint


@pytest.mark.parametrize("token", ["", "ce_wrong", "Basic abc"])
def test_a_missing_or_wrong_token_is_401_and_stores_nothing(export, token):
    before = row_counts()
    response = export(_protobuf(_spans()), token=token)
    assert response.status_code == 401
    assert "Bearer" in response["WWW-Authenticate"] and "ingest token" in response.json()["message"]
    assert row_counts() == before


def test_a_revoked_token_is_401(export, ingest, users):
    token = IngestToken.objects.get()
    services.ingest_token_revoke(token=token, user=users["admin"])
    assert export(_protobuf(_spans())).status_code == 401


def test_only_the_digest_of_a_token_is_stored(ingest):
    token = IngestToken.objects.get()
    assert token.digest == token_digest(ingest) and ingest not in token.digest
    assert ingest.startswith(token.prefix) and len(token.prefix) < len(ingest) // 2


def test_protobuf_is_accepted_and_answered_in_protobuf(export):
    response = export(_protobuf(_spans()))
    assert response.status_code == 200 and response["Content-Type"] == PROTOBUF
    trace = IngestedTrace.objects.get()
    assert trace.status == TraceStatus.RUN and trace.run.status == "done"


def test_json_with_hex_ids_is_accepted_and_keeps_the_trace_id(export):
    spans = _spans()
    response = export(_json(spans), media="application/json; charset=utf-8")
    assert response.status_code == 200 and response.json() == {}
    trace = IngestedTrace.objects.get()
    assert trace.trace_id == format(spans[0].context.trace_id, "032x")
    assert trace.run is not None


def test_gzip_bodies_are_accepted_in_both_encodings(export):
    assert (
        export(gzip.compress(_protobuf(_spans())), HTTP_CONTENT_ENCODING="gzip").status_code == 200
    )
    body = gzip.compress(_json(_spans()))
    response = export(body, media="application/json", HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 200
    assert IngestedTrace.objects.filter(status=TraceStatus.RUN).count() == 2


@pytest.mark.parametrize(
    ("media", "headers", "status", "says"),
    [
        ("text/plain", {}, 415, "unsupported Content-Type"),
        ("application/grpc", {}, 415, "application/x-protobuf"),
        (PROTOBUF, {"HTTP_CONTENT_ENCODING": "br"}, 415, "Content-Encoding"),
    ],
)
def test_other_content_types_and_encodings_are_415(export, media, headers, status, says):
    before = row_counts()
    response = export(_protobuf(_spans()), media=media, **headers)
    assert response.status_code == status and says in response.json()["message"]
    assert row_counts() == before


@pytest.mark.parametrize(
    ("body", "media", "headers", "says"),
    [
        (b"\xff\xff\xff not protobuf", PROTOBUF, {}, "not an OTLP protobuf export"),
        (b"[1, 2]", "application/json", {}, "expected an object"),
        (b"{not json", "application/json", {}, "not JSON"),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz", "spanId": "01"}]}]}]}',
            "application/json",
            {},
            "is not hex",
        ),
        (b"\x1f\x8b\x08 broken", PROTOBUF, {"HTTP_CONTENT_ENCODING": "gzip"}, "not valid gzip"),
    ],
)
def test_a_body_that_is_not_an_export_is_400_naming_why(export, body, media, headers, says):
    before = row_counts()
    response = export(body, media=media, **headers)
    assert response.status_code == 400 and says in response.json()["message"]
    assert row_counts() == before


def test_a_body_past_the_limit_is_413_naming_the_limit(export, settings):
    settings.OTLP_MAX_BODY_BYTES = 1000
    before = row_counts()
    response = export(_protobuf(_spans()))
    assert response.status_code == 413
    assert "1,000 bytes (OTLP_MAX_BODY_BYTES)" in response.json()["message"]
    # a small gzip body that inflates past the limit is refused as what it is
    bomb = gzip.compress(b"\x00" * 50_000)
    assert len(bomb) < 1000
    response = export(bomb, HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 413 and "OTLP_MAX_BODY_BYTES" in response.json()["message"]
    assert row_counts() == before


def test_requests_past_the_rate_are_429_with_retry_after(export, settings):
    settings.OTLP_REQUESTS_PER_MINUTE = 2
    body = _protobuf(_spans())
    assert [export(body).status_code for _ in range(2)] == [200, 200]
    response = export(body)
    assert response.status_code == 429 and "OTLP_REQUESTS_PER_MINUTE" in response.json()["message"]
    assert 0 < int(response["Retry-After"]) <= 60


def test_a_get_with_a_token_is_405_and_without_one_401(client, ingest):
    assert client.get(URL).status_code == 401
    response = client.get(URL, HTTP_AUTHORIZATION=f"Bearer {ingest}")
    assert response.status_code == 405


# ---------------------------------------------------------------- idempotency


def test_the_same_export_twice_is_one_trace_and_one_run(export):
    body = _protobuf(_spans())
    assert export(body).status_code == 200
    assert export(body).status_code == 200
    trace = IngestedTrace.objects.get()
    assert Run.objects.count() == 1 and trace.run_id == Run.objects.get().pk


def test_spans_in_several_requests_make_one_trace_run_when_the_root_arrives(export):
    spans = _spans()
    root = [s for s in spans if s.parent is None]
    children = [s for s in spans if s.parent is not None]
    half = len(children) // 2
    export(_protobuf(children[:half]))
    export(_protobuf(children[half:]))
    trace = IngestedTrace.objects.get()
    assert trace.status == TraceStatus.OPEN and Run.objects.count() == 0
    export(_protobuf(root))
    trace.refresh_from_db()
    assert trace.status == TraceStatus.RUN and len(trace.spans) == len(spans)
    assert "[user] " + QUERY_Q1 in trace.run.observed["source"]["text"]
    export(_protobuf(children[:1]))  # a late retry: stored once, no second run
    assert Run.objects.count() == 1 and len(IngestedTrace.objects.get().spans) == len(spans)


def test_a_trace_whose_root_never_comes_runs_after_the_quiet_period(
    export, settings, django_capture_on_commit_callbacks
):
    settings.OTLP_QUIET_SECONDS = 30
    # the agent's name is on the root span, which never comes: route by the service
    RoutingRule.objects.update(attribute="service.name", value="refund-service")
    export(_protobuf([s for s in _spans() if s.parent is not None]))
    with django_capture_on_commit_callbacks(execute=True):
        assert services.ingested_traces_sweep_quiet() == {"completed": 0}
    IngestedTrace.objects.update(
        last_span_at=IngestedTrace.objects.get().last_span_at - timedelta(seconds=31)
    )
    from audit.tasks import sweep_quiet_traces

    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_quiet_traces.delay().get() == {"completed": 1}
    trace = IngestedTrace.objects.get()
    assert trace.status == TraceStatus.RUN and trace.run.query_key == "q1"


def test_the_sweep_task_is_scheduled():
    from django.conf import settings

    from audit.tasks import sweep_quiet_traces

    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert sweep_quiet_traces.name in tasks


# ---------------------------------------------------------------- routing


def test_a_routed_trace_carries_contract_query_model_and_verdict(export):
    export(_protobuf(_spans(CARELESS_REFUND)))
    trace = IngestedTrace.objects.get()
    run = trace.run
    assert (run.contract.key, run.query_key, run.input_kind) == ("refund-mini", "q1", "otel")
    assert run.model_name == "gpt-test-mini" and trace.agent_name == "refund-bot"
    assert trace.service_name == "refund-service"
    omitted = {f["location"] for f in run.report["failures"] if f["family"] == "omission"}
    assert run.verdict == "non_clean" and {"verify_owner", "check_window"} <= omitted


def test_rules_by_service_name_with_the_query_from_an_attribute_or_the_first_message(
    export, project, users
):
    RoutingRule.objects.all().delete()
    for value, query_from, query_value in (
        ("svc-attr", "attribute", "app.query"),
        ("svc-first", "first_user_message", ""),
    ):
        services.routing_rule_create(
            project=project,
            user=users["admin"],
            attribute="service.name",
            value=value,
            contract_key="refund-mini",
            query_from=query_from,
            query_value=query_value,
        )
    export(_protobuf(_spans(service="svc-attr", extra={"app.query": "q2"})))
    export(_protobuf(_spans(service="svc-first", query=QUERY_Q1.upper())))
    keys = {t.service_name: t.run.query_key for t in IngestedTrace.objects.all()}
    assert keys == {"svc-attr": "q2", "svc-first": "q1"}


def test_an_unrouted_trace_waits_in_the_queue_until_routed_again(
    export, login, project, users, django_capture_on_commit_callbacks
):
    export(_protobuf(_spans(agent="<b>other-bot</b>")))
    trace = IngestedTrace.objects.get()
    assert trace.status == TraceStatus.UNROUTED and Run.objects.count() == 0
    assert "no routing rule matches" in trace.reason and "other-bot" in trace.reason
    page = login("annotator").get(f"/p/{project.slug}/ingest/").content.decode()
    assert trace.trace_id in page and "&lt;b&gt;other-bot&lt;/b&gt;" in page
    assert "<b>other-bot</b>" not in page
    services.routing_rule_create(
        project=project,
        user=users["admin"],
        attribute="gen_ai.agent.name",
        value="<b>other-bot</b>",
        contract_key="refund-mini",
        query_value="q1",
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = login("annotator").post(f"/p/{project.slug}/ingest/traces/{trace.pk}/route/")
    assert response.status_code == 302
    trace.refresh_from_db()
    assert trace.status == TraceStatus.RUN and trace.run.contract.key == "refund-mini"


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ("draft", "has no audited version"),
        ("query", "no span has the attribute"),
        ("unknown-query", "no query of refund-mini"),
    ],
)
def test_a_rule_that_cannot_make_a_run_sends_the_trace_to_the_queue(
    export, project, users, contract, change, says
):
    rule = RoutingRule.objects.get()
    if change == "draft":
        services.contract_import(
            project=project, user=users["admin"], source=_other_contract(contract)
        )
        rule.contract_key = "other-mini"
    elif change == "query":
        rule.query_from, rule.query_value = "attribute", "app.missing"
    else:
        rule.query_from, rule.query_value = "first_user_message", ""
    rule.save()
    export(_protobuf(_spans(query="Something no query says.")))
    trace = IngestedTrace.objects.get()
    assert trace.status == TraceStatus.UNROUTED and says in trace.reason


def _other_contract(contract) -> dict:
    from audit.selectors.contracts import contract_document

    return {**contract_document(contract), "id": "other-mini"}


def test_a_trace_without_gen_ai_spans_is_ignored(export):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    with tp.get_tracer("http").start_as_current_span("GET /health"):
        pass
    assert export(_protobuf(exporter.get_finished_spans())).status_code == 200
    assert IngestedTrace.objects.get().status == TraceStatus.IGNORED


# ---------------------------------------------------------------- the page and its permissions


def test_the_page_shows_tokens_rules_and_the_endpoint_to_members_only(
    login, client, project, ingest
):
    url = f"/p/{project.slug}/ingest/"
    page = login("annotator").get(url)
    assert page.status_code == 200
    body = page.content.decode()
    assert "/v1/traces" in body and "refund-bot" in body and "Create token" not in body
    assert ingest not in body and IngestToken.objects.get().digest not in body
    assert "Create token" in login("admin").get(url).content.decode()
    assert login("outsider").get(url).status_code == 404
    client.logout()
    assert client.get(url).status_code == 302


def test_an_admin_creates_a_token_shown_once(login, project):
    response = login("admin").post(f"/p/{project.slug}/ingest/tokens/", {"name": "agent <x>"})
    assert response.status_code == 200
    token = IngestToken.objects.get(name="agent <x>")
    secret = response.context["new_secret"]
    assert token_digest(secret) == token.digest and secret in response.content.decode()
    assert "agent &lt;x&gt;" in response.content.decode()
    assert secret not in login("admin").get(f"/p/{project.slug}/ingest/").content.decode()


@pytest.mark.parametrize(
    ("role", "path", "data", "status"),
    [
        ("annotator", "tokens/", {"name": "x"}, 403),
        ("reviewer", "tokens/", {"name": "x"}, 403),
        (
            "reviewer",
            "rules/",
            {"attribute": "a", "value": "b", "contract_key": "refund-mini"},
            403,
        ),
        ("reviewer", "tokens/{token}/revoke/", {}, 403),
        ("reviewer", "rules/{rule}/delete/", {}, 403),
        ("outsider", "tokens/{token}/revoke/", {}, 404),
        ("outsider", "rules/{rule}/delete/", {}, 404),
        ("outsider", "traces/{trace}/route/", {}, 404),
    ],
)
def test_changes_need_the_role_and_the_project(
    login, project, ingest, export, role, path, data, status
):
    export(_protobuf(_spans(agent="nobody")))
    ids = {
        "token": IngestToken.objects.get().pk,
        "rule": RoutingRule.objects.get().pk,
        "trace": IngestedTrace.objects.get().pk,
    }
    before = row_counts()
    response = login(role).post(f"/p/{project.slug}/ingest/" + path.format(**ids), data)
    assert response.status_code == status
    assert row_counts() == before
    assert IngestToken.objects.get().revoked_at is None


def test_objects_of_another_project_are_404_through_this_projects_address(
    login, project, users, ingest
):
    from audit.models import Project

    other = Project.objects.get(slug="elsewhere")
    _, _ = services.ingest_token_create(project=other, user=users["outsider"], name="theirs")
    theirs = IngestToken.objects.get(project=other)
    # an admin of "tests" cannot reach it through the address of their own project
    response = login("admin").post(f"/p/{project.slug}/ingest/tokens/{theirs.pk}/revoke/")
    assert response.status_code == 404
    theirs.refresh_from_db()
    assert theirs.revoked_at is None


def test_an_admin_revokes_tokens_and_adds_and_deletes_rules(login, project, ingest):
    admin = login("admin")
    token = IngestToken.objects.get()
    assert admin.post(f"/p/{project.slug}/ingest/tokens/{token.pk}/revoke/").status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    data = {
        "attribute": "service.name",
        "value": "svc",
        "contract_key": "refund-mini",
        "query_from": "fixed",
        "query_value": "q9",
        "mode": "token",
    }
    response = admin.post(f"/p/{project.slug}/ingest/rules/", data, HTTP_HX_REQUEST="true")
    assert (
        response.status_code == 422 and "has no query &#x27;q9&#x27;" in response.content.decode()
    )
    response = admin.post(f"/p/{project.slug}/ingest/rules/", {**data, "query_value": "q2"})
    assert response.status_code == 302 and RoutingRule.objects.count() == 2
    rule = RoutingRule.objects.get(value="svc")
    assert rule.position == 2
    assert admin.post(f"/p/{project.slug}/ingest/rules/{rule.pk}/delete/").status_code == 302
    assert RoutingRule.objects.count() == 1


def test_a_get_of_a_form_only_address_changes_nothing(login, project, ingest):
    token = IngestToken.objects.get()
    response = login("admin").get(f"/p/{project.slug}/ingest/tokens/{token.pk}/revoke/")
    assert response.status_code in (302, 405)
    token.refresh_from_db()
    assert token.revoked_at is None


def test_a_trace_past_the_span_limit_is_413_and_stores_nothing(export, settings):
    from matching.input_limits import Limits

    spans = _spans()
    settings.INPUT_LIMITS = Limits(trace_events=len(spans) - 1)
    before = row_counts()
    response = export(_protobuf(spans))
    assert response.status_code == 413
    assert (
        f"more than {len(spans) - 1} spans (INPUT_LIMITS trace_events)"
        in response.json()["message"]
    )
    assert row_counts() == before


def test_a_routing_task_that_gives_up_sends_the_trace_to_the_queue(export):
    from audit.tasks import route_ingested_trace

    class Info:
        traceback = "Traceback (most recent call last): ..."

    export(_protobuf([s for s in _spans() if s.parent is not None]))
    trace = IngestedTrace.objects.get()
    IngestedTrace.objects.update(status=TraceStatus.COMPLETE)
    route_ingested_trace.on_failure(RuntimeError("disk on fire"), "id", [trace.pk], {}, Info())
    trace.refresh_from_db()
    assert trace.status == TraceStatus.UNROUTED
    assert "gave up" in trace.reason and "disk on fire" in trace.reason


def test_a_root_span_without_an_end_time_does_not_complete_the_trace(export):
    spans = _spans()
    message = encode_spans(spans)
    for rs in message.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                if not span.parent_span_id:
                    span.end_time_unix_nano = 0
    assert export(message.SerializeToString()).status_code == 200
    assert IngestedTrace.objects.get().status == TraceStatus.OPEN


def test_an_htmx_token_request_answers_the_tokens_section_with_the_secret(login, project):
    response = login("admin").post(
        f"/p/{project.slug}/ingest/tokens/", {"name": "bot"}, HTTP_HX_REQUEST="true"
    )
    body = response.content.decode()
    assert response.status_code == 200 and 'id="ingest-tokens"' in body
    assert "<html" not in body and response.context["new_secret"] in body
    response = login("admin").post(
        f"/p/{project.slug}/ingest/tokens/", {"name": " "}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 422 and "This field is required" in response.content.decode()


def test_an_unrouted_trace_that_gains_its_root_later_is_routed_again(export, settings):
    spans = _spans()
    export(_protobuf([s for s in spans if s.parent is not None]))
    IngestedTrace.objects.update(status=TraceStatus.UNROUTED, reason="no routing rule matches")
    export(_protobuf([s for s in spans if s.parent is not None]))  # nothing new: stays
    assert IngestedTrace.objects.get().status == TraceStatus.UNROUTED
    export(_protobuf([s for s in spans if s.parent is None]))  # the root, with the agent name
    trace = IngestedTrace.objects.get()
    assert trace.status == TraceStatus.RUN and trace.reason == "" and trace.run is not None


def test_the_page_reads_in_the_same_queries_for_1_or_30_traces(login, project, export):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def count() -> int:
        client = login("admin")
        with CaptureQueriesContext(connection) as queries:
            assert client.get(f"/p/{project.slug}/ingest/").status_code == 200
        return len(queries)

    export(_protobuf(_spans(agent="nobody")))
    one = count()
    for i in range(29):
        export(_protobuf(_spans(agent=f"bot-{i}")))
    assert IngestedTrace.objects.count() == 30 and count() == one


def test_a_routed_trace_carries_the_agent_version_of_its_spans(export):
    export(_protobuf(_spans(extra={"gen_ai.agent.version": "2.3.1"})))
    run = IngestedTrace.objects.get().run
    assert run.agent_version == "2.3.1"
    assert run.outcome.agent_version == "2.3.1"  # the analytics read it too
