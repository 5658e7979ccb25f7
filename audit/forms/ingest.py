"""Forms of the live ingestion page: a new ingest token, a new routing rule."""

from __future__ import annotations

from django import forms

from ..models import QuerySource, RunMode


class IngestTokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="the agent or service that will send with it")


class RoutingRuleForm(forms.Form):
    """A rule; the contract is one of the project's (the choices are set per page)."""

    attribute = forms.CharField(
        max_length=200,
        initial="gen_ai.agent.name",
        help_text="e.g. gen_ai.agent.name, service.name",
    )
    value = forms.CharField(max_length=500, help_text="the value it must have")
    contract_key = forms.ChoiceField(label="contract", choices=())
    query_from = forms.ChoiceField(label="query", choices=QuerySource.choices)
    query_value = forms.CharField(
        max_length=200,
        required=False,
        label="query id or attribute",
        help_text="empty for the first user message",
    )
    mode = forms.ChoiceField(
        choices=[(RunMode.TOKEN, "token"), (RunMode.SEMANTIC, "semantic")], initial=RunMode.TOKEN
    )

    def __init__(self, *args, contract_keys: list[str] = (), **kwargs) -> None:  # type: ignore[assignment]
        super().__init__(*args, **kwargs)
        self.fields["contract_key"].choices = [(k, k) for k in contract_keys]  # type: ignore[attr-defined]
