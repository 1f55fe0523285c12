"""The NDJSON import format (``docs/data-formats.md``): one JSON object per line and per
(query, document)::

    {"query_id": "q1", "query": "title", "description": "...", "doc_id": "d7",
     "title": "...", "text": "..." | "html": "...", "features": [0.1, 2], "grade": 3}

``query_id``, ``query`` and ``doc_id`` are required (ids: strings, or integers which are
stored as their decimal string); everything else is optional; unknown keys are errors (a typo
must not silently drop data). Blank lines are skipped. :func:`parse_ndjson` decodes (strict
UTF-8) and validates every line and the file's consistency, reporting every problem with its
1-based line number (up to :data:`MAX_REPORTED_ERRORS`); the write is
:func:`app.collections.service.import_ndjson`.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
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


def _byte_lines(data: NdjsonSource) -> Iterator[bytes]:
    """The source's lines (each ending in ``\\n`` except perhaps the last), read lazily."""
    if isinstance(data, bytes | bytearray | memoryview):
        yield from io.BytesIO(bytes(data))
    else:
        yield from data


def parse_ndjson(data: NdjsonSource, *, max_lines: int, max_chars: int) -> list[NdjsonLine]:
    """Decode and validate every line, and the file's internal consistency; Invalid (422)
    with line-numbered errors if anything is wrong.

    ``data`` is read line by line (a spooled upload is never held in memory as a whole; only
    the validated records are), each line decoded as strict UTF-8 on its own, so every bad
    line is reported, not just the first."""
    errors = ImportErrors()
    lines: list[NdjsonLine] = []
    offset = 0
    for number, chunk in enumerate(_byte_lines(data), start=1):
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
            lines.append(parsed)
    if not lines and not errors.total:
        errors.add(1, "the file contains no records")
    _check_file_consistency(lines, errors)
    errors.raise_if_any()
    return lines


def _check_file_consistency(lines: list[NdjsonLine], errors: ImportErrors) -> None:
    queries: dict[str, NdjsonLine] = {}
    descriptions: dict[str, NdjsonLine] = {}
    pairs: dict[tuple[str, str], NdjsonLine] = {}
    contents: dict[str, NdjsonLine] = {}
    for ln in lines:
        first = queries.setdefault(ln.query_id, ln)
        if first.query != ln.query:
            errors.add(
                ln.line,
                f"query_id {ln.query_id!r} has query {ln.query!r} here but {first.query!r} "
                f"on line {first.line}",
            )
        if ln.description is not None:
            d = descriptions.setdefault(ln.query_id, ln)
            if d.description != ln.description:
                errors.add(
                    ln.line,
                    f"query_id {ln.query_id!r} has a different description than on line {d.line}",
                )
        key = (ln.query_id, ln.doc_id)
        seen = pairs.setdefault(key, ln)
        if seen is not ln and seen.content_hash() != ln.content_hash():
            errors.add(
                ln.line,
                f"conflicting duplicate: doc_id {ln.doc_id!r} of query_id {ln.query_id!r} "
                f"differs from line {seen.line}",
            )
        c = contents.setdefault(ln.doc_id, ln)
        if c.content != ln.content:
            errors.add(
                ln.line,
                f"doc_id {ln.doc_id!r} has a different title/text/html than on line {c.line}",
            )
