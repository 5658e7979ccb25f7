"""What the sweep tests share: one project with an object of every kind, every URL, and
the inputs at and past the input limits.

``world`` builds, in the project ``tests`` of the shared fixtures, an audited contract
with a finished run and a verdict, a draft next version (with a node, span, edge,
invariant and query to edit) and a batch. ``routes`` walks the URL resolver, so a new
URL pattern is swept without anyone listing it here: a pattern whose parameters this
module cannot fill fails the walk instead of being skipped. ``trace_of`` and
``HOSTILE_TOOLS`` are the traces and tool lists the bad-input sweep sends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver

TAU = [
    {"name": "lookup_order", "kwargs": {"order_id": "1042"}},
    {"name": "respond", "kwargs": {"content": "Your refund is approved."}},
]
# Namespaces whose routes hold project data; the rest (login, admin, static) do not.
SWEPT = ("audit", "api", "otlp")
# API routes without project data: the schema, its docs, the browsable API's login
# and its root (a list of links).
NO_DATA = ("schema", "docs", "api-root", "login", "logout")


@dataclass
class World:
    project: Any
    audited: Any
    draft: Any
    run: Any
    batch: Any
    node: Any
    span: Any
    edge: Any
    invariant: Any
    query: Any
    assignment: Any
    comment: Any
    enactment: Any
    ingest_token: Any
    routing_rule: Any
    ingested_trace: Any
    webhook: Any
    membership: Any
    notification: Any


def build_world(users, refund_doc) -> World:
    from django.utils import timezone

    from audit import services
    from audit.models import (
        Batch,
        BatchSource,
        Enactment,
        IngestedTrace,
        Membership,
        Project,
        TraceStatus,
    )

    project = Project.objects.get(slug="tests")
    audited = services.contract_import(project=project, user=users["admin"], source=refund_doc)
    audited = services.contract_mark_audited(contract=audited, user=users["reviewer"])
    run, _ = services.run_create(
        contract=audited, user=users["annotator"], query_key="q1", kind="tau_bench", data=TAU
    )
    run = services.run_execute(run_id=run.pk)
    services.verdict_record(run=run, user=users["reviewer"], agrees=True, note="fine")
    draft = services.contract_new_version(contract=audited, user=users["admin"])
    node = draft.nodes.get(node_id="verify_owner")
    batch = Batch.objects.create(
        project=project, source=BatchSource.FIXTURES, name="fixtures/clean", total=0
    )
    assignment = services.assignment_create(
        project=project,
        contract=draft,
        user=users["annotator"],
        by=users["admin"],
        role="annotator",
    )
    comment = services.comment_create(contract=draft, user=users["reviewer"], body="@annotator?")
    enactment = Enactment.objects.create(
        contract=draft, node_id="verify_owner", text="The email matches.", run=run, step_id="o1"
    )
    ingest_token, _ = services.ingest_token_create(project=project, user=users["admin"], name="bot")
    routing_rule = services.routing_rule_create(
        project=project,
        user=users["admin"],
        attribute="gen_ai.agent.name",
        value="refund-bot",
        contract_key=audited.key,
        query_value="q1",
    )
    ingested_trace = IngestedTrace.objects.create(
        project=project,
        trace_id="0" * 31 + "1",
        last_span_at=timezone.now(),
        status=TraceStatus.UNROUTED,
        reason="no routing rule matches this trace",
    )
    webhook, _ = services.webhook_create(
        project=project,
        user=users["admin"],
        name="alerts",
        url="https://hooks.example.com/contracteval",
        events=["run.violation"],
    )
    return World(
        project=project,
        audited=audited,
        draft=draft,
        run=run,
        batch=batch,
        node=node,
        span=node.spans.first(),
        edge=draft.edges.first(),
        invariant=draft.invariants.first(),
        query=draft.queries.first(),
        assignment=assignment,
        comment=comment,
        enactment=enactment,
        ingest_token=ingest_token,
        routing_rule=routing_rule,
        ingested_trace=ingested_trace,
        webhook=webhook,
        membership=Membership.objects.get(project=project, user=users["annotator"]),
        notification=comment.notifications.get(),
    )


@dataclass(frozen=True)
class Route:
    namespace: str
    name: str | None
    url: str

    @property
    def is_api(self) -> bool:
        """The REST API and the OTLP endpoint: token auth, answers in JSON."""
        return self.namespace in ("api", "otlp")

    @property
    def has_object(self) -> bool:
        """The route names one object (or one project), not a list of the user's."""
        return bool(
            re.search(r"^/(p|c|r|b|comments|notifications)/|^/api/\w+/[^/.]+[/.]", self.url)
        )


def _patterns(resolver, prefix: str = "", namespace: str | None = None):
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            yield from _patterns(p, prefix + str(p.pattern), p.namespace or namespace)
        elif isinstance(p, URLPattern):
            yield namespace, p.name, prefix + str(p.pattern)


