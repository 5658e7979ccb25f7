"""Serializers of the team API (assignments, decisions, curation, comments,
notifications)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from .models import (
    AnnotatorDecision,
    Assignment,
    AssignmentRole,
    Comment,
    DecisionAction,
    Notification,
)


class AssignmentSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username", read_only=True)
    contract = serializers.IntegerField(source="contract_id", read_only=True, allow_null=True)

    class Meta:
        model = Assignment
        fields = ["id", "user", "role", "contract", "created_at"]


class AssignmentCreateSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=AssignmentRole.choices)
    whole_project = serializers.BooleanField(default=False)


class DoubleAnnotationSerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    annotators_needed = serializers.IntegerField(min_value=2, max_value=10, default=2)
    # null while double annotation is off
    phase = serializers.CharField(read_only=True, allow_null=True)


class DecisionSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username", read_only=True)
    node = serializers.CharField(source="node.node_id", read_only=True)

    class Meta:
        model = AnnotatorDecision
        fields = ["id", "user", "node", "action", "fields", "version", "updated_at"]


# ``fields`` below names the edited node fields, as in the UI; DRF's metaclass moves
# declared fields out of the class, so it does not shadow ``Serializer.fields``.


class DecisionCreateSerializer(serializers.Serializer):
    node = serializers.CharField(max_length=128, help_text="the node id")
    action = serializers.ChoiceField(choices=DecisionAction.choices)
    fields = serializers.DictField(required=False, default=dict)  # type: ignore[assignment]
    expected_version = serializers.IntegerField(required=False, min_value=1)


class CurationSerializer(serializers.Serializer):
    node = serializers.CharField(max_length=128, help_text="the node id")
    pick = serializers.CharField(max_length=150, required=False, help_text="an annotator")
    action = serializers.ChoiceField(choices=DecisionAction.choices, required=False)
    fields = serializers.DictField(required=False, default=dict)  # type: ignore[assignment]


class CommentSerializer(serializers.ModelSerializer):
    author = serializers.CharField(source="author.username", read_only=True, allow_null=True)
    mentions: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        many=True, read_only=True, slug_field="username"
    )
    about = serializers.CharField(source="target_label", read_only=True)

    class Meta:
        model = Comment
        fields = ["id", "target", "about", "author", "body", "mentions", "resolved", "created_at"]


class CommentCreateSerializer(serializers.Serializer):
    target = serializers.ChoiceField(choices=["contract", "node", "edge", "invariant", "run"])
    target_id = serializers.IntegerField(required=False, min_value=1, help_text="row id")
    body = serializers.CharField(max_length=5000)


class ResolveSerializer(serializers.Serializer):
    resolved = serializers.BooleanField()


class NotificationSerializer(serializers.ModelSerializer):
    """A comment that mentions you: where it is, who wrote it, and whether you read it."""

    comment = serializers.IntegerField(source="comment_id", read_only=True)
    project = serializers.CharField(source="comment.contract.project.slug", read_only=True)
    contract = serializers.IntegerField(source="comment.contract_id", read_only=True)
    about = serializers.CharField(source="comment.target_label", read_only=True)
    author = serializers.CharField(
        source="comment.author.username", read_only=True, allow_null=True
    )
    body = serializers.CharField(source="comment.body", read_only=True)
    unread = serializers.SerializerMethodField()

    class Meta:
        model = Notification
        fields = [
            *("id", "comment", "project", "contract", "about", "author", "body"),
            *("created_at", "read_at", "unread"),
        ]

    def get_unread(self, obj: Notification) -> bool:
        return obj.read_at is None
