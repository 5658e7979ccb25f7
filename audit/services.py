"""Every write that spans rows: atomic, and each one appends an :class:`AuditRecord`.

Services take keyword arguments (``node_confirm(node=…, user=…)``), check that the
contract may change (an audited contract is read-only), write, and record the values
before and after. They raise :class:`ServiceError` with a message fit for the user.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from matching.conditioning import condition
from matching.errors import ContractEvalError
from matching.extractors import FallbackWarning
from matching.formats import contract_from_data
from matching.llm.client import LLMClient, LLMError
from matching.llm.config import LLMConfig
from matching.llm.proposer import LLMProposals, get_proposer
from matching.propose import Proposals
from matching.validate import audit_contract, load_contract

from .models import (
    ID_REGEX,
    Artifact,
    AuditRecord,
    Contract,
    ContractStatus,
    Edge,
    EdgeKind,
    Invariant,
    Node,
    Project,
    ProposalRun,
    ProposalRunStatus,
    Query,
    ReviewStatus,
    Span,
)
from .selectors import contract_document, node_snapshot


class ServiceError(Exception):
    """A change that cannot be made; the message is shown to the user as it is."""


# ---------------------------------------------------------------------------- helpers


def _record(
    contract: Contract,
    user,
    action: str,
    object_type: str,
    object_id: str = "",
    *,
    before: Any = None,
    after: Any = None,
) -> AuditRecord:
    return AuditRecord.objects.create(
        contract=contract,
        user=user if user is not None and user.is_authenticated else None,
        action=action,
        object_type=object_type,
        object_id=object_id,
        before=before,
        after=after,
    )


def _editable(contract: Contract) -> None:
    if contract.status == ContractStatus.AUDITED:
        raise ServiceError(
            f"{contract.key} v{contract.version} is audited and read-only; start a new version"
            " to change it"
        )


def _touch(contract: Contract) -> None:
    Contract.objects.filter(pk=contract.pk).update(updated_at=timezone.now())


def _check_span(contract: Contract, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` inside the artifact, without surrounding whitespace."""
    text = contract.artifact.text
    if not (0 <= start < end <= len(text)):
        raise ServiceError(f"span [{start}, {end}) is outside the artifact (length {len(text)})")
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start == end:
        raise ServiceError("the selection is only whitespace")
    return start, end


def _next_position(qs) -> int:
    top = qs.aggregate(m=Max("position"))["m"]
    return 0 if top is None else top + 1


def _unique_node_id(contract: Contract, wanted: str, taken: set[str] | None = None) -> str:
    if taken is None:
        taken = set(contract.nodes.values_list("node_id", flat=True))
    candidate, n = wanted, 2
    while candidate in taken:
        candidate, n = f"{wanted}_{n}", n + 1
    return candidate


def _invariant_snapshot(inv: Invariant) -> dict[str, Any]:
    return {
        "id": inv.inv_id,
        "label": inv.label,
        "description": inv.description,
        "applies_to": [n.node_id for n in inv.applies_to.all()],
        "check": inv.machine_check,
        "evidence": [[s.start, s.end] for s in inv.spans.all()],
    }


# ---------------------------------------------------------------------------- import