def _values(w: World, pattern: str) -> dict[str, Any]:
    """The parameters of ``pattern`` for the objects of ``w``."""
    pk = {"c": w.draft.pk, "r": w.run.pk, "b": w.batch.pk, "comments": w.comment.pk}
    pk["notifications"] = w.notification.pk
    api_pk = {"contracts": w.draft.pk, "queries": w.query.pk, "runs": w.run.pk}
    api_pk |= {"batches": w.batch.pk, "assignments": w.assignment.pk, "comments": w.comment.pk}
    api_pk["notifications"] = w.notification.pk
    head = pattern.split("/", 1)[0]
    api = re.match(r"api/\^?(\w+)", pattern)
    return {
        "pk": api_pk.get(api.group(1)) if api else pk.get(head),
        "assignment_pk": w.assignment.pk,
        "member_pk": w.membership.pk,
        "slug": w.project.slug,
        "node_pk": w.node.pk,
        "span_pk": w.span.pk,
        "edge_pk": w.edge.pk,
        "inv_pk": w.invariant.pk,
        "query_pk": w.query.pk,
        "enactment_pk": w.enactment.pk,
        "token_pk": w.ingest_token.pk,
        "rule_pk": w.routing_rule.pk,
        "trace_pk": w.ingested_trace.pk,
        "hook_pk": w.webhook.pk,
        "family": "omission",
        "part": "obligations",
        "index": 0,
        "case_id": "any-case",
        "fmt": "json",
        "format": "json",
    }


def fill(pattern: str, values: dict[str, Any]) -> str:
    """A URL of a ``path()`` or regular-expression pattern with its parameters filled in.

    >>> fill(r"api/^runs/(?P<pk>[^/.]+)/export\\.(?P<format>[a-z0-9]+)/?$", {"pk": 3, "format": "json"})
    '/api/runs/3/export.json'
    >>> fill("c/<int:pk>/nodes/<int:node_pk>/", {"pk": 1, "node_pk": 2})
    '/c/1/nodes/2/'
    """

    def value(m: re.Match[str]) -> str:
        if values.get(m.group(1)) is None:
            raise KeyError(f"no value for {m.group(1)!r} in the pattern {pattern!r}")
        return str(values[m.group(1)])

    url = re.sub(r"\(\?P<(\w+)>[^)]*\)", value, pattern)
    url = re.sub(r"<(?:\w+:)?(\w+)>", value, url)
    url = url.replace("^", "").replace("$", "").replace("/?", "").replace("\\.", ".")
    return "/" + url


def routes(w: World) -> list[Route]:
    """Every route of the swept namespaces, filled in with the objects of ``w``."""
    out = []
    for namespace, name, pattern in _patterns(get_resolver()):
        if namespace not in SWEPT or (namespace == "api" and name in NO_DATA):
            continue
        url = fill(pattern, _values(w, pattern))
        out.append(Route(namespace, name, url))
    return out


def row_counts() -> dict[str, int]:
    """How many rows each audit table holds: a refused request changes none."""
    from django.apps import apps

    return {m.__name__: m.objects.count() for m in apps.get_app_config("audit").get_models()}


# ---------------------------------------------------------------- inputs at and past the limits

MIB = 1024 * 1024
# A tools list nested past the depth limit, as an array and inside one tool's
# parameters (a JSON schema a few hundred kilobytes deep), each well under the size limit.
DEEP_ARRAY = "[" * 100_000 + "]" * 100_000
DEEP_PARAMETERS = (
    '[{"name": "lookup", "parameters": '
    + '{"type": "object", "properties": {"a": ' * 5_000
    + '{"type": "string"}'
    + "}}" * 5_000
    + "}]"
)
HOSTILE_TOOLS = {
    "deep array": (DEEP_ARRAY, "nested deeper than 64 levels"),
    "deep parameters": (DEEP_PARAMETERS, "nested deeper than 64 levels"),
    "a NUL character": ('[{"name": "lookup", "description": "a\\u0000b"}]', "NUL character"),
}


def trace_of(size: int, events: int, *, step: str = "tool") -> str:
    """A pasted trace of exactly ``size`` bytes in ``events`` events, tool calls with
    JSON arguments and agent sentences in turn (each one step for the heuristic
    extractor), padded as a real trace is: with the calls' arguments.

    >>> text = trace_of(10_000, 20)
    >>> len(text.encode()), text.count("\\n[")
    (10000, 19)
    """
    per = size // events
    out = []
    for i in range(events):
        if i % 2 == 0:
            head = f'[tool] lookup_order(order_id="{1000 + i}", fields=["status", "items"], note="'
            tail, pad = '")\n', '\\"key\\": \\"value\\", '
        else:
            head = f"[assistant] I checked order {1000 + i} and the payment is confirmed. "
            tail, pad = "\n", "x"
        room = max(0, per - len(head) - len(tail))
        out.append(head + (pad * room)[:room] + tail)
    text = "".join(out)
    return text + "x" * (size - len(text.encode()))
