"""Views of runs, the reviewer inbox and suite batches (issue 5).

Same pattern as ``audit/views.py``: access check → form → one service call → render.
Mutations are POST with CSRF; every htmx ``hx-get`` has a plain ``href`` too.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from . import runs
from .models import FAMILY_FIELDS, METRIC_FIELDS, ExtractorName, InputKind, RunMode, RunStatus
from .permissions import has_role, project_for
from .services import ServiceError

MAX_TRACE_BYTES = 10 * 1024 * 1024
METRIC_NAMES = {
    "required_recall": "Required recall",
    "observed_precision": "Observed precision",
    "edge_conformance": "Edge conformance",
    "branch_correctness": "Branch correctness",
    "invariant_score": "Invariants",
    "output_validity": "Output validity",
}
FAMILY_NAMES = {
    "wrong_branch": "Wrong branch",
    "omission": "Omission",
    "ordering": "Ordering",
    "extra_action": "Extra action",
    "invariant_violation": "Invariant violation",
    "output_contract": "Output contract",
}


def _is_htmx(request) -> bool:
    return request.headers.get("HX-Request") == "true"


# ---------------------------------------------------------------------------- forms


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
        self.fields["target"].choices = groups

    def clean(self):
        data = super().clean()
        upload = data.get("file")
        if upload is not None:
            if upload.size > MAX_TRACE_BYTES:
                raise forms.ValidationError("the file is larger than 10 MB")
            data["payload"] = upload.read()
        elif (data.get("text") or "").strip():
            data["payload"] = data["text"]
        else:
            raise forms.ValidationError("upload a file or paste the trace")
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


NO_LLM_SHORT = "no LLM endpoint configured"


def _llm_ready() -> bool:
    try:
        return runs.llm_config().configured
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
        choices=runs.EVALUATORS,
        initial=runs.CONTRACTEVAL,
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


# ---------------------------------------------------------------------------- runs


def _runs_context(project, membership, request, form=None, error=""):
    contracts = runs.runnable_contracts(project)
    params = {
        k: request.GET.get(k, "") for k in ("status", "verdict", "contract", "query", "model")
    }
    qs = runs.filter_runs(
        project.runs.select_related("contract").defer("observed", "overlay", "report"), params
    )
    page = Paginator(qs, 50).get_page(request.GET.get("page"))
    return {
        "project": project,
        "membership": membership,
        "form": form or RunForm(contracts=contracts),
        "has_contracts": bool(contracts),
        "page": page,
        "params": params,
        "error": error,
        "statuses": RunStatus.choices,
    }


@login_required
@require_GET
def run_list(request, slug):
    project, membership = project_for(request.user, slug, runs.RUN)
    return render(request, "audit/runs.html", _runs_context(project, membership, request))


@login_required
@require_POST
def run_create(request, slug):
    project, membership = project_for(request.user, slug, runs.RUN)
    contracts = runs.runnable_contracts(project)
    form = RunForm(request.POST, request.FILES, contracts=contracts)
    error = ""
    if form.is_valid():
        d = form.cleaned_data
        contract = next((c for c in contracts if c.pk == d["contract_pk"]), None)
        if contract is None:
            error = "choose an audited contract of this project"
        else:
            try:
                run, created = runs.run_create(
                    contract=contract,
                    user=request.user,
                    query_key=d["query_key"],
                    kind=d["input_kind"],
                    data=d["payload"],
                    source_kind=d["source_kind"],
                    mode=d["mode"],
                    extractor=d["extractor"],
                    model_name=d["model_name"],
                    judge_invariants=bool(d.get("judge_invariants")),
                )
            except ServiceError as exc:
                error = str(exc)
            else:
                if not created:
                    messages.info(
                        request, f"The same inputs were already run: this is run {run.pk}."
                    )
                return redirect("audit:run_detail", pk=run.pk)
    ctx = _runs_context(project, membership, request, form=form, error=error)
    return render(request, "audit/runs.html", ctx, status=400)


def _segments(text: str, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The trace cut at every observed span boundary: ``[{text, ids, status}]``."""
    marks: list[tuple[int, int, str, str]] = []
    for o in nodes:
        for s in o.get("spans") or o.get("evidence") or []:
            start, end = int(s["start"]), int(s["end"])
            if 0 <= start < end <= len(text):
                marks.append((start, end, o["id"], o.get("status", "")))
    cuts = sorted({0, len(text), *(m[0] for m in marks), *(m[1] for m in marks)})
    out = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        inside = [m for m in marks if m[0] <= a and b <= m[1]]
        out.append(
            {
                "text": text[a:b],
                "ids": " ".join(m[2] for m in inside),
                "status": inside[0][3] if inside else "",
            }
        )
    return out


