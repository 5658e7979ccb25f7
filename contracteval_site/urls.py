from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from audit.views import otlp

# Static files are served by WhiteNoise (settings.SERVE_STATIC), not by a URL here.
urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", include("audit.api_urls")),
    # OTLP/HTTP's own path, so an exporter needs only this site's address
    path("v1/", include(([path("traces", otlp.traces, name="traces")], "otlp"))),
    path("", include("audit.urls")),
]

# an oversized request gets a 413 naming the limit instead of a bare "Bad Request"
handler400 = "audit.guards.bad_request"
handler404 = "audit.guards.not_found"
