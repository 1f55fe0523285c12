"""The NDJSON import format (``docs/data-formats.md``): one JSON object per line and per
(query, document)::

    {"query_id": "q1", "query": "title", "description": "...", "doc_id": "d7",
     "title": "...", "text": "..." | "html": "...", "features": [0.1, 2], "grade": 3}

``query_id``, ``query`` and ``doc_id`` are required (ids: strings, or integers which are
stored as their decimal string); everything else is optional; unknown keys are errors (a typo
must not silently drop data). Blank lines are skipped. :func:`check_ndjson` decodes (strict
UTF-8) and validates every line and the file's consistency, reporting every problem with its
1-based line number (up to :data:`MAX_REPORTED_ERRORS`), keeping digests only;
:func:`record_batches` reads the records again in bounded batches for the write,
:func:`app.collections.service.import_ndjson`.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from app.kernel.errors import Invalid
from labeling.identifiers import identifier_problem, normal_identifier, text_problem
from labeling.sources.base import parse_json_line

MAX_REPORTED_ERRORS = 100
REQUIRED_KEYS = ("query_id", "query", "doc_id")
OPTIONAL_KEYS = ("description", "title", "text", "html", "features", "grade")
ALLOWED_KEYS = frozenset(REQUIRED_KEYS + OPTIONAL_KEYS)


@dataclass(slots=True)
class NdjsonLine:
    """One validated NDJSON line."""

    line: int
    query_id: str
    query: str
    description: str | None
    doc_id: str
    title: str
    text: str | None
    html: str | None
    features: list[float] | None
    grade: int | None

    @property
    def content(self) -> tuple[str, str | None, str | None]:
        """What must agree for one doc_id across queries."""
        return (self.title, self.text, self.html)

    def content_hash(self) -> str:
        return document_content_hash(
            title=self.title,
            text=self.text,
            html=self.html,
            features=self.features,
            grade=self.grade,
        )


def document_content_hash(
    *,
    title: str,
    text: str | None,
    html: str | None,
    features: list[float] | None,
    grade: int | None,
) -> str:
    """``document.content_hash``: SHA-256 (hex) of the compact JSON array
    ``[title, text, html, features, grade]`` (UTF-8, no ASCII escaping).

    The one definition of "same document content": a re-import is a no-op exactly when the
    hashes agree, so code that updates a stored document (attaching grades or features) must
    recompute it with this function to keep re-imports idempotent.
    """
    payload = [title, text, html, features, grade]
    blob = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ImportErrors:
    """Line-numbered errors of an import: the first :data:`MAX_REPORTED_ERRORS` listed, all
    counted; :meth:`raise_if_any` raises them as one 422."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.total = 0

    def add(self, line: int, msg: str) -> None:
        self.total += 1
        if len(self.items) < MAX_REPORTED_ERRORS:
            self.items.append({"line": line, "msg": msg})

    def raise_if_any(self, what: str = "nothing was imported") -> None:
        if self.total:
            if self.total > len(self.items):
                self.items.append(
                    {"line": 0, "msg": f"... and {self.total - len(self.items)} more error(s)"}
                )
            raise Invalid(self.items, extra={"message": f"{self.total} error(s); {what}"})


def _as_id(value: Any) -> str | None:
    """An id as text (an integer as its decimal string; a string in Unicode NFC,
    :func:`labeling.identifiers.normal_identifier`), or None for another JSON type; the
    identifier rule (:func:`labeling.identifiers.identifier_problem`) is checked after."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return normal_identifier(value) if isinstance(value, str) else None


def _finite_floats(values: Any) -> list[float] | None:
    """``values`` as floats if it is a list of finite numbers (an integer too large for a
    float is not one), else None."""
    if not isinstance(values, list):
        return None
    out: list[float] = []
    for x in values:
        if isinstance(x, bool) or not isinstance(x, int | float):
            return None
        try:
            value = float(x)
        except OverflowError:
            return None
        if not math.isfinite(value):
            return None
        out.append(value)
    return out


def _check_ids(number: int, obj: dict[str, Any], errors: ImportErrors) -> dict[str, str]:
    """The line's valid ``query_id`` and ``doc_id`` as text; an error for each bad one."""
    ids: dict[str, str] = {}
    for key in ("query_id", "doc_id"):
        if key not in obj:
            continue
        value = _as_id(obj[key])
        if value is None:
            kind = "null" if obj[key] is None else type(obj[key]).__name__
            errors.add(number, f"{key} must be a string or an integer, got {kind}")
        elif (problem := identifier_problem(value)) is not None:
            errors.add(number, f"{key} {problem}")
        else:
            ids[key] = value
    return ids


