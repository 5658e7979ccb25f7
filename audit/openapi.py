"""OpenAPI annotations recorded when the API is imported, applied when a schema is made.

drf-spectacular's ``extend_schema`` looks up DRF's ``DEFAULT_SCHEMA_CLASS`` as it
decorates, which imports its whole schema machinery (and ``rest_framework.test``): about
50 ms of every process start, web workers and ``manage.py`` commands included, though
only ``/api/schema/`` and ``check --deploy`` ever generate a schema. The views use
:func:`extend_schema` from here instead: it takes the same arguments and only records
them. DRF's router reads every attribute of a viewset to find its actions, ``schema``
included, and DRF's ``DefaultSchema`` imports the schema class when read, so the
viewsets declare ``schema = DeferredSchema()``, which does not until a schema is
generated. :class:`audit.api_schema.SchemaGenerator` (drf-spectacular's
``DEFAULT_GENERATOR_CLASS``) hands them to the real decorator, in the order they were
written, before it generates the first schema.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from rest_framework.schemas.inspectors import DefaultSchema

F = TypeVar("F", bound=Callable[..., Any])

_recorded: list[tuple[Callable[..., Any], dict[str, Any]]] = []
_applying = threading.Lock()  # two threads generating at once both wait for all of them
_applied = False


def extend_schema(**kwargs: Any) -> Callable[[F], F]:
    """drf-spectacular's ``extend_schema``, applied when a schema is first generated."""

    def record(view: F) -> F:
        _recorded.append((view, kwargs))
        return view

    return record


def apply_recorded() -> None:
    """Apply every recorded annotation once (a second call finds none left)."""
    from drf_spectacular.utils import extend_schema as decorate

    global _applied
    with _applying:
        for view, kwargs in _recorded:
            decorate(**kwargs)(view)
        _recorded.clear()
        _applied = True


class DeferredSchema(DefaultSchema):
    """DRF's ``DefaultSchema``, except that read on the class before any schema was
    generated (DRF's router listing a viewset's members) it is only this placeholder.
    A view instance, and the class once a schema is being generated, get the real one."""

    def __get__(self, instance: Any, owner: Any) -> Any:
        if instance is None and not _applied:
            return self
        return super().__get__(instance, owner)
