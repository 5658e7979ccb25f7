"""gunicorn settings for ``make run`` (two workers) and ``make serve`` (read with
``--config deploy/gunicorn.conf.py``).

Every value can be overridden from the environment: ``WEB_CONCURRENCY`` (worker
processes, default cores + 1), ``WEB_THREADS``, ``HOST``/``PORT`` (or ``BIND``),
``WEB_TIMEOUT``, ``WEB_MAX_REQUESTS``.

Why cores + 1 sync workers, not the usual 2 x cores + 1: that figure is for a worker
that mostly waits on its database. Here a request spends 80-90 % of its time on the
CPU (5-35 ms of Python, 1-5 ms of queries with persistent connections), and on the
single machine of ``make serve`` the cores are shared with PostgreSQL, the Celery
worker and beat. More workers than that only take turns on the same cores, each
request of a burst finishing later; one spare worker keeps a core busy while another
waits on the database. On a web-only machine behind a proxy, raise it with the cores.
"""

import multiprocessing
import os

bind = (
    os.environ.get("BIND")
    or f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
)
workers = int(os.environ.get("WEB_CONCURRENCY") or multiprocessing.cpu_count() + 1)
threads = int(os.environ.get("WEB_THREADS", "1"))
# A request never runs a job (the Celery workers do), so anything slower than this is stuck.
timeout = int(os.environ.get("WEB_TIMEOUT", "30"))
graceful_timeout = 20
# Recycle a worker now and then so a slow leak cannot grow without bound.
max_requests = int(os.environ.get("WEB_MAX_REQUESTS", "2000"))
max_requests_jitter = 200
# Import the app before forking: workers share its memory and start at once.
preload_app = True
accesslog = os.environ.get("WEB_ACCESS_LOG", "-")
errorlog = "-"
loglevel = os.environ.get("WEB_LOG_LEVEL", "info")


def when_ready(server) -> None:
    """In the master, after the app is loaded and before the first worker forks: do
    once what each worker's first requests would do (contracteval_site/warmup.py)."""
    import gc

    from contracteval_site.warmup import warm_up

    warm_up()
    # what the warm-up built is shared by every worker; frozen, no collection copies it
    gc.freeze()
