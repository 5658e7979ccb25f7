"""Live traces: store the spans an exporter sends, then route each complete trace to a
run (through :func:`~audit.services.runs.run_create`) or to the project's queue.

Spans are kept by span id, so a span sent twice (an exporter's retry) is stored once,
and spans of one trace may arrive in any number of requests. A trace is complete when
its root span (no parent) arrives (the SDKs export a span when it ends, so the root
comes last), or when no span has arrived for ``OTLP_QUIET_SECONDS`` (the beat task
``sweep_quiet_traces``). A complete trace is routed once: spans that arrive after its
run are stored but start no second run (and the run of the same input is the same
run); an unrouted trace that gains spans is routed again.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from matching.errors import ContractEvalError
from matching.importers import render

from .. import enqueue
from ..models import (
    Contract,
    ContractStatus,
    IngestedTrace,
    IngestToken,
    QuerySource,
    RoutingRule,
    TraceStatus,
)
from ..otlp import Span
from ..permissions import RUN, authorize
from .common import ServiceError, input_limits
from .runs import run_create

logger = logging.getLogger(__name__)

# Where each description of a trace comes from, in order of preference.
AGENT_KEYS = ("gen_ai.agent.name",)
MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model")
SERVICE_KEYS = ("service.name",)
# The agent's version: the GenAI convention's own attribute, else the service's version.
VERSION_KEYS = ("gen_ai.agent.version", "service.version")


def spans_ingest(*, token: IngestToken, traces: Mapping[str, list[Span]]) -> list[int]:
    """Store the spans of one export request, sent with ``token``; the ids of the traces
    it completed (each routed by a task once the transaction commits). A trace past
    ``trace_events`` spans is refused (413), and nothing of the request is stored."""
    now = timezone.now()
    most = input_limits().trace_events
    completed = []
    with transaction.atomic():
        IngestToken.objects.filter(pk=token.pk).update(last_used_at=now)
        for trace_id, spans in traces.items():
            trace = _locked_trace(token, trace_id, now)
            known = len(trace.spans)
            for span in spans:
                trace.spans.setdefault(span.span_id, span.data)
            if len(trace.spans) > most:
                raise _too_many_spans(trace_id, most)
            trace.root_ended = trace.root_ended or any(s.is_root and s.ended for s in spans)
            trace.last_span_at = now
            _describe(trace)
            # an unrouted trace that gains spans (its root, after the quiet period) may
            # route now; a routed one keeps its run
            late = trace.status == TraceStatus.UNROUTED and len(trace.spans) > known
            if late or (trace.status == TraceStatus.OPEN and trace.root_ended):
                trace.status, trace.reason = TraceStatus.COMPLETE, ""
                completed.append(trace.pk)
            trace.save()
        for pk in completed:
            enqueue.ingested_trace_on_commit(pk)
    return completed


def _too_many_spans(trace_id: str, most: int) -> ServiceError:
    # each span renders to one event or more, so a trace of more spans could never run
    error = ServiceError(
        f"trace {trace_id} has more than {most:,} spans (INPUT_LIMITS trace_events)"
    )
    error.status = 413
    return error


def _locked_trace(token: IngestToken, trace_id: str, now) -> IngestedTrace:
    """The trace row of ``trace_id``, locked; created when it is the first span."""
    rows = IngestedTrace.objects.select_for_update()
    trace = rows.filter(project_id=token.project_id, trace_id=trace_id).first()
    if trace is not None:
        return trace
    try:
        with transaction.atomic():
            return IngestedTrace.objects.create(
                project_id=token.project_id, trace_id=trace_id, last_span_at=now, token=token
            )
    except IntegrityError:  # a concurrent request stored its first span just now
        return rows.get(project_id=token.project_id, trace_id=trace_id)


def _values(spans: Iterable[Mapping[str, Any]], key: str) -> list[str]:
    """Every value of attribute ``key`` on the spans and their resources, in order."""
    out = []
    for span in spans:
        for attrs in (span.get("attributes") or {}, span.get("resource") or {}):
            value = attrs.get(key)
            if isinstance(value, str | int | float | bool) and str(value) not in out:
                out.append(str(value))
    return out


def _first(spans: list[dict[str, Any]], keys: tuple[str, ...]) -> str:
    for key in keys:
        values = _values(spans, key)
        if values:
            return values[0][:200]
    return ""


def _ordered(trace: IngestedTrace) -> list[dict[str, Any]]:
    return sorted(trace.spans.values(), key=lambda s: int(s.get("startTimeUnixNano") or 0))


def _describe(trace: IngestedTrace) -> None:
    spans = _ordered(trace)
    trace.agent_name = _first(spans, AGENT_KEYS)
    trace.model_name = _first(spans, MODEL_KEYS)
    trace.service_name = _first(spans, SERVICE_KEYS)


def ingested_trace_route(*, trace_id: int) -> IngestedTrace:
    """Route complete trace ``trace_id`` (the Celery task calls this): a run of the
    contract and query its project's rules choose, or the queue with the reason. A
    trace routed already is left as it is."""
    with transaction.atomic():
        trace = IngestedTrace.objects.select_for_update().get(pk=trace_id)
        if trace.status != TraceStatus.COMPLETE:
            return trace
        spans = _ordered(trace)
        if not any(_has_gen_ai(s) for s in spans):
            trace.status, trace.reason = TraceStatus.IGNORED, "no span has gen_ai attributes"
        else:
            try:
                _run_for(trace, spans)
            except ServiceError as exc:
                trace.status, trace.reason = TraceStatus.UNROUTED, str(exc)
        trace.save()
    logger.info("trace %s routed: %s %s", trace.trace_id, trace.status, trace.reason)
    return trace


def _has_gen_ai(span: Mapping[str, Any]) -> bool:
    keys = list(span.get("attributes") or {})
    for event in span.get("events") or []:
        keys.extend(event.get("attributes") or {})
        keys.append(str(event.get("name") or ""))
    return any(k.startswith("gen_ai.") for k in keys)


def _run_for(trace: IngestedTrace, spans: list[dict[str, Any]]) -> None:
    """Create ``trace``'s run (ServiceError: why it cannot be routed)."""
    rule = next(
        (
            r
            for r in RoutingRule.objects.filter(project_id=trace.project_id)
            if r.value in _values(spans, r.attribute)
        ),
        None,
    )
    if rule is None:
        described = ", ".join(
            f"{k} {v!r}"
            for k, v in (("agent", trace.agent_name), ("service", trace.service_name))
            if v
        )
        raise ServiceError(f"no routing rule matches this trace ({described or 'no agent name'})")
    contract = (
        Contract.objects.filter(
            project_id=trace.project_id, key=rule.contract_key, status=ContractStatus.AUDITED
        )
        .order_by("-version")
        .first()
    )
    if contract is None:
        raise ServiceError(f"{rule.contract_key} has no audited version to run against")
    trace.contract, trace.query_key = contract, _query_key(rule, contract, spans)
    run, _ = run_create(
        contract=contract,
        user=None,
        query_key=trace.query_key,
        kind="otel",
        data={"spans": spans},
        mode=rule.mode,
        model_name=trace.model_name or trace.agent_name,
        agent_version=_first(spans, VERSION_KEYS),
    )
    trace.run, trace.status, trace.reason = run, TraceStatus.RUN, ""


