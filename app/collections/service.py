"""Use cases: collections, their queries, and the all-or-nothing NDJSON import.

NDJSON import format: one JSON object per line and per (query, document)::

    {"query_id": "q1", "query": "title", "description": "...", "doc_id": "d7",
     "title": "...", "text": "..." | "html": "...", "features": [0.1, 2], "grade": 3}

``query_id``, ``query`` and ``doc_id`` are required (ids: strings, or integers which are
stored as their decimal string); everything else is optional; unknown keys are errors (a typo
must not silently drop data). Blank lines are skipped.

All or nothing: the whole file is decoded (strict UTF-8) and validated first, and
every problem is reported with its 1-based line number (up to :data:`MAX_REPORTED_ERRORS`);
only a clean file is written, in ONE write transaction that re-checks against what the
database already holds. Idempotent: re-importing an identical document changes nothing.
Conflicts are errors: the same (query_id, doc_id) with different content, a query_id whose
text or description differs, or one doc_id whose title/text/html differ between queries (a
document id names one document in a collection; features and grades are per query).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError

from app.collections.guidelines import MAX_GUIDELINES, render_guidelines
from app.kernel.db import Database
from app.kernel.errors import Conflict, Invalid, NotFound
from app.kernel.models import Collection, Document, Query, Task
from labeling.identifiers import (
    MAX_IDENTIFIER_CHARS,
    identifier_problem,
    label_problem,
    text_problem,
)
from labeling.sources.base import parse_json_line

MAX_REPORTED_ERRORS = 100
MAX_ID_CHARS = MAX_IDENTIFIER_CHARS
REQUIRED_KEYS = ("query_id", "query", "doc_id")
OPTIONAL_KEYS = ("description", "title", "text", "html", "features", "grade")
ALLOWED_KEYS = frozenset(REQUIRED_KEYS + OPTIONAL_KEYS)


@dataclass(frozen=True, slots=True)
class CollectionSummary:
    id: int
    name: str
    description: str
    archived: bool
    created_at: Any
    queries: int = 0
    documents: int = 0
    """Query-document pairs (one stored row per document under each query it belongs to)."""
    tasks: dict[str, int] = field(default_factory=dict)
    distinct_documents: int = 0
    """Distinct document ids: a document judged under several queries counts once."""


@dataclass(frozen=True, slots=True)
class QuerySummary:
    query_id: str
    title: str
    description: str
    documents: int


@dataclass(frozen=True, slots=True)
class ImportReport:
    collection_id: int
    lines: int
    queries_created: int
    documents_created: int
    documents_unchanged: int


# --------------------------------------------------------------------------- collections


def create_collection(*, db: Database, name: str, description: str = "") -> Collection:
    """A new collection; 409 if the name is taken, 422 if it is blank."""
    name = name.strip()
    if not name:
        raise Invalid("collection name must not be blank")
    # Postgres text cannot hold NUL; refuse it on SQLite too so both backends agree. A name is
    # one line (no control characters); the description is free text.
    problem = label_problem(name)
    if problem is not None:
        raise Invalid(f"collection name {problem}")
    problem = text_problem(description)
    if problem is not None:
        raise Invalid(f"collection description {problem}")
    coll = Collection(name=name, description=description)
    try:
        with db.write() as s:
            s.add(coll)
            s.flush()
    except IntegrityError as exc:
        raise Conflict(f"a collection named {name!r} already exists") from exc
    return coll


def get_or_create_collection(*, db: Database, name: str) -> Collection:
    with db.read() as s:
        coll = s.scalar(select(Collection).where(Collection.name == name))
    return coll if coll is not None else create_collection(db=db, name=name)


def find_collection(*, db: Database, ref: str | int) -> Collection:
    """A collection by name, or by id when ``ref`` is all digits and no name matches."""
    with db.read() as s:
        coll = s.scalar(select(Collection).where(Collection.name == str(ref)))
        if coll is None and str(ref).isdigit():
            coll = s.get(Collection, int(ref))
    if coll is None:
        raise NotFound(f"no collection {ref!r}")
    return coll


def _summaries(db: Database, ids: list[int] | None) -> list[CollectionSummary]:
    with db.read() as s:
        stmt = select(Collection).order_by(Collection.id)
        if ids is not None:
            stmt = stmt.where(Collection.id.in_(ids))
        colls = list(s.scalars(stmt))
        if not colls:
            return []
        cids = [c.id for c in colls]
        nq = dict(
            s.execute(
                select(Query.collection_id, func.count())
                .where(Query.collection_id.in_(cids))
                .group_by(Query.collection_id)
            ).all()
        )
        nd = dict(
            s.execute(
                select(Document.collection_id, func.count())
                .where(Document.collection_id.in_(cids))
                .group_by(Document.collection_id)
            ).all()
        )
        ndistinct = dict(
            s.execute(
                select(Document.collection_id, func.count(func.distinct(Document.external_id)))
                .where(Document.collection_id.in_(cids))
                .group_by(Document.collection_id)
            ).all()
        )
        tasks: dict[int, dict[str, int]] = {cid: {} for cid in cids}
        for cid, status, count in s.execute(
            select(Task.collection_id, Task.status, func.count())
            .where(Task.collection_id.in_(cids))
            .group_by(Task.collection_id, Task.status)
        ):
            tasks[cid][status] = count
    return [
        CollectionSummary(
            id=c.id,
            name=c.name,
            description=c.description,
            archived=c.archived,
            created_at=c.created_at,
            queries=nq.get(c.id, 0),
            documents=nd.get(c.id, 0),
            tasks=tasks[c.id],
            distinct_documents=ndistinct.get(c.id, 0),
        )
        for c in colls
    ]


def list_collections(*, db: Database) -> list[CollectionSummary]:
    return _summaries(db, None)


def get_collection(*, db: Database, collection_id: int) -> CollectionSummary:
    """One collection with counts of queries, documents and tasks by status (404 if absent)."""
    found = _summaries(db, [collection_id])
    if not found:
        raise NotFound(f"no collection with id {collection_id}")
    return found[0]


def list_queries(*, db: Database, collection_id: int) -> list[QuerySummary]:
    """The collection's queries (in import order) with their document counts."""
    get_collection(db=db, collection_id=collection_id)
    with db.read() as s:
        rows = s.execute(
            select(Query, func.count(Document.id))
            .outerjoin(Document, Document.query_id == Query.id)
            .where(Query.collection_id == collection_id)
            .group_by(Query.id)
            .order_by(Query.id)
        ).all()
    return [
        QuerySummary(query_id=q.external_id, title=q.title, description=q.description, documents=n)
        for q, n in rows
    ]


