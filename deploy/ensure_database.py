"""Create the PostgreSQL database named by ``DATABASE_URL`` if it does not exist yet.

``make serve`` runs this before the migrations so that a fresh machine with a running
PostgreSQL server needs no manual ``createdb``. Other databases (SQLite) are left to
Django, which creates the file itself.
"""

from __future__ import annotations

import os
import sys
from urllib.parse import unquote, urlsplit


def ensure_database(url: str) -> str:
    """Create the database of a ``postgres://`` URL if missing; what was done, in words."""
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql", "pgsql"}:
        return "not PostgreSQL: nothing to create"
    import psycopg
    from psycopg import sql

    name = unquote(parts.path.lstrip("/"))
    conninfo = {
        "host": parts.hostname or None,
        "port": parts.port or None,
        "user": unquote(parts.username or "") or None,
        "password": unquote(parts.password or "") or None,
        "dbname": "postgres",
    }
    with psycopg.connect(**{k: v for k, v in conninfo.items() if v}, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            return f"database {name!r} exists"
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return f"database {name!r} created"


if __name__ == "__main__":
    url = os.environ.get("DATABASE_URL", "")
    if not url:
        sys.exit("DATABASE_URL is not set")
    print(ensure_database(url))
