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

The names load on first use (PEP 562): the services import the engine (networkx, numpy,
jsonschema), which the web app's start-up (settings, URLconf, ``manage.py check``) does
not need, so it is paid by the first request that calls a service instead.
"""

from typing import TYPE_CHECKING

from matching.lazy import lazy_exports

if TYPE_CHECKING:
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

# public name -> the module of this package that defines it
_LAZY = {
    "CONTRACTEVAL": "batches",
    "CONTRACT_DETAILS": "contracts",
    "EVALUATORS": "batches",
    "LLMRetry": "common",
    "NO_LLM_FOR_INVARIANTS": "runs",
    "NO_LLM_FOR_JUDGES": "batches",
    "PROPOSERS": "proposals",
    "ProposalRetry": "proposals",
    "ServiceError": "common",
    "ThresholdError": "assessments",
    "adjudication_start": "adjudication",
    "assignment_create": "team",
    "assignment_delete": "team",
    "batch_create": "batches",
    "batch_execute": "batches",
    "batch_prepare": "batches",
    "comment_create": "comments",
    "comment_set_resolved": "comments",
    "membership_create": "members",
    "membership_delete": "members",
    "membership_set_role": "members",
    "notification_mark_read": "comments",
    "contract_apply_proposals": "proposals",
    "contract_create": "contracts",
    "contract_import": "contracts",
    "contract_mark_audited": "contracts",
    "contract_new_version": "contracts",
    "contract_request_proposals": "proposals",
    "contract_start": "contracts",
    "contract_submit_for_review": "contracts",
    "contract_update_details": "contracts",
    "curation_choose": "adjudication",
    "decision_edit": "team",
    "decision_record": "team",
    "decisions_by_user": "adjudication",
    "double_annotation_set": "team",
    "edge_create": "edges",
    "edge_delete": "edges",
    "enactment_delete": "teaching",
    "fixture_suite_dir": "batches",
    "input_hash": "runs",
    "input_limits": "common",
    "invariant_create": "invariants",
    "invariant_delete": "invariants",
    "invariant_update": "invariants",
    "judge_of": "batches",
    "llm_config": "common",
    "node_add_evidence": "nodes",
    "node_create": "nodes",
    "node_update": "nodes",
    "nodes_review": "reviews",
    "proposal_run_execute": "proposals",
    "query_delete": "queries",
    "query_document": "queries",
    "query_save": "queries",
    "review_thresholds_set": "assessments",
    "root_intent": "tools",
    "run_correct": "teaching",
    "run_create": "runs",
    "run_execute": "runs",
    "run_outcome_record": "runs",
    "run_pair": "teaching",
    "run_retry": "runs",
    "run_revert": "teaching",
    "run_unpair": "teaching",
    "runs_correct_similar": "teaching",
    "span_delete": "nodes",
    "tool_binding_confirm": "tools",
    "tool_catalogue_import": "tools",
    "tools_declare_read_only": "tools",
    "verdict_record": "verdicts",
    "ingest_token_create": "ingest",
    "ingest_token_revoke": "ingest",
    "routing_rule_create": "ingest",
    "routing_rule_delete": "ingest",
    "ingested_trace_reroute": "traces",
    "ingested_trace_route": "traces",
    "ingested_traces_sweep_quiet": "traces",
    "spans_ingest": "traces",
    "batch_notify": "webhooks",
    "run_notify": "webhooks",
    "webhook_create": "webhooks",
    "webhook_delete": "webhooks",
    "webhook_new_secret": "webhooks",
    "webhook_send_test": "webhooks",
}
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
    "batch_prepare",
    "comment_create",
    "comment_set_resolved",
    "membership_create",
    "membership_delete",
    "membership_set_role",
    "notification_mark_read",
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
    "input_hash",
    "input_limits",
    "invariant_create",
    "invariant_delete",
    "invariant_update",
    "judge_of",
    "llm_config",
    "node_add_evidence",
    "node_create",
    "node_update",
    "nodes_review",
    "proposal_run_execute",
    "query_delete",
    "query_document",
    "query_save",
    "review_thresholds_set",
    "root_intent",
    "run_correct",
    "run_create",
    "run_execute",
    "run_outcome_record",
    "run_pair",
    "run_retry",
    "run_revert",
    "run_unpair",
    "runs_correct_similar",
    "span_delete",
    "tool_binding_confirm",
    "tool_catalogue_import",
    "tools_declare_read_only",
    "verdict_record",
    "ingest_token_create",
    "ingest_token_revoke",
    "routing_rule_create",
    "routing_rule_delete",
    "ingested_trace_reroute",
    "ingested_trace_route",
    "ingested_traces_sweep_quiet",
    "spans_ingest",
    "batch_notify",
    "run_notify",
    "webhook_create",
    "webhook_delete",
    "webhook_new_secret",
    "webhook_send_test",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
