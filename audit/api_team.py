"""The team API: queues, assignments, double annotation, blind decisions,
adjudication, agreement, comments and your notifications. Roles as in the UI; an annotator never reads
another annotator's decisions (nor the agreement) before adjudication starts."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import generics, status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from . import services
from .guards import api_call
from .models import Assignment, Node, Notification
from .openapi import extend_schema
from .permissions import (
    ASSIGN,
    COMMENT,
    CURATE,
    EDIT,
    VIEW,
    comment_for,
    contract_for,
    notification_for,
    project_for,
)
from .selectors import team as team_reads
from .team_serializers import (
    AssignmentCreateSerializer,
    AssignmentSerializer,
    CommentCreateSerializer,
    CommentSerializer,
    CurationSerializer,
    DecisionCreateSerializer,
    DecisionSerializer,
    DoubleAnnotationSerializer,
    NotificationSerializer,
    ResolveSerializer,
)


def _body(serializer_class, request):
    body = serializer_class(data=request.data)
    body.is_valid(raise_exception=True)
    return body.validated_data


def _node(contract, node_id: str) -> Node:
    return get_object_or_404(
        Node.objects.select_related("contract__artifact"), contract=contract, node_id=node_id
    )


class QueueView(APIView):
    @extend_schema(
        responses={200: {"type": "array", "items": {"type": "object"}}},
        description="Your assigned contracts.",
    )
    def get(self, request):
        items = team_reads.my_queue(request.user)
        return Response(
            [
                {
                    "contract": i.contract.pk,
                    "key": i.contract.key,
                    "version": i.contract.version,
                    "status": i.contract.status,
                    "role": i.role,
                    "phase": i.phase,
                    "percent_reviewed": i.progress.percent,
                    "audit_errors": i.progress.errors,
                }
                for i in items
            ]
        )


class AssignmentsView(APIView):
    @extend_schema(responses={200: AssignmentSerializer(many=True)})
    def get(self, request, pk):
        contract, _ = contract_for(request.user, pk, VIEW)
        rows = Assignment.objects.filter(contract=contract).select_related("user")
        return Response(AssignmentSerializer(rows, many=True).data)

    @extend_schema(request=AssignmentCreateSerializer, responses={201: AssignmentSerializer})
    def post(self, request, pk):
        """Assign a member (admin role); ``whole_project`` assigns every contract."""
        contract, _ = contract_for(request.user, pk, ASSIGN)
        d = _body(AssignmentCreateSerializer, request)
        user = get_user_model().objects.filter(username=d["username"]).first()
        if user is None:
            raise ValidationError({"username": ["no member of that name in this project"]})
        row = api_call(
            services.assignment_create,
            project=contract.project,
            user=user,
            by=request.user,
            role=d["role"],
            contract=None if d["whole_project"] else contract,
        )
        return Response(AssignmentSerializer(row).data, status=status.HTTP_201_CREATED)


class AssignmentView(APIView):
    @extend_schema(responses={204: None})
    def delete(self, request, pk):
        row = get_object_or_404(Assignment.objects.select_related("contract"), pk=pk)
        if row.contract is None:
            raise PermissionDenied("project assignments are removed in the admin")
        contract_for(request.user, row.contract.pk, ASSIGN)
        services.assignment_delete(assignment=row, by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class DoubleAnnotationView(APIView):
    @extend_schema(responses={200: DoubleAnnotationSerializer})
    def get(self, request, pk):
        contract, _ = contract_for(request.user, pk, VIEW)
        team = team_reads.team_of(contract)
        return Response(
            {
                "enabled": team is not None,
                "annotators_needed": team.annotators_needed if team else 2,
                "phase": team.phase if team else None,
            }
        )

    @extend_schema(request=DoubleAnnotationSerializer, responses={200: DoubleAnnotationSerializer})
    def put(self, request, pk):
        """Switch double annotation on or off (admin role; before anyone decides)."""
        contract, _ = contract_for(request.user, pk, ASSIGN)
        d = _body(DoubleAnnotationSerializer, request)
        api_call(
            services.double_annotation_set,
            contract=contract,
            by=request.user,
            enabled=d["enabled"],
            annotators_needed=d["annotators_needed"],
        )
        return self.get(request, pk)


class DecisionsView(APIView):
    @extend_schema(responses={200: DecisionSerializer(many=True)})
    def get(self, request, pk):
        """The decisions you may read: your own; everyone's once adjudication starts
        (a curator who does not annotate this contract: always)."""
        contract, membership = contract_for(request.user, pk, VIEW)
        rows = team_reads.visible_decisions(contract, request.user, membership)
        return Response(DecisionSerializer(rows, many=True).data)

    @extend_schema(request=DecisionCreateSerializer, responses={200: DecisionSerializer})
    def post(self, request, pk):
        """Record your own blind decision on a node (``fields`` for an edit)."""
        contract, _ = contract_for(request.user, pk, EDIT)
        d = _body(DecisionCreateSerializer, request)
        row = api_call(
            services.decision_record,
            node=_node(contract, d["node"]),
            user=request.user,
            action=d["action"],
            fields=d["fields"],
            expected_version=d.get("expected_version"),
        )
        return Response(DecisionSerializer(row).data)


class AgreementView(APIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request, pk):
        """κ, α, span F1, type and edge agreement, the disagreements (path-changing
        first) and the per-query G_E differences. 403 while it would reveal an
        annotator's decisions to another."""
        contract, membership = contract_for(request.user, pk, VIEW)
        if not team_reads.may_see_all(contract, request.user, membership):
            raise PermissionDenied("the agreement is hidden until adjudication starts")
        agreement = team_reads.agreement_of(contract)
        if agreement is None:
            raise NotFound("no agreement yet: two annotators must have decided")
        return Response(agreement)


