"""Read a file of any supported format into trace text (the CLI's ``import`` and
``extract --source``), within the input limits of the web app's uploads
(:class:`~matching.input_limits.Limits`, the engine's defaults unless given): the file's
size (``upload_bytes``) before it is read, ``json_depth`` before it is rendered, then the
trace it renders to (``trace_bytes``, ``trace_events``).

>>> import json, tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "chat.json"
>>> _ = p.write_text(json.dumps([{"role": "user", "content": "Hi"},
...                              {"role": "assistant", "content": "Hello."}]))
>>> got = load_trace(p)
>>> (got.kind, got.source_kind, got.text, got.output)
('openai', 'trace', '[user] Hi\\n[assistant] Hello.\\n', 'Hello.')
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ContractEvalError
from ..input_limits import DEFAULT_LIMITS, Limits
from ..trace import EVENT

__all__ = ["Imported", "load_trace", "read_source"]


@dataclass(frozen=True)
class Imported:
    kind: str  # the input kind (matching.importers.INPUT_KINDS)
    source_kind: str  # "trace" or "response"
    text: str
    output: str | None  # the agent's last message, for output requirements


def _check_size(path: Path, limits: Limits) -> None:
    """Refuse a file past ``upload_bytes`` before reading it (OSError if it is absent)."""
    try:
        limits.check_bytes("upload_bytes", path.stat().st_size, what="the file")
    except ContractEvalError as exc:
        raise exc.with_file(str(path)) from None


def read_source(path: Path, limits: Limits = DEFAULT_LIMITS) -> tuple[str, Any]:
    """The file's text and, when it is JSON, the parsed data (else None), within the
    size and depth limits."""
    try:
        _check_size(path, limits)
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ContractEvalError(
            f"cannot read file: {exc.strerror}", file=str(path), rule="io"
        ) from None
    except UnicodeDecodeError:
        raise ContractEvalError("not UTF-8 text", file=str(path), rule="io") from None
    stripped = raw.strip()
    if stripped[:1] not in ("{", "[") or EVENT.match(stripped):
        return raw, None  # prose, or a trace already rendered ("[user] …")
    try:
        return raw, limits.check_json(json.loads(stripped), what="the file", strings=False)
    except ContractEvalError as exc:
        raise exc.with_file(str(path)) from None
    except RecursionError:
        raise ContractEvalError(
            f"nested deeper than {limits.json_depth} levels", file=str(path), rule="depth"
        ) from None
    except json.JSONDecodeError as exc:
        # Text that opens like JSON is almost always a broken export, not prose.
        raise ContractEvalError(
            f"looks like JSON but is not valid JSON ({exc.msg} at line {exc.lineno} column"
            f" {exc.colno}); use --format text to read it as text",
            file=str(path),
            rule="json",
        ) from None


def load_trace(
    path: Path,
    fmt: str = "auto",
    select: Mapping[str, str] | None = None,
    *,
    text_kind: str = "trace",
    limits: Limits = DEFAULT_LIMITS,
) -> Imported:
    """Render ``path`` (format ``fmt`` or detected); plain text is kept as it is, as
    ``text_kind``. An observed document gives its own source text and kind. The trace
    is held to ``limits`` as a web upload is."""
    got = _load(Path(path), fmt, select, text_kind, limits)
    try:
        limits.check_trace(got.text)
    except ContractEvalError as exc:
        raise exc.with_file(str(path)) from None
    return got


def _load(
    path: Path, fmt: str, select: Mapping[str, str] | None, text_kind: str, limits: Limits
) -> Imported:
    from . import detect_kind, final_output, normalise_pasted, render

    if fmt == "text":
        _check_size(path, limits)
        raw, data = path.read_text(encoding="utf-8"), None
    else:
        raw, data = read_source(path, limits)
    if data is None:
        if fmt not in ("auto", "text"):
            raise ContractEvalError(
                f"expected {fmt} JSON, found text", file=str(path), rule="input-kind"
            )
        text = normalise_pasted(raw)
        return Imported("text", text_kind, text, None)
    try:
        kind = detect_kind(data) if fmt == "auto" else fmt
        if kind == "observed":
            source = data.get("source") or {}
            return Imported(kind, source.get("kind", "trace"), source.get("text", ""), None)
        text = render(kind, data, select=select)
    except ContractEvalError as exc:
        raise exc.with_file(str(path)) from None
    except (KeyError, TypeError, AttributeError):
        raise ContractEvalError(
            f"this is not {fmt} input (its structure does not match)",
            file=str(path),
            rule="input-kind",
        ) from None
    return Imported(kind, "trace", text, final_output(kind, text))