def _query_key(rule: RoutingRule, contract: Contract, spans: list[dict[str, Any]]) -> str:
    if rule.query_from == QuerySource.FIXED:
        return rule.query_value
    if rule.query_from == QuerySource.ATTRIBUTE:
        values = _values(spans, rule.query_value)
        if not values:
            raise ServiceError(f"no span has the attribute {rule.query_value!r} naming the query")
        return values[0]
    message = first_user_message(spans)
    for query in contract.queries.all():
        if _plain(query.text) == _plain(message):
            return query.query_id
    shown = (message[:80] + "…") if len(message) > 80 else message
    raise ServiceError(
        f"no query of {contract.key} v{contract.version} has the text of the first user"
        f" message ({shown!r})"
    )


def first_user_message(spans: list[dict[str, Any]]) -> str:
    """The first user message of the rendered trace ('' when it has none)."""
    try:
        text = render("otel", {"spans": spans})
    except ContractEvalError:
        return ""
    lines: list[str] = []
    for line in text.splitlines():
        if lines and not line.startswith("  "):
            break
        if lines or line.startswith("[user] "):
            lines.append(line.removeprefix("[user] ").strip())
    return " ".join(lines)


def _plain(text: str) -> str:
    """Text compared without case, spacing or closing punctuation."""
    return re.sub(r"\s+", " ", text).strip().casefold().rstrip(".!?")


def ingested_traces_sweep_quiet() -> dict[str, int]:
    """Every few seconds (Celery beat): open traces quiet for ``OTLP_QUIET_SECONDS``
    are complete (their root span never came, or came in no request) and are routed."""
    cutoff = timezone.now() - timedelta(seconds=settings.OTLP_QUIET_SECONDS)
    with transaction.atomic():
        quiet = list(
            IngestedTrace.objects.select_for_update()
            .filter(status=TraceStatus.OPEN, last_span_at__lt=cutoff)
            .values_list("pk", flat=True)[:500]
        )
        IngestedTrace.objects.filter(pk__in=quiet).update(status=TraceStatus.COMPLETE)
        for pk in quiet:
            enqueue.ingested_trace_on_commit(pk)
    return {"completed": len(quiet)}


def ingested_trace_fail(trace_id: int, reason: str) -> None:
    """A trace whose routing task gave up goes to the queue with the reason, where it
    can be routed again."""
    IngestedTrace.objects.filter(pk=trace_id, status=TraceStatus.COMPLETE).update(
        status=TraceStatus.UNROUTED, reason=reason
    )


def ingested_trace_reroute(*, trace: IngestedTrace, user) -> IngestedTrace:
    """Route a queued trace again (after a rule was added or a contract audited)."""
    authorize(user, trace.project_id, RUN)
    with transaction.atomic():
        updated = IngestedTrace.objects.filter(pk=trace.pk, status=TraceStatus.UNROUTED).update(
            status=TraceStatus.COMPLETE, reason=""
        )
        if not updated:
            raise ServiceError("only an unrouted trace can be routed again")
        enqueue.ingested_trace_on_commit(trace.pk)
    trace.refresh_from_db()
    return trace