def _string_problem(key: str, value: Any, max_chars: int) -> str | None:
    """Why ``value`` cannot be the text field ``key`` (None when it can)."""
    if not isinstance(value, str):
        return f"{key} must be a string, got {type(value).__name__}"
    if len(value) > max_chars:
        return f"{key} is too long ({len(value)} > {max_chars} characters)"
    if (problem := text_problem(value)) is not None:
        return f"{key} {problem}"
    if key == "query" and not value.strip():
        return "query must be a non-empty string"
    return None


def _check_strings(
    number: int, obj: dict[str, Any], errors: ImportErrors, max_chars: int
) -> dict[str, str | None]:
    """The line's text fields (None when absent); an error for each bad one."""
    strings: dict[str, str | None] = {}
    for key in ("query", "description", "title", "text", "html"):
        value = obj.get(key)
        if value is None:
            strings[key] = None
            if key == "query" and key in obj:
                errors.add(number, "query must be a non-empty string, got null")
            continue
        problem = _string_problem(key, value, max_chars)
        if problem is not None:
            errors.add(number, problem)
        else:
            strings[key] = value
    return strings


def _check_numbers(
    number: int, obj: dict[str, Any], errors: ImportErrors
) -> tuple[list[float] | None, int | None]:
    """The line's ``features`` and ``grade`` (None when absent or bad; an error when bad)."""
    features = obj.get("features")
    if features is not None:
        vector = _finite_floats(features)
        if vector is None:
            errors.add(number, "features must be a list of finite numbers")
        features = vector
    grade = obj.get("grade")
    if grade is not None and (
        isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= 4
    ):
        errors.add(number, f"grade must be an integer in 0..4, got {grade!r}")
        grade = None
    return features, grade


def _check_line(number: int, obj: Any, errors: ImportErrors, max_chars: int) -> NdjsonLine | None:
    """Line ``number`` as a record, or None with its errors added to ``errors``."""
    if not isinstance(obj, dict):
        errors.add(number, f"expected a JSON object, got {type(obj).__name__}")
        return None
    before = errors.total
    unknown = sorted(set(obj) - ALLOWED_KEYS)
    if unknown:
        errors.add(number, f"unknown field(s): {', '.join(unknown)}")
    for key in REQUIRED_KEYS:
        if key not in obj:
            errors.add(number, f"missing required field {key!r}")
    ids = _check_ids(number, obj, errors)
    strings = _check_strings(number, obj, errors, max_chars)
    features, grade = _check_numbers(number, obj, errors)
    if errors.total > before:
        return None
    return NdjsonLine(
        line=number,
        query_id=ids["query_id"],
        query=strings["query"] or "",
        description=strings["description"],
        doc_id=ids["doc_id"],
        title=strings["title"] or "",
        text=strings["text"],
        html=strings["html"],
        features=features,
        grade=grade,
    )


#: What an NDJSON import reads: the whole file, a binary file object, or its lines.
NdjsonSource = bytes | IO[bytes] | Iterable[bytes]

#: A batch of records ends at this many lines or bytes, whichever comes first: what the
#: import holds in memory at once (docs/performance.md#imports).
BATCH_LINES = 1000
BATCH_BYTES = 4 << 20


class Replayable:
    """An NDJSON source that can be read twice: the import validates the whole file in a
    first pass, then reads it again to write it (:func:`app.collections.service.import_ndjson`).

    Bytes and seekable files are read again from where they started; any other iterable of
    lines is copied to a temporary file on disk as the first pass reads it. Use as a context
    manager (the copy is deleted on exit)."""

    def __init__(self, data: NdjsonSource) -> None:
        self._data = data
        self._start = 0
        self._spool: IO[bytes] | None = None

    def __enter__(self) -> Replayable:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._spool is not None:
            self._spool.close()

    def first(self) -> Iterator[bytes]:
        """The source's lines (each ending in ``\\n`` except perhaps the last), read lazily."""
        data = self._data
        if isinstance(data, bytes | bytearray | memoryview):
            yield from io.BytesIO(bytes(data))
        elif isinstance(data, io.IOBase) and data.seekable():
            self._start = data.tell()
            yield from data
        else:
            self._spool = tempfile.TemporaryFile()  # noqa: SIM115 (closed by __exit__)
            for line in data:
                self._spool.write(line)
                yield line

    def again(self) -> Iterator[bytes]:
        """The same lines once more."""
        data = self._data
        if isinstance(data, bytes | bytearray | memoryview):
            yield from io.BytesIO(bytes(data))
            return
        fh = self._spool if self._spool is not None else data
        assert isinstance(fh, io.IOBase)
        fh.seek(0 if self._spool is not None else self._start)
        yield from fh


