"""Contracts: import a document, start a draft, change its details, version it, and
move it through draft -> in review -> audited. Each write is atomic and appends an
:class:`~audit.models.AuditRecord`; an audited contract is read-only."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction

from matching.errors import ContractEvalError
from matching.input_limits import InputRefused, check_text, size_of, text_bytes
from matching.tools import catalogue_document, parse_tools

from ..models import (
    ID_REGEX,
    Artifact,
    Contract,
    ContractStatus,
    Edge,
    Invariant,
    Node,
    Project,
    Query,
    ReviewStatus,
    Span,
)
from ..permissions import EDIT, IMPORT, REVIEW, authorize
from ..selectors.contracts import contract_document
from ..selectors.documents import TOOLS_KEY
from .adjudication import after_audited, before_audited
from .common import ServiceError, input_limits, record, refused
from .concurrency import check_version, locked_contract, retry_on_lock
from .proposals import PROPOSERS, contract_request_proposals


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
    doc, catalogue = _take_catalogue(doc)
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
        tool_catalogue=catalogue,
    )
    by_id, spans = _store_nodes(contract, doc["nodes"], review_status, proposer, provenance or {})
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
    spans += _store_invariants(contract, doc.get("invariants", []), by_id)
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


def _take_catalogue(doc: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[Any]]:
    """The document without the first root node's ``meta.tools``, and that catalogue.

    The catalogue lives on the contract (exported there, see
    :func:`audit.selectors.contracts.document_from_rows`), so the node keeps the rest.
    """
    nodes = list(doc["nodes"])
    i = next((i for i, n in enumerate(nodes) if not n.get("parent")), None)
    if i is None or TOOLS_KEY not in (nodes[i].get("meta") or {}):
        return doc, []
    meta = dict(nodes[i]["meta"])
    try:
        tools = parse_tools(meta.pop(TOOLS_KEY), limits=input_limits())
    except ContractEvalError as exc:
        error = ServiceError(f"node {nodes[i]['id']}: meta.tools: {exc.message}")
        error.status = getattr(exc, "status", None)
        raise error from exc
    nodes[i] = {**nodes[i], "meta": meta}
    return {**doc, "nodes": nodes}, catalogue_document(tools)


def _store_nodes(
    contract: Contract,
    docs: list[Mapping[str, Any]],
    review_status: str,
    proposer: str,
    provenance: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[str, Node], list[Span]]:
    """The nodes (with their parents) as rows: ``(node by id, their unsaved spans)``."""
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
        for i, n in enumerate(docs)
    )
    by_id = {n.node_id: n for n in nodes}
    parented = []
    for n, d in zip(nodes, docs, strict=True):
        if d.get("parent"):
            n.parent = by_id[d["parent"]]
            parented.append(n)
    Node.objects.bulk_update(parented, ["parent"])
    spans = [
        Span(node=n, start=s["start"], end=s["end"], position=j)
        for n, d in zip(nodes, docs, strict=True)
        for j, s in enumerate(d["evidence"])
    ]
    return by_id, spans


def _store_invariants(
    contract: Contract, docs: list[Mapping[str, Any]], by_id: Mapping[str, Node]
) -> list[Span]:
    """The invariants (with the nodes they apply to) as rows; their unsaved spans."""
    invariants = Invariant.objects.bulk_create(
        Invariant(
            contract=contract,
            inv_id=d["id"],
            label=d["label"],
            description=d.get("description", ""),
            machine_check=d.get("check"),
            position=i,
        )
        for i, d in enumerate(docs)
    )
    through = Invariant.applies_to.through
    through.objects.bulk_create(
        through(invariant_id=inv.pk, node_id=by_id[x].pk)
        for inv, d in zip(invariants, docs, strict=True)
        for x in d.get("applies_to", [])
    )
    return [
        Span(invariant=inv, start=s["start"], end=s["end"], position=j)
        for inv, d in zip(invariants, docs, strict=True)
        for j, s in enumerate(d["evidence"])
    ]


def _document_within_limits(source: str | bytes | Mapping[str, Any]) -> Any:
    """The parsed document, within the size, depth and node limits (before its audit)."""
    limits = input_limits()
    if isinstance(source, str | bytes):
        doc = limits.load_json(source, what="the document", name="document_bytes")
    else:
        limits.check_bytes("document_bytes", size_of(source), what="the document")
        doc = limits.check_json(source, what="the document")
    nodes = doc.get("nodes") if isinstance(doc, Mapping) else None
    if isinstance(nodes, list):
        limits.check_count("contract_nodes", len(nodes), what="the document", unit="nodes")
    return doc


def contract_import(
    *, project: Project, user, source: str | bytes | Mapping[str, Any], file: str | None = None
) -> Contract:
    """Import a contract document: engine-validated (schema and audit), or nothing stored.

    A contract whose id already exists in the project becomes its next version.
    """
    authorize(user, project.pk, IMPORT)
    from matching.validate import load_contract  # the engine loads with the first import

    try:
        parsed = load_contract(_document_within_limits(source), file=file)
    except ContractEvalError as exc:
        raise refused(exc) from exc
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
        record(
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
    try:
        input_limits().check_bytes("artifact_bytes", text_bytes(text), what="the artifact text")
        for what, value in (
            ("the artifact text", text),
            ("the title", title),
            ("the domain", domain),
        ):
            check_text(value, what=what)
    except InputRefused as exc:
        raise refused(exc) from exc
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
        record(
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


@retry_on_lock
def contract_update_details(
    *,
    contract: Contract,
    user,
    title: str,
    domain: str,
    media_type: str,
    expected_version: int | None,
) -> Contract:
    """Change a draft's (or in-review) title, domain and artifact media type, as the
    user saw them at ``expected_version`` (``Contract.details_version``).

    The artifact row may be shared with other versions (even audited ones), so a new
    media type points the contract at an artifact with the same text and that media
    type instead of changing the shared row; the text and every span stay as they are.
    """
    authorize(user, contract.project_id, EDIT)
    with transaction.atomic():
        contract = locked_contract(contract.pk)
        check_version(
            contract.details_version,
            expected_version,
            contract_id=contract.pk,
            object_type="contract",
            object_id=contract.key,
        )
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
        contract.details_version += 1
        fields = ["title", "domain", "artifact", "details_version", "updated_at"]
        contract.save(update_fields=fields)
        record(contract, user, "edit", "contract", contract.key, before=before, after=after)
    return contract


def contract_new_version(*, contract: Contract, user) -> Contract:
    """A draft copy of ``contract`` as the next version (how an audited contract changes)."""
    authorize(user, contract.project_id, EDIT)
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
        record(
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


@retry_on_lock
def contract_submit_for_review(*, contract: Contract, user) -> Contract:
    authorize(user, contract.project_id, EDIT)
    with transaction.atomic():
        contract = locked_contract(contract.pk)
        if contract.status != ContractStatus.DRAFT:
            raise ServiceError("only a draft can be submitted for review")
        before = contract.status
        contract.status = ContractStatus.IN_REVIEW
        contract.save(update_fields=["status", "updated_at"])
        record(
            contract, user, "status", "contract", contract.key, before=before, after=contract.status
        )
    return contract


@retry_on_lock
def contract_mark_audited(*, contract: Contract, user) -> Contract:
    """Mark audited: only with no audit errors, no node left *proposed*, no open comment
    and, for a double-annotated contract, after adjudication."""
    authorize(user, contract.project_id, REVIEW)
    with transaction.atomic():
        contract = locked_contract(contract.pk)
        before_audited(contract)
        proposed = contract.nodes.filter(review_status=ReviewStatus.PROPOSED).count()
        if proposed:
            raise ServiceError(f"{proposed} node(s) are still proposed: confirm or reject them")
        if not contract.queries.exists():
            # runs pick an audited contract by one of its queries: without one it would
            # never appear in the run form
            raise ServiceError(
                "the contract has no query yet: add one on the Queries tab, since every run"
                " checks a trace against a query"
            )
        from matching.validate import audit_contract

        audit = audit_contract(contract_document(contract))
        if audit.errors:
            raise ServiceError(
                f"the audit has {len(audit.errors)} error(s): {audit.errors[0].message}"
            )
        before = contract.status
        contract.status = ContractStatus.AUDITED
        contract.save(update_fields=["status", "updated_at"])
        after_audited(contract)
        record(
            contract, user, "status", "contract", contract.key, before=before, after=contract.status
        )
    return contract
