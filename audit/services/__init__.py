"""Every write that spans rows: atomic, and each one appends an :class:`AuditRecord`.

Services take keyword arguments (``nodes_review(contract=…, user=…, action="confirm",
nodes=[(pk, version seen)])``), check that the contract may change (an audited contract
is read-only), write, and record the values before and after. They raise
:class:`ServiceError` with a message fit for the user. One module per concern; this
package re-exports their public names, so callers write ``services.nodes_review(...)``
without knowing which room holds it.

Reviewing nodes has one service, :func:`nodes_review` (confirm, reject or undo, one node
or many, the web page and the API alike). Blind double annotation is another act: each
annotator's decision on their own copy (:func:`decision_record`) and the curator's
choice between them (:func:`curation_choose`).

Importing this package does not load the engine (networkx, numpy, jsonschema): the few
service functions that evaluate, audit or score import it where they call it, so the
web app's start-up (settings, URLconf, ``manage.py check``) does not pay for it and the
first request that needs it does.
"""

from .adjudication import adjudication_start, curation_choose, decisions_by_user
from .assessments import ThresholdError, review_thresholds_set
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
from .comments import comment_create, comment_set_resolved, notification_mark_read
from .common import LLMRetry, ServiceError, input_limits, llm_config
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
from .ingest import (
    ingest_token_create,
    ingest_token_revoke,
    routing_rule_create,
    routing_rule_delete,
)
from .invariants import invariant_create, invariant_delete, invariant_update
from .members import membership_create, membership_delete, membership_set_role
from .nodes import (
    node_add_evidence,
    node_create,
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
from .reviews import nodes_review
from .runs import (
    NO_LLM_FOR_INVARIANTS,
    input_hash,
    run_create,
    run_execute,
    run_outcome_record,
    run_retry,
)
from .teaching import (
    enactment_delete,
    run_correct,
    run_pair,
    run_revert,
    run_unpair,
    runs_correct_similar,
)
from .team import (
    assignment_create,
    assignment_delete,
    decision_edit,
    decision_record,
    double_annotation_set,
)
from .tools import (
    root_intent,
    tool_binding_confirm,
    tool_catalogue_import,
    tools_declare_read_only,
)
from .traces import (
    ingested_trace_reroute,
    ingested_trace_route,
    ingested_traces_sweep_quiet,
    spans_ingest,
)
from .verdicts import verdict_record
from .webhooks import (
    batch_notify,
    run_notify,
    webhook_create,
    webhook_delete,
    webhook_new_secret,
    webhook_send_test,
)

__all__ = [
    "CONTRACTEVAL",
    "CONTRACT_DETAILS",
    "EVALUATORS",
    "LLMRetry",
    "NO_LLM_FOR_INVARIANTS",
    "NO_LLM_FOR_JUDGES",
    "PROPOSERS",
    "ProposalRetry",
    "ServiceError",
    "ThresholdError",
    "adjudication_start",
    "assignment_create",
    "assignment_delete",
    "batch_create",
    "batch_execute",
    "batch_notify",
    "batch_prepare",
    "comment_create",
    "comment_set_resolved",
    "contract_apply_proposals",
    "contract_create",
    "contract_import",
    "contract_mark_audited",
    "contract_new_version",
    "contract_request_proposals",
    "contract_start",
    "contract_submit_for_review",
    "contract_update_details",
    "curation_choose",
    "decision_edit",
    "decision_record",
    "decisions_by_user",
    "double_annotation_set",
    "edge_create",
    "edge_delete",
    "enactment_delete",
    "fixture_suite_dir",
    "ingest_token_create",
    "ingest_token_revoke",
    "ingested_trace_reroute",
    "ingested_trace_route",
    "ingested_traces_sweep_quiet",
    "input_hash",
    "input_limits",
    "invariant_create",
    "invariant_delete",
    "invariant_update",
    "judge_of",
    "llm_config",
    "membership_create",
    "membership_delete",
    "membership_set_role",
    "node_add_evidence",
    "node_create",
    "node_update",
    "nodes_review",
    "notification_mark_read",
    "proposal_run_execute",
    "query_delete",
    "query_document",
    "query_save",
    "review_thresholds_set",
    "root_intent",
    "routing_rule_create",
    "routing_rule_delete",
    "run_correct",
    "run_create",
    "run_execute",
    "run_notify",
    "run_outcome_record",
    "run_pair",
    "run_retry",
    "run_revert",
    "run_unpair",
    "runs_correct_similar",
    "span_delete",
    "spans_ingest",
    "tool_binding_confirm",
    "tool_catalogue_import",
    "tools_declare_read_only",
    "verdict_record",
    "webhook_create",
    "webhook_delete",
    "webhook_new_secret",
    "webhook_send_test",
]