def _store_document(
    *,
    project: Project,
    doc: Mapping[str, Any],
    version: int,
    previous: Contract | None,
    review_status: str,
    proposer: str,
    provenance: Mapping[str, Mapping[str, Any]] | None = None,
) -> Contract:
    """Write a (canonical) contract document as rows. No checks: callers validate."""
    text = doc["artifact"]["text"]
    media_type = doc["artifact"].get("media_type") or ""
    content_hash = Artifact.hash_text(text)
    artifact = Artifact.objects.filter(
        project=project, content_hash=content_hash, media_type=media_type
    ).first() or Artifact.objects.create(project=project, text=text, media_type=media_type)
    contract = Contract.objects.create(
        project=project,
        artifact=artifact,
        key=doc["id"],
        title=doc.get("title") or "",
        domain=doc.get("domain") or "",
        version=version,
        previous=previous,
    )
    provenance = provenance or {}
    nodes = Node.objects.bulk_create(
        Node(
            contract=contract,
            node_id=n["id"],
            type=n["type"],
            label=n["label"],
            description=n.get("description", ""),
            required=n["required"],
            explicit=n.get("explicit", False),
            combine=n.get("combine", "all"),
            meta=n.get("meta", {}),
            position=i,
            review_status=provenance.get(n["id"], {}).get("review_status", review_status),
            proposer=provenance.get(n["id"], {}).get("proposer", proposer),
            score=provenance.get(n["id"], {}).get("score"),
            justification=provenance.get(n["id"], {}).get("justification", ""),
        )
        for i, n in enumerate(doc["nodes"])
    )
    by_id = {n.node_id: n for n in nodes}
    parented = []
    for n, d in zip(nodes, doc["nodes"], strict=True):
        if d.get("parent"):
            n.parent = by_id[d["parent"]]
            parented.append(n)
    Node.objects.bulk_update(parented, ["parent"])
    spans = [
        Span(node=n, start=s["start"], end=s["end"], position=j)
        for n, d in zip(nodes, doc["nodes"], strict=True)
        for j, s in enumerate(d["evidence"])
    ]
    Edge.objects.bulk_create(
        Edge(
            contract=contract,
            source=by_id[e["source"]],
            target=by_id[e["target"]],
            kind=e["kind"],
            position=i,
            proposer=proposer if review_status == ReviewStatus.PROPOSED else "",
        )
        for i, e in enumerate(doc.get("edges", []))
    )
    invariants = Invariant.objects.bulk_create(
        Invariant(
            contract=contract,
            inv_id=d["id"],
            label=d["label"],
            description=d.get("description", ""),
            machine_check=d.get("check"),
            position=i,
        )
        for i, d in enumerate(doc.get("invariants", []))
    )
    through = Invariant.applies_to.through
    through.objects.bulk_create(
        through(invariant_id=inv.pk, node_id=by_id[x].pk)
        for inv, d in zip(invariants, doc.get("invariants", []), strict=True)
        for x in d.get("applies_to", [])
    )
    spans += [
        Span(invariant=inv, start=s["start"], end=s["end"], position=j)
        for inv, d in zip(invariants, doc.get("invariants", []), strict=True)
        for j, s in enumerate(d["evidence"])
    ]
    Span.objects.bulk_create(spans)
    Query.objects.bulk_create(
        Query(
            contract=contract,
            query_id=q["id"],
            text=q.get("text", ""),
            intents=list(q.get("intents", [])),
            branches=dict(q.get("branches", {})),
            position=i,
        )
        for i, q in enumerate(doc.get("queries", []))
    )
    return contract


def contract_import(
    *, project: Project, user, source: str | bytes | Mapping[str, Any], file: str | None = None
) -> Contract:
    """Import a contract document: engine-validated (schema and audit), or nothing stored.

    A contract whose id already exists in the project becomes its next version.
    """
    try:
        parsed = load_contract(source, file=file)
    except ContractEvalError as exc:
        raise ServiceError(str(exc)) from exc
    doc = parsed.to_dict()
    with transaction.atomic():
        latest = (
            Contract.objects.select_for_update(of=("self",))
            .filter(project=project, key=doc["id"])
            .order_by("-version")
            .first()
        )
        contract = _store_document(
            project=project,
            doc=doc,
            version=latest.version + 1 if latest else 1,
            previous=latest,
            review_status=ReviewStatus.CONFIRMED,
            proposer="import",
        )
        _record(
            contract,
            user,
            "import",
            "contract",
            contract.key,
            after={"version": contract.version, "file": file, "nodes": len(doc["nodes"])},
        )
    return contract


def contract_create(
    *,
    project: Project,
    user,
    key: str,
    text: str,
    title: str = "",
    media_type: str = "",
    domain: str = "",
) -> Contract:
    """A new, empty draft contract over an artifact text (then ask for proposals)."""
    if not re.fullmatch(ID_REGEX, key or ""):
        raise ServiceError(
            f"the contract id {key!r} is not valid: letters, digits and _ . : - only,"
            " starting with a letter or digit, at most 128 characters"
        )
    if not text.strip():
        raise ServiceError("the artifact text is empty")
    with transaction.atomic():
        if Contract.objects.filter(project=project, key=key).exists():
            raise ServiceError(f"a contract {key!r} exists already in this project")
        doc = {
            "id": key,
            "title": title,
            "domain": domain,
            "artifact": {"text": text, "media_type": media_type},
            "nodes": [],
        }
        contract = _store_document(
            project=project,
            doc=doc,
            version=1,
            previous=None,
            review_status=ReviewStatus.PROPOSED,
            proposer="",
        )
        _record(
            contract,
            user,
            "create",
            "contract",
            key,
            after={
                "title": title,
                "domain": domain,
                "media_type": media_type,
                "artifact": contract.artifact.content_hash,
            },
        )
    return contract