# --------------------------------------------------------------------------- NDJSON import


@dataclass(slots=True)
class _Line:
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


class _Errors:
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
    """An id as text (an integer as its decimal string), or None for another JSON type; the
    identifier rule (:func:`labeling.identifiers.identifier_problem`) is checked after."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return value if isinstance(value, str) else None


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


def _check_line(number: int, obj: Any, errors: _Errors, max_chars: int) -> _Line | None:
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
    ids: dict[str, str] = {}
    for key in ("query_id", "doc_id"):
        if key in obj:
            value = _as_id(obj[key])
            problem = identifier_problem(value) if value is not None else None
            if value is None:
                kind = "null" if obj[key] is None else type(obj[key]).__name__
                errors.add(number, f"{key} must be a string or an integer, got {kind}")
            elif problem is not None:
                errors.add(number, f"{key} {problem}")
            else:
                ids[key] = value
    strings: dict[str, str | None] = {}
    for key in ("query", "description", "title", "text", "html"):
        value = obj.get(key)
        if value is None:
            strings[key] = None
            if key == "query" and key in obj:
                errors.add(number, "query must be a non-empty string, got null")
            continue
        if not isinstance(value, str):
            errors.add(number, f"{key} must be a string, got {type(value).__name__}")
        elif len(value) > max_chars:
            errors.add(number, f"{key} is too long ({len(value)} > {max_chars} characters)")
        elif (problem := text_problem(value)) is not None:
            errors.add(number, f"{key} {problem}")
        elif key == "query" and not value.strip():
            errors.add(number, "query must be a non-empty string")
        else:
            strings[key] = value
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
    if errors.total > before:
        return None
    return _Line(
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


def parse_ndjson(data: NdjsonSource, *, max_lines: int, max_chars: int) -> list[_Line]:
    """Decode and validate every line, and the file's internal consistency; Invalid (422)
    with line-numbered errors if anything is wrong.

    ``data`` is read line by line (a spooled upload is never held in memory as a whole; only
    the validated records are), each line decoded as strict UTF-8 on its own, so every bad
    line is reported, not just the first."""
    errors = _Errors()
    lines: list[_Line] = []
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


def _check_file_consistency(lines: list[_Line], errors: _Errors) -> None:
    queries: dict[str, _Line] = {}
    descriptions: dict[str, _Line] = {}
    pairs: dict[tuple[str, str], _Line] = {}
    contents: dict[str, _Line] = {}
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


def import_ndjson(*, db: Database, collection_id: int, data: NdjsonSource) -> ImportReport:
    """Validate ``data`` fully, then write it in one transaction (see module docstring).
    ``data``: the file's bytes, a binary file object (e.g. a spooled upload) or its lines."""
    settings = db.settings
    lines = parse_ndjson(
        data, max_lines=settings.import_max_lines, max_chars=settings.import_max_field_chars
    )
    errors = _Errors()
    with db.write() as s:
        if s.get(Collection, collection_id) is None:
            raise NotFound(f"no collection with id {collection_id}")
        existing_q = {
            q.external_id: q
            for q in s.scalars(select(Query).where(Query.collection_id == collection_id))
        }
        doc_ids = sorted({ln.doc_id for ln in lines})
        existing_docs: dict[tuple[int, str], Document] = {}
        content_by_doc: dict[str, Document] = {}
        for start in range(0, len(doc_ids), 500):
            chunk = doc_ids[start : start + 500]
            for d in s.scalars(
                select(Document).where(
                    Document.collection_id == collection_id, Document.external_id.in_(chunk)
                )
            ):
                existing_docs[(d.query_id, d.external_id)] = d
                content_by_doc.setdefault(d.external_id, d)
        # Check the file against the database before writing anything.
        for ln in lines:
            q = existing_q.get(ln.query_id)
            if q is not None:
                if q.title != ln.query:
                    errors.add(
                        ln.line,
                        f"query_id {ln.query_id!r} already exists with query {q.title!r}",
                    )
                elif ln.description is not None and q.description not in ("", ln.description):
                    errors.add(
                        ln.line,
                        f"query_id {ln.query_id!r} already exists with another description",
                    )
                stored = existing_docs.get((q.id, ln.doc_id))
                if stored is not None and stored.content_hash != ln.content_hash():
                    errors.add(
                        ln.line,
                        f"doc_id {ln.doc_id!r} of query_id {ln.query_id!r} already exists "
                        "with different content",
                    )
            other = content_by_doc.get(ln.doc_id)
            if other is not None and (other.title, other.text, other.html) != ln.content:
                errors.add(
                    ln.line,
                    f"doc_id {ln.doc_id!r} already exists in this collection with a different "
                    "title/text/html",
                )
        errors.raise_if_any()

        queries_created = 0
        for ln in lines:
            if ln.query_id not in existing_q:
                q = Query(
                    collection_id=collection_id,
                    external_id=ln.query_id,
                    title=ln.query,
                    description=ln.description or "",
                )
                s.add(q)
                existing_q[ln.query_id] = q
                queries_created += 1
            elif ln.description and not existing_q[ln.query_id].description:
                existing_q[ln.query_id].description = ln.description
        s.flush()
        rows: list[dict[str, Any]] = []
        planned: set[tuple[int, str]] = set()
        unchanged = 0
        for ln in lines:
            qid = existing_q[ln.query_id].id
            key = (qid, ln.doc_id)
            if key in existing_docs:
                unchanged += 1
                continue
            if key in planned:
                continue  # identical duplicate line inside the file
            planned.add(key)
            rows.append(
                {
                    "collection_id": collection_id,
                    "query_id": qid,
                    "external_id": ln.doc_id,
                    "title": ln.title,
                    "text": ln.text,
                    "html": ln.html,
                    "features": ln.features,
                    "grade": ln.grade,
                    "content_hash": ln.content_hash(),
                }
            )
        if rows:
            s.execute(insert(Document), rows)
    return ImportReport(
        collection_id=collection_id,
        lines=len(lines),
        queries_created=queries_created,
        documents_created=len(rows),
        documents_unchanged=unchanged,
    )


