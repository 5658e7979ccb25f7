"""Limits on untrusted input: strict UTF-8, bounded JSON size and depth, no NUL.

Every document a user can send (a contract to import, a trace, a suite archive's
files, a node's ``meta``) passes through these checks before anything parses it
deeply or stores it, so that a hostile or broken input gets a message naming what
is wrong instead of a crash deep inside a parser or the database:

- text is UTF-8 (a leading byte-order mark is accepted and dropped);
- JSON is at most ``max_bytes`` long and nested at most ``max_depth`` levels
  (Python's parser would otherwise hit its recursion limit);
- no string holds a NUL character or an unpaired surrogate (PostgreSQL cannot
  store either).

>>> load_json(b'\\xef\\xbb\\xbf{"a": [1, 2]}', what="the contract", max_bytes=100)
{'a': [1, 2]}
>>> load_json("[" * 80 + "]" * 80, what="the trace", max_bytes=1000)
Traceback (most recent call last):
...
matching.input_limits.InputRefused: $: the trace is nested deeper than 64 levels (under $[0][0][0]) [depth]
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

from .errors import ContractEvalError, json_path

MAX_DEPTH = 64
_BAD_CHAR = re.compile("[\x00\ud800-\udfff]")


class InputRefused(ContractEvalError):
    """Input refused before parsing or storing it; ``status`` is the HTTP status to
    answer with (413 for a size limit, 400 otherwise)."""

    def __init__(self, message: str, *, rule: str, path: str = "$", status: int = 400) -> None:
        super().__init__(message, path=path, rule=rule)
        self.status = status


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


def check_size(size: int, *, what: str, max_bytes: int) -> None:
    """:class:`InputRefused` (status 413) when ``size`` bytes exceed ``max_bytes``.

    >>> check_size(21 * 1024 * 1024, what="the contract", max_bytes=20 * 1024 * 1024)
    Traceback (most recent call last):
    ...
    matching.input_limits.InputRefused: $: the contract is 22,020,096 bytes; the limit \
is 20,971,520 bytes (20 MB) [size]
    """
    if size > max_bytes:
        raise InputRefused(
            f"{what} is {size:,} bytes; the limit is {max_bytes:,} bytes"
            f" ({max_bytes / (1024 * 1024):g} MB)",
            rule="size",
            status=413,
        )


def load_json(raw: str | bytes, *, what: str, max_bytes: int, max_depth: int = MAX_DEPTH) -> Any:
    """Parse ``raw`` (UTF-8 bytes or text) within the size and depth limits, checking
    every string (see :func:`check_json`); :class:`InputRefused` says what is wrong.

    >>> load_json(b'{"a": 1', what="the trace", max_bytes=100)
    Traceback (most recent call last):
    ...
    matching.input_limits.InputRefused: $: the trace is not JSON: Expecting ',' \
delimiter at line 1 column 8 [json]
    """
    if isinstance(raw, bytes):
        check_size(len(raw), what=what, max_bytes=max_bytes)
        text = decode_utf8(raw, what=what)
    else:
        # a cheap bound first: no text of n characters is more than 4n bytes
        if len(raw) * 4 > max_bytes:
            check_size(len(raw.encode("utf-8", "surrogatepass")), what=what, max_bytes=max_bytes)
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
    "MAX_DEPTH",
    "InputRefused",
    "check_depth",
    "check_json",
    "check_size",
    "check_text",
    "decode_utf8",
    "load_json",
    "too_deep",
]