def contract_start(
    *,
    project: Project,
    user,
    key: str,
    text: str,
    title: str = "",
    domain: str = "",
    media_type: str = "",
    proposer: str | None = None,
) -> Contract:
    """Start a draft from a new artifact text and, if ``proposer`` is given, queue a
    proposal run on it: all or nothing (the run starts once the transaction commits)."""
    if proposer is not None and proposer not in PROPOSERS:
        raise ServiceError(f"unknown proposer {proposer!r}")
    try:
        with transaction.atomic():
            contract = contract_create(
                project=project,
                user=user,
                key=key,
                text=text,
                title=title,
                media_type=media_type,
                domain=domain,
            )
            if proposer is not None:
                contract_request_proposals(contract=contract, user=user, proposer=proposer)
    except IntegrityError as exc:  # a concurrent request took the same id
        raise ServiceError(f"a contract {key!r} exists already in this project") from exc
    return contract


CONTRACT_DETAILS = ("title", "domain", "media_type")


def contract_update_details(
    *, contract: Contract, user, title: str, domain: str, media_type: str
) -> Contract:
    """Change a draft's (or in-review) title, domain and artifact media type.

    The artifact row may be shared with other versions (even audited ones), so a new
    media type points the contract at an artifact with the same text and that media
    type instead of changing the shared row; the text and every span stay as they are.
    """
    _editable(contract)
    with transaction.atomic():
        contract = (
            Contract.objects.select_for_update(of=("self",))
            .select_related("artifact", "project")
            .get(pk=contract.pk)
        )
        _editable(contract)
        artifact = contract.artifact
        before = {
            "title": contract.title,
            "domain": contract.domain,
            "media_type": artifact.media_type,
        }
        after = {"title": title, "domain": domain, "media_type": media_type}
        if before == after:
            return contract
        if media_type != artifact.media_type:
            contract.artifact = Artifact.objects.filter(
                project=contract.project,
                content_hash=artifact.content_hash,
                media_type=media_type,
            ).first() or Artifact.objects.create(
                project=contract.project, text=artifact.text, media_type=media_type
            )
        contract.title, contract.domain = title, domain
        contract.save(update_fields=["title", "domain", "artifact", "updated_at"])
        _record(contract, user, "edit", "contract", contract.key, before=before, after=after)
    return contract


def contract_new_version(*, contract: Contract, user) -> Contract:
    """A draft copy of ``contract`` as the next version (how an audited contract changes)."""
    with transaction.atomic():
        latest = (
            Contract.objects.select_for_update(of=("self",))
            .filter(project=contract.project_id, key=contract.key)
            .order_by("-version")
            .first()
        )
        if latest is not None and latest.pk != contract.pk:
            raise ServiceError(
                f"{contract.key} already has a newer version (v{latest.version}); change that one"
            )
        doc = contract_document(contract, include_rejected=True)
        nodes = {n.node_id: n for n in contract.nodes.all()}
        provenance = {
            node_id: {
                "review_status": n.review_status,
                "proposer": n.proposer,
                "score": n.score,
                "justification": n.justification,
            }
            for node_id, n in nodes.items()
        }
        new = _store_document(
            project=contract.project,
            doc=doc,
            version=contract.version + 1,
            previous=contract,
            review_status=ReviewStatus.CONFIRMED,
            proposer="",
            provenance=provenance,
        )
        _record(
            new,
            user,
            "new_version",
            "contract",
            new.key,
            before={"version": contract.version, "status": contract.status},
            after={"version": new.version, "status": new.status},
        )
    return new


# ---------------------------------------------------------------------------- status


def contract_submit_for_review(*, contract: Contract, user) -> Contract:
    _editable(contract)
    if contract.status != ContractStatus.DRAFT:
        raise ServiceError("only a draft can be submitted for review")
    with transaction.atomic():
        before = contract.status
        contract.status = ContractStatus.IN_REVIEW
        contract.save(update_fields=["status", "updated_at"])
        _record(
            contract, user, "status", "contract", contract.key, before=before, after=contract.status
        )
    return contract


