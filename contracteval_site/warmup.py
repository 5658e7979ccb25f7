"""Warm a web process before it serves: what every first request would do once.

A fresh Django process pays on its first requests for importing the URL configuration
and every view module behind it (~0.26 s of CPU here), building the reverse URL
tables (~0.19 s), loading the template tag libraries and compiling each template
(~0.15 s and more per page), importing the broker's transport (~0.19 s) and compiling
the engine's JSON schemas (~0.15 s): about 1 s of CPU on the first page and 0.25 s on
the first run created; loading the sentence model takes about 1 s more on the first
semantic correction. ``make run``'s and ``make serve``'s gunicorn preloads the app in its master and
calls :func:`warm_up` there before forking (``deploy/gunicorn.conf.py``), so every
worker, and every worker started later to replace a recycled one, begins warm instead
of making its first users wait. Nothing here touches the database: a connection
opened in the master would be shared by every forked worker.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

logger = logging.getLogger(__name__)

DATA = Path(__file__).resolve().parents[1] / "matching" / "data"


def warm_up() -> None:
    """Import, build and compile what requests use; touches no database.

    A step that fails is logged and skipped: warming is an optimisation, and the
    request that needs the same thing will report the error where it belongs.
    """
    for step in (_urls, _templates, _engine, _semantic, _broker):
        try:
            step()
        except Exception:
            logger.warning("warm-up step %s failed", step.__name__, exc_info=True)


def _urls() -> None:
    from django.urls import get_resolver

    resolver = get_resolver()
    resolver.url_patterns  # noqa: B018 - imports every view module
    resolver.reverse_dict  # noqa: B018 - the reverse tables, built once per process
    for _prefix, sub in resolver.namespace_dict.values():
        sub.reverse_dict  # noqa: B018


def _templates() -> None:
    import django.forms
    from django.forms.renderers import get_default_renderer
    from django.template import engines
    from django.template.loader import get_template

    for engine in engines.all():
        for root in engine.dirs:  # the project's templates (the apps' are rarely used)
            for path in Path(root).rglob("*.html"):
                get_template(path.relative_to(root).as_posix())
    renderer = get_default_renderer()  # the form widgets' own templates
    forms_dir = Path(django.forms.__file__).parent / "templates"
    for path in forms_dir.rglob("django/forms/widgets/*.html"):
        renderer.get_template(path.relative_to(forms_dir).as_posix())


def _engine() -> None:
    """What creating a run checks: an upload parsed and validated, a contract loaded
    and conditioned (schemas compiled, regular expressions built)."""
    from matching.conditioning import condition
    from matching.input_limits import check_json
    from matching.uploads import prepare_input
    from matching.validate import load_contract

    contract = json.loads((DATA / "refund-mini.json").read_text("utf-8"))
    observed = json.loads((DATA / "refund-mini-observed-q1.json").read_text("utf-8"))
    prepared = prepare_input(
        kind="auto", data=observed, contract_key=contract["id"], query_key="q1"
    )
    check_json(prepared.observed, what="the input")
    condition(load_contract(contract), "q1")


def _semantic() -> None:
    """Load the sentence model and import the alignment that semantic corrections use
    (~1 s): in gunicorn's master the weights are loaded once and shared by every worker,
    instead of each worker's first correction loading its own copy. Nothing is encoded
    here, so the tokenizer's threads start after the fork, in each worker."""
    import scipy.optimize  # noqa: F401 - the alignment's integer programme

    from matching import alignment  # noqa: F401
    from matching.embed import encoder

    encoder()


def _broker() -> None:
    """Import the broker's transport module (queuing a task would, on the first run)."""
    from contracteval_site.celery import app

    with app.connection_for_write() as connection:
        connection.transport  # noqa: B018 - imports the transport; does not connect
