"""The files an import reads: an upload (a spooled web upload, bytes, or a local path for the
CLI) read line by line and never loaded whole, its size limit, and the readers of the qrels
and LETOR files that the import and the attach use cases share."""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from app.kernel.db import Database
from app.kernel.errors import Invalid, PayloadTooLarge, issue_items
from labeling.sources import SourceError
from labeling.sources.letor import FeatureRows, read_letor_features
from labeling.sources.smart import parse_smart_qrels
from labeling.sources.trec import QRELS_FORMATS, QrelsFile, parse_qrels_file

Source = str | os.PathLike[str] | IO[bytes] | bytes


@dataclass(frozen=True, slots=True)
class UploadedFile:
    """One input file: a display ``name`` (for error reports) and its content."""

    name: str
    content: Source


def upload_limit(max_bytes: int | None, db: Database) -> int | None:
    """The per-file limit: ``max_bytes``, else the app's ``max_body_bytes`` (0: none)."""
    return db.settings.max_body_bytes if max_bytes is None else (max_bytes or None)


def open_upload(upload: UploadedFile) -> IO[bytes]:
    """The upload as a binary file at its start."""
    content = upload.content
    if isinstance(content, bytes):
        return io.BytesIO(content)
    if isinstance(content, str | os.PathLike):
        return Path(content).open("rb")  # closed by _lines
    content.seek(0)
    return content


def upload_size(upload: UploadedFile) -> int:
    """The upload's size in bytes."""
    content = upload.content
    if isinstance(content, bytes):
        return len(content)
    if isinstance(content, str | os.PathLike):
        return Path(content).stat().st_size
    pos = content.tell()
    content.seek(0, os.SEEK_END)
    size = content.tell()
    content.seek(pos)
    return size


def check_sizes(files: Mapping[str, UploadedFile], limit: int | None) -> None:
    """PayloadTooLarge (413) naming the first file over ``limit`` bytes."""
    if limit is None:
        return
    for upload in files.values():
        size = upload_size(upload)
        if size > limit:
            raise PayloadTooLarge(f"{upload.name} is {size} bytes; the limit is {limit} bytes")


def upload_lines(upload: UploadedFile) -> Iterator[bytes]:
    """The file's lines, read lazily (a spooled upload is never loaded whole)."""
    fh = open_upload(upload)
    try:
        # Not ``yield from fh``: closing this generator early would close the file with it.
        for line in fh:  # noqa: UP028
            yield line
    finally:
        if isinstance(upload.content, str | os.PathLike):
            fh.close()


def first_byte(upload: UploadedFile) -> bytes:
    """The first non-blank byte of the file (b"" for a blank file)."""
    for line in upload_lines(upload):
        stripped = line.strip()
        if stripped:
            return stripped[:1]
    return b""


def source_invalid(error: SourceError, what: str = "nothing was imported") -> Invalid:
    """A parser's errors as one 422 whose message says ``what`` happened."""
    items = issue_items(error.issues)
    if error.more:
        items.append({"file": "", "line": 0, "msg": f"... and {error.more} more error(s)"})
    count = len(error.issues) + error.more
    return Invalid(items, extra={"message": f"{count} error(s); {what}"})


def local_path(upload: UploadedFile) -> tuple[Path, bool]:
    """A filesystem path for readers that need one (LETOR); True if it is a temp copy."""
    if isinstance(upload.content, str | os.PathLike):
        return Path(upload.content), False
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as tmp:
        for line in upload_lines(upload):
            tmp.write(line)
    return Path(tmp.name), True


def read_features(upload: UploadedFile) -> FeatureRows:
    """The LETOR rows of the upload."""
    path, temporary = local_path(upload)
    try:
        return read_letor_features(path, file=upload.name)
    finally:
        if temporary:
            path.unlink(missing_ok=True)


def read_qrels(upload: UploadedFile, qrels_format: str, kind: str = "trec") -> QrelsFile:
    """The qrels of the upload in ``qrels_format`` (SMART readers for a SMART import)."""
    if kind == "smart" or qrels_format == "cranfield":
        return parse_smart_qrels(upload_lines(upload), file=upload.name, qrels_format=qrels_format)
    return parse_qrels_file(upload_lines(upload), file=upload.name, layout=qrels_format)


def check_qrels_format(qrels_format: str) -> None:
    """Invalid unless ``qrels_format`` is a known layout name (or ``auto``)."""
    if qrels_format not in QRELS_FORMATS:
        raise Invalid(
            f"unknown qrels format {qrels_format!r}; expected one of {', '.join(QRELS_FORMATS)}"
        )