def contract_mark_audited(*, contract: Contract, user) -> Contract:
    """Mark audited: only with no audit errors and no node left *proposed*."""
    _editable(contract)
    with transaction.atomic():
        contract = (
            Contract.objects.select_for_update(of=("self",))
            .select_related("artifact")
            .get(pk=contract.pk)
        )
        proposed = contract.nodes.filter(review_status=ReviewStatus.PROPOSED).count()
        if proposed:
            raise ServiceError(f"{proposed} node(s) are still proposed: confirm or reject them")
        audit = audit_contract(contract_document(contract))
        if audit.errors:
            raise ServiceError(
                f"the audit has {len(audit.errors)} error(s): {audit.errors[0].message}"
            )
        before = contract.status
        contract.status = ContractStatus.AUDITED
        contract.save(update_fields=["status", "updated_at"])
        _record(
            contract, user, "status", "contract", contract.key, before=before, after=contract.status
        )
    return contract


# ---------------------------------------------------------------------------- proposals


PROPOSERS = ("heuristic", "llm")


class ProposalRetry(Exception):
    """A transient LLM failure (rate limit, server error, timeout) that outlived the
    client's own retries. The run is queued again and the Celery task retries it later
    (``autoretry_for``); on the task's last attempt the run fails instead."""


def contract_request_proposals(*, contract: Contract, user, proposer: str = "heuristic"):
    """Queue a proposal run; the Celery task starts once the transaction commits.

    ``proposer`` is ``"heuristic"`` or ``"llm"``. An LLM run without a configured
    endpoint is accepted: the heuristic runs and the run says so (``notice``).
    """
    from .tasks import run_proposals

    _editable(contract)
    if proposer not in PROPOSERS:
        raise ServiceError(f"unknown proposer {proposer!r}")
    with transaction.atomic():
        run = ProposalRun.objects.create(contract=contract, requested_by=user, proposer=proposer)
        _record(
            contract,
            user,
            "request_proposals",
            "proposal_run",
            str(run.pk),
            after={"proposer": proposer},
        )
        transaction.on_commit(lambda: run_proposals.delay(run.pk))
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
    contract = run.contract
    client: LLMClient | None = None
    first_call = 0
    retry: ProposalRetry | None = None
    try:
        _editable(contract)
        try:
            config = LLMConfig.from_env()
        except ValueError as exc:  # a malformed CONTRACTEVAL_LLM_* number
            raise ServiceError(f"LLM settings: {exc}") from None
        if run.proposer == "llm" and config.configured:
            client = LLMClient.shared(config)  # the one get_proposer uses
            first_call = len(client.calls)
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
        nodes, edges = contract_apply_proposals(
            contract=contract, user=run.requested_by, proposals=proposals
        )
    except ServiceError as exc:
        run.status, run.error = ProposalRunStatus.FAILED, str(exc)
    except LLMError as exc:
        where = client.config.describe() if client else "the LLM"
        if exc.transient and not final_attempt:
            run.status, run.error = ProposalRunStatus.QUEUED, ""
            run.notice = f"attempt {run.attempts} failed, will retry: {exc.reason}"
            retry = ProposalRetry(exc.reason)
        else:
            run.status, run.error = ProposalRunStatus.FAILED, f"{where}: {exc.reason}"
    else:
        run.status, run.created_nodes, run.created_edges = ProposalRunStatus.DONE, nodes, edges
        if run.notice.startswith("attempt "):
            run.notice = ""  # a retry note from an earlier attempt that no longer applies
    if client is not None:
        run.llm_calls = [*run.llm_calls, *(c.to_dict() for c in client.calls[first_call:])]
        run.usage = _llm_usage(run.llm_calls)
    if retry is None:
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
    if retry is not None:
        raise retry
    return run


