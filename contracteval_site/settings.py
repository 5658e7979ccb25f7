"""Settings for the ContractEval audit workspace.

One module, driven by environment variables with safe defaults, so that a fresh clone
runs with no servers at all (SQLite, and a Celery broker in a SQLite file):

- ``DATABASE_URL``: ``sqlite:///relative/or/absolute.sqlite3`` (default
  ``sqlite:///db.sqlite3``) or ``postgres://user:password@host:port/name``.
- ``CELERY_BROKER_URL``: e.g. ``redis://127.0.0.1:6379/0``; absent means kombu's
  SQLAlchemy transport on ``var/celery-broker.sqlite3`` (one machine, no server),
  looking for messages every 0.1 s (``sqla-local+``, :mod:`contracteval_site.broker`). Tasks
  always go through a broker to a worker; only the tests run them in-process.
- ``CELERY_TASK_SOFT_TIME_LIMIT`` / ``CELERY_TASK_TIME_LIMIT`` (seconds, default 300 /
  360), ``CELERY_VISIBILITY_TIMEOUT`` (default 3600), ``JOB_STALE_AFTER`` (default 420):
  see docs/operations.md.
- ``SECRET_KEY``: absent means a random key kept in ``var/secret_key`` (never a fixed one).
- ``DEBUG``: ``1``/``true``/``yes``/``on`` to enable; off by default. Every boolean,
  number and URL is checked when the app starts: a value that cannot be read (``DEBUG=
  maybe``) stops it with an error naming the variable, never a silent default.
- ``ALLOWED_HOSTS``: comma-separated; default ``127.0.0.1,localhost``.
- ``SERVE_STATIC``: the app serves its own static files with WhiteNoise (default on;
  turn off behind a web server that serves ``STATIC_ROOT``).
- ``HTTPS``: ``1`` behind HTTPS (with ``DEBUG`` off): secure cookies, a redirect to
  HTTPS and HSTS (``HSTS_SECONDS``, ``HSTS_INCLUDE_SUBDOMAINS``, ``HSTS_PRELOAD``);
  ``SECURE_PROXY_SSL_HEADER=1`` trusts a proxy's ``X-Forwarded-Proto: https``.
- ``LOGIN_FAILURE_LIMIT`` / ``LOGIN_COOLOFF_MINUTES``: wrong passwords before a
  user name is locked out from one address, and for how long (django-axes).
- ``API_THROTTLE_ANON`` / ``API_THROTTLE_USER``: REST API request rates.
- ``CACHE_URL``: a shared cache (``redis://host:6379/1``); absent: per process.
- ``DB_CONN_MAX_AGE``: seconds a process keeps its database connection (default 0).
- ``INPUT_LIMITS``: overrides of the limits on what a user may send, as ``name=value``
  pairs separated by commas or spaces, a size in bytes or ending in KiB, MiB or GiB:
  ``INPUT_LIMITS="trace_bytes=1MiB trace_events=2000"``. The names and defaults are
  those of ``matching.input_limits.Limits`` (docs/operations.md, "Input limits"); every
  form, API call, upload and archive is checked against them, and an unknown name or
  an unreadable value stops the start.
- ``OTLP_MAX_BODY_BYTES`` / ``OTLP_REQUESTS_PER_MINUTE`` / ``OTLP_QUIET_SECONDS``: live
  ingestion at ``POST /v1/traces`` (docs/operations.md, "Live ingestion (OTLP)").
- ``WEBHOOK_MAX_ATTEMPTS`` / ``WEBHOOK_TIMEOUT_SECONDS`` / ``WEBHOOK_ALLOW_PRIVATE_ADDRESSES``
  / ``SITE_URL``: outgoing webhooks (docs/operations.md, "Outgoing webhooks").
See docs/operations.md, "Deploy settings and security".
"""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta
from pathlib import Path
from typing import Any

import environ
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from matching.input_limits import Limits

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"


