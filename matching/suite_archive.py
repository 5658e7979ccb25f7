"""Unpacking an uploaded suite archive (a zip of a suite folder) safely: no member
outside the destination, no links, bounded sizes and file counts."""

from __future__ import annotations

import codecs
import io
import re
import stat
import zipfile
from pathlib import Path, PurePosixPath

# ---------------------------------------------------------------------------- suite archives
SUITE_ARCHIVE_MAX_BYTES = 20 * 1024 * 1024
SUITE_UNPACKED_MAX_BYTES = 200 * 1024 * 1024
SUITE_ARCHIVE_MAX_FILES = 10_000


class SuiteArchiveError(ValueError):
    """An uploaded suite archive that cannot be unpacked; the message says why."""


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


def extract_suite_zip(
    archive: bytes,
    dest: Path,
    *,
    max_bytes: int = SUITE_ARCHIVE_MAX_BYTES,
    max_unpacked: int = SUITE_UNPACKED_MAX_BYTES,
) -> Path:
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
    with _open_zip(archive, max_bytes) as zf:
        wanted = _suite_members(zf)
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "contracts").mkdir(exist_ok=True)
        _unpack(zf, wanted, dest, max_unpacked)
    return dest


def check_suite_zip(
    archive: bytes,
    *,
    max_bytes: int = SUITE_ARCHIVE_MAX_BYTES,
    max_unpacked: int = SUITE_UNPACKED_MAX_BYTES,
) -> int:
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
    with _open_zip(archive, max_bytes) as zf:
        wanted = _suite_members(zf)
    if sum(info.file_size for _, info in wanted) > max_unpacked:
        raise SuiteArchiveError(f"the archive unpacks to more than {max_unpacked:,} bytes")
    return sum(1 for rel, _ in wanted if rel.parts[0] == "contracts")


def _open_zip(archive: bytes, max_bytes: int) -> zipfile.ZipFile:
    if len(archive) > max_bytes:
        raise SuiteArchiveError(
            f"the archive is {len(archive):,} bytes; the limit is {max_bytes:,}"
        )
    try:
        return zipfile.ZipFile(io.BytesIO(archive))
    except zipfile.BadZipFile:
        raise SuiteArchiveError("not a zip archive") from None


def _suite_members(zf: zipfile.ZipFile) -> list[tuple[PurePosixPath, zipfile.ZipInfo]]:
    """The suite files of the archive (``cases.jsonl`` and ``contracts/*.json`` under
    the one folder that holds ``cases.jsonl``), each with its path in the suite."""
    infos = [i for i in zf.infolist() if not i.is_dir()]
    if len(infos) > SUITE_ARCHIVE_MAX_FILES:
        raise SuiteArchiveError(f"the archive has more than {SUITE_ARCHIVE_MAX_FILES:,} files")
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
        if rel == PurePosixPath("cases.jsonl") or (
            len(rel.parts) == 2 and rel.parts[0] == "contracts" and rel.suffix == ".json"
        ):
            wanted.append((rel, info))
    if not any(rel.parts[0] == "contracts" for rel, _ in wanted):
        raise SuiteArchiveError("the archive has no contracts/<id>.json")
    return wanted


def _unpack(
    zf: zipfile.ZipFile,
    wanted: list[tuple[PurePosixPath, zipfile.ZipInfo]],
    dest: Path,
    limit: int,
) -> None:
    """Write the members, stopping as soon as the bytes written pass ``limit`` (the
    sizes a zip declares can lie)."""
    total = 0
    for rel, info in wanted:
        if info.file_size > limit - total:
            raise SuiteArchiveError(f"the archive unpacks to more than {limit:,} bytes")
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
                if total > limit:
                    raise SuiteArchiveError(f"the archive unpacks to more than {limit:,} bytes")
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
