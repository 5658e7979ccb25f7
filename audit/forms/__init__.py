"""Forms: they parse and check input; the services decide what may change.

``workspace`` holds the audit workspace's forms, ``runs`` those of runs, verdicts and
batches, ``analytics`` the options of the analytics pages."""

from __future__ import annotations

from .analytics import CompareForm, TrendForm
from .ingest import IngestTokenForm, RoutingRuleForm
from .runs import BatchForm, EvaluatorSelect, ReviewThresholdsForm, RunForm, VerdictForm
from .webhooks import WebhookForm
from .workspace import (
    ARTIFACT_EXTENSIONS,
    EDGE_RELATIONS,
    EDGE_VERBS,
    MEDIA_TYPES,
    NO_LLM_SHORT,
    SPAN_ERRORS,
    ContractDetailsForm,
    EdgeForm,
    EvidenceForm,
    ImportForm,
    InvariantForm,
    NewContractForm,
    NewInvariantForm,
    NewNodeForm,
    NodeForm,
    NoVersion,
    QueryForm,
    ReviewForm,
    SpanForm,
    VersionForm,
    id_validator,
)

__all__ = [
    "CompareForm",
    "TrendForm",
    "ARTIFACT_EXTENSIONS",
    "BatchForm",
    "ContractDetailsForm",
    "EDGE_RELATIONS",
    "EDGE_VERBS",
    "EdgeForm",
    "IngestTokenForm",
    "RoutingRuleForm",
    "EvaluatorSelect",
    "EvidenceForm",
    "ImportForm",
    "InvariantForm",
    "MEDIA_TYPES",
    "NO_LLM_SHORT",
    "NewContractForm",
    "NewInvariantForm",
    "NewNodeForm",
    "NoVersion",
    "NodeForm",
    "QueryForm",
    "ReviewForm",
    "ReviewThresholdsForm",
    "RunForm",
    "SPAN_ERRORS",
    "SpanForm",
    "VerdictForm",
    "VersionForm",
    "WebhookForm",
    "id_validator",
]