def _run_context(run, membership, verdict_form=None, verdict_error=""):
    report = run.report or {}
    overlay = run.overlay
    if overlay is not None:
        trace_text = overlay.get("trace", {}).get("text", "")
        observed_nodes = overlay.get("observed", [])
    else:
        trace_text = (run.observed.get("source") or {}).get("text", "")
        observed_nodes = run.observed.get("nodes", [])
    metrics = [
        (
            METRIC_NAMES[m],
            getattr(run, m),
            None if getattr(run, m) is None else round(getattr(run, m) * 100),
        )
        for m in METRIC_FIELDS
    ]
    return {
        "project": run.project,
        "membership": membership,
        "run": run,
        "report": report,
        "failures": [
            {**f, "index": i, "name": FAMILY_NAMES.get(f["family"], f["family"])}
            for i, f in enumerate(report.get("failures", []))
        ],
        "metrics": metrics,
        "payload": overlay,
        "segments": _segments(trace_text, observed_nodes),
        "observed_nodes": observed_nodes,
        "verdicts": list(run.verdicts.select_related("reviewer")),
        "can_verdict": has_role(membership.role, runs.VERDICT),
        "verdict_form": verdict_form or VerdictForm(),
        "verdict_error": verdict_error,
    }


@login_required
@require_GET
def run_detail(request, pk):
    run, membership = runs.run_for(request.user, pk)
    return render(request, "audit/run.html", _run_context(run, membership))


def _poll(request, obj, detail: str, partial: str, ctx: dict) -> HttpResponse:
    """A status poll: the partial while work goes on, then a redirect to the detail page
    (``HX-Redirect`` for htmx; a plain request goes there at once)."""
    url = reverse(detail, args=[obj.pk])
    if not _is_htmx(request):
        return redirect(url)
    if obj.is_finished:
        return HttpResponse(status=204, headers={"HX-Redirect": url})
    return render(request, partial, ctx)


@login_required
@require_GET
def run_status(request, pk):
    """Polled by htmx while the run is queued or running; then the page reloads."""
    run, _ = runs.run_for(request.user, pk)
    return _poll(request, run, "audit:run_detail", "audit/run.html#status", {"run": run})


