"""The API keeps the promises of its own OpenAPI schema, whatever a client sends.

schemathesis reads ``/api/schema/`` from the app (in-process, through WSGI) and
generates requests for every operation, valid and invalid; every response must be
no server error, a documented status code and content type, and a body that matches
the documented schema.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, given, settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from .sweep import build_world

pytestmark = pytest.mark.django_db
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
EXAMPLES_PER_OPERATION = 30


@pytest.fixture
def world(project, users, refund_doc):
    return build_world(users, refund_doc)


@pytest.fixture
def wsgi_app():
    """The app as a server runs it, minus closing the database connection after each
    request (as Django's test client does): the test's transaction must survive."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield get_wsgi_application()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def _summary(case, exc: BaseException) -> str:
    """One line per failed check: the operation, the check and its first detail."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    checks = [
        f"{line} ({lines[i + 1][:120]})" for i, line in enumerate(lines) if line.startswith("- ST")
    ]
    return f"{case.method} {case.operation.path}: {'; '.join(checks) or lines[0][:300]}"


def test_every_api_operation_conforms_to_the_schema(world, users, wsgi_app):
    token, _ = Token.objects.get_or_create(user=users["admin"])
    headers = {"Authorization": f"Token {token.key}"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app, headers=headers)
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        def check(case):
            try:
                case.call_and_validate(headers=headers, checks=CHECKS)
            except (Exception, BaseExceptionGroup) as exc:  # FailureGroup: every failed check
                failures.append(_summary(case, exc))

        check()
    assert failures == [], "\n".join(dict.fromkeys(failures))


def test_team_api_responses_with_real_data_conform_to_the_schema(team, users, wsgi_app):
    """Generated ids rarely name a double-annotated contract, so the team routes'
    success bodies are checked here on one, before and after adjudication starts."""
    from audit import services

    from .team_helpers import decide_all

    contract = team["contract"]
    decide_all(contract, team["ann1"])
    decide_all(contract, team["ann2"], {"approve_refund": ("reject", None)})
    token, _ = Token.objects.get_or_create(user=users["admin"])
    headers = {"Authorization": f"Token {token.key}"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app, headers=headers)
    failures: list[str] = []

    def check(path: str, **params) -> None:
        case = schema[path]["GET"].Case(path_parameters=params)
        response = case.call(headers=headers)
        assert response.status_code == 200, (path, response.status_code)
        try:
            case.validate_response(response, checks=CHECKS)
        except (Exception, BaseExceptionGroup) as exc:
            failures.append(_summary(case, exc))

    routes = ["assignments", "double-annotation", "decisions", "agreement", "comments", "tools"]
    for name in routes:
        check(f"/api/contracts/{{id}}/{name}/", id=contract.pk)
    services.adjudication_start(contract=contract, user=team["curator"])
    for name in [*routes, "adjudication"]:
        check(f"/api/contracts/{{id}}/{name}/", id=contract.pk)
    check("/api/projects/{slug}/agreement/", slug=contract.project.slug)
    check("/api/queue/")
    assert failures == [], "\n".join(dict.fromkeys(failures))
