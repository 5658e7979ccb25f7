"""A real Celery worker process for tests: Redis broker, the test process's database.

The worker runs ``celery -A contracteval_site worker`` on a private queue, pointed at
the same database as the test (pytest-django's test database: a file for SQLite, the
test database for PostgreSQL), so it sees what the test commits.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("CONTRACTEVAL_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def redis_up() -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping())
    except redis.RedisError:
        return False


def database_url() -> str:
    """The URL of the database this test process uses (pytest-django's test DB)."""
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        assert db["NAME"] != ":memory:" and "mode=memory" not in str(db["NAME"]), (
            "the worker cannot see an in-memory database"
        )
        return f"sqlite:///{db['NAME']}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{auth}@{db['HOST'] or 'localhost'}{port}/{db['NAME']}"


def new_queue() -> str:
    return f"contracteval-test-{uuid.uuid4().hex[:8]}"


def start_worker(
    queue: str, *, name: str = "", env: dict[str, str] | None = None
) -> subprocess.Popen:
    """Start a solo-pool worker consuming only ``queue`` (``env`` adds settings)."""
    env = os.environ | {
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": REDIS_URL,
        "DJANGO_SETTINGS_MODULE": "contracteval_site.settings",
        **(env or {}),
    }
    command = [
        sys.executable, "-m", "celery", "-A", "contracteval_site", "worker",
        "--pool=solo", "--loglevel=INFO", "-Q", queue,
        "--without-heartbeat", "--without-gossip", "--without-mingle",
        "-n", f"{name or queue}@%h",
    ]  # fmt: skip
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def stop_worker(proc: subprocess.Popen) -> str:
    """Stop the worker and return what it printed."""
    proc.terminate()
    try:
        output, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
    return output


def wait_for(obj, proc: subprocess.Popen, seconds: float, seen: list[int] | None = None) -> None:
    """Refresh ``obj`` until its status is done/failed, the worker dies or time runs out."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        obj.refresh_from_db()
        if seen is not None:
            seen.append(obj.done)
        if obj.status in ("done", "failed"):
            return
        time.sleep(0.1)


def repeated_suite_zip(folder: Path, copies: int) -> tuple[bytes, int]:
    """A suite zip of ``folder``'s contracts and its cases repeated ``copies`` times, each
    copy's case ids suffixed (``…/copy-2``) so every case is distinct; ``(zip, cases)``."""
    import io
    import json
    import zipfile

    lines = [x for x in (folder / "cases.jsonl").read_text(encoding="utf-8").splitlines() if x]
    out = []
    for k in range(copies):
        for line in lines:
            case = json.loads(line)
            case["id"] = f"{case['id']}/copy-{k + 1}" if k else case["id"]
            out.append(json.dumps(case, ensure_ascii=False))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted((folder / "contracts").glob("*.json")):
            zf.write(path, f"contracts/{path.name}")
        zf.writestr("cases.jsonl", "\n".join(out) + "\n")
    return buf.getvalue(), len(out)
