"""URLs of the REST API, mounted at /api/ (namespace ``api``)."""

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.utils.module_loading import import_string
from rest_framework.routers import DefaultRouter

from . import api, api_analytics, api_team, api_tools

app_name = "api"


def _on_first_request(view_class: str, **initkwargs: Any) -> Callable[..., HttpResponse]:
    """The view of ``view_class`` (a dotted path), imported by its first request.

    drf-spectacular's schema generator and Swagger views cost a quarter of a second to
    import, which every process (``manage.py check``, each worker) would otherwise pay at
    start-up for two pages that are rarely opened. A plain function is also what the
    schema generator leaves out of the schema, as it does these views themselves.
    """
    view: Callable[..., HttpResponse] | None = None

    def first_request(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        nonlocal view
        if view is None:
            view = import_string(view_class).as_view(**initkwargs)
        return view(request, *args, **kwargs)

    return first_request


router = DefaultRouter()
router.register("projects", api.ProjectViewSet, basename="project")
router.register("contracts", api.ContractViewSet, basename="contract")
router.register("queries", api.QueryViewSet, basename="query")
router.register("runs", api.RunViewSet, basename="run")
router.register("batches", api.BatchViewSet, basename="batch")

urlpatterns = [
    path("schema/", _on_first_request("drf_spectacular.views.SpectacularAPIView"), name="schema"),
    # the split view serves its script as a file: the CSP allows no inline script
    path(
        "docs/",
        _on_first_request(
            "drf_spectacular.views.SpectacularSwaggerSplitView", url_name="api:schema"
        ),
        name="docs",
    ),
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
    path(
        "contracts/<int:pk>/analytics/",
        api_analytics.ContractAnalyticsView.as_view(),
        name="analytics",
    ),
    path(
        "contracts/<int:pk>/analytics/compare/",
        api_analytics.ContractCompareView.as_view(),
        name="analytics-compare",
    ),
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
    path("notifications/", api_team.NotificationsView.as_view(), name="notifications"),
    path(
        "notifications/<int:pk>/read/",
        api_team.NotificationReadView.as_view(),
        name="notification-read",
    ),
    path(
        "projects/<slug:slug>/agreement/",
        api_team.ProjectAgreementView.as_view(),
        name="project-agreement",
    ),
    path("", include(router.urls)),
]
