"""The options of the analytics pages and API: the trend's period and the comparison of
two agent versions or models (the run filters are :class:`audit.filters.AnalyticsFilter`)."""

from __future__ import annotations

from django import forms

BY_CHOICES = [("agent_version", "Agent version"), ("model", "Model")]
BUCKET_CHOICES = [("day", "per day"), ("week", "per week")]


class TrendForm(forms.Form):
    bucket = forms.ChoiceField(choices=BUCKET_CHOICES, required=False)

    def clean_bucket(self) -> str:
        return self.cleaned_data.get("bucket") or "day"


class CompareForm(forms.Form):
    by = forms.ChoiceField(label="Compare", choices=BY_CHOICES, required=False)
    a = forms.CharField(label="A (baseline)", max_length=200)
    b = forms.CharField(label="B (candidate)", max_length=200)

    def clean_by(self) -> str:
        return self.cleaned_data.get("by") or "agent_version"

    def clean(self):
        data = super().clean() or {}
        if data.get("a") and data.get("a") == data.get("b"):
            raise forms.ValidationError("choose two different values to compare")
        return data
