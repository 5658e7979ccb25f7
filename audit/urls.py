from django.urls import path

from . import run_views, views

app_name = "audit"

urlpatterns = [
    path("", views.project_list, name="project_list"),
    path("p/<slug:slug>/", views.project_detail, name="project_detail"),
    path("p/<slug:slug>/import/", views.contract_import, name="contract_import"),
    path("p/<slug:slug>/new/", views.contract_new, name="contract_new"),
    path("c/<int:pk>/", views.workspace, name="workspace"),
    path("c/<int:pk>/export.json", views.contract_export, name="contract_export"),
    path("c/<int:pk>/propose/", views.propose, name="propose"),
    path("c/<int:pk>/proposals/", views.proposal_status, name="proposal_status"),
    path("c/<int:pk>/status/", views.contract_status, name="contract_status"),
    path("c/<int:pk>/new-version/", views.contract_new_version, name="contract_new_version"),
    path("c/<int:pk>/details/", views.contract_details, name="contract_details"),
    path("c/<int:pk>/nodes/new/", views.node_new, name="node_new"),
    path("c/<int:pk>/nodes/<int:node_pk>/", views.node_panel, name="node_panel"),
    path("c/<int:pk>/nodes/<int:node_pk>/edit/", views.node_edit, name="node_edit"),
    path("c/<int:pk>/nodes/<int:node_pk>/review/", views.node_review, name="node_review"),
    path("c/<int:pk>/nodes/<int:node_pk>/evidence/", views.node_evidence, name="node_evidence"),
    path("c/<int:pk>/nodes/<int:node_pk>/edges/", views.edge_create, name="edge_create"),
    path("c/<int:pk>/spans/<int:span_pk>/delete/", views.span_delete, name="span_delete"),
    path("c/<int:pk>/edges/<int:edge_pk>/delete/", views.edge_delete, name="edge_delete"),
    path("c/<int:pk>/invariants/new/", views.invariant_new, name="invariant_new"),
    path("c/<int:pk>/invariants/<int:inv_pk>/", views.invariant_edit, name="invariant_edit"),
    path(
        "c/<int:pk>/invariants/<int:inv_pk>/delete/",
        views.invariant_delete,
        name="invariant_delete",
    ),
    path("c/<int:pk>/queries/preview/", views.query_preview, name="query_preview"),
    path("c/<int:pk>/queries/", views.query_save, name="query_save"),
    path("c/<int:pk>/queries/<int:query_pk>/delete/", views.query_delete, name="query_delete"),
    # runs, the reviewer inbox and suite batches (audit/run_views.py)
    path("p/<slug:slug>/runs/", run_views.run_list, name="run_list"),
    path("p/<slug:slug>/runs/new/", run_views.run_create, name="run_create"),
    path("p/<slug:slug>/inbox/", run_views.inbox, name="inbox"),
    path("p/<slug:slug>/inbox.<str:fmt>", run_views.inbox_export, name="inbox_export"),
    path("p/<slug:slug>/batches/", run_views.batch_list, name="batch_list"),
    path("p/<slug:slug>/batches/new/", run_views.batch_create, name="batch_create"),
    path("r/<int:pk>/", run_views.run_detail, name="run_detail"),
    path("r/<int:pk>/status/", run_views.run_status, name="run_status"),
    path("r/<int:pk>/report.json", run_views.run_report, name="run_report"),
    path("r/<int:pk>/export.<str:fmt>", run_views.run_export, name="run_export"),
    path("r/<int:pk>/verdict/", run_views.run_verdict, name="run_verdict"),
    path("r/<int:pk>/retry/", run_views.run_retry, name="run_retry"),
    path("b/<int:pk>/", run_views.batch_detail, name="batch_detail"),
    path("b/<int:pk>/status/", run_views.batch_status, name="batch_status"),
    path("b/<int:pk>/scores.json", run_views.batch_scores, name="batch_scores"),
]
