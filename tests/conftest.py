"""Every test process runs Celery tasks in-process (eager), on commit, as the app
queues them. Only the tests do: the app itself always sends jobs to a worker. Tests
that need a real worker start one (tests/web/workers.py) and send to its queue."""

import pytest


@pytest.fixture(autouse=True, scope="session")
def _celery_tasks_in_process():
    from contracteval_site.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


@pytest.fixture(autouse=True)
def _empty_cache():
    """Each test starts with an empty cache (the inbox keeps its filter choices there)."""
    from django.core.cache import cache

    cache.clear()
    yield
