"""The forms of runs, verdicts and batches."""

from __future__ import annotations

from django import forms

from ..fields import check_pasted_size, check_upload_size, clean_pasted, read_upload
from ..models import CONTRACTEVAL, EVALUATORS, ExtractorName, InputKind, RunMode
from ..services.common import ServiceError, llm_config
from .workspace import NO_LLM_SHORT, choice_field


class RunForm(forms.Form):
    target = forms.ChoiceField(label="Contract and query")
    input_kind = forms.ChoiceField(
        label="Input",
        choices=[("auto", "Detect"), *InputKind.choices],
        initial="auto",
    )
    file = forms.FileField(label="Upload a file", required=False)
    text = forms.CharField(
        label="…or paste it",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}),
    )
    output = forms.CharField(
        label="Final output",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text="optional: the agent's final answer or record, checked against the"
        " contract's output requirements, when the pasted trace does not end with it",
    )
    select = forms.CharField(
        label="τ-bench trajectory",
        required=False,
        max_length=200,
        help_text="for a τ-bench results file: task_id=…,trial=… (left empty, the error"
        " lists the trajectories in the file)",
    )
    source_kind = forms.ChoiceField(
        label="Text is",
        choices=[("auto", "Detect"), ("trace", "a trace"), ("response", "a final response")],
        initial="auto",
    )
    mode = forms.ChoiceField(choices=RunMode.choices, initial=RunMode.TOKEN)
    extractor = forms.ChoiceField(choices=ExtractorName.choices, initial=ExtractorName.NONE)
    model_name = forms.CharField(
        label="Model", required=False, max_length=200, help_text="the agent that made the trace"
    )
    agent_version = forms.CharField(
        label="Agent version",
        required=False,
        max_length=200,
        help_text="optional: the agent's release or commit, compared in analytics",
    )
    judge_invariants = forms.BooleanField(
        label="Judge unchecked invariants with the LLM",
        required=False,
        help_text="invariants without a machine check and without a score in the document",
    )

    def __init__(self, *args, contracts=(), llm_ready=None, **kwargs):
        super().__init__(*args, **kwargs)
        if llm_ready is None:
            llm_ready = _llm_ready()
        if not llm_ready:
            self.fields["judge_invariants"].widget.attrs.update(disabled=True, title=NO_LLM_SHORT)
            self.fields[
                "judge_invariants"
            ].help_text = f"{NO_LLM_SHORT}: those invariants stay unjudged"
        groups = []
        for c in contracts:
            options = [
                (f"{c.pk}|{q.query_id}", f"{q.query_id} — {q.text[:70]}") for q in c.queries.all()
            ]
            if options:
                groups.append((f"{c.display_title} v{c.version}", options))
        choice_field(self, "target").choices = groups

    def clean(self):
        super().clean()
        data = self.cleaned_data
        upload = data.get("file")
        # sizes before anything is read: the service checks the trace it renders to
        if upload is not None:
            check_upload_size(upload, name="upload_bytes")
            data["payload"] = read_upload(upload, what=f"the file {upload.name}")
        elif (data.get("text") or "").strip():
            check_pasted_size(data["text"], name="upload_bytes", what="the pasted text")
            data["payload"] = clean_pasted(data["text"], what="the pasted text")
        else:
            raise forms.ValidationError("upload a file or paste the trace")
        if data.get("output"):
            check_pasted_size(data["output"], name="trace_bytes", what="the final output")
            data["output"] = clean_pasted(data["output"], what="the final output")
        target = data.get("target") or ""
        pk, _, query = target.partition("|")
        data["contract_pk"], data["query_key"] = int(pk or 0), query
        return data


class VerdictForm(forms.Form):
    agrees = forms.TypedChoiceField(
        choices=[("yes", "I agree with the report"), ("no", "I disagree with the report")],
        coerce=lambda v: v == "yes",
        widget=forms.RadioSelect,
    )
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))


class ReviewThresholdsForm(forms.Form):
    """A project's review thresholds; empty: the shipped pair model's value."""

    clean_below = forms.FloatField(
        label="Clean below",
        required=False,
        min_value=0.0,
        max_value=1.0,
        help_text="a semantic run whose P(violation) is below this reads clean",
    )
    violation_from = forms.FloatField(
        label="Violation from",
        required=False,
        min_value=0.0,
        max_value=1.0,
        help_text="from this P(violation) on it reads as a violation; between the two it"
        " needs review",
    )


def _llm_ready() -> bool:
    try:
        return llm_config().configured
    except ServiceError:
        return False


class EvaluatorSelect(forms.Select):
    """The evaluator choice, with the LLM judges disabled when no LLM is configured."""

    llm_ready = True

    def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
        option = super().create_option(name, value, label, selected, index, subindex, attrs)
        if not self.llm_ready and str(value).startswith("judge-"):
            option["attrs"]["disabled"] = True
            option["attrs"]["title"] = f"{NO_LLM_SHORT}: there is no offline judge"
        return option


class BatchForm(forms.Form):
    evaluator = forms.ChoiceField(
        choices=EVALUATORS,
        initial=CONTRACTEVAL,
        required=False,  # absent (older clients): ContractEval
        widget=EvaluatorSelect,
    )
    suite = forms.FileField(
        label="Suite archive (.zip)",
        required=False,
        help_text="contracts/<id>.json and cases.jsonl (FORMAT.md §7); empty: the fixture suite",
    )
    mode = forms.ChoiceField(choices=RunMode.choices, initial=RunMode.ORACLE)
    extractor = forms.ChoiceField(choices=ExtractorName.choices, initial=ExtractorName.NONE)

    def __init__(self, *args, llm_ready=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.llm_ready = _llm_ready() if llm_ready is None else llm_ready
        self.fields["evaluator"].widget.llm_ready = self.llm_ready

    def clean_suite(self):
        upload = self.cleaned_data.get("suite")
        if upload is not None:  # refused before a byte of it is read
            check_upload_size(upload, name="suite_archive_bytes")
        return upload
