"""Forms: they parse and check input; the services decide what may change."""

from __future__ import annotations

from django import forms
from django.core.validators import RegexValidator

from ..fields import (
    LimitedJSONField,
    check_pasted_size,
    check_upload_size,
    clean_pasted,
    read_upload,
    version_field,
)
from ..models import ID_REGEX, Combine, EdgeKind, Node, NodeType

NO_LLM_SHORT = "no LLM endpoint configured"


def choice_field(form: forms.Form, name: str) -> forms.ChoiceField:
    """A choice field of ``form``, whose choices depend on the form's arguments."""
    field = form.fields[name]
    assert isinstance(field, forms.ChoiceField)
    return field


id_validator = RegexValidator(
    ID_REGEX, "letters, digits and _ . : - only, starting with a letter or digit"
)


class ImportForm(forms.Form):
    file = forms.FileField(required=False, help_text="A contracteval.contract/v1 JSON file")
    document = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 6}), label="…or paste the JSON"
    )

    def clean(self):
        super().clean()
        data = self.cleaned_data
        upload = data.get("file")
        # sizes before anything is read or parsed (the service checks depth and nodes)
        if upload:
            check_upload_size(upload, name="document_bytes")
            data["source"] = read_upload(upload, what=f"the file {upload.name}")
            data["filename"] = upload.name
        elif data.get("document", "").strip():
            what = "the pasted document"
            check_pasted_size(data["document"], name="document_bytes", what=what)
            data["source"] = clean_pasted(data["document"], what=what)
            data["filename"] = None
        else:
            raise forms.ValidationError("choose a file or paste a contract")
        return data


SPAN_ERRORS = {
    "required": "the selection has no %(name)s: select some text first",
    "invalid": "the selection's %(name)s must be a whole number",
    "min_value": "the selection's %(name)s must be at least %(limit_value)s",
}


def _span_bound(name: str, minimum: int, hidden: bool = False) -> forms.IntegerField:
    messages = {k: v.replace("%(name)s", name) for k, v in SPAN_ERRORS.items()}
    widget = forms.HiddenInput if hidden else forms.NumberInput
    return forms.IntegerField(min_value=minimum, widget=widget, error_messages=messages)


class SpanForm(forms.Form):
    start = _span_bound("start", 0)
    end = _span_bound("end", 1)

    def clean(self):
        super().clean()
        data = self.cleaned_data
        if "start" in data and "end" in data and data["start"] >= data["end"]:
            raise forms.ValidationError(
                f"a span must end after it starts (start {data['start']}, end {data['end']})"
            )
        return data


class EvidenceForm(SpanForm):
    version = version_field()


class NoVersion:
    """For a form that creates an object: nothing to base the change on."""

    fields: dict

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields.pop("version", None)


class VersionForm(forms.Form):
    """A change of one object that names the version it was based on (delete, review)."""

    version = version_field()


class ReviewForm(VersionForm):
    action = forms.ChoiceField(choices=[("confirm", "confirm"), ("reject", "reject")])


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
    meta = LimitedJSONField(label="Meta", required=False, widget=forms.Textarea(attrs={"rows": 2}))
    version = version_field()

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


class NewNodeForm(NoVersion, NodeForm):
    start = _span_bound("start", 0, hidden=True)
    end = _span_bound("end", 1, hidden=True)

    def clean(self):
        super().clean()
        data = self.cleaned_data
        if "start" in data and "end" in data and data["start"] >= data["end"]:
            raise forms.ValidationError(
                f"a span must end after it starts (start {data['start']}, end {data['end']})"
            )
        return data


# An edge as the sentence it states, read from the node on screen: "this node must
# happen before X" is source -> X, "must happen after X" is X -> this node.
EDGE_RELATIONS = [
    ("out:requires", "must happen before"),
    ("in:requires", "must happen after"),
    ("out:enables", "enables"),
    ("in:enables", "is enabled by"),
    ("out:branches_to", "branches to"),
    ("in:branches_to", "is a branch of"),
    ("out:produces", "produces"),
    ("in:produces", "is produced by"),
]
EDGE_VERBS = {
    "requires": "must happen before",
    "enables": "enables",
    "branches_to": "branches to",
    "produces": "produces",
}


class EdgeForm(forms.Form):
    """``relation`` (or ``direction`` + ``kind``) and the other node by id."""

    DIRECTIONS = [("out", "from this node to"), ("in", "to this node from")]
    relation = forms.ChoiceField(choices=EDGE_RELATIONS, required=False, label="relation")
    direction = forms.ChoiceField(choices=DIRECTIONS, required=False)
    kind = forms.ChoiceField(choices=EdgeKind.choices, required=False)
    other = forms.CharField(
        label="other node",
        max_length=128,
        widget=forms.TextInput(
            attrs={"list": "ws-node-ids", "autocomplete": "off", "placeholder": "node id"}
        ),
    )
    version = version_field()  # of the node whose panel the edge is drawn from

    def __init__(self, *args, contract, node, **kwargs):
        super().__init__(*args, **kwargs)
        self.contract, self.node = contract, node

    def clean_other(self):
        value = self.cleaned_data["other"].strip()
        nodes = Node.objects.filter(contract=self.contract).exclude(pk=self.node.pk)
        found = nodes.filter(node_id=value).first()
        if found is None and value.isdigit():
            found = nodes.filter(pk=int(value)).first()
        if found is None:
            raise forms.ValidationError(f"no other node with the id {value!r} in this contract")
        return found

    def clean(self):
        super().clean()
        data = self.cleaned_data
        if data.get("relation"):
            data["direction"], data["kind"] = data["relation"].split(":", 1)
        elif not (data.get("direction") and data.get("kind")):
            raise forms.ValidationError("choose how the two nodes relate")
        return data


