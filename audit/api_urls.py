"""URLs of the REST API, mounted at /api/ (namespace ``api``)."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from . import api

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
    path("", include(router.urls)),
]
