"""Proposals: queue a proposer on a draft's artifact, run it (the Celery task calls
:func:`proposal_run_execute`), and add what it proposes as *proposed* rows."""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.db import transaction
from django.utils import timezone

from matching.extractors import FallbackWarning
from matching.llm.client import LLMClient, LLMError
from matching.llm.proposer import LLMProposals, get_proposer
from matching.propose import Proposals

from .. import enqueue
from ..models import (
    Contract,
    Edge,
    Invariant,
    Node,
    ProposalRun,
    ProposalRunStatus,
    ReviewStatus,
    Span,
)
from ..permissions import EDIT, authorize
from .common import (
    ServiceError,
    editable,
    llm_config,
    next_position,
    record,
    touch,
    unique_node_id,
)
from .concurrency import locked_contract, retry_on_lock

logger = logging.getLogger(__name__)


PROPOSERS = ("heuristic", "llm")


class ProposalRetry(Exception):
    """A transient LLM failure (rate limit, server error, timeout) that outlived the
    client's own retries. The run is queued again and the Celery task retries it later
    (``autoretry_for``); on the task's last attempt the run fails instead."""


@retry_on_lock
def contract_request_proposals(*, contract: Contract, user, proposer: str = "heuristic"):
    """Queue a proposal run; the Celery task starts once the transaction commits.

    ``proposer`` is ``"heuristic"`` or ``"llm"``. An LLM run without a configured
    endpoint is accepted: the heuristic runs and the run says so (``notice``).
    """
    authorize(user, contract.project_id, EDIT)
    if proposer not in PROPOSERS:
        raise ServiceError(f"unknown proposer {proposer!r}")
    with transaction.atomic():
        contract = locked_contract(contract.pk)
        run = ProposalRun.objects.create(contract=contract, requested_by=user, proposer=proposer)
        record(
            contract,
            user,
            "request_proposals",
            "proposal_run",
            str(run.pk),
            after={"proposer": proposer},
        )
        enqueue.proposals_on_commit(run.pk)
    return run


