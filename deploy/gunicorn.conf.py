"""gunicorn settings for ``make serve`` (read with ``--config deploy/gunicorn.conf.py``).

Every value can be overridden from the environment: ``WEB_CONCURRENCY`` (worker
processes, default 2 × cores + 1, the usual figure for a sync server that waits on
its database), ``WEB_THREADS``, ``HOST``/``PORT`` (or ``BIND``), ``WEB_TIMEOUT``.
"""

import multiprocessing
import os

bind = (
    os.environ.get("BIND")
    or f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
)
workers = int(os.environ.get("WEB_CONCURRENCY") or multiprocessing.cpu_count() * 2 + 1)
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
