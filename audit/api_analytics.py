"""Compliance analytics through the API: the numbers of the contract's analytics pages
(``audit.selectors.analytics``), filtered by the same parameters. Any member of the
contract's project may read them; others get a 404."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from .filters import analytics_runs
from .forms import CompareForm, TrendForm
from .openapi import extend_schema
from .permissions import VIEW, contract_for
from .selectors import analytics

FILTERS = [
    OpenApiParameter("agent_version", str, description="only runs of this agent version"),
    OpenApiParameter("model", str, description="only runs of this model"),
    OpenApiParameter("since", OpenApiTypes.DATE, description="runs created on or after"),
    OpenApiParameter("until", OpenApiTypes.DATE, description="runs created on or before"),
]
BUCKET = OpenApiParameter("bucket", str, enum=["day", "week"], description="the trend's period")
COMPARE = [
    OpenApiParameter(
        "by", str, enum=["agent_version", "model"], description="default agent_version"
    ),
    OpenApiParameter("a", str, required=True, description="the baseline version (or model)"),
    OpenApiParameter("b", str, required=True, description="the candidate version (or model)"),
]


def _runs(request, contract) -> Any:
    runs, errors = analytics_runs(request.query_params, analytics.finished_runs(contract))
    if errors:
        raise ValidationError(errors)
    return runs


def _messages(errors: Any) -> dict[str, list[str]]:
    return {field: [str(m) for m in messages] for field, messages in errors.items()}


def _about(contract) -> dict[str, Any]:
    return {"id": contract.pk, "key": contract.key, "version": contract.version}


class ContractAnalyticsView(APIView):
    @extend_schema(parameters=[*FILTERS, BUCKET], responses={200: OpenApiTypes.OBJECT})
    def get(self, request, pk):
        """Per obligation, the counts and rates of met, missed, out of order and not
        applicable over the contract's finished runs (``n`` of them), and the share of
        clean runs per day or week."""
        contract, _ = contract_for(request.user, pk, VIEW)
        trend = TrendForm(request.query_params)
        if not trend.is_valid():
            raise ValidationError(_messages(trend.errors))
        runs = _runs(request, contract)
        bucket = trend.cleaned_data["bucket"]
        rates = analytics.obligation_rates(contract, runs)
        return Response(
            {
                "contract": _about(contract),
                **rates,
                "bucket": bucket,
                "trend": analytics.clean_trend(runs, bucket),
            }
        )


class ContractCompareView(APIView):
    @extend_schema(parameters=[*FILTERS, *COMPARE], responses={200: OpenApiTypes.OBJECT})
    def get(self, request, pk):
        """Runs of B against runs of A (two agent versions or models): per obligation the
        missed rate of each, B minus A with its 95% Newcombe interval (``low``,
        ``high``), and ``flag`` ``regression`` or ``improvement`` where the interval
        excludes 0; ``violation`` is the same for the share of non-clean runs."""
        contract, _ = contract_for(request.user, pk, VIEW)
        form = CompareForm(request.query_params)
        if not form.is_valid():
            raise ValidationError(_messages(form.errors))
        d = form.cleaned_data
        result = analytics.compare(contract, _runs(request, contract), d["by"], d["a"], d["b"])
        return Response({"contract": _about(contract), **result})
