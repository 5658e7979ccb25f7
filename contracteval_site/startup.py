"""Start a process without tracing, again and again, what starting builds.

Importing Django, DRF and the app's models, views and API creates a few hundred
thousand objects that live as long as the process. CPython's cyclic collector runs
every 700 new objects and, as survivors pile up, traces everything built so far: during
``manage.py check`` here that is ~0.12 s of a ~0.8 s start, spent finding no garbage.
So ``manage.py`` and the WSGI module pause the collector first thing
(:func:`pause_collector`), and the audit app resumes it once every app is ready
(:func:`resume_collector`), after moving what start-up built to the permanent generation
so that later collections skip it too: the pattern ``gc.freeze``'s documentation gives
for servers. gunicorn's master freezes again after its warm-up, before it forks, so the
workers also share those pages instead of copying them on the first collection.

A process that never reaches ``ready()`` (a settings error) exits at once anyway.
"""

from __future__ import annotations

import gc


def pause_collector() -> None:
    """Stop cyclic garbage collection until :func:`resume_collector`."""
    gc.disable()


def resume_collector() -> None:
    """Freeze what exists now (never traced again) and collect again from here on."""
    gc.freeze()
    gc.enable()
