"""URLs of the REST API, mounted at /api/ (namespace ``api``)."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from . import api, api_team, api_tools

app_name = "api"

router = DefaultRouter()
router.register("projects", api.ProjectViewSet, basename="project")
router.register("contracts", api.ContractViewSet, basename="contract")
router.register("queries", api.QueryViewSet, basename="query")
router.register("runs", api.RunViewSet, basename="run")
router.register("batches", api.BatchViewSet, basename="batch")

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # the split view serves its script as a file: the CSP allows no inline script
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
    path("auth/", include("rest_framework.urls", namespace="rest_framework")),
    path("queue/", api_team.QueueView.as_view(), name="queue"),
    path("contracts/<int:pk>/assignments/", api_team.AssignmentsView.as_view(), name="assignments"),
    path("assignments/<int:pk>/", api_team.AssignmentView.as_view(), name="assignment"),
    path(
        "contracts/<int:pk>/double-annotation/",
        api_team.DoubleAnnotationView.as_view(),
        name="double-annotation",
    ),
    path("contracts/<int:pk>/decisions/", api_team.DecisionsView.as_view(), name="decisions"),
    path("contracts/<int:pk>/agreement/", api_team.AgreementView.as_view(), name="agreement"),
    path(
        "contracts/<int:pk>/adjudication/", api_team.AdjudicationView.as_view(), name="adjudication"
    ),
    path("contracts/<int:pk>/curation/", api_team.CurationView.as_view(), name="curation"),
    path("contracts/<int:pk>/tools/", api_tools.ToolCatalogueView.as_view(), name="tools"),
    path(
        "contracts/<int:pk>/tools/bindings/",
        api_tools.ToolBindingView.as_view(),
        name="tool-bindings",
    ),
    path(
        "contracts/<int:pk>/tools/read-only/",
        api_tools.ReadOnlyToolsView.as_view(),
        name="tools-read-only",
    ),
    path("contracts/<int:pk>/comments/", api_team.CommentsView.as_view(), name="comments"),
    path(
        "comments/<int:pk>/resolve/", api_team.CommentResolveView.as_view(), name="comment-resolve"
    ),
    path(
        "projects/<slug:slug>/agreement/",
        api_team.ProjectAgreementView.as_view(),
        name="project-agreement",
    ),
    path("", include(router.urls)),
]
