"""Forms of team work: they parse and check input; the services decide what may change."""

from __future__ import annotations

from typing import Any

from django import forms

from .models import AssignmentRole, Combine, CommentTarget, DecisionAction, NodeType, Role


class AssignmentForm(forms.Form):
    username = forms.CharField(max_length=150, label="Member")
    role = forms.ChoiceField(choices=AssignmentRole.choices)
    whole_project = forms.BooleanField(required=False, label="the whole project")


class DoubleAnnotationForm(forms.Form):
    enabled = forms.BooleanField(required=False, label="Needs independent audits")
    annotators_needed = forms.IntegerField(min_value=2, max_value=10, initial=2)


class DecisionForm(forms.Form):
    """One decision; for an edit, the fields that change (blank = unchanged)."""

    action = forms.ChoiceField(choices=DecisionAction.choices)
    type = forms.ChoiceField(choices=[("", "(unchanged)"), *NodeType.choices], required=False)
    label = forms.CharField(max_length=500, required=False)
    required = forms.ChoiceField(
        choices=[("", "(unchanged)"), ("yes", "required"), ("no", "optional")], required=False
    )
    combine = forms.ChoiceField(choices=[("", "(unchanged)"), *Combine.choices], required=False)
    evidence_start = forms.IntegerField(min_value=0, required=False)
    evidence_end = forms.IntegerField(min_value=1, required=False)
    expected_version = forms.IntegerField(min_value=1, required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        fields: dict[str, Any] = {}
        for key in ("type", "label", "combine"):
            if data.get(key):
                fields[key] = data[key]
        if data.get("required"):
            fields["required"] = data["required"] == "yes"
        start, end = data.get("evidence_start"), data.get("evidence_end")
        if (start is None) != (end is None):
            raise forms.ValidationError("evidence: give both the start and the end")
        if start is not None:
            fields["evidence"] = [[start, end]]
        fields.update(self.more_fields(data))
        if data.get("action") == DecisionAction.EDIT and not fields:
            raise forms.ValidationError("an edit changes at least one field")
        data["fields"] = fields
        return data

    def more_fields(self, data: dict[str, Any]) -> dict[str, Any]:
        """Edited fields a subclass reads from inputs of its own."""
        return {}


class SpanListField(forms.Field):
    """Spans ticked as ``start-end`` values (any number of checkboxes of one name)."""

    widget = forms.SelectMultiple

    def to_python(self, value: Any) -> list[list[int]]:
        out = []
        for item in value or []:
            start, _, end = str(item).partition("-")
            if not (start.isdigit() and end.isdigit()):
                raise forms.ValidationError(f"evidence: {str(item)[:40]!r} is not a span")
            out.append([int(start), int(end)])
        return out


class CurationForm(DecisionForm):
    """Pick an annotator's version, or decide as the curator (a DecisionForm); the
    curator's evidence is the spans ticked among the versions'."""

    pick = forms.CharField(max_length=150, required=False)
    action = forms.ChoiceField(choices=[("", "(pick)"), *DecisionAction.choices], required=False)
    spans = SpanListField(required=False)

    def more_fields(self, data: dict[str, Any]) -> dict[str, Any]:
        return {"evidence": data["spans"]} if data.get("spans") else {}

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not data.get("pick") and not data.get("action"):
            raise forms.ValidationError("pick an annotator's version or decide yourself")
        return data


class CommentForm(forms.Form):
    """``about`` is ``contract`` or ``<target>:<pk>`` (``node:12``, ``run:3`` ...)."""

    about = forms.CharField(max_length=40, initial=CommentTarget.CONTRACT)
    body = forms.CharField(max_length=5000, widget=forms.Textarea(attrs={"rows": 3}))

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        target, _, pk = (data.get("about") or "contract").partition(":")
        if target not in CommentTarget.values or (target != "contract") != pk.isdigit():
            raise forms.ValidationError("about: the contract, or one of its parts")
        data["target"], data["target_id"] = target, int(pk) if pk else None
        return data


class ResolveForm(forms.Form):
    resolved = forms.BooleanField(required=False)


class BlindEditForm(forms.Form):
    """An edit of a node in the annotator's blind copy, pre-filled with the copy's values;
    the service keeps only what differs from the proposal."""

    type = forms.ChoiceField(choices=NodeType.choices)
    label = forms.CharField(max_length=500)
    required = forms.ChoiceField(choices=[("yes", "required"), ("no", "optional")])
    combine = forms.ChoiceField(choices=Combine.choices)
    expected_version = forms.IntegerField(min_value=1, required=False)

    @staticmethod
    def initial_for(node: Any) -> dict[str, Any]:
        return {
            "type": node.type,
            "label": node.label,
            "required": "yes" if node.required else "no",
            "combine": node.combine,
        }

    def edited_fields(self) -> dict[str, Any]:
        data = self.cleaned_data
        out = {k: data[k] for k in ("type", "label", "combine")}
        out["required"] = data["required"] == "yes"
        return out


class BlindSpanForm(forms.Form):
    """A span to add to (``remove``: take from) the evidence of the blind copy."""

    start = forms.IntegerField(min_value=0)
    end = forms.IntegerField(min_value=1)
    remove = forms.BooleanField(required=False)
    # the version of the copy the annotator saw (0: no decision yet), as every write
    # of the workspace names the version it was based on
    expected_version = forms.IntegerField(
        min_value=0, error_messages={"required": "send the version of your copy you saw"}
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("start") is not None and data.get("end") is not None:
            if data["start"] >= data["end"]:
                raise forms.ValidationError("the span ends before it starts")
        return data


class MemberForm(forms.Form):
    """A new member of a project: an existing user and their role."""

    username = forms.CharField(max_length=150, label="User")
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)
