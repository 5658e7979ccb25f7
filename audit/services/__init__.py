"""Every write that spans rows: atomic, and each one appends an :class:`AuditRecord`.

Services take keyword arguments (``node_confirm(node=…, user=…)``), check that the
contract may change (an audited contract is read-only), write, and record the values
before and after. They raise :class:`ServiceError` with a message fit for the user.
One module per concern; this package re-exports their public names, so callers write
``services.node_confirm(...)`` without knowing which room holds it.
"""

from .adjudication import adjudication_start, curation_choose, decisions_by_user
from .batches import (
    CONTRACTEVAL,
    EVALUATORS,
    NO_LLM_FOR_JUDGES,
    batch_create,
    batch_execute,
    batch_prepare,
    fixture_suite_dir,
    judge_of,
)
from .comments import comment_create, comment_set_resolved
from .common import LLMRetry, ServiceError, llm_config
from .contracts import (
    CONTRACT_DETAILS,
    contract_create,
    contract_import,
    contract_mark_audited,
    contract_new_version,
    contract_start,
    contract_submit_for_review,
    contract_update_details,
)
from .edges import edge_create, edge_delete
from .invariants import invariant_create, invariant_delete, invariant_update
from .nodes import (
    node_add_evidence,
    node_confirm,
    node_create,
    node_reject,
    node_update,
    span_delete,
)
from .proposals import (
    PROPOSERS,
    ProposalRetry,
    contract_apply_proposals,
    contract_request_proposals,
    proposal_run_execute,
)
from .queries import query_delete, query_document, query_save
from .runs import NO_LLM_FOR_INVARIANTS, input_hash, run_create, run_execute, run_retry
from .teaching import enactment_delete, run_pair, run_unpair
from .team import (
    assignment_create,
    assignment_delete,
    decision_record,
    double_annotation_set,
)
from .tools import (
    root_intent,
    tool_binding_confirm,
    tool_catalogue_import,
    tools_declare_read_only,
)
from .verdicts import verdict_record

__all__ = [
    "root_intent",
    "tool_binding_confirm",
    "tool_catalogue_import",
    "tools_declare_read_only",
    "enactment_delete",
    "run_pair",
    "run_unpair",
    "double_annotation_set",
    "decisions_by_user",
    "decision_record",
    "curation_choose",
    "comment_set_resolved",
    "comment_create",
    "assignment_delete",
    "assignment_create",
    "adjudication_start",
    "CONTRACTEVAL",
    "CONTRACT_DETAILS",
    "EVALUATORS",
    "NO_LLM_FOR_INVARIANTS",
    "NO_LLM_FOR_JUDGES",
    "PROPOSERS",
    "LLMRetry",
    "ProposalRetry",
    "ServiceError",
    "batch_create",
    "batch_execute",
    "batch_prepare",
    "contract_apply_proposals",
    "contract_create",
    "contract_import",
    "contract_mark_audited",
    "contract_new_version",
    "contract_request_proposals",
    "contract_start",
    "contract_submit_for_review",
    "contract_update_details",
    "edge_create",
    "edge_delete",
    "fixture_suite_dir",
    "input_hash",
    "invariant_create",
    "invariant_delete",
    "invariant_update",
    "judge_of",
    "llm_config",
    "node_add_evidence",
    "node_confirm",
    "node_create",
    "node_reject",
    "node_update",
    "proposal_run_execute",
    "query_delete",
    "query_document",
    "query_save",
    "run_create",
    "run_execute",
    "run_retry",
    "span_delete",
    "verdict_record",
]
