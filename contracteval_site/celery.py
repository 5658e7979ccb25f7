"""The Celery application: tasks go through CELERY_BROKER_URL to a worker (the tests run
them in-process, eager).

The embedded default's broker is a SQLite file read by kombu's SQLAlchemy transport,
which looks for new messages once a second: a reviewer would wait half a second on
average before a worker even took the run. ``sqla-local+sqlite:///…`` (the settings'
default) is the same transport looking every 0.1 s; each look is one indexed query on a
local file.
"""

import os

from celery import Celery
from kombu.transport import TRANSPORT_ALIASES
from kombu.transport.sqlalchemy import Transport as SQLAlchemyTransport

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contracteval_site.settings")


class LocalTransport(SQLAlchemyTransport):
    polling_interval = 0.1


TRANSPORT_ALIASES["sqla-local"] = "contracteval_site.celery:LocalTransport"

app = Celery("contracteval_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