def documents_by_query(*, db: Database, collection_id: int) -> dict[str, int]:
    """Number of documents per query external id (for admin pages and tests)."""
    with db.read() as s:
        rows = s.execute(
            select(Query.external_id, func.count(Document.id))
            .join(Document, Document.query_id == Query.id)
            .where(Query.collection_id == collection_id)
            .group_by(Query.external_id)
        ).all()
    return dict(Counter({q: n for q, n in rows}))


@dataclass(frozen=True, slots=True)
class Guidelines:
    """A collection's judging guidelines: the admin's Markdown and its sanitised HTML."""

    collection_id: int
    collection_name: str
    markdown: str
    html: str


def get_guidelines(*, db: Database, collection_id: int) -> Guidelines:
    """The collection's guidelines (404 if there is no such collection)."""
    with db.read() as s:
        coll = s.get(Collection, collection_id)
        if coll is None:
            raise NotFound(f"no collection with id {collection_id}")
        return Guidelines(coll.id, coll.name, coll.guidelines, render_guidelines(coll.guidelines))


def _check_guidelines(markdown: str) -> None:
    problem = text_problem(markdown)
    if problem is not None:
        raise Invalid(f"guidelines {problem}")
    if len(markdown) > MAX_GUIDELINES:
        raise Invalid(f"guidelines are {len(markdown)} characters; at most {MAX_GUIDELINES}")


def preview_guidelines(markdown: str) -> str:
    """The sanitised HTML ``markdown`` would be shown as, storing nothing (the admin page's
    preview); 422 for text :func:`set_guidelines` would refuse."""
    _check_guidelines(markdown)
    return render_guidelines(markdown)


def set_guidelines(*, db: Database, collection_id: int, markdown: str) -> Guidelines:
    """Replace the collection's guidelines (admin); 422 for text that cannot be stored or is
    longer than :data:`~app.collections.guidelines.MAX_GUIDELINES`, 404 for no such collection."""
    _check_guidelines(markdown)
    with db.write() as s:
        coll = s.get(Collection, collection_id)
        if coll is None:
            raise NotFound(f"no collection with id {collection_id}")
        coll.guidelines = markdown
        name = coll.name
    return Guidelines(collection_id, name, markdown, render_guidelines(markdown))
