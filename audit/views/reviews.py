"""Review decisions in the workspace: one node (the keys c / r), the filtered outline
(bulk), and undo. Each request names the nodes with the versions shown on screen; the
htmx answer carries only what changed: the next node's panel, the changed outline rows
and highlights, the header, the audit tab, the new history records and the undo button
with a sentence saying what the decision did.

A key pressed on one node may move it from any status (the reviewer chose that node);
a bulk decision moves only the *proposed* nodes of those sent, or the statuses named
in ``from`` (the status the outline filter picked), and leaves the others alone.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from .. import services
from ..forms import ReviewForm
from ..models import Node
from ..permissions import EDIT, contract_for
from ..selectors import reviews as review_reads
from ..selectors import workspace as ws
from ..services.reviews import ANY_STATE, DEFAULT_FROM, ReviewOutcome, nodes_review
from .common import error_status, form_errors, workspace_url
from .workspace import header_context, panel_context


def _pairs(values: list[str]) -> list[tuple[int, int]]:
    """``["12:3", …]`` (node pk : version seen) as pairs; malformed entries are an error."""
    out = []
    for v in values:
        pk, _, version = v.partition(":")
        if not (pk.isdigit() and version.isdigit()):
            raise services.ServiceError(
                f"malformed node reference {v[:40]!r}: expected the node and its version"
                " as pk:version"
            )
        out.append((int(pk), int(version)))
    return out


def _update(
    request,
    contract,
    membership,
    *,
    selected,
    outcome: ReviewOutcome | None = None,
    error="",
    status=200,
    advance=False,
):
    """The htmx answer to a review: the panel of ``selected`` (or, with ``advance``, of
    the next node to review) and what ``outcome`` changed."""
    changed = outcome.changed if outcome else []
    # the page offers to undo a decision, not an undo: after one the button goes away
    nothing_to_undo = outcome is None or outcome.action == "undo"
    undo = [] if nothing_to_undo else [(n.pk, n.version) for n, _ in changed]
    answer = review_reads.review_answer(
        contract, selected=selected.pk if selected else None, changed=changed, advance=advance
    )
    ctx = panel_context(contract, membership, answer.rows, answer.selected, error=error)
    ctx.update(header_context(contract, membership, answer.audit, answer.counts, answer.node_pks))
    ctx.update(
        changed_rows=answer.changed_rows,
        changed_segments=answer.changed_segments,
        records=ws.history(contract, limit=len(changed)) if changed else [],
        undo=undo,
        undo_count=len(undo),
        review_summary=outcome.summary if outcome else "",
    )
    return render(request, "audit/_review_update.html", ctx, status=status)


def _decide(request, contract, membership, *, action, refs, sources, selected, advance):
    """Apply ``action`` to ``refs`` (moving those in a status of ``sources``) and
    answer; a conflict or refusal shows inline."""
    try:
        outcome = nodes_review(
            contract=contract, user=request.user, action=action, nodes=refs, from_states=sources
        )
    except services.ServiceError as exc:
        code = error_status(exc)
        if not request.htmx:
            messages.error(request, str(exc))
            return redirect(workspace_url(contract, selected))
        return _update(
            request, contract, membership, selected=selected, error=str(exc), status=code
        )
    if not request.htmx:
        messages.info(request, outcome.summary)
        return redirect(workspace_url(contract, selected))
    return _update(
        request,
        contract,
        membership,
        selected=selected,
        outcome=outcome,
        advance=advance and selected is not None,
    )


@login_required
@vary_on_headers("HX-Request")
@require_POST
def node_review(request, pk, node_pk):
    """Confirm or reject one node; ``version`` is the version on screen."""
    contract, membership = contract_for(request.user, pk, EDIT)
    node = get_object_or_404(Node, pk=node_pk, contract=contract)
    form = ReviewForm(request.POST)
    if not form.is_valid():  # a decision must name the version it was made on
        if not request.htmx:
            messages.error(request, form_errors(form))
            return redirect(workspace_url(contract, node))
        return _update(
            request, contract, membership, selected=node, error=form_errors(form), status=422
        )
    return _decide(
        request,
        contract,
        membership,
        action=form.cleaned_data["action"],
        refs=[(node.pk, form.cleaned_data["version"])],
        sources=ANY_STATE,
        selected=node,
        advance=request.POST.get("advance") == "1",
    )


@login_required
@vary_on_headers("HX-Request")
@require_POST
def nodes_review_many(request, pk):
    """Confirm, reject or undo every node listed (``node`` = ``pk:version``), e.g. the
    outline as filtered on screen; ``from`` names the statuses to move (default
    *proposed*); ``selected`` keeps the panel on the node it shows."""
    contract, membership = contract_for(request.user, pk, EDIT)
    selected_pk = request.POST.get("selected", "")
    selected = (
        Node.objects.filter(pk=int(selected_pk), contract=contract).first()
        if selected_pk.isdigit()
        else None
    )
    action = request.POST.get("action", "")
    try:
        refs = _pairs(request.POST.getlist("node"))
    except services.ServiceError as exc:
        return _update(request, contract, membership, selected=selected, error=str(exc), status=422)
    if action == "undo" and refs:
        first = Node.objects.filter(pk=refs[0][0], contract=contract).first()
        selected = first or selected
    return _decide(
        request,
        contract,
        membership,
        action=action,
        refs=refs,
        sources=request.POST.getlist("from") or DEFAULT_FROM,
        selected=selected,
        advance=False,
    )
