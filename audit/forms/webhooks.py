"""The form of a new webhook endpoint; the service checks the URL's address and the
secret (the form only parses)."""

from __future__ import annotations

from django import forms

from ..models import SUBSCRIBABLE, WebhookEvent


class WebhookForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="the channel or service it posts to")
    # a plain field: the service says why a URL is refused (scheme, address) in one place
    url = forms.CharField(
        label="URL", max_length=2000, help_text="https://…; receives a signed JSON POST"
    )
    events = forms.MultipleChoiceField(
        choices=[(e.value, WebhookEvent(e).label) for e in SUBSCRIBABLE],
        initial=[WebhookEvent.RUN_VIOLATION.value],
        widget=forms.CheckboxSelectMultiple,
    )
    secret = forms.CharField(
        max_length=200,
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text="empty: one is generated and shown once",
    )
