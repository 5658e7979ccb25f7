from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.staticfiles.views import serve as serve_static
from django.urls import include, path, re_path

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", include("audit.api_urls")),
    path("", include("audit.urls")),
]

# an oversized request gets a 413 naming the limit instead of a bare "Bad Request"
handler400 = "audit.guards.bad_request"

if settings.SERVE_STATIC:
    # The app serves its own (small) static files unless a web server does it.
    urlpatterns.append(
        re_path(r"^static/(?P<path>.*)$", serve_static, {"insecure": True}),
    )
