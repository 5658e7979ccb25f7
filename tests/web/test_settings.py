from pathlib import Path

import pytest

from contracteval_site.settings import parse_database_url


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
