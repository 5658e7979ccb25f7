"""The REST API (Django REST Framework), mounted at ``/api/``.

Token or session authentication; the UI's object permissions: a list shows only the
projects the user is a member of, any object of another project is a 404, and a
mutation needs the same role as in the UI (else 403), checked by
:class:`audit.permissions.ProjectRole`. Lists are paginated (page numbers; runs by
cursor) and filtered by the FilterSets of :mod:`audit.filters` (documented in the
schema). OpenAPI schema:
``/api/schema/``.
"""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from . import services
from .api_teaching import ContractEnactmentsMixin, RunCorrectionsMixin
from .filters import BatchApiFilter, ContractApiFilter, QueryApiFilter, RunApiFilter
from .guards import LimitedJSONParser, api_refusal
from .models import Batch, Contract, Project, Query, Run
from .openapi import DeferredSchema, extend_schema
from .permissions import (
    BATCH,
    IMPORT,
    RUN,
    TEACH,
    UNTEACH,
    VERDICT,
    ProjectRole,
    project_for,
    require,
    roles_of,
)
from .selectors import exports
from .selectors.team import export_document
from .serializers import (
    BatchSerializer,
    ContractImportSerializer,
    ContractSerializer,
    ProjectSerializer,
    QuerySerializer,
    RunCreateSerializer,
    RunDetailSerializer,
    RunSerializer,
    VerdictSerializer,
)


class ProjectViewSet(viewsets.ReadOnlyModelViewSet):
    """The projects you are a member of, with your role."""

    schema = DeferredSchema()  # see audit/openapi.py

    permission_classes = [IsAuthenticated, ProjectRole]
    serializer_class = ProjectSerializer
    lookup_field = "slug"

    def get_queryset(self) -> QuerySet[Project]:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Project.objects.none()
        return Project.objects.filter(memberships__user=self.request.user.pk).order_by("name")

    def get_serializer_context(self):
        ctx = dict(super().get_serializer_context())
        if self.request.user.is_authenticated:
            ctx["roles"] = roles_of(self.request.user)
        return ctx


class ContractViewSet(ContractEnactmentsMixin, viewsets.ReadOnlyModelViewSet):
    """Contract versions. Filters: ``project`` (slug), ``key``, ``status``."""

    schema = DeferredSchema()  # see audit/openapi.py

    permission_classes = [IsAuthenticated, ProjectRole]
    required_roles = {"enactment:DELETE": UNTEACH}
    serializer_class = ContractSerializer
    filterset_class = ContractApiFilter

    def get_queryset(self) -> QuerySet[Contract]:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Contract.objects.none()
        return (
            Contract.objects.filter(project__memberships__user=self.request.user.pk)
            .select_related("project")
            .prefetch_related("queries")
            .order_by("key", "-version")
        )

    @extend_schema(responses={200: OpenApiTypes.OBJECT}, description="The contract document.")
    @action(detail=True, methods=["get"])
    def export(self, request, pk=None, format=None):
        """The ``contracteval.contract/v1`` document of this version."""
        return Response(export_document(self.get_object()))

    @extend_schema(request=ContractImportSerializer, responses={201: ContractSerializer})
    @action(detail=False, methods=["post"], url_path="import", url_name="import")
    def import_(self, request, format=None):
        """Import a contract document into a project (reviewer role); an existing id
        becomes its next version. A document with an error is not stored (400)."""
        body = ContractImportSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        project, _ = project_for(request.user, body.validated_data["project"], IMPORT)
        try:
            contract = services.contract_import(
                project=project, user=request.user, source=body.validated_data["document"]
            )
        except services.ServiceError as exc:
            raise api_refusal(exc, "document") from exc
        data = ContractSerializer(contract, context=self.get_serializer_context()).data
        return Response(data, status=status.HTTP_201_CREATED)


class QueryViewSet(viewsets.ReadOnlyModelViewSet):
    """Queries of the contracts you can see. Filters: ``project``, ``contract`` (pk)."""

    schema = DeferredSchema()  # see audit/openapi.py

    permission_classes = [IsAuthenticated, ProjectRole]
    serializer_class = QuerySerializer
    filterset_class = QueryApiFilter

    def get_queryset(self) -> QuerySet[Query]:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Query.objects.none()
        return Query.objects.filter(
            contract__project__memberships__user=self.request.user.pk
        ).order_by("contract_id", "position", "pk")


class RunCursorPagination(CursorPagination):
    """Runs newest first, 50 a page, linked by opaque ``next``/``previous`` cursors.

    A project holds hundreds of thousands of runs: a page is read from the index on
    (project, newest first) and costs its own 50 rows, where a page number needs an
    exact ``count`` of every matching run (115-250 ms at 100,000 runs) and an offset
    that reads every row before the page.
    """

    ordering = ("-created_at", "-id")
    page_size = 50


