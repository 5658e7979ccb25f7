"""Forms: they parse and check input; the services decide what may change."""

from __future__ import annotations

from django import forms
from django.core.validators import RegexValidator

from .models import ID_REGEX, Combine, EdgeKind, Node, NodeType

id_validator = RegexValidator(
    ID_REGEX, "letters, digits and _ . : - only, starting with a letter or digit"
)


class ImportForm(forms.Form):
    file = forms.FileField(required=False, help_text="A contracteval.contract/v1 JSON file")
    document = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 6}), label="…or paste the JSON"
    )

    MAX_BYTES = 20 * 1024 * 1024

    def clean(self):
        data = super().clean()
        upload = data.get("file")
        if upload:
            if upload.size > self.MAX_BYTES:
                raise forms.ValidationError("the file is larger than 20 MB")
            data["source"], data["filename"] = upload.read(), upload.name
        elif data.get("document", "").strip():
            data["source"], data["filename"] = data["document"], None
        else:
            raise forms.ValidationError("choose a file or paste a contract")
        return data


class SpanForm(forms.Form):
    start = forms.IntegerField(min_value=0)
    end = forms.IntegerField(min_value=1)

    def clean(self):
        data = super().clean()
        if "start" in data and "end" in data and data["start"] >= data["end"]:
            raise forms.ValidationError("a span must end after it starts")
        return data


def _node_choices(field, contract, exclude=None):
    qs = (
        Node.objects.filter(contract=contract)
        .only("pk", "node_id", "label")
        .order_by("position", "pk")
    )
    if exclude is not None:
        qs = qs.exclude(pk=exclude.pk)
    field.queryset = qs
    field.label_from_instance = lambda n: f"{n.node_id} — {n.label[:60]}"


class NodeForm(forms.Form):
    node_id = forms.CharField(label="id", max_length=128, validators=[id_validator])
    type = forms.ChoiceField(choices=NodeType.choices)
    label = forms.CharField(max_length=500)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    parent = forms.ModelChoiceField(
        queryset=Node.objects.none(), required=False, empty_label="— none (a root) —"
    )
    required = forms.BooleanField(required=False, initial=True)
    explicit = forms.BooleanField(required=False)
    combine = forms.ChoiceField(choices=Combine.choices, initial=Combine.ALL)
    meta = forms.JSONField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    version = forms.IntegerField(widget=forms.HiddenInput, required=False)

    def __init__(self, *args, contract, node=None, **kwargs):
        super().__init__(*args, **kwargs)
        _node_choices(self.fields["parent"], contract, exclude=node)

    def clean_meta(self):
        meta = self.cleaned_data.get("meta")
        if meta in (None, ""):
            return {}
        if not isinstance(meta, dict):
            raise forms.ValidationError("meta must be a JSON object")
        return meta

    @classmethod
    def initial_for(cls, node: Node) -> dict:
        return {
            "node_id": node.node_id,
            "type": node.type,
            "label": node.label,
            "description": node.description,
            "parent": node.parent_id,
            "required": node.required,
            "explicit": node.explicit,
            "combine": node.combine,
            "meta": node.meta,
            "version": node.version,
        }


class NewNodeForm(NodeForm):
    start = forms.IntegerField(min_value=0, widget=forms.HiddenInput)
    end = forms.IntegerField(min_value=1, widget=forms.HiddenInput)


class EdgeForm(forms.Form):
    DIRECTIONS = [("out", "from this node to"), ("in", "to this node from")]
    direction = forms.ChoiceField(choices=DIRECTIONS, initial="out")
    kind = forms.ChoiceField(choices=EdgeKind.choices)
    other = forms.ModelChoiceField(
        queryset=Node.objects.none(), label="node", empty_label="— choose a node —"
    )

    def __init__(self, *args, contract, node, **kwargs):
        super().__init__(*args, **kwargs)
        _node_choices(self.fields["other"], contract, exclude=node)


class InvariantForm(forms.Form):
    inv_id = forms.CharField(label="id", max_length=128, validators=[id_validator])
    label = forms.CharField(max_length=500)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    applies_to = forms.ModelMultipleChoiceField(
        queryset=Node.objects.none(), required=False, help_text="empty: always applies"
    )
    check = forms.JSONField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text='e.g. {"forbid_regex": "…", "violation_example": "…"}',
    )

    def __init__(self, *args, contract, **kwargs):
        super().__init__(*args, **kwargs)
        _node_choices(self.fields["applies_to"], contract)

    def clean_check(self):
        check = self.cleaned_data.get("check")
        if check in (None, "", {}):
            return None
        if not isinstance(check, dict):
            raise forms.ValidationError("check must be a JSON object")
        return check


class NewInvariantForm(InvariantForm):
    start = forms.IntegerField(min_value=0, widget=forms.HiddenInput)
    end = forms.IntegerField(min_value=1, widget=forms.HiddenInput)


class QueryForm(forms.Form):
    query_id = forms.CharField(label="id", max_length=128, validators=[id_validator])
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}))
    intents = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, help_text="none: every root"
    )

    BRANCH_PREFIX = "branch:"

    def __init__(self, *args, intents=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["intents"].choices = [(n.node_id, n.label) for n in intents]

    def branches(self) -> dict[str, str]:
        """The outcome chosen for each decision (fields named ``branch:<decision>``)."""
        return {
            key.removeprefix(self.BRANCH_PREFIX): value
            for key, value in self.data.items()
            if key.startswith(self.BRANCH_PREFIX) and value
        }
