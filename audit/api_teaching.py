"""The teaching API: a reviewer's corrections of a run's pairings, the corrected report
beside the automatic one, and the enactments they taught a contract.

Mixed into the run and contract viewsets of :mod:`audit.api`, so that the objects are
found, and the roles checked, by :class:`audit.permissions.ProjectRole` as everywhere
else: correcting needs the reviewer role (``TEACH``), removing an enactment the
annotator role (``UNTEACH``), reading either any member. The services of
:mod:`audit.services.teaching` do the work and check the role again.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from . import services
from .models import Enactment, RunCorrection
from .openapi import extend_schema
from .selectors import teaching as teaching_reads

# What a correction does (named in the schema as CorrectionActionEnum).
CORRECTION_ACTIONS = [
    ("pair", "pair"),
    ("unpair", "unpair"),
    ("commentary", "commentary"),
    ("revert", "revert"),
]


class CorrectionRequestSerializer(serializers.Serializer):
    action = serializers.ChoiceField(
        choices=CORRECTION_ACTIONS,
        help_text="pair: the observed step enacts the obligation; unpair: refuse the"
        " obligation's current pairing; commentary: the observed step enacts nothing and is"
        " no action; revert: drop every correction (the engine's reading is the run's again).",
    )
    expected = serializers.CharField(
        max_length=128, required=False, help_text="The obligation's node id (pair, unpair)."
    )
    observed = serializers.CharField(
        max_length=128,
        required=False,
        help_text="The observed step id (pair, commentary; unpair refuses whichever step the obligation is paired with now).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        action = attrs["action"]
        if action in ("pair", "unpair") and not attrs.get("expected"):
            raise ValidationError({"expected": [f"{action} needs the obligation's id"]})
        if action in ("pair", "commentary") and not attrs.get("observed"):
            raise ValidationError({"observed": [f"{action} needs the observed step's id"]})
        return attrs


class CorrectionSerializer(serializers.ModelSerializer):
    reviewer: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True
    )

    class Meta:
        model = RunCorrection
        fields = ["id", "reviewer", "created_at", "verdict", "corrections", "report"]
        read_only_fields = fields


class AutomaticReportSerializer(serializers.Serializer):
    verdict = serializers.CharField(allow_null=True)
    report = serializers.JSONField(allow_null=True)


class CorrectedReportsSerializer(serializers.Serializer):
    automatic = AutomaticReportSerializer()
    corrected = CorrectionSerializer(allow_null=True, help_text="null until a correction.")


class EnactmentSerializer(serializers.ModelSerializer):
    node = serializers.CharField(source="node_id", read_only=True)
    step = serializers.CharField(source="step_id", read_only=True)
    reviewer: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True
    )

    class Meta:
        model = Enactment
        fields = ["id", "node", "text", "run", "step", "reviewer", "created_at"]
        read_only_fields = fields


def _reports(run) -> dict[str, Any]:
    return CorrectedReportsSerializer(
        {
            "automatic": run.automatic or {"verdict": run.verdict, "report": run.report},
            "corrected": teaching_reads.latest_correction(run) if run.is_corrected else None,
        }
    ).data


def _decision(d: dict[str, Any]) -> dict[str, Any]:
    if d["action"] == "pair":
        return {"pair": [(d["expected"], d["observed"])]}
    if d["action"] == "unpair":
        return {"unpair": [d["expected"]]}
    return {"commentary": [d["observed"]]}


class RunCorrectionsMixin(viewsets.GenericViewSet):
    """``/api/runs/{id}/corrections/``: read both reports (GET), correct (POST)."""

    @extend_schema(methods=["GET"], responses={200: CorrectedReportsSerializer})
    @extend_schema(
        methods=["POST"],
        request=CorrectionRequestSerializer,
        responses={201: CorrectedReportsSerializer},
    )
    @action(detail=True, methods=["get", "post"])
    def corrections(self, request, pk=None, format=None):
        """The run's automatic report and its latest corrected one (who, when, which
        pairs). POST pairs an observed step with an obligation, unpairs an obligation,
        reads a step as commentary or reverts every correction (reviewer role); the
        corrected reading becomes the run's report, and a pair teaches the contract an
        enactment. A
        correction naming an unknown step or obligation is a 400 naming it, nothing
        stored."""
        run = self.get_object()
        if request.method == "GET":
            return Response(_reports(run))
        body = CorrectionRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        d = body.validated_data
        try:
            if d["action"] == "revert":
                services.run_revert(run=run, user=request.user)
            else:
                services.run_correct(run=run, user=request.user, **_decision(d))
        except services.ServiceError as exc:
            raise ValidationError({"detail": [str(exc)]}) from exc
        run.refresh_from_db()
        return Response(_reports(run), status=status.HTTP_201_CREATED)


class ContractEnactmentsMixin(viewsets.GenericViewSet):
    """``/api/contracts/{id}/enactments/``: list; ``.../enactments/{pk}/``: remove."""

    @extend_schema(responses={200: EnactmentSerializer(many=True)})
    @action(detail=True, methods=["get"], pagination_class=None)
    def enactments(self, request, pk=None, format=None):
        """Every enactment reviewers taught this contract version, with provenance."""
        contract = self.get_object()
        rows = teaching_reads.enactment_list(contract)
        return Response(EnactmentSerializer(rows, many=True).data)

    @extend_schema(request=None, responses={204: None})
    @action(
        detail=True,
        methods=["delete"],
        url_path=r"enactments/(?P<enactment_pk>[0-9]+)",
        url_name="enactment",
    )
    def enactment(self, request, pk=None, enactment_pk=None, format=None):
        """Remove a taught enactment (annotator role); the audit history keeps it."""
        contract = self.get_object()
        enactment = Enactment.objects.filter(pk=enactment_pk, contract=contract).first()
        if enactment is None:
            raise NotFound("no such enactment")
        services.enactment_delete(enactment=enactment, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
