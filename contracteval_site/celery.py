"""The Celery application: tasks go through CELERY_BROKER_URL to a worker (the tests run
them in-process, eager).

``sqla-local+sqlite:///…`` (the settings' default, the embedded broker of ``make run``)
names :class:`contracteval_site.broker.LocalTransport`, kombu's SQLAlchemy transport
polling every 0.1 s; the alias is a dotted path, loaded only when that URL is used.
"""

import os

from celery import Celery
from kombu.transport import TRANSPORT_ALIASES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contracteval_site.settings")

TRANSPORT_ALIASES["sqla-local"] = "contracteval_site.broker:LocalTransport"

app = Celery("contracteval_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