def _llm_usage(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over call records (``matching.llm.client.CallRecord.to_dict()``)."""
    return {
        "calls": len(calls),
        "failed_calls": sum(1 for c in calls if not c.get("ok")),
        "prompt_tokens": sum(c.get("prompt_tokens") or 0 for c in calls),
        "completion_tokens": sum(c.get("completion_tokens") or 0 for c in calls),
        "seconds": round(sum(c.get("latency") or 0.0 for c in calls), 3),
    }


def proposal_run_execute(*, run_id: int, final_attempt: bool = True) -> ProposalRun:
    """Run a queued proposal run (called by the Celery task).

    Records what actually ran (``used_proposer``), and for an LLM run the model, the
    discarded proposals with their reasons and the calls' tokens and latency. A
    transient LLM failure raises :class:`ProposalRetry` with the run queued again,
    unless ``final_attempt``: then, like any other failure, the run fails with the
    reason.
    """
    run = _claim(run_id)
    if run.status != ProposalRunStatus.RUNNING:
        return run  # finished already: the task ran twice
    calls = _CallLog()
    retry: ProposalRetry | None = None
    try:
        nodes, edges, duplicates = _propose(run, calls)
    except ServiceError as exc:
        run.status, run.error = ProposalRunStatus.FAILED, str(exc)
    except LLMError as exc:
        where = calls.client.config.describe() if calls.client else "the LLM"
        if exc.transient and not final_attempt:
            run.status, run.error = ProposalRunStatus.QUEUED, ""
            run.notice = f"attempt {run.attempts} failed, will retry: {exc.reason}"
            retry = ProposalRetry(exc.reason)
        else:
            logger.warning("proposal run %s failed at %s: %s", run.pk, where, exc.reason)
            run.status, run.error = ProposalRunStatus.FAILED, f"{where}: {exc.reason}"
    else:
        run.status, run.created_nodes, run.created_edges = ProposalRunStatus.DONE, nodes, edges
        run.discarded = [*run.discarded, *duplicates]
        if run.notice.startswith("attempt "):
            run.notice = ""  # a retry note from an earlier attempt that no longer applies
    _save_outcome(run, calls, finished=retry is None)
    if retry is not None:
        raise retry
    return run


@dataclass
class _CallLog:
    """The LLM client of a run, and how many calls it had made before the run began
    (the client is shared, so the run's calls are the ones after that)."""

    client: LLMClient | None = None
    first: int = 0


def _claim(run_id: int) -> ProposalRun:
    """The run, marked running for this attempt (unchanged when it is finished)."""
    with transaction.atomic():
        run = (
            ProposalRun.objects.select_for_update(of=("self",))
            .select_related("contract__artifact", "requested_by")
            .get(pk=run_id)
        )
        if run.status in (ProposalRunStatus.DONE, ProposalRunStatus.FAILED):
            return run
        run.status = ProposalRunStatus.RUNNING
        run.attempts += 1
        run.save(update_fields=["status", "attempts"])
    return run


def _propose(run: ProposalRun, calls: _CallLog) -> Applied:
    """Run the proposer on the contract's artifact and add what it proposes."""
    contract = run.contract
    editable(contract)
    config = llm_config()
    if run.proposer == "llm" and config.configured:
        calls.client = LLMClient.shared(config)  # the one get_proposer uses
        calls.first = len(calls.client.calls)
        run.model_name = config.model
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FallbackWarning)
        propose = get_proposer(run.proposer, config)
    for w in caught:
        if issubclass(w.category, FallbackWarning):
            run.notice = str(w.message)
        else:
            warnings.warn(w.message, w.category, stacklevel=1)
    proposals = propose(contract.artifact.text)
    run.used_proposer = proposals.proposer
    if isinstance(proposals, LLMProposals):
        run.model_name = proposals.model
        run.discarded = [d.to_dict() for d in proposals.discarded]
        if proposals.unreliable:
            run.notice = (
                "unreliable: most of the model's quotes were not anchored in the"
                f" artifact ({proposals.quotes.summary()}); what was proposed is thin"
            )
    return contract_apply_proposals(contract=contract, user=run.requested_by, proposals=proposals)


def _save_outcome(run: ProposalRun, calls: _CallLog, *, finished: bool) -> None:
    if calls.client is not None:
        run.llm_calls = [*run.llm_calls, *(c.to_dict() for c in calls.client.calls[calls.first :])]
        run.usage = _llm_usage(run.llm_calls)
    if finished:
        run.finished_at = timezone.now()
    run.save(
        update_fields=[
            "status",
            "error",
            "created_nodes",
            "created_edges",
            "finished_at",
            "used_proposer",
            "model_name",
            "notice",
            "discarded",
            "usage",
            "llm_calls",
        ]
    )


class Applied(NamedTuple):
    nodes: int
    edges: int
    duplicates: list[dict[str, str]]  # the proposals skipped, as discards with a reason


@retry_on_lock
def contract_apply_proposals(*, contract: Contract, user, proposals: Proposals) -> Applied:
    """Add proposals as *proposed* nodes (and edges, invariants).

    A proposal whose first evidence span shares at least half of the longer of the two
    with the evidence of a node the contract has (of any type and status: confirmed,
    edited, rejected) duplicates that node and is skipped, so running a proposer on a
    curated contract, or twice, adds no parallel tree; the skipped ones are returned
    with the node they duplicate. Ids that are taken get a suffix.
    """
    authorize(user, contract.project_id, EDIT)
    with transaction.atomic():
        contract = locked_contract(contract.pk)
        created, duplicates = _new_nodes(contract, proposals)
        Node.objects.bulk_create([n for n, _ in created])
        rename = {p["id"]: node for node, p in created}
        Span.objects.bulk_create(
            Span(node=node, start=s["start"], end=s["end"], position=j)
            for node, p in created
            for j, s in enumerate(p["evidence"])
        )
        with_parent = []
        for node, p in created:
            if p.get("parent") and p["parent"] in rename:
                node.parent = rename[p["parent"]]
                with_parent.append(node)
        Node.objects.bulk_update(with_parent, ["parent"])
        edge_position = next_position(contract.edges)
        new_edges = [
            Edge(
                contract=contract,
                source=rename[e["source"]],
                target=rename[e["target"]],
                kind=e["kind"],
                position=edge_position + i,
                proposer=proposals.proposer,
            )
            for i, e in enumerate(
                e for e in proposals.edges if e["source"] in rename and e["target"] in rename
            )
        ]
        Edge.objects.bulk_create(new_edges)
        _add_invariants(contract, proposals.invariants)
        record(
            contract,
            user,
            "propose",
            "contract",
            contract.key,
            after={
                "proposer": proposals.proposer,
                "nodes": [n.node_id for n, _ in created],
                "edges": len(new_edges),
                "duplicates": len(duplicates),
            },
        )
        touch(contract)
    return Applied(len(created), len(new_edges), duplicates)


def _new_nodes(
    contract: Contract, proposals: Proposals
) -> tuple[list[tuple[Node, dict[str, Any]]], list[dict[str, str]]]:
    """Unsaved nodes for the proposals that duplicate no node of the contract, each with
    its proposal (a taken id gets a suffix), and the duplicates as discards."""
    existing = list(contract.nodes.prefetch_related("spans"))
    taken = {n.node_id for n in existing}
    held = [(s.start, s.end, n) for n in existing for s in n.spans.all()]
    position = next_position(contract.nodes)
    created: list[tuple[Node, dict[str, Any]]] = []
    duplicates: list[dict[str, str]] = []
    for p in proposals.nodes:
        spans = [(s["start"], s["end"]) for s in p["evidence"]]
        twin = _twin(spans[0], held) if spans else None
        if twin is not None:
            reason = f"duplicates node {twin.node_id} ({twin.get_review_status_display()})"
            duplicates.append({"what": "node", "label": p["label"], "reason": reason})
            continue
        note = proposals.notes.get(p["id"])
        node = Node(
            contract=contract,
            node_id=unique_node_id(contract, p["id"], taken),
            type=p["type"],
            label=p["label"],
            description=p.get("description", ""),
            required=p["required"],
            explicit=p.get("explicit", False),
            combine=p.get("combine", "all"),
            meta=p.get("meta", {}),
            position=position,
            review_status=ReviewStatus.PROPOSED,
            proposer=proposals.proposer,
            score=note.score if note else None,
            justification=note.justification if note else "",
        )
        taken.add(node.node_id)
        position += 1
        created.append((node, p))
    return created, duplicates


def _twin(span: tuple[int, int], held: list[tuple[int, int, Node]]) -> Node | None:
    """The node whose evidence and ``span`` share at least half of the longer of the two
    (an edited span of the same sentence; a sentence inside a node's paragraph is not)."""
    start, end = span
    for a, b, node in held:
        overlap = min(end, b) - max(start, a)
        if overlap > 0 and overlap * 2 >= max(end - start, b - a):
            return node
    return None


def _add_invariants(contract: Contract, proposed: list[dict[str, Any]]) -> None:
    """Store the proposed invariants whose first span is new; a taken id gets a suffix."""
    inv_seen = {(s.start, s.end) for s in Span.objects.filter(invariant__contract=contract)}
    inv_taken = set(contract.invariants.values_list("inv_id", flat=True))
    inv_position = next_position(contract.invariants)
    for d in proposed:
        spans = [(s["start"], s["end"]) for s in d["evidence"]]
        if spans and spans[0] in inv_seen:
            continue
        inv_id = d["id"]
        n = 2
        while inv_id in inv_taken:
            inv_id, n = f"{d['id']}_{n}", n + 1
        inv_taken.add(inv_id)
        inv = Invariant.objects.create(
            contract=contract,
            inv_id=inv_id,
            label=d["label"],
            description=d.get("description", ""),
            position=inv_position,
        )
        inv_position += 1
        Span.objects.bulk_create(
            Span(invariant=inv, start=s, end=e, position=j) for j, (s, e) in enumerate(spans)
        )
