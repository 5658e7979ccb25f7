"""List filters (django-filter): the run list, the reviewer inbox and the API lists.

One FilterSet per list, built from shared pieces, so the page and the API filter the
same way and drf-spectacular documents every parameter. Unknown values match nothing
(``?family=bogus`` is an empty list), never an error; an object id that is not a whole
number a database id can hold (``?contract=-1.27e292``) is a 400 naming the parameter,
never a query the database cannot run.
"""

from __future__ import annotations

from typing import Any

import django_filters as df
from django import forms
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema_field

from .models import FAMILY_FIELDS, Assessment, Batch, Contract, Query, Run, RunOutcome
from .selectors.runs import reviewed

FAMILIES_HELP = "a failure family: " + ", ".join(FAMILY_FIELDS)
ASSESSMENT_HELP = (
    "semantic runs: needs_review, violation or clean (P(violation) read with the"
    " project's thresholds); token and oracle runs have none"
)


# The largest id a database id column holds (a BigAutoField: a signed 64-bit integer).
ID_MAX = 2**63 - 1


class IdFilter(df.NumberFilter):
    """An object's id: a whole number from 1 to :data:`ID_MAX`; anything else (a
    fraction, an exponent, a number out of range, a word) is a 400 naming the parameter."""

    field_class = forms.IntegerField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", ID_MAX)
        super().__init__(*args, **kwargs)


def id_filter(field_name: str, what: str) -> IdFilter:
    """An :class:`IdFilter` on ``field_name``, documented with its range."""
    help_text = f"{what}: a whole number from 1 to {ID_MAX}; anything else is a 400"
    schema = {"type": "integer", "minimum": 1, "maximum": ID_MAX, "description": help_text}
    return extend_schema_field(schema)(IdFilter(field_name=field_name, help_text=help_text))


def by_assessment(qs: QuerySet[Run], name: str, value: str) -> QuerySet[Run]:
    return qs.filter(assessment=value) if value in Assessment.values else qs.none()


class _RunTarget(df.FilterSet):
    contract = df.CharFilter(field_name="contract__key", help_text="contract id (key)")
    query = df.CharFilter(field_name="query_key", help_text="query id")
    model = df.CharFilter(field_name="model_name", help_text="model name")
    agent_version = df.CharFilter(help_text="agent version")

    class Meta:
        model = Run
        fields: list[str] = []


class RunListFilter(_RunTarget):
    """The run list: by target, status and verdict."""

    status = df.CharFilter(help_text="queued, running, done or failed")
    verdict = df.CharFilter(help_text="clean or non_clean")
    assessment = df.CharFilter(method=by_assessment, help_text=ASSESSMENT_HELP)


class InboxFilter(_RunTarget):
    """The reviewer inbox: by target, failure family and whether a reviewer has looked."""

    family = df.CharFilter(method="filter_family", help_text=FAMILIES_HELP)
    reviewed = df.CharFilter(method="filter_reviewed", help_text="yes or no")
    assessment = df.CharFilter(method=by_assessment, help_text=ASSESSMENT_HELP)

    def filter_family(self, qs: QuerySet[Run], name: str, value: str) -> QuerySet[Run]:
        col = FAMILY_FIELDS.get(value)
        return qs.filter(**{f"{col}__gt": 0}) if col else qs.none()

    def filter_reviewed(self, qs: QuerySet[Run], name: str, value: str) -> QuerySet[Run]:
        if value not in ("yes", "no"):
            return qs
        return reviewed(qs, yes=value == "yes")


class RunApiFilter(RunListFilter, InboxFilter):
    """``/api/runs/``: every run filter, and the project."""

    project = df.CharFilter(field_name="project__slug", help_text="project slug")


class ContractApiFilter(df.FilterSet):
    project = df.CharFilter(field_name="project__slug", help_text="project slug")
    key = df.CharFilter(help_text="contract id")
    status = df.CharFilter(help_text="draft, in_review or audited")

    class Meta:
        model = Contract
        fields: list[str] = []


class QueryApiFilter(df.FilterSet):
    project = df.CharFilter(field_name="contract__project__slug", help_text="project slug")
    contract = id_filter("contract_id", "the contract's id (pk)")

    class Meta:
        model = Query
        fields: list[str] = []


class BatchApiFilter(df.FilterSet):
    project = df.CharFilter(field_name="project__slug", help_text="project slug")

    class Meta:
        model = Batch
        fields: list[str] = []


class AnalyticsFilter(df.FilterSet):
    """Compliance analytics of one contract (its runs' :class:`RunOutcome` rows): by
    agent version, model and creation day."""

    agent_version = df.CharFilter(help_text="agent version")
    model = df.CharFilter(field_name="model_name", help_text="model name")
    since = df.DateFilter(
        field_name="day", lookup_expr="gte", help_text="runs created on or after (YYYY-MM-DD)"
    )
    until = df.DateFilter(
        field_name="day", lookup_expr="lte", help_text="runs created on or before (YYYY-MM-DD)"
    )

    class Meta:
        model = RunOutcome
        fields: list[str] = []


def analytics_runs(
    data: Any, runs: QuerySet[RunOutcome]
) -> tuple[QuerySet[RunOutcome], dict[str, Any]]:
    """``runs`` filtered by the analytics parameters in ``data``, and the errors (a date
    that is not one: no runs, and the error to show or answer with a 400)."""
    filterset = AnalyticsFilter(data, queryset=runs)
    if not filterset.is_valid():
        return runs.none(), dict(filterset.errors)
    return filterset.qs, {}


def filter_values(filterset: type[df.FilterSet], data: Any) -> dict[str, str]:
    """The values of ``filterset``'s parameters in ``data`` ("" when absent), for a page
    that shows them in its filter form and keeps them in its links."""
    return {name: data.get(name, "") for name in filterset.base_filters}
