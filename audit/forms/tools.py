"""Forms of the tool catalogue page: they parse input; the services decide what changes."""

from __future__ import annotations

from typing import Any

from django import forms

from matching.tools import MAX_BYTES


class ToolImportForm(forms.Form):
    """An OpenAI ``tools`` list, pasted or uploaded (the upload wins)."""

    tools_json = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 6}), label="Tools JSON"
    )
    tools_file = forms.FileField(required=False, label="or a .json file")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        upload = data.get("tools_file")
        if upload is not None:
            if upload.size > MAX_BYTES:
                raise forms.ValidationError(
                    f"the file is {upload.size} bytes; at most {MAX_BYTES} are accepted"
                )
            data["source"] = upload.read()
        elif data.get("tools_json", "").strip():
            data["source"] = data["tools_json"]
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
