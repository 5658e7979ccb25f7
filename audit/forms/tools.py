"""Forms of the tool catalogue page: they parse input; the services decide what changes."""

from __future__ import annotations

from typing import Any

from django import forms

from ..fields import check_pasted_size, check_upload_size, clean_pasted, read_upload


class ToolImportForm(forms.Form):
    """An OpenAI ``tools`` list, pasted or uploaded (the upload wins), held to the same
    input checks as every upload: its size before it is read, strict UTF-8 and no NUL
    (the service checks the JSON's depth, ``parameters`` included, and the tool count)."""

    tools_json = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 6}), label="Tools JSON"
    )
    tools_file = forms.FileField(required=False, label="or a .json file")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        upload = data.get("tools_file")
        if upload is not None:
            check_upload_size(upload, name="tools_bytes")
            data["source"] = read_upload(upload, what=f"the file {upload.name}")
        elif data.get("tools_json", "").strip():
            what = "the pasted tools list"
            check_pasted_size(data["tools_json"], name="tools_bytes", what=what)
            data["source"] = clean_pasted(data["tools_json"], what=what)
        else:
            raise forms.ValidationError("paste a tools list or choose a file")
        return data


class ToolBindForm(forms.Form):
    node = forms.IntegerField()
    tool = forms.CharField(max_length=64)
    version = forms.IntegerField(min_value=1)


class ReadOnlyToolsForm(forms.Form):
    names = forms.MultipleChoiceField(choices=[], label="Read-only tools")

    def __init__(self, *args, names: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields["names"]
        assert isinstance(field, forms.MultipleChoiceField)
        field.choices = [(n, n) for n in names]


def first_error(form: forms.Form) -> str:
    """The form's first message, named after its field (for the page's error line)."""
    for field, errors in form.errors.items():
        prefix = "" if field == "__all__" else f"{field}: "
        return prefix + str(errors[0])
    return ""