def _attachment(body: str, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@require_GET
def run_report(request, pk):
    run, _ = runs.run_for(request.user, pk)
    if run.report is None:
        raise Http404("this run has no report yet")
    body = json.dumps(run.report, indent=1, ensure_ascii=False) + "\n"
    return _attachment(body, "application/json; charset=utf-8", f"run-{run.pk}-report.json")


@login_required
@require_GET
def run_export(request, pk, fmt):
    if fmt not in ("json", "csv"):
        raise Http404("export as .json or .csv")
    run, _ = runs.run_for(request.user, pk)
    if fmt == "csv":
        return _attachment(runs.run_csv(run), "text/csv; charset=utf-8", f"run-{run.pk}.csv")
    body = json.dumps(runs.run_export(run), indent=1, ensure_ascii=False) + "\n"
    return _attachment(body, "application/json; charset=utf-8", f"run-{run.pk}.json")


@login_required
@require_POST
def run_verdict(request, pk):
    run, membership = runs.run_for(request.user, pk, runs.VERDICT)
    form = VerdictForm(request.POST)
    error = ""
    if form.is_valid():
        try:
            runs.verdict_record(
                run=run,
                user=request.user,
                agrees=form.cleaned_data["agrees"],
                note=form.cleaned_data["note"],
            )
        except ServiceError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Verdict recorded on run {run.pk}.")
            return redirect(f"{reverse('audit:run_detail', args=[run.pk])}#verdicts")
    else:
        error = "choose whether you agree with the report"
    ctx = _run_context(run, membership, verdict_form=form, verdict_error=error)
    return render(request, "audit/run.html", ctx, status=400)


@login_required
@require_POST
def run_retry(request, pk):
    run, _ = runs.run_for(request.user, pk, runs.RUN)
    try:
        runs.run_retry(run=run, user=request.user)
    except ServiceError as exc:
        messages.error(request, str(exc))
    return redirect("audit:run_detail", pk=run.pk)


# ---------------------------------------------------------------------------- inbox

INBOX_FILTERS = ("contract", "query", "family", "model", "reviewed")


@login_required
@require_GET
def inbox(request, slug):
    project, membership = project_for(request.user, slug, runs.RUN)
    params = {k: request.GET.get(k, "") for k in INBOX_FILTERS}
    qs = runs.inbox(project, params)
    page = Paginator(qs, 50).get_page(request.GET.get("page"))
    query = "&".join(f"{k}={v}" for k, v in params.items() if v)
    return render(
        request,
        "audit/inbox.html",
        {
            "project": project,
            "membership": membership,
            "page": page,
            "params": params,
            "choices": runs.inbox_choices(project),
            "family_names": FAMILY_NAMES,
            "filter_query": query,
        },
    )


@login_required
@require_GET
def inbox_export(request, slug, fmt):
    if fmt not in ("json", "csv"):
        raise Http404("export as .json or .csv")
    project, _ = project_for(request.user, slug, runs.RUN)
    params = {k: request.GET.get(k, "") for k in INBOX_FILTERS}
    rows = [runs.run_row(r) for r in runs.inbox(project, params)]
    if fmt == "csv":
        fields = list(rows[0]) if rows else None
        body = runs.rows_csv(rows, fields)
        return _attachment(body, "text/csv; charset=utf-8", f"{project.slug}-inbox.csv")
    body = json.dumps({"project": project.slug, "filters": params, "runs": rows}, indent=1)
    return _attachment(body + "\n", "application/json; charset=utf-8", f"{project.slug}-inbox.json")


# ---------------------------------------------------------------------------- batches


def _batches_context(project, membership, form=None, error=""):
    return {
        "project": project,
        "membership": membership,
        "batches": list(project.batches.defer("archive")[:50]),
        "form": form or BatchForm(),
        "can_batch": has_role(membership.role, runs.BATCH),
        "error": error,
        "fixture_suite": f"fixtures/{runs.fixture_suite_dir().name}",
    }


@login_required
@require_GET
def batch_list(request, slug):
    project, membership = project_for(request.user, slug, runs.RUN)
    return render(request, "audit/batches.html", _batches_context(project, membership))


@login_required
@require_POST
def batch_create(request, slug):
    project, membership = project_for(request.user, slug, runs.BATCH)
    form = BatchForm(request.POST, request.FILES)
    error = ""
    if form.is_valid():
        upload = form.cleaned_data.get("suite")
        archive = None
        if upload is not None:
            from django.conf import settings

            if upload.size > settings.SUITE_UPLOAD_MAX_BYTES:
                error = f"the archive is larger than {settings.SUITE_UPLOAD_MAX_BYTES:,} bytes"
            else:
                archive = upload.read()
        if not error:
            try:
                batch = runs.batch_create(
                    project=project,
                    user=request.user,
                    mode=form.cleaned_data["mode"],
                    extractor=form.cleaned_data["extractor"],
                    archive=archive,
                    name=upload.name if upload is not None else "",
                    judge=runs.judge_of(form.cleaned_data["evaluator"]),
                )
            except ServiceError as exc:
                error = str(exc)
            else:
                return redirect("audit:batch_detail", pk=batch.pk)
    ctx = _batches_context(project, membership, form=form, error=error)
    return render(request, "audit/batches.html", ctx, status=400)


def _batch_context(batch, membership):
    scores = batch.scores or {}
    return {
        "project": batch.project,
        "membership": membership,
        "batch": batch,
        "scores": scores,
        "rows": runs.family_rows(scores) if scores else [],
        "family_names": FAMILY_NAMES,
        "judge_label": dict(runs.EVALUATORS).get(f"judge-{batch.judge}", "") if batch.judge else "",
    }


@login_required
@require_GET
def batch_detail(request, pk):
    batch, membership = runs.batch_for(request.user, pk)
    return render(request, "audit/batch.html", _batch_context(batch, membership))


@login_required
@require_GET
def batch_status(request, pk):
    batch, _ = runs.batch_for(request.user, pk)
    return _poll(
        request, batch, "audit:batch_detail", "audit/batch.html#progress", {"batch": batch}
    )


@login_required
@require_GET
def batch_scores(request, pk):
    batch, _ = runs.batch_for(request.user, pk)
    if batch.scores is None:
        raise Http404("this batch has no scores yet")
    response = JsonResponse(batch.scores, json_dumps_params={"indent": 1})
    response["Content-Disposition"] = f'attachment; filename="batch-{batch.pk}-scores.json"'
    return response


__all__ = [
    "FAMILY_FIELDS",
    "batch_create",
    "batch_detail",
    "batch_list",
    "batch_scores",
    "batch_status",
    "inbox",
    "inbox_export",
    "run_create",
    "run_detail",
    "run_export",
    "run_list",
    "run_report",
    "run_retry",
    "run_status",
    "run_verdict",
]
