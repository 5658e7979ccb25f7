from django.urls import path

from .views import batches, contracts, inbox, invariants, projects, queries, runs, workspace

app_name = "audit"

urlpatterns = [
    path("", projects.project_list, name="project_list"),
    path("p/<slug:slug>/", projects.project_detail, name="project_detail"),
    path("p/<slug:slug>/import/", projects.contract_import, name="contract_import"),
    path("p/<slug:slug>/new/", projects.contract_new, name="contract_new"),
    path("c/<int:pk>/", workspace.workspace, name="workspace"),
    path("c/<int:pk>/export.json", contracts.contract_export, name="contract_export"),
    path("c/<int:pk>/propose/", contracts.propose, name="propose"),
    path("c/<int:pk>/proposals/", contracts.proposal_status, name="proposal_status"),
    path("c/<int:pk>/status/", contracts.contract_status, name="contract_status"),
    path("c/<int:pk>/new-version/", contracts.contract_new_version, name="contract_new_version"),
    path("c/<int:pk>/details/", contracts.contract_details, name="contract_details"),
    path("c/<int:pk>/nodes/new/", workspace.node_new, name="node_new"),
    path("c/<int:pk>/nodes/<int:node_pk>/", workspace.node_panel, name="node_panel"),
    path("c/<int:pk>/nodes/<int:node_pk>/edit/", workspace.node_edit, name="node_edit"),
    path("c/<int:pk>/nodes/<int:node_pk>/review/", workspace.node_review, name="node_review"),
    path("c/<int:pk>/nodes/<int:node_pk>/evidence/", workspace.node_evidence, name="node_evidence"),
    path("c/<int:pk>/nodes/<int:node_pk>/edges/", workspace.edge_create, name="edge_create"),
    path("c/<int:pk>/spans/<int:span_pk>/delete/", workspace.span_delete, name="span_delete"),
    path("c/<int:pk>/edges/<int:edge_pk>/delete/", workspace.edge_delete, name="edge_delete"),
    path("c/<int:pk>/invariants/new/", invariants.invariant_new, name="invariant_new"),
    path("c/<int:pk>/invariants/<int:inv_pk>/", invariants.invariant_edit, name="invariant_edit"),
    path(
        "c/<int:pk>/invariants/<int:inv_pk>/delete/",
        invariants.invariant_delete,
        name="invariant_delete",
    ),
    path("c/<int:pk>/queries/preview/", queries.query_preview, name="query_preview"),
    path("c/<int:pk>/queries/", queries.query_save, name="query_save"),
    path("c/<int:pk>/queries/<int:query_pk>/delete/", queries.query_delete, name="query_delete"),
    # runs, the reviewer inbox and suite batches
    path("p/<slug:slug>/runs/", runs.run_list, name="run_list"),
    path("p/<slug:slug>/runs/new/", runs.run_create, name="run_create"),
    path("p/<slug:slug>/inbox/", inbox.inbox, name="inbox"),
    path("p/<slug:slug>/inbox.<str:fmt>", inbox.inbox_export, name="inbox_export"),
    path("p/<slug:slug>/batches/", batches.batch_list, name="batch_list"),
    path("p/<slug:slug>/batches/new/", batches.batch_create, name="batch_create"),
    path("r/<int:pk>/", runs.run_detail, name="run_detail"),
    path("r/<int:pk>/status/", runs.run_status, name="run_status"),
    path("r/<int:pk>/report.json", runs.run_report, name="run_report"),
    path("r/<int:pk>/export.<str:fmt>", runs.run_export, name="run_export"),
    path("r/<int:pk>/verdict/", runs.run_verdict, name="run_verdict"),
    path("r/<int:pk>/retry/", runs.run_retry, name="run_retry"),
    path("b/<int:pk>/", batches.batch_detail, name="batch_detail"),
    path("b/<int:pk>/status/", batches.batch_status, name="batch_status"),
    path("b/<int:pk>/scores.json", batches.batch_scores, name="batch_scores"),
]
