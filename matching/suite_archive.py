"""Unpacking an uploaded suite archive (a zip of a suite folder) safely: no member
outside the destination, no links, and the sizes and file counts of
:class:`~matching.input_limits.Limits` (``suite_archive_bytes``,
``suite_unpacked_bytes``, ``suite_files``; each contract file ``document_bytes``)."""

from __future__ import annotations

import codecs
import io
import re
import stat
import zipfile
from pathlib import Path, PurePosixPath

from .input_limits import DEFAULT_LIMITS, Limits


class SuiteArchiveError(ValueError):
    """An uploaded suite archive that cannot be unpacked; the message says why and
    ``status`` is the HTTP status to answer with (413 past a size limit, else 400)."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _too_big(measured: str, size: int, limits: Limits, name: str) -> None:
    """Refuse when ``size`` passes the limit ``name``; ``measured`` says what was
    measured ("the archive is", "the archive unpacks to", …)."""
    limit = getattr(limits, name)
    if size > limit:
        raise SuiteArchiveError(
            f"{measured} {size:,} bytes; the limit is {limit:,} (INPUT_LIMITS {name})", status=413
        )


def _member_path(info: zipfile.ZipInfo) -> PurePosixPath:
    name = info.filename
    if "\\" in name or name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise SuiteArchiveError(f"unsafe path in the archive: {name!r}")
    path = PurePosixPath(name)
    if any(part in ("..", "") for part in path.parts) or path.is_absolute():
        raise SuiteArchiveError(f"unsafe path in the archive: {name!r}")
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise SuiteArchiveError(f"the archive contains a symbolic link: {name!r}")
    return path


def extract_suite_zip(archive: bytes, dest: Path, *, limits: Limits = DEFAULT_LIMITS) -> Path:
    """Unpack the suite files of ``archive`` into ``dest``; returns the suite folder.

    Zip-slip safe (no absolute paths, ``..``, links), size-limited (the archive, each
    member and the total unpacked), and only ``contracts/*.json`` and ``cases.jsonl``
    (at the top or under one folder) are written. A bad archive raises
    :class:`SuiteArchiveError` saying what is wrong.

    >>> import io, tempfile, zipfile
    >>> buf = io.BytesIO()
    >>> with zipfile.ZipFile(buf, "w") as zf:
    ...     zf.writestr("../evil.json", "{}")
    >>> extract_suite_zip(buf.getvalue(), Path(tempfile.mkdtemp()))
    Traceback (most recent call last):
    ...
    matching.suite_archive.SuiteArchiveError: unsafe path in the archive: '../evil.json'
    """
    with _open_zip(archive, limits) as zf:
        wanted = _suite_members(zf, limits)
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "contracts").mkdir(exist_ok=True)
        _unpack(zf, wanted, dest, limits)
    return dest


def check_suite_zip(archive: bytes, *, limits: Limits = DEFAULT_LIMITS) -> int:
    """The checks of :func:`extract_suite_zip` that need no unpacking; the case count
    is not known yet, so this returns the number of contract files.

    It reads the zip's directory only (milliseconds for any archive within the limits),
    so a web form can refuse a bad upload at once and leave the unpacking, the audit of
    the contracts and the reading of the cases to a worker. The sizes a zip declares can
    lie: :func:`extract_suite_zip` checks the bytes it writes again.

    >>> import io, zipfile
    >>> buf = io.BytesIO()
    >>> with zipfile.ZipFile(buf, "w") as zf:
    ...     zf.writestr("suite/cases.jsonl", "{}")
    ...     zf.writestr("suite/contracts/a.json", "{}")
    >>> check_suite_zip(buf.getvalue())
    1
    """
    with _open_zip(archive, limits) as zf:
        wanted = _suite_members(zf, limits)
    unpacked = sum(info.file_size for _, info in wanted)
    _too_big("the archive says it unpacks to", unpacked, limits, "suite_unpacked_bytes")
    return sum(1 for rel, _ in wanted if rel.parts[0] == "contracts")


def _open_zip(archive: bytes, limits: Limits) -> zipfile.ZipFile:
    _too_big("the archive is", len(archive), limits, "suite_archive_bytes")
    try:
        return zipfile.ZipFile(io.BytesIO(archive))
    except zipfile.BadZipFile:
        raise SuiteArchiveError("not a zip archive") from None


def _suite_members(
    zf: zipfile.ZipFile, limits: Limits
) -> list[tuple[PurePosixPath, zipfile.ZipInfo]]:
    """The suite files of the archive (``cases.jsonl`` and ``contracts/*.json`` under
    the one folder that holds ``cases.jsonl``), each with its path in the suite."""
    infos = [i for i in zf.infolist() if not i.is_dir()]
    if len(infos) > limits.suite_files:
        raise SuiteArchiveError(
            f"the archive has {len(infos):,} files; the limit is {limits.suite_files:,}"
            " (INPUT_LIMITS suite_files)"
        )
    paths = [(_member_path(i), i) for i in infos]
    roots = {p.parent for p, _ in paths if p.name == "cases.jsonl"}
    if len(roots) != 1:
        raise SuiteArchiveError(
            "the archive must hold one suite: contracts/<id>.json and cases.jsonl"
            " (FORMAT.md §7), at the top or in one folder"
        )
    root = roots.pop()
    wanted = []
    for p, info in paths:
        rel = p.relative_to(root) if p.is_relative_to(root) else None
        if rel is None:
            continue
        if rel == PurePosixPath("cases.jsonl"):
            wanted.append((rel, info))
        elif len(rel.parts) == 2 and rel.parts[0] == "contracts" and rel.suffix == ".json":
            _too_big(f"{rel} says it is", info.file_size, limits, "document_bytes")
            wanted.append((rel, info))
    if not any(rel.parts[0] == "contracts" for rel, _ in wanted):
        raise SuiteArchiveError("the archive has no contracts/<id>.json")
    return wanted


def _unpack(
    zf: zipfile.ZipFile,
    wanted: list[tuple[PurePosixPath, zipfile.ZipInfo]],
    dest: Path,
    limits: Limits,
) -> None:
    """Write the members, stopping as soon as the bytes written pass the limits (the
    sizes a zip declares can lie)."""
    total = 0
    for rel, info in wanted:
        _too_big("the archive unpacks to", total + info.file_size, limits, "suite_unpacked_bytes")
        target = dest.joinpath(*rel.parts)
        # cases are read line by line later; a file that is not text at all is refused
        # now, with the archive, instead of becoming one error per line
        utf8 = codecs.getincrementaldecoder("utf-8")() if rel.name == "cases.jsonl" else None
        written = 0
        with zf.open(info) as src, open(target, "wb") as out:
            while chunk := src.read(1 << 20):
                if utf8 is not None:
                    _check_utf8(utf8, chunk, rel, offset=written)
                written += len(chunk)
                total += len(chunk)
                _too_big("the archive unpacks to", total, limits, "suite_unpacked_bytes")
                if utf8 is None:
                    _too_big(f"{rel} is", written, limits, "document_bytes")
                out.write(chunk)
            if utf8 is not None:
                _check_utf8(utf8, b"", rel, offset=written, final=True)


def _check_utf8(
    decoder: codecs.IncrementalDecoder,
    chunk: bytes,
    rel: PurePosixPath,
    *,
    offset: int,
    final: bool = False,
) -> None:
    try:
        decoder.decode(chunk, final=final)
    except UnicodeDecodeError as exc:
        raise SuiteArchiveError(
            f"{rel} is not UTF-8 text (near byte {offset + exc.start:,}); save it as UTF-8"
        ) from None
