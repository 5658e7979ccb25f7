"""The Django project: settings, URLs, WSGI/ASGI and the Celery application.

The Celery app (:mod:`.celery`) is not imported here, as Celery's Django guide does to
make it current before any ``@shared_task`` is used: that would cost every process,
``manage.py check`` and each web worker included, the import of Celery and kombu at
start-up. Whatever sends or runs a task imports it instead: ``celery -A
contracteval_site`` finds ``contracteval_site.celery.app`` itself, and
:mod:`audit.tasks`, which the senders of :mod:`audit.enqueue` import when they run,
imports it first.
"""
