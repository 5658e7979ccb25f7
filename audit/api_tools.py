"""The tool catalogue API: read a contract's tools, bindings and suggestions; import a
tools list; confirm a binding; declare read-only tools. Roles as in the UI."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from . import services
from .guards import api_call
from .models import Node
from .openapi import extend_schema
from .permissions import EDIT, VIEW, contract_for
from .selectors import tools as tool_reads


class ToolImportSerializer(serializers.Serializer):
    tools = serializers.JSONField(help_text="An OpenAI tools list (wrapped or bare functions).")


class ToolBindSerializer(serializers.Serializer):
    node = serializers.CharField(help_text="The node id.")
    tool = serializers.CharField(max_length=64)
    version = serializers.IntegerField(min_value=1, help_text="The node version you saw.")


class ReadOnlyToolsSerializer(serializers.Serializer):
    tools = serializers.ListField(child=serializers.CharField(max_length=64), allow_empty=False)


def _body(serializer_class, request):
    body = serializer_class(data=request.data)
    body.is_valid(raise_exception=True)
    return body.validated_data


def _catalogue(contract) -> dict:
    nodes = tool_reads.contract_nodes(contract)
    return {
        "tools": contract.tool_catalogue,
        "bindings": {r.tool.name: r.bound_to for r in tool_reads.tool_rows(contract, nodes)},
        "suggestions": [
            {"node": s.node.node_id, "version": s.node.version, "tool": s.tool, "score": s.score}
            for s in tool_reads.tool_suggestions(contract, nodes)
        ],
    }


class ToolCatalogueView(APIView):
    @extend_schema(
        responses={200: OpenApiTypes.OBJECT},
        description="The contract's tools, which nodes each is bound to, and suggestions.",
    )
    def get(self, request, pk):
        contract, _ = contract_for(request.user, pk, VIEW)
        return Response(_catalogue(contract))

    @extend_schema(
        request=ToolImportSerializer,
        responses={200: OpenApiTypes.OBJECT},
        description="Replace the catalogue with a tools list; bad input stores nothing:"
        " 413 past INPUT_LIMITS tools_bytes, 400 past tool_count or json_depth (in"
        " `parameters` too), for a NUL character or a malformed list.",
    )
    def put(self, request, pk):
        contract, _ = contract_for(request.user, pk, EDIT)
        data = _body(ToolImportSerializer, request)
        api_call(
            services.tool_catalogue_import,
            contract=contract,
            user=request.user,
            source=data["tools"],
        )
        contract.refresh_from_db()
        return Response(_catalogue(contract))


class ToolBindingView(APIView):
    @extend_schema(
        request=ToolBindSerializer,
        responses={200: OpenApiTypes.OBJECT},
        description="Set an action or validation node's meta.tool to a catalogue tool.",
    )
    def post(self, request, pk):
        contract, _ = contract_for(request.user, pk, EDIT)
        data = _body(ToolBindSerializer, request)
        node = get_object_or_404(Node, contract=contract, node_id=data["node"])
        node = api_call(
            services.tool_binding_confirm,
            node=node,
            user=request.user,
            tool=data["tool"],
            expected_version=data["version"],
        )
        return Response({"node": node.node_id, "version": node.version, "meta": node.meta})


class ReadOnlyToolsView(APIView):
    @extend_schema(
        request=ReadOnlyToolsSerializer,
        responses={201: OpenApiTypes.OBJECT},
        description="Declare tools as permitted, non-required lookups under the root intent.",
    )
    def post(self, request, pk):
        contract, _ = contract_for(request.user, pk, EDIT)
        data = _body(ReadOnlyToolsSerializer, request)
        nodes = api_call(
            services.tools_declare_read_only,
            contract=contract,
            user=request.user,
            names=data["tools"],
        )
        return Response(
            {"nodes": [{"id": n.node_id, "tool": n.meta["tool"]} for n in nodes]},
            status=status.HTTP_201_CREATED,
        )
