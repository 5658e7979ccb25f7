"""The OpenAPI schema documents every answer an operation can give, errors included.

drf-spectacular documents the success answers of each view; this postprocessing hook
adds the error answers every API operation shares, so that a client (and schemathesis)
finds each status code it can receive in the schema. Its generator applies the views'
annotations first (:mod:`audit.openapi`). drf-spectacular loads this module only to
generate a schema.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular import generators as _spectacular_generators

DETAIL = {
    "type": "object",
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
}
# A validation error names each field with its messages ({"field": ["message"]}).
VALIDATION = {
    "type": "object",
    "additionalProperties": {
        "anyOf": [
            {"type": "array", "items": {"type": "string"}},
            {"type": "string"},
            {"type": "object"},
        ]
    },
}
ERRORS = {
    "400": ("The request is malformed or invalid; nothing was stored.", VALIDATION),
    "401": ("No valid credentials were sent.", DETAIL),
    "403": ("Your role in the project does not allow this.", DETAIL),
    "404": ("No such object, or one of a project you are not a member of.", DETAIL),
    "413": ("The request is larger than the limit it names.", DETAIL),
    "429": ("Too many requests: wait and try again.", DETAIL),
    "503": ("The database is busy: try again in a moment.", DETAIL),
}
WRITE_ERRORS = {"409": ("The change was based on an outdated version.", DETAIL)}


def document_errors(result: dict[str, Any], generator: Any, request: Any, public: bool):
    """Add the shared error answers to every operation of ``result`` (the schema)."""
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            errors = {**ERRORS, **(WRITE_ERRORS if method != "get" else {})}
            for code, (description, schema) in errors.items():
                operation["responses"].setdefault(
                    code,
                    {
                        "description": description,
                        "content": {"application/json": {"schema": schema}},
                    },
                )
    return result


class SchemaGenerator(_spectacular_generators.SchemaGenerator):
    """drf-spectacular's generator, with the views' recorded annotations applied first
    (:mod:`audit.openapi`)."""

    def get_schema(self, *args: Any, **kwargs: Any) -> Any:
        from .openapi import apply_recorded

        apply_recorded()
        return super().get_schema(*args, **kwargs)
