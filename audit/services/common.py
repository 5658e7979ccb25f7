"""What every service shares: the error it raises, the audit record it appends, the
read-only rule of audited contracts, span and position helpers, the LLM settings."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db.models import F, Manager, Max, QuerySet
from django.utils import timezone

from matching.errors import ContractEvalError
from matching.input_limits import InputRefused, Limits
from matching.llm.config import LLMConfig

from ..models import AuditRecord, Contract, ContractStatus

logger = logging.getLogger(__name__)


class ServiceError(Exception):
    """A change that cannot be made; the message is shown to the user as it is.

    ``status`` is the HTTP status of input refused by an input limit (413 past a size,
    400 for a count or a shape; see :func:`refused`), None for any other refusal.
    """

    status: int | None = None


def refused(exc: ContractEvalError) -> ServiceError:
    """The engine's refusal of an input as a :class:`ServiceError`, with the HTTP
    status of an :class:`~matching.input_limits.InputRefused` (a limit's message says
    everything; the JSON path is added when it points inside the document)."""
    if not isinstance(exc, InputRefused):
        return ServiceError(str(exc))
    where = "" if exc.path == "$" else f" (at {exc.path})"
    error = ServiceError(f"{exc.message}{where}")
    error.status = exc.status
    return error


def input_limits() -> Limits:
    """The limits in force: the engine's defaults with the ``INPUT_LIMITS`` overrides."""
    return settings.INPUT_LIMITS


class LLMRetry(Exception):
    """A transient LLM failure (rate limit, 5xx, timeout) of a run or judge batch that
    outlived the client's own retries: the job is queued again and the Celery task
    retries it; on the task's last attempt the job fails with the reason instead."""


def actor(user: Any) -> Any:
    """The user to store as the author (None for an anonymous or missing user)."""
    return user if user is not None and user.is_authenticated else None


def record(
    contract: Contract,
    user: Any,
    action: str,
    object_type: str,
    object_id: str = "",
    *,
    before: Any = None,
    after: Any = None,
) -> AuditRecord:
    """Append one entry to the contract's audit history."""
    return AuditRecord.objects.create(
        contract=contract,
        user=actor(user),
        action=action,
        object_type=object_type,
        object_id=object_id,
        before=before,
        after=after,
    )


def editable(contract: Contract) -> None:
    """Raise unless ``contract`` may change (an audited contract is read-only)."""
    if contract.status == ContractStatus.AUDITED:
        raise ServiceError(
            f"{contract.key} v{contract.version} is audited and read-only; start a new version"
            " to change it"
        )


def touch(contract: Contract, *, revise: bool = True, content: bool = True) -> None:
    """Mark ``contract`` changed; ``revise=False`` only for a change its export cannot
    show (a review between *proposed* and *confirmed*), which keeps its cached audit;
    ``content=False`` only for a change of which nodes are rejected and nothing else (a
    review), which keeps the export base its audit is derived from."""
    fields: dict[str, Any] = {"updated_at": timezone.now()}
    if revise:
        fields["revision"] = F("revision") + 1
        contract.revision += 1
        if not content:
            fields["review_revision"] = F("review_revision") + 1
            contract.review_revision += 1
    Contract.objects.filter(pk=contract.pk).update(**fields)


def revise(contract: Contract) -> None:
    """Count a change of what ``contract`` exports (see ``Contract.revision``)."""
    Contract.objects.filter(pk=contract.pk).update(revision=F("revision") + 1)
    contract.revision += 1


def check_span(contract: Contract, start: int, end: int) -> tuple[int, int]:
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


def next_position(qs: QuerySet[Any] | Manager[Any]) -> int:
    top = qs.aggregate(m=Max("position"))["m"]
    return 0 if top is None else top + 1


def unique_node_id(contract: Contract, wanted: str, taken: set[str] | None = None) -> str:
    if taken is None:
        taken = set(contract.nodes.values_list("node_id", flat=True))
    candidate, n = wanted, 2
    while candidate in taken:
        candidate, n = f"{wanted}_{n}", n + 1
    return candidate


def llm_config() -> LLMConfig:
    """The LLM settings of the environment (a malformed number is a ServiceError)."""
    try:
        return LLMConfig.from_env()
    except ValueError as exc:
        raise ServiceError(f"LLM settings: {exc}") from None


def add_usage(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> dict[str, Any]:
    """Usage totals of two attempts added up."""
    out = dict(after)
    for k, v in (before or {}).items():
        if isinstance(v, int | float) and isinstance(out.get(k), int | float):
            out[k] = round(out[k] + v, 3) if isinstance(v, float) else out[k] + v
    return out


def require_semantic_model(mode: str) -> None:
    """Semantic mode needs the installed embedding model: say so before queueing a job
    (a ServiceError naming ``make model``), never fall back to token matching."""
    if mode != "semantic":
        return
    from matching.embed import ModelMissing, model_dir

    try:
        model_dir()
    except ModelMissing as exc:
        raise ServiceError(exc.message) from None
