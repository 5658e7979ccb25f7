"""The embedded default's broker: kombu's SQLAlchemy transport on a SQLite file, looking
for new messages every 0.1 s instead of kombu's 1 s (a reviewer would otherwise wait
half a second on average before a worker even took the run; each look is one indexed
query on a local file). Celery loads this module only for a ``sqla-local+`` broker URL
(:mod:`contracteval_site.celery`), so a Redis deployment never imports SQLAlchemy."""

from kombu.transport.sqlalchemy import Transport as SQLAlchemyTransport


class LocalTransport(SQLAlchemyTransport):
    polling_interval = 0.1