def contract_apply_proposals(*, contract: Contract, user, proposals: Proposals) -> tuple[int, int]:
    """Add proposals as *proposed* nodes (and edges, invariants); returns (nodes, edges).

    A proposal whose evidence is already evidence of a node of the same type is skipped,
    so running a proposer twice adds nothing new. Ids that are taken get a suffix.
    """
    _editable(contract)
    with transaction.atomic():
        existing = list(contract.nodes.prefetch_related("spans"))
        taken = {n.node_id for n in existing}
        seen = {(n.type, s.start, s.end) for n in existing for s in n.spans.all()}
        inv_seen = {(s.start, s.end) for s in Span.objects.filter(invariant__contract=contract)}
        inv_taken = set(contract.invariants.values_list("inv_id", flat=True))
        rename: dict[str, Node] = {}
        position = _next_position(contract.nodes)
        created: list[tuple[Node, dict[str, Any]]] = []
        for p in proposals.nodes:
            spans = [(s["start"], s["end"]) for s in p["evidence"]]
            if spans and (p["type"], *spans[0]) in seen:
                continue
            note = proposals.notes.get(p["id"])
            node = Node(
                contract=contract,
                node_id=_unique_node_id(contract, p["id"], taken),
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
        Node.objects.bulk_create([n for n, _ in created])
        for node, p in created:
            rename[p["id"]] = node
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
        edge_position = _next_position(contract.edges)
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
        inv_position = _next_position(contract.invariants)
        for d in proposals.invariants:
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
        _record(
            contract,
            user,
            "propose",
            "contract",
            contract.key,
            after={
                "proposer": proposals.proposer,
                "nodes": [n.node_id for n, _ in created],
                "edges": len(new_edges),
            },
        )
        _touch(contract)
    return len(created), len(new_edges)


# ---------------------------------------------------------------------------- nodes


def _review(node: Node, user, status: str, action: str) -> Node:
    _editable(node.contract)
    with transaction.atomic():
        before = node_snapshot(node)
        node.review_status = status
        node.version += 1
        node.save(update_fields=["review_status", "version", "updated_at"])
        _record(
            node.contract,
            user,
            action,
            "node",
            node.node_id,
            before=before,
            after=node_snapshot(node),
        )
        _touch(node.contract)
    return node


def node_confirm(*, node: Node, user) -> Node:
    return _review(node, user, ReviewStatus.CONFIRMED, "confirm")


def node_reject(*, node: Node, user) -> Node:
    return _review(node, user, ReviewStatus.REJECTED, "reject")


def _would_cycle(node: Node, parent: Node | None) -> bool:
    parents = dict(node.contract.nodes.values_list("pk", "parent_id"))
    seen = set()
    current = parent.pk if parent else None
    while current is not None and current not in seen:
        if current == node.pk:
            return True
        seen.add(current)
        current = parents.get(current)
    return False


def node_update(*, node: Node, user, data: Mapping[str, Any], expected_version: int) -> Node:
    """Edit a node's fields (``data``: the cleaned form). Marks it *edited*."""
    _editable(node.contract)
    with transaction.atomic():
        node = (
            Node.objects.select_for_update(of=("self",))
            .select_related("contract__artifact")
            .get(pk=node.pk)
        )
        if node.version != expected_version:
            raise ServiceError(
                f"{node.node_id} was changed by someone else meanwhile (now version"
                f" {node.version}); reload it and edit again"
            )
        parent = data.get("parent")
        if parent is not None and parent.contract_id != node.contract_id:
            raise ServiceError("the parent must be a node of the same contract")
        if _would_cycle(node, parent):
            raise ServiceError(f"{parent.node_id} is below {node.node_id}: that makes a cycle")
        new_id = data.get("node_id", node.node_id)
        if new_id != node.node_id and node.contract.nodes.filter(node_id=new_id).exists():
            raise ServiceError(f"the id {new_id!r} is already taken in this contract")
        before = node_snapshot(node)
        for field in ("type", "label", "description", "required", "explicit", "combine", "meta"):
            if field in data:
                setattr(node, field, data[field])
        node.node_id = new_id
        node.parent = parent
        node.review_status = ReviewStatus.EDITED
        node.version += 1
        try:
            node.save()
        except IntegrityError as exc:
            raise ServiceError(f"the change breaks a constraint: {exc}") from exc
        _record(
            node.contract,
            user,
            "edit",
            "node",
            node.node_id,
            before=before,
            after=node_snapshot(node),
        )
        _touch(node.contract)
    return node


def node_create(*, contract: Contract, user, data: Mapping[str, Any], start: int, end: int) -> Node:
    """A node written by a person, evidenced by ``[start, end)``; it is *confirmed*."""
    _editable(contract)
    start, end = _check_span(contract, start, end)
    with transaction.atomic():
        parent = data.get("parent")
        if parent is not None and parent.contract_id != contract.pk:
            raise ServiceError("the parent must be a node of the same contract")
        node_id = data["node_id"]
        if contract.nodes.filter(node_id=node_id).exists():
            raise ServiceError(f"the id {node_id!r} is already taken in this contract")
        node = Node.objects.create(
            contract=contract,
            node_id=node_id,
            type=data["type"],
            label=data["label"],
            description=data.get("description", ""),
            required=data.get("required", True),
            explicit=data.get("explicit", False),
            combine=data.get("combine", "all"),
            parent=parent,
            meta=data.get("meta") or {},
            position=_next_position(contract.nodes),
            review_status=ReviewStatus.CONFIRMED,
            proposer=f"annotator:{user.get_username()}",
        )
        Span.objects.create(node=node, start=start, end=end)
        _record(contract, user, "create", "node", node.node_id, after=node_snapshot(node))
        _touch(contract)
    return node


def node_add_evidence(*, node: Node, user, start: int, end: int) -> Span:
    _editable(node.contract)
    start, end = _check_span(node.contract, start, end)
    with transaction.atomic():
        before = node_snapshot(node)
        span = Span.objects.create(
            node=node, start=start, end=end, position=_next_position(node.spans)
        )
        if node.review_status == ReviewStatus.CONFIRMED:
            node.review_status = ReviewStatus.EDITED
        node.version += 1
        node.save(update_fields=["review_status", "version", "updated_at"])
        _record(
            node.contract,
            user,
            "add_evidence",
            "node",
            node.node_id,
            before=before,
            after=node_snapshot(node),
        )
        _touch(node.contract)
    return span


def span_delete(*, span: Span, user) -> None:
    """Remove one evidence span (a node keeps at least one)."""
    owner: Node | Invariant = span.node or span.invariant  # type: ignore[assignment]
    contract = owner.contract
    _editable(contract)
    with transaction.atomic():
        if owner.spans.count() <= 1:
            raise ServiceError("every node and invariant needs at least one evidence span")
        if isinstance(owner, Node):
            before = node_snapshot(owner)
            span.delete()
            owner.version += 1
            owner.save(update_fields=["version", "updated_at"])
            _record(
                contract,
                user,
                "remove_evidence",
                "node",
                owner.node_id,
                before=before,
                after=node_snapshot(owner),
            )
        else:
            before = _invariant_snapshot(owner)
            span.delete()
            _record(
                contract,
                user,
                "remove_evidence",
                "invariant",
                owner.inv_id,
                before=before,
                after=_invariant_snapshot(owner),
            )
        _touch(contract)


# ---------------------------------------------------------------------------- edges


def edge_create(*, contract: Contract, user, source: Node, target: Node, kind: str) -> Edge:
    _editable(contract)
    if source.contract_id != contract.pk or target.contract_id != contract.pk:
        raise ServiceError("both ends must be nodes of this contract")
    if source.pk == target.pk:
        raise ServiceError("an edge needs two different nodes")
    if kind not in EdgeKind.values:
        raise ServiceError(f"unknown edge kind {kind!r}")
    with transaction.atomic():
        if contract.edges.filter(source=source, target=target, kind=kind).exists():
            raise ServiceError(f"{source.node_id} -{kind}-> {target.node_id} exists already")
        edge = Edge.objects.create(
            contract=contract,
            source=source,
            target=target,
            kind=kind,
            position=_next_position(contract.edges),
        )
        _record(
            contract,
            user,
            "create",
            "edge",
            f"{source.node_id}->{target.node_id}",
            after={"source": source.node_id, "target": target.node_id, "kind": kind},
        )
        _touch(contract)
    return edge


def edge_delete(*, edge: Edge, user) -> None:
    contract = edge.contract
    _editable(contract)
    with transaction.atomic():
        before = {"source": edge.source.node_id, "target": edge.target.node_id, "kind": edge.kind}
        edge.delete()
        _record(
            contract,
            user,
            "delete",
            "edge",
            f"{before['source']}->{before['target']}",
            before=before,
        )
        _touch(contract)


# ---------------------------------------------------------------------------- invariants


def _clean_check(check: Any) -> dict[str, Any] | None:
    if check in (None, "", {}):
        return None
    if not isinstance(check, dict):
        raise ServiceError("check must be a JSON object")
    return check


def invariant_create(
    *, contract: Contract, user, data: Mapping[str, Any], start: int, end: int
) -> Invariant:
    _editable(contract)
    start, end = _check_span(contract, start, end)
    with transaction.atomic():
        if contract.invariants.filter(inv_id=data["inv_id"]).exists():
            raise ServiceError(f"the invariant id {data['inv_id']!r} is already taken")
        inv = Invariant.objects.create(
            contract=contract,
            inv_id=data["inv_id"],
            label=data["label"],
            description=data.get("description", ""),
            machine_check=_clean_check(data.get("check")),
            position=_next_position(contract.invariants),
        )
        inv.applies_to.set(data.get("applies_to") or [])
        Span.objects.create(invariant=inv, start=start, end=end)
        _record(contract, user, "create", "invariant", inv.inv_id, after=_invariant_snapshot(inv))
        _touch(contract)
    return inv


def invariant_update(*, invariant: Invariant, user, data: Mapping[str, Any]) -> Invariant:
    contract = invariant.contract
    _editable(contract)
    with transaction.atomic():
        new_id = data.get("inv_id", invariant.inv_id)
        if new_id != invariant.inv_id and contract.invariants.filter(inv_id=new_id).exists():
            raise ServiceError(f"the invariant id {new_id!r} is already taken")
        before = _invariant_snapshot(invariant)
        invariant.inv_id = new_id
        invariant.label = data.get("label", invariant.label)
        invariant.description = data.get("description", invariant.description)
        invariant.machine_check = _clean_check(data.get("check"))
        invariant.version += 1
        invariant.save()
        if "applies_to" in data:
            invariant.applies_to.set(data["applies_to"])
        _record(
            contract,
            user,
            "edit",
            "invariant",
            invariant.inv_id,
            before=before,
            after=_invariant_snapshot(invariant),
        )
        _touch(contract)
    return invariant


def invariant_delete(*, invariant: Invariant, user) -> None:
    contract = invariant.contract
    _editable(contract)
    with transaction.atomic():
        before = _invariant_snapshot(invariant)
        invariant.delete()
        _record(contract, user, "delete", "invariant", before["id"], before=before)
        _touch(contract)


# ---------------------------------------------------------------------------- queries


def query_document(query_id: str, text: str, intents: Iterable[str], branches: Mapping[str, str]):
    return {
        "id": query_id,
        "text": text,
        "intents": list(intents),
        "branches": {k: v for k, v in branches.items() if v},
    }


def query_save(*, contract: Contract, user, document: Mapping[str, Any]) -> Query:
    """Save (create or replace) a query; the engine must be able to condition on it."""
    _editable(contract)
    doc = {**contract_document(contract), "queries": []}
    structure = audit_contract(doc)
    if structure.errors:
        raise ServiceError(
            f"fix the contract's {len(structure.errors)} audit error(s) before saving queries"
            f" (first: {structure.errors[0].message})"
        )
    try:
        condition(contract_from_data(doc), dict(document))
    except ContractEvalError as exc:
        raise ServiceError(exc.message) from exc
    with transaction.atomic():
        query = contract.queries.filter(query_id=document["id"]).first()
        before = None
        if query is None:
            query = Query(
                contract=contract,
                query_id=document["id"],
                position=_next_position(contract.queries),
            )
        else:
            before = {"text": query.text, "intents": query.intents, "branches": query.branches}
        query.text = document.get("text", "")
        query.intents = list(document.get("intents", []))
        query.branches = dict(document.get("branches", {}))
        query.save()
        _record(
            contract,
            user,
            "save",
            "query",
            query.query_id,
            before=before,
            after={"text": query.text, "intents": query.intents, "branches": query.branches},
        )
        _touch(contract)
    return query


def query_delete(*, query: Query, user) -> None:
    contract = query.contract
    _editable(contract)
    with transaction.atomic():
        before = {"text": query.text, "intents": query.intents, "branches": query.branches}
        query_id = query.query_id
        query.delete()
        _record(contract, user, "delete", "query", query_id, before=before)
        _touch(contract)
