from pathlib import Path

import pytest

from contracteval_site.settings import parse_database_url

# Settings parsing does not depend on the database engine: CI runs it on SQLite only.
pytestmark = pytest.mark.any_database


def test_sqlite_url_relative_path_is_under_the_project():
    entry = parse_database_url("sqlite:///db.sqlite3", base_dir=Path("/srv/app"))
    assert entry["ENGINE"] == "django.db.backends.sqlite3"
    assert entry["NAME"] == "/srv/app/db.sqlite3"
    assert entry["TEST"]["NAME"] == "/srv/app/var/test_db.sqlite3"


def test_sqlite_url_absolute_path_and_memory():
    assert parse_database_url("sqlite:////tmp/x.sqlite3")["NAME"] == "/tmp/x.sqlite3"
    assert parse_database_url("sqlite://")["NAME"] == ":memory:"


def test_postgres_url_parts_are_decoded():
    entry = parse_database_url("postgresql://bob:p%40ss@db.local:6543/contracts")
    assert entry["ENGINE"] == "django.db.backends.postgresql"
    assert (entry["USER"], entry["PASSWORD"], entry["HOST"], entry["PORT"], entry["NAME"]) == (
        "bob",
        "p@ss",
        "db.local",
        "6543",
        "contracts",
    )


def test_postgres_url_without_password_or_port():
    entry = parse_database_url("postgres://postgres@127.0.0.1/ce")
    assert (entry["USER"], entry["PASSWORD"], entry["PORT"]) == ("postgres", "", "")


@pytest.mark.parametrize("url", ["mysql://x/y", "postgres://host/"])
def test_unsupported_or_incomplete_urls_are_refused(url):
    with pytest.raises(ValueError):
        parse_database_url(url)


def _settings_in_a_fresh_process(**env):
    """Import the settings module in a new interpreter with ``env`` set."""
    import os
    import subprocess
    import sys

    code = "import contracteval_site.settings as s; print(s.DEBUG, s.INPUT_LIMITS.trace_bytes)"
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("DEBUG", "maybe"),
        ("SERVE_STATIC", "sometimes"),
        ("INPUT_LIMITS", "trace_bytes=lots"),
        ("INPUT_LIMITS", "trace_byte=1"),
        ("INPUT_LIMITS", "json_depth=5000"),
        ("SUITE_UPLOAD_MAX_BYTES", "1000"),
        ("DATABASE_URL", "mysql://x/y"),
        ("LOG_LEVEL", "loud"),
        ("OTLP_MAX_BODY_BYTES", "0"),
        ("OTLP_REQUESTS_PER_MINUTE", "many"),
        ("OTLP_QUIET_SECONDS", "-5"),
        ("WEBHOOK_MAX_ATTEMPTS", "0"),
        ("WEBHOOK_TIMEOUT_SECONDS", "soon"),
        ("WEBHOOK_ALLOW_PRIVATE_ADDRESSES", "perhaps"),
        ("SITE_URL", "contracteval.example.com"),
    ],
)
def test_an_unreadable_setting_stops_the_start_naming_the_variable(variable, value):
    done = _settings_in_a_fresh_process(**{variable: value})
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr and variable in done.stderr


def test_booleans_accept_the_usual_words_and_empty_means_the_default():
    assert _settings_in_a_fresh_process(DEBUG="on").stdout.split()[0] == "True"
    assert _settings_in_a_fresh_process(DEBUG="0").stdout.split()[0] == "False"
    assert _settings_in_a_fresh_process(DEBUG="").stdout.split()[0] == "False"


def test_input_limits_are_read_from_one_variable_and_set_the_request_body_limit():
    assert _settings_in_a_fresh_process().stdout.split()[1] == str(512 * 1024)
    done = _settings_in_a_fresh_process(INPUT_LIMITS="trace_bytes=1MiB, tool_count=64")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[1] == str(1024 * 1024)


def test_private_webhook_addresses_are_allowed_by_default_only_under_debug():
    code = "import contracteval_site.settings as s; print(s.WEBHOOK_ALLOW_PRIVATE_ADDRESSES)"
    import os
    import subprocess
    import sys

    def read(**env: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
        )
        return done.stdout.strip()

    assert read(DEBUG="0") == "False"
    assert read(DEBUG="1") == "True"
    assert read(DEBUG="1", WEBHOOK_ALLOW_PRIVATE_ADDRESSES="0") == "False"
