"""Settings for the ContractEval audit workspace.

One module, driven by environment variables with safe defaults, so that a fresh clone
runs with no servers at all (SQLite, Celery tasks in-process):

- ``DATABASE_URL``: ``sqlite:///relative/or/absolute.sqlite3`` (default
  ``sqlite:///db.sqlite3``) or ``postgres://user:password@host:port/name``.
- ``CELERY_BROKER_URL``: e.g. ``redis://127.0.0.1:6379/0``; absent means tasks run eagerly.
- ``SECRET_KEY``: absent means a random key kept in ``var/secret_key`` (never a fixed one).
- ``DEBUG``: ``1``/``true`` to enable; off by default.
- ``ALLOWED_HOSTS``: comma-separated; default ``127.0.0.1,localhost``.
- ``SERVE_STATIC``: the app serves its own static files (default on; turn off behind a
  web server that serves ``STATIC_ROOT``).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from urllib.parse import unquote, urlsplit

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def parse_database_url(url: str, *, base_dir: Path = BASE_DIR) -> dict:
    """A Django ``DATABASES`` entry from ``sqlite:///path`` or ``postgres://…`` URLs.

    >>> parse_database_url("sqlite:///db.sqlite3", base_dir=Path("/srv"))["NAME"]
    '/srv/db.sqlite3'
    >>> parse_database_url("sqlite:////tmp/x.sqlite3")["NAME"]
    '/tmp/x.sqlite3'
    >>> d = parse_database_url("postgres://bob:s%40cret@db:6543/ce")
    >>> (d["USER"], d["PASSWORD"], d["HOST"], d["PORT"], d["NAME"])
    ('bob', 's@cret', 'db', '6543', 'ce')
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        raw = unquote(url[len("sqlite://") :])
        if raw in {"", "/", "/:memory:"}:
            name = ":memory:"
        else:
            # sqlite:///rel.sqlite3 -> "/rel.sqlite3" (relative); sqlite:////abs -> "//abs"
            path = raw[1:] if raw.startswith("/") else raw
            name = path if path.startswith("/") else str(base_dir / path)
        entry = {"ENGINE": "django.db.backends.sqlite3", "NAME": name}
        entry["OPTIONS"] = {"timeout": 20}
        if name != ":memory:":
            # A file, not memory, so that a Celery worker process can share the test DB.
            entry["TEST"] = {"NAME": str(base_dir / "var" / f"test_{Path(name).name}")}
        return entry
    if scheme in {"postgres", "postgresql", "pgsql"}:
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise ValueError("DATABASE_URL for PostgreSQL must name a database")
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "CONN_MAX_AGE": 0,
        }
    raise ValueError(f"unsupported DATABASE_URL scheme {scheme!r} (use sqlite:/// or postgres://)")


def _secret_key() -> str:
    key = os.environ.get("SECRET_KEY")
    if key:
        return key
    path = VAR_DIR / "secret_key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        key = secrets.token_urlsafe(50)
        path.write_text(key)
        path.chmod(0o600)
        return key


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = _secret_key()
ALLOWED_HOSTS = [
    h.strip()
    for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")
    if h.strip()
]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "audit",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "contracteval_site.urls"
WSGI_APPLICATION = "contracteval_site.wsgi.application"
ASGI_APPLICATION = "contracteval_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # "LLM: <model> @ <host>" or "not configured" on every page (never the key)
                "audit.context_processors.llm",
            ],
        },
    },
]

DATABASES = {"default": parse_database_url(os.environ.get("DATABASE_URL", "sqlite:///db.sqlite3"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
SERVE_STATIC = env_bool("SERVE_STATIC", True)

# The REST API (audit/api.py): token or session auth, the UI's object permissions.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "ContractEval API",
    "DESCRIPTION": "Projects, contracts, queries and conformance runs of ContractEval.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI comes from npm (scripts/vendor_static.py), never from a CDN.
    "SWAGGER_UI_DIST": "/" + STATIC_URL + "vendor/swagger-ui",
    "SWAGGER_UI_FAVICON_HREF": "/" + STATIC_URL + "vendor/swagger-ui/favicon-32x32.png",
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "audit.models.RunStatus",
        "ContractStatusEnum": "audit.models.ContractStatus",
        "RunModeEnum": "audit.models.RunMode",
        "ExtractorEnum": "audit.models.ExtractorName",
        "InputKindEnum": "audit.models.InputKind",
    },
}
# Traces and suites can be large: JSON bodies up to 20 MB, suite archives up to 20 MB.
DATA_UPLOAD_MAX_MEMORY_SIZE = 20 * 1024 * 1024
SUITE_UPLOAD_MAX_BYTES = int(os.environ.get("SUITE_UPLOAD_MAX_BYTES", 20 * 1024 * 1024))
SUITE_UNPACKED_MAX_BYTES = int(os.environ.get("SUITE_UNPACKED_MAX_BYTES", 200 * 1024 * 1024))

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "audit:project_list"
LOGOUT_REDIRECT_URL = "login"

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
if not DEBUG and env_bool("HTTPS", False):
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True

# Celery: a broker URL switches to a real worker; without one, tasks run in-process.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
if not CELERY_BROKER_URL:
    CELERY_BROKER_URL = "memory://localhost/"
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}

if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    VAR_DIR.mkdir(parents=True, exist_ok=True)