class RunViewSet(
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    RunCorrectionsMixin,
):
    """Conformance runs. Create one from any input kind; read its status and report.

    Filters: ``project`` (slug), ``contract`` (key), ``query``, ``model``, ``status``,
    ``verdict``, ``family``, ``reviewed``. The list is newest first and paginated by
    cursor: ``{next, previous, results}``, no ``count`` (follow ``next`` to read on).
    """

    schema = DeferredSchema()  # see audit/openapi.py

    parser_classes = [LimitedJSONParser, FormParser, MultiPartParser]
    permission_classes = [IsAuthenticated, ProjectRole]
    required_roles = {"verdicts:POST": VERDICT, "corrections:POST": TEACH}
    filterset_class = RunApiFilter
    pagination_class = RunCursorPagination

    def get_serializer_class(self):
        if self.action == "create":
            return RunCreateSerializer
        if self.action == "retrieve":
            return RunDetailSerializer
        return RunSerializer

    def get_queryset(self) -> QuerySet[Run]:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Run.objects.none()
        # The user's projects by id first: filtering runs on a constant project id lets
        # the database read the newest 50 from an index instead of joining every run.
        projects = list(roles_of(self.request.user))
        qs = (
            Run.objects.filter(project_id=projects[0])
            if len(projects) == 1
            else Run.objects.filter(project_id__in=projects)
        ).select_related("project", "contract", "created_by")
        if self.action == "list":
            qs = qs.defer("observed", "overlay", "report")
        return qs

    @extend_schema(
        request=RunCreateSerializer,
        responses={201: RunSerializer, 200: RunSerializer},
        description="201 with a new queued run; 200 with the existing run when the same"
        " inputs were run before. Bad input: 400 naming what is wrong, nothing stored.",
    )
    def create(self, request, *args, **kwargs):
        body = RunCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        d = body.validated_data
        contract = (
            Contract.objects.select_related("project")
            .filter(pk=d["contract"], project__memberships__user=request.user)
            .first()
        )
        if contract is None:
            raise NotFound("no such contract")
        require(request.user, contract.project_id, RUN)
        try:
            run, created = services.run_create(
                contract=contract,
                user=request.user,
                query_key=d["query"],
                kind=d["input_kind"],
                data=d["input"],
                source_kind=d.get("source_kind") or "auto",
                mode=d["mode"],
                extractor=d["extractor"],
                model_name=d.get("model") or "",
                agent_version=d.get("agent_version") or "",
                judge_invariants=d.get("judge_invariants", False),
                select=d.get("select") or "",
                output=d.get("output") or "",
            )
        except services.ServiceError as exc:
            raise api_refusal(exc, "input") from exc
        run = self.get_queryset().get(pk=run.pk)
        data = RunSerializer(run, context=self.get_serializer_context()).data
        return Response(data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def report(self, request, pk=None, format=None):
        """The ``contracteval.report/v1`` of a finished run (404 until it is done)."""
        run = self.get_object()
        if run.report is None:
            raise NotFound(f"no report: the run is {run.status}")
        return Response(run.report)

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def export(self, request, pk=None, format=None):
        """The run as one JSON document: inputs, status, report, verdicts."""
        return Response(exports.run_export(self.get_object()))

    @extend_schema(request=None, responses={200: RunSerializer})
    @action(detail=True, methods=["post"])
    def retry(self, request, pk=None, format=None):
        """Queue a failed run again, or one stuck running (its worker died): runner role."""
        run = self.get_object()
        require(request.user, run.project_id, RUN)
        try:
            run = services.run_retry(run=run, user=request.user)
        except services.ServiceError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(RunSerializer(run, context=self.get_serializer_context()).data)

    @extend_schema(methods=["GET"], responses={200: VerdictSerializer(many=True)})
    @extend_schema(methods=["POST"], request=VerdictSerializer, responses={201: VerdictSerializer})
    @action(
        detail=True,
        methods=["get", "post"],
        serializer_class=VerdictSerializer,
        pagination_class=None,  # every verdict of the run, as a list (so documented)
    )
    def verdicts(self, request, pk=None, format=None):
        """Reviewer verdicts on the run; POST ``{agrees, note}`` (reviewer role)."""
        run = self.get_object()
        if request.method == "GET":
            qs = run.verdicts.select_related("reviewer")
            return Response(VerdictSerializer(qs, many=True).data)
        body = VerdictSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            verdict = services.verdict_record(
                run=run,
                user=request.user,
                agrees=body.validated_data["agrees"],
                note=body.validated_data.get("note", ""),
            )
        except services.ServiceError as exc:
            raise ValidationError({"detail": [str(exc)]}) from exc
        return Response(VerdictSerializer(verdict).data, status=status.HTTP_201_CREATED)


class BatchViewSet(
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Suite batches. POST ``{project, mode, extractor}`` runs the fixture suite; a
    multipart ``suite`` file (zip of FORMAT.md §7) runs that suite (reviewer role).
    ``evaluator`` is ``contracteval`` (default) or an LLM judge baseline
    (``judge-output``, ``judge-trace``, ``judge-trace-checklist``, ``judge-expected``),
    which needs a configured LLM endpoint (400 naming it otherwise, nothing stored)."""

    schema = DeferredSchema()  # see audit/openapi.py

    serializer_class = BatchSerializer
    parser_classes = [LimitedJSONParser, FormParser, MultiPartParser]
    permission_classes = [IsAuthenticated, ProjectRole]
    filterset_class = BatchApiFilter

    def get_queryset(self) -> QuerySet[Batch]:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Batch.objects.none()
        return (
            Batch.objects.filter(project__memberships__user=self.request.user.pk)
            .select_related("project")
            .defer("archive")
        )

    def create(self, request, *args, **kwargs):
        slug = request.data.get("project")
        if not slug:
            raise ValidationError({"project": ["a project slug is required"]})
        project, _ = project_for(request.user, str(slug), BATCH)
        upload = request.FILES.get("suite")
        try:
            batch = services.batch_create(
                project=project,
                user=request.user,
                mode=str(request.data.get("mode") or "oracle"),
                extractor=str(request.data.get("extractor") or "none"),
                archive=upload.read() if upload is not None else None,
                name=upload.name if upload is not None else "",
                judge=services.judge_of(
                    str(request.data.get("evaluator") or services.CONTRACTEVAL)
                ),
            )
        except services.ServiceError as exc:
            raise api_refusal(exc) from exc
        return Response(BatchSerializer(batch).data, status=status.HTTP_201_CREATED)
