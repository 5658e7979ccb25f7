"""Form fields and upload readers that keep bad input out: JSON within depth and size
limits, strict UTF-8, no NUL, and the version a change is based on."""

from __future__ import annotations

from typing import Any

from django import forms
from django.forms.fields import InvalidJSONInput, JSONString

from matching.input_limits import InputRefused, check_text, decode_utf8, load_json

FIELD_JSON_MAX_BYTES = 1024 * 1024


class LimitedJSONField(forms.JSONField):
    """A JSON form field that refuses, with a message naming the limit, JSON nested
    too deeply, larger than ``max_bytes``, or holding a NUL character (Django's own
    field would crash on the first and store the last)."""

    def __init__(self, *args: Any, max_bytes: int = FIELD_JSON_MAX_BYTES, **kwargs: Any):
        self.max_bytes = max_bytes
        super().__init__(*args, **kwargs)

    def to_python(self, value: Any) -> Any:
        if self.disabled:
            return value
        if value in self.empty_values:
            return None
        if isinstance(value, list | dict | int | float | JSONString):
            return value
        what = (self.label or "the field").lower()
        try:
            converted = load_json(value, what=what, max_bytes=self.max_bytes)
        except InputRefused as exc:
            raise forms.ValidationError(exc.message, code="invalid") from None
        return JSONString(converted) if isinstance(converted, str) else converted

    def bound_data(self, data: Any, initial: Any) -> Any:
        try:
            return super().bound_data(data, initial)
        except RecursionError:  # shown back as typed; to_python says what is wrong
            return InvalidJSONInput(data)


def version_field() -> forms.IntegerField:
    """The version of the object a change is based on (required: no silent default)."""
    return forms.IntegerField(
        min_value=0,
        widget=forms.HiddenInput,
        error_messages={
            "required": "the version this change is based on is missing; reload the page",
        },
    )


def read_upload(upload: Any, *, what: str) -> str:
    """An uploaded file's text: strict UTF-8 (a byte-order mark dropped), no NUL."""
    try:
        return check_text(decode_utf8(upload.read(), what=what), what=what)
    except InputRefused as exc:
        raise forms.ValidationError(exc.message) from None


def clean_pasted(text: str, *, what: str) -> str:
    """Text typed or pasted into a form field: no NUL, and no bytes that were not UTF-8."""
    try:
        return check_text(text, what=what, form_field=True)
    except InputRefused as exc:
        raise forms.ValidationError(exc.message) from None