class StrictEnv(environ.Env):
    """django-environ, but a value that cannot be read is an error naming the variable.

    django-environ reads any unknown boolean (``DEBUG=maybe``) as False, which hides a
    typo that turns a setting off; here it stops the start instead.
    """

    TRUE = frozenset({"1", "true", "yes", "on"})
    FALSE = frozenset({"0", "false", "no", "off"})

    def get_value(self, var, cast=None, default=environ.Env.NOTSET, parse_default=False):
        raw = self.ENVIRON.get(var, "")
        if cast is bool and raw.strip():
            word = raw.strip().lower()
            if word not in self.TRUE | self.FALSE:
                raise ImproperlyConfigured(
                    f"{var}={raw!r} is not a boolean: use 1, true, yes, on or 0, false, no, off"
                )
            return word in self.TRUE
        if raw == "" and default is not environ.Env.NOTSET:
            return default  # set but empty: the default, as if unset
        try:
            return super().get_value(var, cast=cast, default=default, parse_default=parse_default)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{var}={raw!r} cannot be read: {exc}") from None


env = StrictEnv()

DATABASE_ENGINES = ("django.db.backends.sqlite3", "django.db.backends.postgresql")


def parse_database_url(url: str, *, base_dir: Path = BASE_DIR) -> dict[str, Any]:
    """A Django ``DATABASES`` entry from ``sqlite:///path`` or ``postgres://…`` URLs.

    django-environ parses the URL; this adds what the app needs on top: a relative
    SQLite path is under the project, SQLite waits for a lock, and tests use a file.

    >>> parse_database_url("sqlite:///db.sqlite3", base_dir=Path("/srv"))["NAME"]
    '/srv/db.sqlite3'
    >>> parse_database_url("sqlite:////tmp/x.sqlite3")["NAME"]
    '/tmp/x.sqlite3'
    >>> d = parse_database_url("postgres://bob:s%40cret@db:6543/ce")
    >>> (d["USER"], d["PASSWORD"], d["HOST"], d["PORT"], d["NAME"])
    ('bob', 's@cret', 'db', '6543', 'ce')
    """
    try:
        entry = environ.Env.db_url_config(url)
    except (ImproperlyConfigured, KeyError) as exc:
        raise ValueError(f"unsupported DATABASE_URL {url!r}: {exc}") from None
    engine = entry.get("ENGINE")
    if engine not in DATABASE_ENGINES:
        scheme = url.split(":", 1)[0]
        raise ValueError(
            f"unsupported DATABASE_URL scheme {scheme!r} (use sqlite:/// or postgres://)"
        )
    if engine.endswith("sqlite3"):
        name = entry["NAME"] or ":memory:"
        if name != ":memory:" and not name.startswith("/"):
            name = str(base_dir / name)
        # Several writers (web requests, a worker): WAL lets reads go on during a write;
        # IMMEDIATE takes the write lock when a transaction starts, so a waiting writer
        # waits out the busy timeout instead of failing at once with "database is locked".
        options = {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
        out: dict[str, Any] = {"ENGINE": engine, "NAME": name, "OPTIONS": options}
        if name != ":memory:":
            # A file, not memory, so that a Celery worker process can share the test DB.
            out["TEST"] = {"NAME": str(base_dir / "var" / f"test_{Path(name).name}")}
        return out
    if not entry.get("NAME"):
        raise ValueError("DATABASE_URL for PostgreSQL must name a database")
    return {
        "ENGINE": engine,
        "NAME": entry["NAME"],
        "USER": entry.get("USER") or "",
        "PASSWORD": entry.get("PASSWORD") or "",
        "HOST": entry.get("HOST") or "",
        "PORT": str(entry.get("PORT") or ""),
        "CONN_MAX_AGE": 0,
    }


def _database(url: str) -> dict[str, Any]:
    try:
        return parse_database_url(url)
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL: {exc}") from None


def _secret_key() -> str:
    key = env.str("SECRET_KEY", default="")
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


DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = _secret_key()
ALLOWED_HOSTS = [
    h.strip() for h in env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"]) if h.strip()
]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in env.list("CSRF_TRUSTED_ORIGINS", default=[]) if o.strip()
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
    "django_filters",
    "django_htmx",
    "axes",
    "audit",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    # NUL in a query parameter -> 400; a database that stays locked -> 503, not 500
    "audit.guards.RequestGuardMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # a GET of a POST-only address goes to the page holding its form, not a bare 405
    "audit.pages.FormOnlyMiddleware",
    # last, as django-axes asks: it turns a locked-out login into its lockout answer
    "axes.middleware.AxesMiddleware",
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

DATABASES = {"default": _database(env.str("DATABASE_URL", default="sqlite:///db.sqlite3"))}
if DATABASES["default"]["ENGINE"].endswith("postgresql"):
    # Seconds a process keeps its connection (0: one per request). Behind pgbouncer in
    # transaction mode keep 0 and set DB_DISABLE_SERVER_SIDE_CURSORS=1 (docs/deploy.md).
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("DB_CONN_MAX_AGE", default=0)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = env.bool(
        "DB_DISABLE_SERVER_SIDE_CURSORS", default=False
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django's cache: per process (local memory) unless CACHE_URL names a shared one, e.g.
# redis://127.0.0.1:6379/1 (`make serve` sets one). Shared, what is cached is computed
# once for every web process (the inbox's filter choices) and the API throttle counts
# a user's requests across processes.
CACHES = {
    "default": (
        env.cache_url("CACHE_URL")
        if env.str("CACHE_URL", default="")
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 10},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Login throttling (django-axes): after LOGIN_FAILURE_LIMIT wrong passwords for one user
# name from one address, that pair is locked out for LOGIN_COOLOFF_MINUTES.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("LOGIN_COOLOFF_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
SERVE_STATIC = env.bool("SERVE_STATIC", default=True)
if SERVE_STATIC:
    # WhiteNoise serves the (small) static files from the app process, with caching
    # headers, straight from the finders: no collectstatic step before `make run`.
    MIDDLEWARE.insert(1, "whitenoise.middleware.WhiteNoiseMiddleware")
    WHITENOISE_USE_FINDERS = True
    WHITENOISE_AUTOREFRESH = DEBUG
    STATIC_ROOT.mkdir(exist_ok=True)  # empty until collectstatic; WhiteNoise warns if absent

# The REST API (audit/api.py): token or session auth, the UI's object permissions.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # JSON within the size and depth limits of matching.input_limits (audit/guards.py)
    "DEFAULT_PARSER_CLASSES": [
        "audit.guards.LimitedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env.str("API_THROTTLE_ANON", default="60/minute"),
        "user": env.str("API_THROTTLE_USER", default="1200/minute"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "ContractEval API",
    "DESCRIPTION": "Projects, contracts, queries and conformance runs of ContractEval.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # applies the views' OpenAPI annotations, recorded at import (audit/openapi.py)
    "DEFAULT_GENERATOR_CLASS": "audit.api_schema.SchemaGenerator",
    # every operation documents its error answers (400/401/403/404/409/413/429)
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "audit.api_schema.document_errors",
    ],
    # Swagger UI comes from npm (scripts/vendor_static.py), never from a CDN.
    "SWAGGER_UI_DIST": "/" + STATIC_URL + "vendor/swagger-ui",
    "SWAGGER_UI_FAVICON_HREF": "/" + STATIC_URL + "vendor/swagger-ui/favicon-32x32.png",
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "audit.models.RunStatus",
        "ContractStatusEnum": "audit.models.ContractStatus",
        "RunModeEnum": "audit.models.RunMode",
        "ExtractorEnum": "audit.models.ExtractorName",
        "InputKindEnum": "audit.models.InputKind",
        "CorrectionActionEnum": "audit.api_teaching.CORRECTION_ACTIONS",
        "ActionEnum": "audit.models.DecisionAction",
    },
}


# Variables that set one input limit each before INPUT_LIMITS held them all: one still
# set stops the start, since ignoring it would silently change the limit it set.
RENAMED_LIMITS = {
    "SUITE_UPLOAD_MAX_BYTES": "suite_archive_bytes",
    "SUITE_UNPACKED_MAX_BYTES": "suite_unpacked_bytes",
}


def _input_limits(spec: str) -> Limits:
    for gone, name in RENAMED_LIMITS.items():
        if env.str(gone, default=""):
            raise ImproperlyConfigured(
                f"{gone} is now INPUT_LIMITS={name}=<bytes>; set that instead"
            )
    try:
        return Limits.parse(spec)
    except ValueError as exc:
        raise ImproperlyConfigured(f"INPUT_LIMITS={spec!r} cannot be read: {exc}") from None


# Every limit on what a user may send, in one table (matching.input_limits.Limits).
INPUT_LIMITS = _input_limits(env.str("INPUT_LIMITS", default=""))
# A request body (files aside) holds at most the largest single upload and its fields:
# Django refuses more before reading it (a 413 naming the limit, audit/guards.py).
DATA_UPLOAD_MAX_MEMORY_SIZE = INPUT_LIMITS.request_bytes

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "audit:project_list"
LOGOUT_REDIRECT_URL = "login"

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
HTTPS = not DEBUG and env.bool("HTTPS", default=False)
if HTTPS:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = True
    SECURE_HSTS_SECONDS = env.int("HSTS_SECONDS", default=365 * 24 * 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("HSTS_INCLUDE_SUBDOMAINS", default=True)
    SECURE_HSTS_PRELOAD = env.bool("HSTS_PRELOAD", default=True)
if env.bool("SECURE_PROXY_SSL_HEADER", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Content-Security-Policy (Django's own middleware): scripts, styles, images and
# requests from this site only; no inline script or style anywhere in the templates.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

# Celery: every job (runs, batch chunks, proposals) goes through the broker to a worker;
# a web request only queues it. Without CELERY_BROKER_URL the broker is a SQLite file,
# so `make run` has a real worker and nothing to install. The tests run tasks in-process
# (tests/conftest.py sets task_always_eager on the app).
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="") or (
    f"sqla-local+sqlite:///{VAR_DIR / 'celery-broker.sqlite3'}"
)
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_IGNORE_RESULT = True  # results live on the rows; no result backend
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Every task: SoftTimeLimitExceeded after the soft limit (the row fails with a reason),
# the process killed after the hard one (on_failure marks the row failed).
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=300)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=360)
# Redis (and SQS) redeliver a message that was taken but not acknowledged after this
# many seconds: a worker killed mid-task loses nothing. It must exceed the hard time
# limit plus the longest retry countdown (60 s), or a slow task would run twice (a
# chunk stored twice still counts once, but the work is wasted).
CELERY_VISIBILITY_TIMEOUT = env.int("CELERY_VISIBILITY_TIMEOUT", default=3600)
# (The SQLite broker passes its options to SQLAlchemy's create_engine, which refuses
# these; it deletes a message when a worker takes it, so there is no timeout to set.)
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {}
    if CELERY_BROKER_URL.startswith(("sqla+", "sqla-local+"))
    else {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
)
# kombu's Redis transport looks for lost messages about every 100 s (10 s x every 10th
# look); with a visibility timeout shorter than that, look every half timeout instead,
# or a lost message would wait for the sweep rather than the timeout.
if CELERY_BROKER_TRANSPORT_OPTIONS and CELERY_VISIBILITY_TIMEOUT < 200:
    CELERY_BROKER_TRANSPORT_OPTIONS |= {
        "unacked_restore_interval": 1,
        "unacked_restore_throttle": max(1, CELERY_VISIBILITY_TIMEOUT // 2),
    }
# A RUNNING run or batch chunk whose heartbeat is older than this is stale (its worker
# died or hung): the sweep below queues it again, or fails it after MAX_ATTEMPTS.
JOB_STALE_AFTER = env.int("JOB_STALE_AFTER", default=CELERY_TASK_TIME_LIMIT + 60)
JOB_MAX_ATTEMPTS = env.int("JOB_MAX_ATTEMPTS", default=3)
# Cases per batch chunk, at most: one chunk is one task, and what a killed worker can
# lose. A batch is cut into BATCH_CHUNKS chunks when that keeps them under the maximum
# (and over 20 cases), so that the processes of a worker share even a small batch
# evenly (audit/services/chunks.py, chunk_size).
BATCH_CHUNK_CASES = env.int("BATCH_CHUNK_CASES", default=200)
BATCH_CHUNKS = env.int("BATCH_CHUNKS", default=16)


# Live ingestion over OTLP/HTTP (POST /v1/traces, docs/connect.md): the largest body
# a request may carry once decompressed (413 past it), the requests one ingest token
# may send per minute (429 past it), and how long a trace whose root span never ended
# stays quiet before it is taken as complete (the sweep below looks every 10 s).
def _positive(name: str, default: int) -> int:
    value = env.int(name, default=default)
    if value < 1:
        raise ImproperlyConfigured(f"{name}={value} must be a positive whole number")
    return value


OTLP_MAX_BODY_BYTES = _positive("OTLP_MAX_BODY_BYTES", 4 * 1024 * 1024)
OTLP_REQUESTS_PER_MINUTE = _positive("OTLP_REQUESTS_PER_MINUTE", 600)
OTLP_QUIET_SECONDS = _positive("OTLP_QUIET_SECONDS", 30)
# Outgoing webhooks (docs/operations.md, "Outgoing webhooks"): attempts per event before
# it is marked failed, the timeout of one POST, and whether endpoints may resolve to
# private, loopback or link-local addresses. Allowing them by default only under DEBUG
# keeps a project admin from making the worker probe the internal network in production.
WEBHOOK_MAX_ATTEMPTS = _positive("WEBHOOK_MAX_ATTEMPTS", 5)
WEBHOOK_TIMEOUT_SECONDS = _positive("WEBHOOK_TIMEOUT_SECONDS", 5)
WEBHOOK_ALLOW_PRIVATE_ADDRESSES = env.bool("WEBHOOK_ALLOW_PRIVATE_ADDRESSES", default=DEBUG)
# The site's address as a reviewer reaches it: a webhook's body links to the run with it
# (a task has no request to build the address from).
SITE_URL = env.str("SITE_URL", default="http://127.0.0.1:8000").rstrip("/")
if not SITE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(f"SITE_URL={SITE_URL!r} must start with http:// or https://")
CELERY_BEAT_SCHEDULE = {
    "sweep-stale-jobs": {"task": "audit.tasks.sweep_stale_jobs", "schedule": 60.0},
    "sweep-quiet-traces": {"task": "audit.tasks.sweep_quiet_traces", "schedule": 10.0},
    "sweep-unsent-webhooks": {"task": "audit.tasks.sweep_unsent_webhooks", "schedule": 60.0},
}
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

LOG_LEVEL = env.str("LOG_LEVEL", default="WARNING").upper()
if not isinstance(logging.getLevelName(LOG_LEVEL), int):
    raise ImproperlyConfigured(
        f"LOG_LEVEL={LOG_LEVEL!r} is not a level: DEBUG, INFO, WARNING, ERROR or CRITICAL"
    )
# Every module logs through logging.getLogger(__name__); the app's own modules (audit,
# matching) log at INFO and up unless LOG_LEVEL asks for less, libraries at LOG_LEVEL.
APP_LOG_LEVEL = min(logging.INFO, logging.getLevelName(LOG_LEVEL))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "audit": {"level": APP_LOG_LEVEL},
        "matching": {"level": APP_LOG_LEVEL},
    },
}

if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    VAR_DIR.mkdir(parents=True, exist_ok=True)