class InvariantForm(forms.Form):
    inv_id = forms.CharField(label="id", max_length=128, validators=[id_validator])
    label = forms.CharField(max_length=500)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    applies_to = forms.ModelMultipleChoiceField(
        queryset=Node.objects.none(), required=False, help_text="empty: always applies"
    )
    check = LimitedJSONField(
        label="Check",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text='e.g. {"forbid_regex": "…", "violation_example": "…"}, {"forbid_tools": ["…"]},'
        ' {"allow_tools": ["…"]}, {"max_tool_calls": 8} or {"one_act_per_turn": true}',
    )
    version = version_field()

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


class NewInvariantForm(NoVersion, InvariantForm):
    start = _span_bound("start", 0, hidden=True)
    end = _span_bound("end", 1, hidden=True)


class QueryForm(forms.Form):
    query_id = forms.CharField(label="id", max_length=128, validators=[id_validator])
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}))
    intents = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, help_text="none: every root"
    )
    version = version_field()  # 0 for a new query

    BRANCH_PREFIX = "branch:"

    def __init__(self, *args, intents=(), **kwargs):
        super().__init__(*args, **kwargs)
        choice_field(self, "intents").choices = [(n.node_id, n.label) for n in intents]

    def branches(self) -> dict[str, str]:
        """The outcome chosen for each decision (fields named ``branch:<decision>``)."""
        return {
            key.removeprefix(self.BRANCH_PREFIX): value
            for key, value in self.data.items()
            if key.startswith(self.BRANCH_PREFIX) and value
        }


# ---------------------------------------------------------------------------- new contract

MEDIA_TYPES = [("text/markdown", "Markdown (text/markdown)"), ("text/plain", "Plain text")]
ARTIFACT_EXTENSIONS = (".md", ".markdown", ".txt")


class ContractDetailsForm(forms.Form):
    """The contract's own title, domain and the artifact's media type."""

    title = forms.CharField(max_length=300)
    domain = forms.CharField(
        max_length=200, required=False, help_text="e.g. customer support, finance"
    )
    media_type = forms.ChoiceField(choices=MEDIA_TYPES, initial="text/markdown")
    version = version_field()  # the contract's details_version

    def __init__(self, *args, current: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        # a contract imported with another (or no) media type may keep it
        if current is not None and current not in dict(MEDIA_TYPES):
            choice_field(self, "media_type").choices = [
                *MEDIA_TYPES,
                (current, current or "(none)"),
            ]


class NewContractForm(NoVersion, ContractDetailsForm):
    """A draft contract over a new instruction artifact (pasted text or a file)."""

    key = forms.CharField(
        label="Contract id",
        max_length=128,
        required=False,
        validators=[id_validator],
        help_text="letters, digits and _ . : - ; suggested from the title when left empty",
    )
    text = forms.CharField(
        label="Artifact text",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false"}),
    )
    file = forms.FileField(
        label="…or upload a file",
        required=False,
        help_text=".md or .txt, UTF-8",
        widget=forms.ClearableFileInput(attrs={"accept": ".md,.markdown,.txt,text/*"}),
    )
    propose = forms.BooleanField(label="Propose obligations now", required=False)
    proposer = forms.ChoiceField(
        choices=[("heuristic", "Heuristic"), ("llm", "LLM")], initial="heuristic", required=False
    )

    field_order = ["title", "key", "domain", "media_type", "text", "file", "propose", "proposer"]

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.project = project

    @staticmethod
    def suggest_key(title: str) -> str:
        from django.utils.text import slugify

        return slugify(title)[:128].strip("-_")

    def clean_file(self):
        upload = self.cleaned_data.get("file")
        if not upload:
            return None
        if not upload.name.lower().endswith(ARTIFACT_EXTENSIONS):
            raise forms.ValidationError("upload a .md or .txt file")
        check_upload_size(upload, name="artifact_bytes")
        return read_upload(upload, what="the file")

    def clean_text(self):
        # browsers send a textarea's line breaks as CRLF: store what the user pasted
        text = self.cleaned_data.get("text", "").replace("\r\n", "\n")
        check_pasted_size(text, name="artifact_bytes", what="the text")
        return text

    def clean(self):
        super().clean()
        data = self.cleaned_data
        text, upload = data.get("text", ""), data.get("file")
        if "file" in self.errors or "text" in self.errors:
            return data
        if upload is not None and text.strip():
            self.add_error("text", "paste the text or upload a file, not both")
        elif upload is not None:
            if not upload.strip():
                self.add_error("file", "the file is empty")
            data["artifact"] = upload
        elif text.strip():
            data["artifact"] = text
        else:
            self.add_error("text", "paste the artifact text or upload a .md or .txt file")
        if not self.errors.get("key") and "title" in data:
            key = data.get("key") or self.suggest_key(data["title"])
            if not key:
                self.add_error("key", "choose an id: none can be made from this title")
            elif self.project.contracts.filter(key=key).exists():
                self.add_error("key", f"a contract {key!r} exists already in this project")
            data["key"] = key
        data["proposer"] = (data.get("proposer") or "heuristic") if data.get("propose") else None
        return data
