"""DRF serializers of the REST API (audit/api.py)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .models import (
    METRIC_FIELDS,
    Batch,
    Contract,
    ExtractorName,
    InputKind,
    JudgeKind,
    Project,
    Query,
    ReviewVerdict,
    Run,
    RunMode,
)


class ProjectSerializer(serializers.ModelSerializer):
    role = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = ["slug", "name", "description", "created_at", "role"]

    def get_role(self, obj: Project) -> str | None:
        roles = self.context.get("roles") or {}
        return roles.get(obj.pk)


class ContractSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField[Project] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    queries: serializers.SlugRelatedField[Query] = serializers.SlugRelatedField(
        slug_field="query_id", many=True, read_only=True
    )
    export_url = serializers.HyperlinkedIdentityField(view_name="api:contract-export")

    class Meta:
        model = Contract
        fields = [
            "id",
            "project",
            "key",
            "title",
            "domain",
            "version",
            "status",
            "queries",
            "created_at",
            "updated_at",
            "export_url",
        ]


class ContractImportSerializer(serializers.Serializer):
    project = serializers.SlugField(help_text="the project's slug")
    document = serializers.JSONField(help_text="a contracteval.contract/v1 document")


class QuerySerializer(serializers.ModelSerializer):
    id = serializers.IntegerField(source="pk", read_only=True)
    query = serializers.CharField(source="query_id")
    contract: serializers.PrimaryKeyRelatedField[Contract] = serializers.PrimaryKeyRelatedField(
        read_only=True
    )

    class Meta:
        model = Query
        fields = ["id", "contract", "query", "text", "intents", "branches"]


class AutomaticReadingSerializer(serializers.Serializer):
    verdict = serializers.CharField()
    failure_count = serializers.IntegerField()
    assessment = serializers.CharField()
    p_violation = serializers.FloatField(allow_null=True)


class RunSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField[Project] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    contract_key = serializers.CharField(source="contract.key", read_only=True)
    contract_version = serializers.IntegerField(source="contract.version", read_only=True)
    query = serializers.CharField(source="query_key", read_only=True)
    model = serializers.CharField(source="model_name", read_only=True)
    agent_version = serializers.CharField(read_only=True)
    families = serializers.ListField(child=serializers.CharField(), read_only=True)
    metrics = serializers.SerializerMethodField()
    created_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True
    )
    url = serializers.HyperlinkedIdentityField(view_name="api:run-detail")
    report_url = serializers.HyperlinkedIdentityField(view_name="api:run-report")
    corrected = serializers.BooleanField(
        source="is_corrected",
        read_only=True,
        help_text="A reviewer's corrected reading is the run's report (verdict, counts,"
        " metrics); the engine's own is under automatic.",
    )
    automatic = AutomaticReadingSerializer(
        read_only=True, allow_null=True, help_text="null unless corrected."
    )

    class Meta:
        model = Run
        fields = [
            "id",
            "url",
            "project",
            "contract",
            "contract_key",
            "contract_version",
            "query",
            "model",
            "agent_version",
            "input_kind",
            "mode",
            "extractor",
            "status",
            "error",
            "warnings",
            "verdict",
            "assessment",
            "p_violation",
            "failure_count",
            "corrected",
            "automatic",
            "families",
            "metrics",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
            "report_url",
            "judge_invariants",
            "judged_invariants",
            "llm_model",
            "llm_usage",
            "extraction",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.DictField(child=serializers.FloatField(allow_null=True)))
    def get_metrics(self, obj: Run) -> dict[str, float | None]:
        return {m: getattr(obj, m) for m in METRIC_FIELDS}


class RunDetailSerializer(RunSerializer):
    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "report"]
        read_only_fields = fields


class RunCreateSerializer(serializers.Serializer):
    contract = serializers.IntegerField(help_text="the id of an audited contract version")
    query = serializers.CharField(help_text="a query id of that contract")
    input_kind = serializers.ChoiceField(
        choices=[("auto", "Detect"), *InputKind.choices], default="auto"
    )
    input = serializers.JSONField(
        help_text="an observed document, a transcript (OpenAI chat or Responses items,"
        " Anthropic Messages, a LangChain dump), OpenTelemetry GenAI spans, a τ-bench"
        " results file (choose an entry with select) or action list, or a string of"
        " pasted text"
    )
    select = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=200,
        help_text="task_id=…,trial=…: the trajectory of a τ-bench results file",
    )
    source_kind = serializers.ChoiceField(
        choices=["auto", "response", "trace"], default="auto", required=False
    )
    output = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        default="",
        help_text="the agent's final output, checked against the output requirements, for"
        " an input that does not end with it (a pasted trace); an observed document has"
        " its own",
    )
    mode = serializers.ChoiceField(choices=RunMode.choices, default=RunMode.TOKEN)
    extractor = serializers.ChoiceField(choices=ExtractorName.choices, default=ExtractorName.NONE)
    model = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    agent_version = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=200,
        help_text="the version of the agent that made the trace (analytics compare versions)",
    )
    judge_invariants = serializers.BooleanField(
        default=False,
        help_text="score invariants without a machine check with the LLM invariant judge"
        " (needs a configured LLM endpoint)",
    )


class VerdictSerializer(serializers.ModelSerializer):
    reviewer: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True
    )

    class Meta:
        model = ReviewVerdict
        fields = ["id", "run", "reviewer", "agrees", "note", "created_at"]
        read_only_fields = ["id", "run", "reviewer", "created_at"]


class BatchSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField[Project] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    # "" is the engine itself (no LLM judge): part of the documented values
    judge = serializers.ChoiceField(
        choices=[("", "ContractEval"), *JudgeKind.choices], read_only=True
    )
    evaluator = serializers.SerializerMethodField()

    def get_evaluator(self, obj: Batch) -> str:
        return f"judge-{obj.judge}" if obj.judge else "contracteval"

    class Meta:
        model = Batch
        fields = [
            "id",
            "project",
            "source",
            "name",
            "mode",
            "extractor",
            "status",
            "error",
            "done",
            "total",
            "scores",
            "seconds",
            "created_at",
            "finished_at",
            "evaluator",
            "judge",
            "llm_model",
            "llm_usage",
            "verdicts",
        ]
        read_only_fields = fields


def report_or_none(run: Run) -> dict[str, Any] | None:
    return run.report
