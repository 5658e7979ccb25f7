"""Form fields and upload readers that keep bad input out: sizes within the site's
input limits (checked before anything is read or parsed), JSON within the depth limit,
strict UTF-8, no NUL, and the version a change is based on.

A refusal by a size limit carries the code ``too_large``: :func:`form_status` answers
413 for it, 400 for any other refusal."""

from __future__ import annotations

from typing import Any

from django import forms
from django.forms.fields import InvalidJSONInput, JSONString

from matching.input_limits import InputRefused, Limits, check_text, decode_utf8, text_bytes

from .services.common import input_limits

TOO_LARGE = "too_large"


def refusal(exc: InputRefused) -> forms.ValidationError:
    """An input limit's refusal as a form error (code ``too_large`` for a size)."""
    return forms.ValidationError(exc.message, code=TOO_LARGE if exc.status == 413 else "refused")


def form_status(form: forms.Form) -> int:
    """The HTTP status of an invalid form: 413 when a size limit refused its input."""
    for errors in form.errors.as_data().values():
        if any(error.code == TOO_LARGE for error in errors):
            return 413
    return 400


def check_upload_size(upload: Any, *, name: str, limits: Limits | None = None) -> None:
    """Refuse an uploaded file past the limit ``name`` before reading a byte of it."""
    try:
        (limits or input_limits()).check_bytes(name, upload.size, what=f"the file {upload.name}")
    except InputRefused as exc:
        raise refusal(exc) from None


def check_pasted_size(text: str, *, name: str, what: str, limits: Limits | None = None) -> None:
    """Refuse pasted text past the limit ``name`` (its length in UTF-8) before parsing it."""
    limits = limits or input_limits()
    if len(text) * 4 <= getattr(limits, name):
        return  # no text of n characters is more than 4n bytes
    try:
        limits.check_bytes(name, text_bytes(text), what=what)
    except InputRefused as exc:
        raise refusal(exc) from None


class LimitedJSONField(forms.JSONField):
    """A JSON form field that refuses, with a message naming the limit, JSON nested
    deeper than ``json_depth``, larger than ``field_bytes`` (the site's input limits),
    or holding a NUL character (Django's own field would crash on the first and store
    the last)."""

    def to_python(self, value: Any) -> Any:
        if self.disabled:
            return value
        if value in self.empty_values:
            return None
        if isinstance(value, list | dict | int | float | JSONString):
            return value
        what = (self.label or "the field").lower()
        try:
            converted = input_limits().load_json(value, what=what, name="field_bytes")
        except InputRefused as exc:
            raise refusal(exc) from None
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
        raise refusal(exc) from None


def clean_pasted(text: str, *, what: str) -> str:
    """Text typed or pasted into a form field: no NUL, and no bytes that were not UTF-8."""
    try:
        return check_text(text, what=what, form_field=True)
    except InputRefused as exc:
        raise refusal(exc) from None