def _records(
    lines: Iterable[bytes], errors: ImportErrors, *, max_lines: int, max_chars: int
) -> Iterator[tuple[NdjsonLine, int]]:
    """Each valid record with the bytes of its line; every bad line is added to ``errors``.
    Each line is decoded as strict UTF-8 on its own, so every bad line is reported."""
    offset = 0
    for number, chunk in enumerate(lines, start=1):
        if number > max_lines:
            raise Invalid(f"too many lines: more than {max_lines}")
        start, offset = offset, offset + len(chunk)
        if number == 1 and chunk.startswith(b"\xef\xbb\xbf"):
            chunk = chunk[3:]  # a UTF-8 byte order mark
        try:
            raw = chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.add(number, f"invalid UTF-8 at byte {start + exc.start}")
            continue
        if not raw.strip():
            continue
        obj, problem = parse_json_line(raw)
        if problem is not None:
            errors.add(number, f"invalid JSON: {problem}")
            continue
        parsed = _check_line(number, obj, errors, max_chars)
        if parsed is not None:
            yield parsed, len(chunk)


def check_ndjson(lines: Iterable[bytes], *, max_lines: int, max_chars: int) -> int:
    """Decode and validate every line, and the file's internal consistency; the number of
    records, or Invalid (422) with line-numbered errors if anything is wrong.

    Streams: only digests of what the consistency checks compare are kept
    (:class:`FileState`), never the records."""
    errors = ImportErrors()
    state = FileState()
    count = 0
    for record, _size in _records(lines, errors, max_lines=max_lines, max_chars=max_chars):
        state.check(record, errors)
        count += 1
    if not count and not errors.total:
        errors.add(1, "the file contains no records")
    errors.raise_if_any()
    return count


def record_batches(
    lines: Iterable[bytes], *, max_lines: int, max_chars: int
) -> Iterator[list[NdjsonLine]]:
    """The valid records in batches of at most :data:`BATCH_LINES` lines or about
    :data:`BATCH_BYTES` bytes; Invalid at the first bad line (a file already checked by
    :func:`check_ndjson` has none, unless it changed in between)."""
    errors = ImportErrors()
    batch: list[NdjsonLine] = []
    size = 0
    for record, length in _records(lines, errors, max_lines=max_lines, max_chars=max_chars):
        errors.raise_if_any("the file changed while it was imported; nothing was imported")
        batch.append(record)
        size += length
        if len(batch) >= BATCH_LINES or size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    errors.raise_if_any("the file changed while it was imported; nothing was imported")
    if batch:
        yield batch


def _content_digest(content: tuple[str, str | None, str | None]) -> bytes:
    """A 128-bit digest of a document's title, text and html (equal content, equal digest)."""
    blob = json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return hashlib.blake2b(blob, digest_size=16).digest()


class FileState:
    """What the file's consistency checks remember of the lines read so far: per query its
    first line and text, per (query, document) its first line and content hash, per document
    its first line and a digest of its title/text/html. Digests, not records: memory grows
    by about a hundred bytes per (query, document) line, not with the documents' text."""

    def __init__(self) -> None:
        self.queries: dict[str, tuple[int, str]] = {}
        self.descriptions: dict[str, tuple[int, str]] = {}
        self.pairs: dict[tuple[str, str], tuple[int, bytes]] = {}
        self.contents: dict[str, tuple[int, bytes]] = {}

    def check(self, ln: NdjsonLine, errors: ImportErrors) -> None:
        """Add an error to ``errors`` for each way ``ln`` disagrees with earlier lines."""
        first_line, first_query = self.queries.setdefault(ln.query_id, (ln.line, ln.query))
        if first_query != ln.query:
            errors.add(
                ln.line,
                f"query_id {ln.query_id!r} has query {ln.query!r} here but {first_query!r} "
                f"on line {first_line}",
            )
        if ln.description is not None:
            d_line, d = self.descriptions.setdefault(ln.query_id, (ln.line, ln.description))
            if d != ln.description:
                errors.add(
                    ln.line,
                    f"query_id {ln.query_id!r} has a different description than on line {d_line}",
                )
        digest = bytes.fromhex(ln.content_hash())
        seen_line, seen = self.pairs.setdefault((ln.query_id, ln.doc_id), (ln.line, digest))
        if seen != digest:
            errors.add(
                ln.line,
                f"conflicting duplicate: doc_id {ln.doc_id!r} of query_id {ln.query_id!r} "
                f"differs from line {seen_line}",
            )
        content = _content_digest(ln.content)
        c_line, c = self.contents.setdefault(ln.doc_id, (ln.line, content))
        if c != content:
            errors.add(
                ln.line,
                f"doc_id {ln.doc_id!r} has a different title/text/html than on line {c_line}",
            )