# The adjudication list: one row per node; ``disagreement`` and ``curated`` are null
# when everyone agreed or the curator has not chosen yet.
ADJUDICATION_ROWS = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "node": {"type": "string"},
            "review_status": {"type": "string"},
            "disagreement": {"type": "object", "nullable": True},
            "decisions": {"type": "object", "additionalProperties": {"type": "object"}},
            "curated": {"type": "object", "nullable": True},
        },
    },
}


class AdjudicationView(APIView):
    @extend_schema(responses={200: ADJUDICATION_ROWS})
    def get(self, request, pk):
        """Every node, disagreements first, with each annotator's decision and the
        curated choice (reviewer role, not an annotator of the contract)."""
        contract, membership = contract_for(request.user, pk, CURATE)
        if not team_reads.may_see_all(contract, request.user, membership):
            raise PermissionDenied("an annotator of this contract cannot adjudicate it")
        decisions: dict[int, dict] = {}
        for d in team_reads.visible_decisions(contract, request.user, membership):
            decisions.setdefault(d.node_id, {})[d.user.get_username()] = d.as_decision()
        return Response(
            [
                {
                    "node": r.node.node_id,
                    "review_status": r.node.review_status,
                    "disagreement": r.disagreement,
                    "decisions": decisions.get(r.node.pk, {}),
                    "curated": r.choice.result if r.choice else None,
                }
                for r in team_reads.adjudication_rows(contract)
            ]
        )

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT})
    def post(self, request, pk):
        """Start the adjudication: freezes the decisions, returns the agreement."""
        contract, _ = contract_for(request.user, pk, CURATE)
        team = api_call(services.adjudication_start, contract=contract, user=request.user)
        return Response(team.agreement)


class CurationView(APIView):
    @extend_schema(request=CurationSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request, pk):
        """The curator's choice on a node: ``pick`` an annotator, or ``action``."""
        contract, _ = contract_for(request.user, pk, CURATE)
        d = _body(CurationSerializer, request)
        choice = api_call(
            services.curation_choose,
            node=_node(contract, d["node"]),
            user=request.user,
            pick=d.get("pick"),
            action=d.get("action"),
            fields=d["fields"],
        )
        return Response({"node": d["node"], "source": choice.source, "result": choice.result})


class CommentsView(APIView):
    @extend_schema(responses={200: CommentSerializer(many=True)})
    def get(self, request, pk):
        contract, _ = contract_for(request.user, pk, VIEW)
        return Response(CommentSerializer(team_reads.comments_of(contract), many=True).data)

    @extend_schema(request=CommentCreateSerializer, responses={201: CommentSerializer})
    def post(self, request, pk):
        """Comment on the contract or one of its nodes, edges, invariants or runs."""
        contract, _ = contract_for(request.user, pk, COMMENT)
        d = _body(CommentCreateSerializer, request)
        obj = team_reads.comment_target(contract, d["target"], d.get("target_id"))
        row = api_call(
            services.comment_create,
            contract=contract,
            user=request.user,
            body=d["body"],
            target=d["target"],
            obj=obj,
        )
        return Response(CommentSerializer(row).data, status=status.HTTP_201_CREATED)


class CommentResolveView(APIView):
    @extend_schema(request=ResolveSerializer, responses={200: CommentSerializer})
    def post(self, request, pk):
        comment, _ = comment_for(request.user, pk, COMMENT)
        d = _body(ResolveSerializer, request)
        row = services.comment_set_resolved(
            comment=comment, user=request.user, resolved=d["resolved"]
        )
        return Response(CommentSerializer(row).data)


class NotificationsView(generics.ListAPIView):
    """Your notifications (comments that mention you), the unread first, newest first
    within each; ``?unread=1``: the unread only. Paged: ``{count, next, previous,
    results}``."""

    serializer_class = NotificationSerializer

    @extend_schema(
        parameters=[OpenApiParameter("unread", OpenApiTypes.BOOL, description="1: the unread only")]
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema: no user to read for
            return Notification.objects.none()
        unread = self.request.query_params.get("unread", "") in ("1", "true", "yes", "on")
        return team_reads.notifications_of(self.request.user, unread_only=unread)


class NotificationReadView(APIView):
    @extend_schema(request=None, responses={200: NotificationSerializer})
    def post(self, request, pk):
        """Mark one of your notifications read (anyone else's: 404)."""
        notification = notification_for(request.user, pk)
        row = api_call(
            services.notification_mark_read, notification=notification, user=request.user
        )
        return Response(NotificationSerializer(row).data)


class ProjectAgreementView(APIView):
    @extend_schema(responses={200: {"type": "array", "items": {"type": "object"}}})
    def get(self, request, slug):
        """One agreement row per double-annotated contract you may read, then a pooled
        ``(project)`` row (α over every node, means of the other figures)."""
        project, membership = project_for(request.user, slug, VIEW)
        return Response(team_reads.project_agreement_rows(project, request.user, membership))
