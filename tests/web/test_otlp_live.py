"""An agent instrumented with the real OpenTelemetry SDK exports its spans with the
real OTLP/HTTP exporter to a live server, and its runs appear with the contract, query
and verdict its project's routing rule gives (Celery eager, as in every test)."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from audit import services
from audit.models import IngestedTrace, Run, TraceStatus

from .otlp_agent import CARELESS_REFUND, CLEAN_REFUND, provider, run_agent

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def secret(project, users, audited):
    _, secret = services.ingest_token_create(project=project, user=users["admin"], name="live")
    services.routing_rule_create(
        project=project,
        user=users["admin"],
        attribute="gen_ai.agent.name",
        value="refund-bot",
        contract_key="refund-mini",
        query_from="first_user_message",
    )
    return secret


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_an_sdk_instrumented_agent_is_checked_live(live_server, secret, compression):
    exporter = OTLPSpanExporter(
        endpoint=f"{live_server.url}/v1/traces",
        headers={"Authorization": f"Bearer {secret}"},
        compression=compression,
    )
    tp = provider(exporter)
    careless = run_agent(tp, CARELESS_REFUND)
    clean = run_agent(tp, CLEAN_REFUND)
    tp.shutdown()

    runs = {t.trace_id: t.run for t in IngestedTrace.objects.select_related("run__contract")}
    assert set(runs) == {careless, clean}
    assert IngestedTrace.objects.filter(status=TraceStatus.RUN).count() == 2
    for run in runs.values():
        assert (run.contract.key, run.query_key, run.status) == ("refund-mini", "q1", "done")
        assert run.model_name == "gpt-test-mini" and run.input_kind == "otel"

    def omitted(run: Run) -> set[str]:
        return {f["location"] for f in run.report["failures"] if f["family"] == "omission"}

    # the agent that skipped the checks is caught skipping them; the other is not
    assert runs[careless].verdict == "non_clean"
    assert {"verify_owner", "check_window"} <= omitted(runs[careless])
    assert not {"verify_owner", "check_window"} & omitted(runs[clean])


def test_the_exporter_hears_a_revoked_token_as_a_failure(live_server, secret, users):
    from opentelemetry.sdk.trace.export import SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from audit.models import IngestToken

    services.ingest_token_revoke(token=IngestToken.objects.get(), user=users["admin"])
    recorded = InMemorySpanExporter()
    run_agent(provider(recorded))
    exporter = OTLPSpanExporter(
        endpoint=f"{live_server.url}/v1/traces", headers={"Authorization": f"Bearer {secret}"}
    )
    assert exporter.export(recorded.get_finished_spans()) == SpanExportResult.FAILURE
    assert IngestedTrace.objects.count() == 0
