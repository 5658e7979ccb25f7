"""Limits on untrusted input: one table of sizes and counts, strict UTF-8, bounded JSON
depth, no NUL.

Every document a user can send (a trace, a contract to import, a tool catalogue, a
suite archive's files, a node's ``meta``) passes through these checks before anything
parses it deeply or stores it, so that a hostile or broken input gets a message naming
what is wrong instead of a crash deep inside a parser, a page too large to render, or
a database that cannot store it:

- :class:`Limits` is the table of sizes and counts, with the defaults a real user
  needs; a refusal names the limit and the measured value (status 413 for a size, 400
  for a count or a shape);
- text is UTF-8 (a leading byte-order mark is accepted and dropped);
- JSON is at most ``max_bytes`` long and nested at most ``json_depth`` levels
  (Python's parser would otherwise hit its recursion limit);
- no string holds a NUL character or an unpaired surrogate (PostgreSQL cannot
  store either).

>>> load_json(b'\\xef\\xbb\\xbf{"a": [1, 2]}', what="the contract", max_bytes=100)
{'a': [1, 2]}
>>> load_json("[" * 80 + "]" * 80, what="the trace", max_bytes=1000)
Traceback (most recent call last):
...
matching.input_limits.InputRefused: $: the trace is nested deeper than 64 levels (under $[0][0][0]) [depth]
>>> Limits().check_bytes("trace_bytes", 2 * 1024 * 1024, what="the trace")
Traceback (most recent call last):
...
matching.input_limits.InputRefused: $: the trace is 2,097,152 bytes; the limit is 524,288 \
(INPUT_LIMITS trace_bytes) [size]
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass, fields, replace
from typing import Any

from .errors import ContractEvalError, json_path

KIB = 1024
MIB = 1024 * KIB
# Room for the fields of a request beside its one large field (a run's options, the
# project of a contract import): what a request body may add to the largest upload.
REQUEST_ENVELOPE = 64 * KIB
# Python's JSON parser recurses once per level and stops near 1,000 levels; the checks
# and renderers after it recurse too, so a depth limit stays well below that.
DEPTH_CEILING = 500
_BAD_CHAR = re.compile("[\x00\ud800-\udfff]")
_AMOUNT = re.compile(r"^(\d[\d_]*)(KiB|MiB|GiB)?$", re.I)
_UNITS = {"": 1, "kib": KIB, "mib": MIB, "gib": 1024 * MIB}


class InputRefused(ContractEvalError):
    """Input refused before parsing or storing it; ``status`` is the HTTP status to
    answer with (413 for a size limit, 400 otherwise)."""

    def __init__(self, message: str, *, rule: str, path: str = "$", status: int = 400) -> None:
        super().__init__(message, path=path, rule=rule)
        self.status = status


@dataclass(frozen=True)
class Limits:
    """The limits on what a user may send: sizes in bytes of UTF-8, counts in items.

    ``Limits()`` holds the defaults, chosen for real use with room to spare (the
    reasons: docs/operations.md, "Input limits"); a deployment overrides them with
    :meth:`parse` (the web app's ``INPUT_LIMITS`` setting). Every check names the limit
    and the measured value, so that a refusal says what would be accepted.

    >>> Limits().trace_bytes, Limits().json_depth
    (524288, 64)
    >>> Limits.parse("trace_bytes=1MiB, tool_count=64").trace_bytes
    1048576
    >>> Limits().check_count("trace_events", 1500, what="the trace", unit="events")
    Traceback (most recent call last):
    ...
    matching.input_limits.InputRefused: $: the trace has 1,500 events; the limit is \
1,000 (INPUT_LIMITS trace_events) [count]
    """

    #: a run's input as sent (a file, a paste, the API's ``input``): a τ-bench results
    #: file holds every trajectory of a benchmark run, of which a run evaluates one
    upload_bytes: int = 4 * MIB
    #: the trace one run evaluates, with its final output: what the run's page shows
    trace_bytes: int = 512 * KIB
    #: events of that trace (``[role]`` lines), nodes of an observed document, steps
    #: an extractor finds in it
    trace_events: int = 1_000
    #: a contract document (a file, a paste, the API, a suite's contract files)
    document_bytes: int = 4 * MIB
    #: nodes of a contract document
    contract_nodes: int = 2_000
    #: the instruction text of a new contract
    artifact_bytes: int = 1 * MIB
    #: JSON typed into one form field (a node's ``meta``, an invariant's check)
    field_bytes: int = 1 * MIB
    #: nesting of any JSON document
    json_depth: int = 64
    #: a tool catalogue (an OpenAI ``tools`` list)
    tools_bytes: int = 512 * KIB
    #: tools in a catalogue (OpenAI accepts at most 128 in one request)
    tool_count: int = 128
    #: a suite archive (a zip) as uploaded
    suite_archive_bytes: int = 20 * MIB
    #: what a suite archive unpacks to
    suite_unpacked_bytes: int = 200 * MIB
    #: files in a suite archive
    suite_files: int = 10_000

    def __post_init__(self) -> None:
        for name, value in self.as_dict().items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}")
        if self.json_depth > DEPTH_CEILING:
            raise ValueError(
                f"json_depth must be at most {DEPTH_CEILING} (Python's JSON parser stops"
                f" near 1,000 levels), not {self.json_depth}"
            )

    def as_dict(self) -> dict[str, int]:
        """Every limit by name, in the table's order.

        >>> list(Limits().as_dict())[:3]
        ['upload_bytes', 'trace_bytes', 'trace_events']
        """
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def request_bytes(self) -> int:
        """The most one request body may carry in its fields (files aside): the largest
        upload a field may hold (:data:`FIELD_UPLOADS`) and :data:`REQUEST_ENVELOPE`.

        >>> Limits().request_bytes
        4259840
        """
        return max(getattr(self, name) for name in FIELD_UPLOADS) + REQUEST_ENVELOPE

    @property
    def body_bytes(self) -> int:
        """The most one request may send, files included: the largest upload of any
        kind (a suite archive too) and :data:`REQUEST_ENVELOPE`.

        >>> Limits().body_bytes
        21037056
        """
        return max(getattr(self, name) for name in BODY_UPLOADS) + REQUEST_ENVELOPE

    def check_bytes(self, name: str, size: int, *, what: str) -> None:
        """:class:`InputRefused` (status 413) when ``size`` exceeds the limit ``name``."""
        check_size(size, what=what, max_bytes=getattr(self, name), name=name)

    def check_count(self, name: str, count: int, *, what: str, unit: str) -> None:
        """:class:`InputRefused` (status 400) when ``count`` exceeds the limit ``name``."""
        limit = getattr(self, name)
        if count > limit:
            raise InputRefused(
                f"{what} has {count:,} {unit}; the limit is {limit:,} (INPUT_LIMITS {name})",
                rule="count",
            )

    def load_json(self, raw: str | bytes, *, what: str, name: str) -> Any:
        """:func:`load_json` within the size limit ``name`` and :attr:`json_depth`.

        >>> Limits(json_depth=2).load_json("[[[1]]]", what="the tools list", name="tools_bytes")
        Traceback (most recent call last):
        ...
        matching.input_limits.InputRefused: $: the tools list is nested deeper than 2 \
levels (under $[0][0]) [depth]
        """
        return load_json(
            raw, what=what, max_bytes=getattr(self, name), max_depth=self.json_depth, name=name
        )

    def check_json(self, value: Any, *, what: str, strings: bool = True) -> Any:
        """:func:`check_json` of parsed JSON, nested at most :attr:`json_depth` levels."""
        return check_json(value, what=what, max_depth=self.json_depth, strings=strings)

    def check_trace(self, text: str, output: str | None = None) -> None:
        """The trace one run evaluates (with its final output) within ``trace_bytes``
        and ``trace_events``; the size first, so an oversized trace is never read.

        >>> Limits(trace_events=1).check_trace("[user] Hi\\n[assistant] Hello.\\n")
        Traceback (most recent call last):
        ...
        matching.input_limits.InputRefused: $: the trace has 2 events; the limit is 1 \
(INPUT_LIMITS trace_events) [count]
        """
        from .trace import events

        what = "the trace with its final output" if output else "the trace"
        if (len(text) + len(output or "")) * 4 > self.trace_bytes:  # else it cannot be over
            self.check_bytes("trace_bytes", text_bytes(text) + text_bytes(output or ""), what=what)
        count = sum(1 for event in events(text) if event.role is not None)
        self.check_count("trace_events", count, what="the trace", unit="events")

    @classmethod
    def parse(cls, spec: str, base: Limits | None = None) -> Limits:
        """``base`` (the defaults) with the overrides of ``spec``: ``name=value`` pairs
        separated by commas or spaces; a size may end in KiB, MiB or GiB.

        >>> Limits.parse("trace_events=2_000 suite_archive_bytes=50MiB").suite_archive_bytes
        52428800
        >>> Limits.parse("trace_byte=1")
        Traceback (most recent call last):
        ...
        ValueError: unknown limit 'trace_byte'; the limits are upload_bytes, trace_bytes, \
trace_events, document_bytes, contract_nodes, artifact_bytes, field_bytes, json_depth, \
tools_bytes, tool_count, suite_archive_bytes, suite_unpacked_bytes, suite_files
        """
        base = base or cls()
        known = base.as_dict()
        changes: dict[str, int] = {}
        for item in re.split(r"[\s,]+", spec.strip()):
            if not item:
                continue
            name, sep, value = item.partition("=")
            if name not in known:
                raise ValueError(f"unknown limit {name!r}; the limits are {', '.join(known)}")
            amount = _AMOUNT.match(value) if sep else None
            if amount is None:
                raise ValueError(
                    f"{item!r}: expected {name}=<whole number>; a size may end in KiB, MiB or GiB"
                )
            changes[name] = int(amount.group(1)) * _UNITS[(amount.group(2) or "").lower()]
        return replace(base, **changes)


#: the limits of what one form field or API body may hold (a paste, a JSON document)
FIELD_UPLOADS = ("upload_bytes", "document_bytes", "artifact_bytes", "tools_bytes", "field_bytes")
#: and of what one request may send, files included
BODY_UPLOADS = (*FIELD_UPLOADS, "suite_archive_bytes")
DEFAULT_LIMITS = Limits()
#: the default nesting limit of every JSON document (:attr:`Limits.json_depth`)
MAX_DEPTH = DEFAULT_LIMITS.json_depth


def text_bytes(text: str) -> int:
    """The length of ``text`` in UTF-8 (an unpaired surrogate counts three bytes).

    >>> text_bytes("café")
    5
    """
    return len(text.encode("utf-8", "surrogatepass"))


def size_of(value: Any) -> int:
    """The bytes of ``value`` as sent: text in UTF-8, bytes as they are, parsed JSON as
    its compact UTF-8 serialisation (0 when nested too deeply to serialise: the depth
    check refuses it).

    >>> size_of({"a": [1, 2]}), size_of("é"), size_of(b"ab")
    (11, 2, 2)
    """
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, str):
        return text_bytes(value)
    try:
        dumped = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (RecursionError, ValueError):
        return 0
    return text_bytes(dumped)


def decode_utf8(raw: bytes, *, what: str) -> str:
    """``raw`` as text: strict UTF-8, a leading byte-order mark dropped.

    >>> decode_utf8("café".encode(), what="the file")
    'café'
    >>> decode_utf8(b"\\xef\\xbb\\xbfok", what="the file")
    'ok'
    >>> decode_utf8("café".encode("latin-1"), what="cases.jsonl")
    Traceback (most recent call last):
    ...
    matching.input_limits.InputRefused: $: cases.jsonl is not UTF-8 text (byte 3 is 0xe9); \
save it as UTF-8 and try again [encoding]
    """
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputRefused(
            f"{what} is not UTF-8 text (byte {exc.start} is 0x{raw[exc.start]:02x});"
            " save it as UTF-8 and try again",
            rule="encoding",
        ) from None


def check_text(text: str, *, what: str, form_field: bool = False) -> str:
    """``text`` if it can be stored as it is, else :class:`InputRefused` naming ``what``.

    ``form_field``: the text came from a submitted form field, where the server has
    already decoded the bytes and put U+FFFD in place of any that were not UTF-8.

    >>> check_text("fine", what="the title")
    'fine'
    >>> check_text("a\\x00b", what="the title")
    Traceback (most recent call last):
    ...
    matching.input_limits.InputRefused: $: the title contains a NUL character (at \
position 1) [nul]
    """
    match = _BAD_CHAR.search(text)
    if match is not None:
        raise _bad_char(what, match, "$")
    if form_field and "\ufffd" in text:
        raise InputRefused(
            f"{what} is not UTF-8 text (bytes that are not UTF-8 were sent, at position"
            f" {text.index(chr(0xFFFD))}); save it as UTF-8 and try again",
            rule="encoding",
        )
    return text


def _bad_char(what: str, match: re.Match[str], path: str) -> InputRefused:
    if match.group() == "\x00":
        return InputRefused(
            f"{what} contains a NUL character (at position {match.start()})",
            rule="nul",
            path=path,
        )
    return InputRefused(
        f"{what} contains an unpaired surrogate (at position {match.start()})",
        rule="encoding",
        path=path,
    )


def check_json(value: Any, *, what: str, max_depth: int = MAX_DEPTH, strings: bool = True) -> Any:
    """``value`` (parsed JSON) if no container is nested deeper than ``max_depth`` and
    (with ``strings``) no string or key holds a NUL or an unpaired surrogate; else
    :class:`InputRefused` whose path names the place.

    >>> check_json({"meta": {"note": "x\\x00"}}, what="the node")
    Traceback (most recent call last):
    ...
    matching.input_limits.InputRefused: $.meta.note: the node contains a NUL character \
(at position 1) [nul]
    """
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(value, 1, ())]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, str):
            if not strings:
                continue
            match = _BAD_CHAR.search(item)
            if match is not None:
                raise _bad_char(what, match, json_path(path))
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > max_depth:
            # the path of the deepest part would be as long as the nesting: name where
            # the deep part starts instead
            raise InputRefused(
                f"{what} is nested deeper than {max_depth} levels (under {json_path(path[:3])})",
                rule="depth",
            )
        if isinstance(item, dict):
            for key, child in item.items():
                if strings and isinstance(key, str) and _BAD_CHAR.search(key):
                    stack.append((key, depth, path))
                stack.append((child, depth + 1, (*path, key)))
        else:
            stack.extend((child, depth + 1, (*path, i)) for i, child in enumerate(item))
    return value


def too_deep(file: str | None = None) -> ContractEvalError:
    """The error of a document deeper than Python's parser goes."""
    return ContractEvalError(f"nested deeper than {MAX_DEPTH} levels", file=file, rule="depth")


def check_depth(data: Any, *, file: str | None = None) -> Any:
    """``data`` unless it is nested deeper than :data:`MAX_DEPTH` (strings unchecked);
    the error names ``file``.

    >>> check_depth({"a": [1]}, file="c.json")
    {'a': [1]}
    """
    try:
        return check_json(data, what="the document", strings=False)
    except InputRefused as exc:
        raise exc.with_file(file) from None


def check_size(size: int, *, what: str, max_bytes: int, name: str | None = None) -> None:
    """:class:`InputRefused` (status 413) when ``size`` bytes exceed ``max_bytes``;
    ``name``, the limit's name in :class:`Limits`, is given in the message.

    >>> check_size(21 * 1024 * 1024, what="the contract", max_bytes=20 * 1024 * 1024)
    Traceback (most recent call last):
    ...
    matching.input_limits.InputRefused: $: the contract is 22,020,096 bytes; the limit \
is 20,971,520 bytes [size]
    """
    if size > max_bytes:
        which = f" (INPUT_LIMITS {name})" if name else " bytes"
        raise InputRefused(
            f"{what} is {size:,} bytes; the limit is {max_bytes:,}{which}",
            rule="size",
            status=413,
        )


def load_json(
    raw: str | bytes,
    *,
    what: str,
    max_bytes: int,
    max_depth: int = MAX_DEPTH,
    name: str | None = None,
) -> Any:
    """Parse ``raw`` (UTF-8 bytes or text) within the size and depth limits, checking
    every string (see :func:`check_json`); :class:`InputRefused` says what is wrong.
    The size is checked before anything is decoded or parsed.

    >>> load_json(b'{"a": 1', what="the trace", max_bytes=100)
    Traceback (most recent call last):
    ...
    matching.input_limits.InputRefused: $: the trace is not JSON: Expecting ',' \
delimiter at line 1 column 8 [json]
    """
    if isinstance(raw, bytes):
        check_size(len(raw), what=what, max_bytes=max_bytes, name=name)
        text = decode_utf8(raw, what=what)
    else:
        # a cheap bound first: no text of n characters is more than 4n bytes
        if len(raw) * 4 > max_bytes:
            check_size(text_bytes(raw), what=what, max_bytes=max_bytes, name=name)
        text = raw.removeprefix("\ufeff")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputRefused(
            f"{what} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", rule="json"
        ) from None
    except RecursionError:
        raise InputRefused(
            f"{what} is nested deeper than {max_depth} levels", rule="depth"
        ) from None
    return check_json(data, what=what, max_depth=max_depth)


__all__ = [
    "BODY_UPLOADS",
    "DEFAULT_LIMITS",
    "FIELD_UPLOADS",
    "KIB",
    "MAX_DEPTH",
    "MIB",
    "REQUEST_ENVELOPE",
    "InputRefused",
    "Limits",
    "check_depth",
    "check_json",
    "check_size",
    "check_text",
    "decode_utf8",
    "load_json",
    "size_of",
    "text_bytes",
    "too_deep",
]
