"""OTLP/HTTP trace exports on the wire -> plain spans grouped by trace id.

An export request (``ExportTraceServiceRequest`` of the ``opentelemetry-proto``
package) arrives as protobuf (``application/x-protobuf``) or as OTLP/JSON
(``application/json``), either of them gzip-compressed or not. Both are decoded
through the protobuf message, so the two encodings accept the same requests. OTLP/JSON
writes trace and span ids as hex, where protobuf's own JSON mapping expects base64:
they are converted before parsing.

Each span becomes the plain form :func:`matching.importers.otel.spans_of` reads
(``attributes`` as a plain object, ``events`` with theirs), with the resource's
attributes beside it, so the trace renders through the existing importer.

The protobuf modules load with the first export, not when the web app starts.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from matching.input_limits import InputRefused, load_json

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MEDIA_TYPES = (PROTOBUF, JSON)
_ID_FIELDS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}
# OTLP/JSON nests attribute values (arrays, key-value lists) inside the envelope's own
# five levels; deeper than this is no real export.
_JSON_DEPTH = 64


class OtlpRefused(Exception):
    """A request refused with an HTTP status and a message saying why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


@dataclass
class Span:
    """One span, plain: what the importer and the routing rules read."""

    trace_id: str
    span_id: str
    parent_span_id: str
    data: dict[str, Any]

    @property
    def is_root(self) -> bool:
        return not self.parent_span_id

    @property
    def ended(self) -> bool:
        return self.data["endTimeUnixNano"] not in ("", "0")


def media_type(content_type: str | None) -> str:
    """The media type of ``Content-Type`` if it is one OTLP/HTTP sends, else a 415."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media not in MEDIA_TYPES:
        raise OtlpRefused(
            415, f"unsupported Content-Type {media or '(none)'!r}: send {PROTOBUF} or {JSON}"
        )
    return media


def too_large(limit: int) -> OtlpRefused:
    return OtlpRefused(
        413,
        f"the request body is larger than {limit:,} bytes (OTLP_MAX_BODY_BYTES); send fewer spans per request",
    )


def unpack(body: bytes, encoding: str | None, limit: int) -> bytes:
    """The body without its ``Content-Encoding`` (gzip or none), at most ``limit``
    bytes once decompressed: a small gzip bomb is refused as the large body it is."""
    encoding = (encoding or "identity").strip().lower()
    if encoding == "identity":
        return body
    if encoding not in ("gzip", "x-gzip"):
        raise OtlpRefused(415, f"unsupported Content-Encoding {encoding!r}: send gzip or none")
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise OtlpRefused(400, f"the body is not valid gzip: {exc}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise too_large(limit)
    if not inflater.eof:
        raise OtlpRefused(400, "the body is not valid gzip: it ends before the stream does")
    return out


def decode(body: bytes, media: str) -> ExportTraceServiceRequest:
    """The export request of ``body`` (protobuf or OTLP/JSON), or a 400 saying why."""
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    message = ExportTraceServiceRequest()
    if media == PROTOBUF:
        try:
            message.ParseFromString(body)
        except (DecodeError, RecursionError) as exc:
            raise OtlpRefused(400, f"the body is not an OTLP protobuf export: {exc}") from None
        return message
    try:
        data = load_json(body, what="the body", max_bytes=len(body), max_depth=_JSON_DEPTH)
    except InputRefused as exc:
        raise OtlpRefused(400, str(exc)) from None
    if not isinstance(data, Mapping):
        raise OtlpRefused(400, "the body is not an OTLP/JSON export: expected an object")
    try:
        json_format.ParseDict(_ids_as_base64(data), message, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as exc:
        raise OtlpRefused(400, f"the body is not an OTLP/JSON export: {exc}") from None
    return message


def _ids_as_base64(data: Any) -> Any:
    """OTLP/JSON's hex ids as the base64 protobuf's JSON mapping reads."""
    if isinstance(data, list):
        return [_ids_as_base64(x) for x in data]
    if not isinstance(data, Mapping):
        return data
    out = {}
    for key, value in data.items():
        if key in _ID_FIELDS and isinstance(value, str) and value:
            try:
                raw = bytes.fromhex(value)
            except ValueError:
                raise OtlpRefused(400, f"{key} {value[:40]!r} is not hex") from None
            if len(raw) != _ID_FIELDS[key]:
                raise OtlpRefused(400, f"{key} {value[:40]!r} is not {_ID_FIELDS[key]} bytes")
            value = base64.b64encode(raw).decode("ascii")
        out[key] = _ids_as_base64(value)
    return out


def any_value(value: Any) -> Any:
    """An ``AnyValue`` as plain Python (bytes as base64 text)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return getattr(value, kind)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in pairs}


def spans_by_trace(message: ExportTraceServiceRequest) -> dict[str, list[Span]]:
    """Every span of ``message`` with a trace and span id, by hex trace id."""
    out: dict[str, list[Span]] = {}
    for rs in message.resource_spans:
        resource = _attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                if len(s.trace_id) != 16 or len(s.span_id) != 8:
                    raise OtlpRefused(400, "a span has no valid traceId (16 bytes) or spanId (8)")
                span = Span(
                    trace_id=binascii.hexlify(s.trace_id).decode(),
                    span_id=binascii.hexlify(s.span_id).decode(),
                    parent_span_id=binascii.hexlify(s.parent_span_id).decode(),
                    data=_span_data(s, resource, ss.scope.name),
                )
                out.setdefault(span.trace_id, []).append(span)
    return out


def _span_data(s: Any, resource: dict[str, Any], scope: str) -> dict[str, Any]:
    return {
        "name": s.name,
        "spanId": binascii.hexlify(s.span_id).decode(),
        "parentSpanId": binascii.hexlify(s.parent_span_id).decode(),
        "startTimeUnixNano": str(s.start_time_unix_nano),
        "endTimeUnixNano": str(s.end_time_unix_nano),
        "attributes": _attributes(s.attributes),
        "events": [
            {
                "name": e.name,
                "timeUnixNano": str(e.time_unix_nano),
                "attributes": _attributes(e.attributes),
            }
            for e in s.events
        ],
        "resource": resource,
        "scope": scope,
    }


def success_body(media: str) -> bytes:
    """The answer to an accepted export, in the request's encoding."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )

    if media == PROTOBUF:
        return ExportTraceServiceResponse().SerializeToString()
    return b"{}"
