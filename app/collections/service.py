"""Use cases: collections, their queries, their judging guidelines, and the all-or-nothing
NDJSON import (the format and its validation: :mod:`app.collections.ndjson`).

All or nothing: the whole file is decoded and validated first, and every problem is reported
with its line number; only a clean file is written, in ONE write transaction that re-checks
against what the database already holds. Both passes stream the file in bounded batches.
Idempotent: re-importing an identical document changes nothing. Conflicts are errors: the
same (query_id, doc_id) with different content, a query_id whose text or description differs,
or one doc_id whose title/text/html differ between queries (a document id names one document
in a collection; features and grades are per query).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import IntegrityError

from app.collections import repository
from app.collections.guidelines import MAX_GUIDELINES, render_guidelines
from app.collections.ndjson import (
    ImportErrors,
    NdjsonLine,
    NdjsonSource,
    Replayable,
    check_ndjson,
    record_batches,
)
from app.collections.unpooled import UnpooledRow, write_unpooled
from app.kernel.db import Database
from app.kernel.errors import Conflict, Invalid, NotFound
from app.kernel.models import Collection, Query, User
from labeling.identifiers import label_problem, text_problem


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
    """New (query, document) pairs of the pool (a document under two queries counts twice)."""
    documents_unchanged: int
    unpooled_created: int = 0
    """New judgments outside the pool (:mod:`app.collections.unpooled`)."""
    unpooled_unchanged: int = 0


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
            repository.add_collection(s, coll)
    except IntegrityError as exc:
        raise Conflict(f"a collection named {name!r} already exists") from exc
    return coll


def get_or_create_collection(*, db: Database, name: str) -> Collection:
    with db.read() as s:
        coll = repository.collection_named(s, name)
    return coll if coll is not None else create_collection(db=db, name=name)


def find_collection(*, db: Database, ref: str | int) -> Collection:
    """A collection by name, or by id when ``ref`` is all digits and no name matches."""
    with db.read() as s:
        coll = repository.collection_named(s, str(ref))
        if coll is None and str(ref).isdigit():
            coll = repository.collection_by_id(s, int(ref))
    if coll is None:
        raise NotFound(f"no collection {ref!r}")
    return coll


def _scope(viewer: User | None) -> int | None:
    """Whose collections ``viewer`` may read (docs/security.md#roles): ``None`` for every
    collection (an admin, or no viewer: the CLI and pages that checked access themselves), else
    the assessor's id, which limits it to the collections holding its tasks or second opinions.
    A collection out of scope answers 404 like a missing one, so its existence is not revealed."""
    if viewer is None or viewer.role == "admin":
        return None
    return viewer.id


def _summaries(db: Database, ids: list[int] | None, viewer: User | None) -> list[CollectionSummary]:
    """Every collection (or those of ``ids``) ``viewer`` may read, with its counts."""
    with db.read() as s:
        colls = repository.collections(s, ids, _scope(viewer))
        if not colls:
            return []
        counts = repository.collection_counts(s, [c.id for c in colls])
    nq, nd, ndistinct, tasks = (
        counts["queries"],
        counts["documents"],
        counts["distinct"],
        counts["tasks"],
    )
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


def list_collections(*, db: Database, viewer: User | None) -> list[CollectionSummary]:
    """The collections ``viewer`` may read (see :func:`_scope`) with their counts."""
    return _summaries(db, None, viewer)


def get_collection(*, db: Database, collection_id: int, viewer: User | None) -> CollectionSummary:
    """One collection with counts of queries, documents and tasks by status (404 if absent or
    not for ``viewer``, see :func:`_scope`)."""
    found = _summaries(db, [collection_id], viewer)
    if not found:
        raise NotFound(f"no collection with id {collection_id}")
    return found[0]


def list_queries(*, db: Database, collection_id: int, viewer: User | None) -> list[QuerySummary]:
    """The collection's queries (in import order) with their document counts (404 if absent or
    not for ``viewer``, see :func:`_scope`)."""
    with db.read() as s:
        if repository.collection_visible(s, collection_id, _scope(viewer)) is None:
            raise NotFound(f"no collection with id {collection_id}")
        rows = repository.queries_with_counts(s, collection_id)
    return [
        QuerySummary(query_id=q.external_id, title=q.title, description=q.description, documents=n)
        for q, n in rows
    ]


# --------------------------------------------------------------------------- NDJSON import


def import_ndjson(
    *,
    db: Database,
    collection_id: int,
    data: NdjsonSource,
    unpooled: Sequence[UnpooledRow] = (),
) -> ImportReport:
    """Validate ``data`` fully, then write it in one transaction (see module docstring).
    ``data``: the file's bytes, a binary file object (e.g. a spooled upload) or its lines;
    ``unpooled``: judgments of documents outside the pool, written in the same transaction
    (:mod:`app.collections.unpooled`; the TREC/SMART imports' qrels beyond their pairing).

    Two streaming passes, so that memory stays bounded by a batch whatever the file's size
    (docs/performance.md#imports): the first validates every line and the file's consistency
    outside any transaction (keeping digests, not records); the second reads the file again
    in batches inside ONE write transaction, checks each batch against the stored documents
    and inserts it. Any error rolls the whole transaction back: nothing is stored."""
    settings = db.settings
    limits = {"max_lines": settings.import_max_lines, "max_chars": settings.import_max_field_chars}
    with Replayable(data) as source:
        count = check_ndjson(source.first(), **limits)
        with db.write() as s:
            if repository.collection_by_id(s, collection_id) is None:
                raise NotFound(f"no collection with id {collection_id}")
            writer = _BatchWriter(s, collection_id, repository.queries_by_id(s, collection_id))
            for batch in record_batches(source.again(), **limits):
                writer.add(batch)
            before = len(writer.queries)
            outside = write_unpooled(s, collection_id, writer.queries, unpooled, writer.errors)
            writer.errors.raise_if_any()
            if writer.lines != count:
                raise Invalid("the file changed while it was imported; nothing was imported")
    return ImportReport(
        collection_id=collection_id,
        lines=writer.lines,
        queries_created=writer.queries_created + len(writer.queries) - before,
        documents_created=writer.documents_created,
        documents_unchanged=writer.documents_unchanged,
        unpooled_created=outside.created,
        unpooled_unchanged=outside.unchanged,
    )


class _BatchWriter:
    """The write pass of an import, one batch of records at a time, in the import's one
    transaction ``s``. Each batch is checked against what the database held
    before the import (a query's text and description, a stored pair's content hash, a
    document id's title/text/html under another query); after the first disagreement the
    remaining batches are only checked (every error is reported) and nothing more written."""

    def __init__(self, s: Any, collection_id: int, queries: dict[str, Query]) -> None:
        self.s = s
        self.collection_id = collection_id
        self.queries = queries
        self.stored_queries = {q.external_id: (q.title, q.description) for q in queries.values()}
        self.inserted: set[tuple[int, str]] = set()
        """(query row id, document id) of the rows this import inserted."""
        self.errors = ImportErrors()
        self.lines = self.queries_created = self.documents_created = 0
        self.documents_unchanged = 0

    def add(self, batch: list[NdjsonLine]) -> None:
        """Check ``batch`` against the stored documents and, if nothing disagrees so far,
        insert its new queries and (query, document) rows."""
        self.lines += len(batch)
        stored = self._stored(batch)
        self._check(batch, stored)
        if self.errors.total:
            return
        self._add_queries(batch)
        self.s.flush()
        rows = self._document_rows(batch, stored)
        repository.insert_documents(self.s, rows)
        self.documents_created += len(rows)
        if any(row["features"] is not None for row in rows):
            # Imported vectors replace heapjudge's text features (docs/features.md#stored-features).
            repository.forget_feature_set(self.s, self.collection_id)

    def _stored(self, batch: list[NdjsonLine]) -> list[Any]:
        """The documents stored before the import whose ids the batch names."""
        ids = sorted({ln.doc_id for ln in batch})
        return [
            d
            for d in repository.stored_documents(self.s, self.collection_id, ids)
            if (d.query_id, d.external_id) not in self.inserted
        ]

    def _check(self, batch: list[NdjsonLine], stored: list[Any]) -> None:
        """An error for each line that disagrees with a stored query or document."""
        pairs = {(d.query_id, d.external_id): d.content_hash for d in stored}
        contents: dict[str, tuple[str, str | None, str | None]] = {}
        for d in stored:
            contents.setdefault(d.external_id, (d.title, d.text, d.html))
        for ln in batch:
            q = self.stored_queries.get(ln.query_id)
            if q is not None:
                title, description = q
                if title != ln.query:
                    self.errors.add(
                        ln.line, f"query_id {ln.query_id!r} already exists with query {title!r}"
                    )
                elif ln.description is not None and description not in ("", ln.description):
                    self.errors.add(
                        ln.line,
                        f"query_id {ln.query_id!r} already exists with another description",
                    )
                stored_hash = pairs.get((self.queries[ln.query_id].id, ln.doc_id))
                if stored_hash is not None and stored_hash != ln.content_hash():
                    self.errors.add(
                        ln.line,
                        f"doc_id {ln.doc_id!r} of query_id {ln.query_id!r} already exists "
                        "with different content",
                    )
            other = contents.get(ln.doc_id)
            if other is not None and other != ln.content:
                self.errors.add(
                    ln.line,
                    f"doc_id {ln.doc_id!r} already exists in this collection with a different "
                    "title/text/html",
                )

    def _add_queries(self, batch: list[NdjsonLine]) -> None:
        """Add the batch's new queries and fill in missing descriptions."""
        for ln in batch:
            q = self.queries.get(ln.query_id)
            if q is None:
                q = Query(
                    collection_id=self.collection_id,
                    external_id=ln.query_id,
                    title=ln.query,
                    description=ln.description or "",
                )
                self.s.add(q)
                self.queries[ln.query_id] = q
                self.queries_created += 1
            elif ln.description and not q.description:
                q.description = ln.description

    def _document_rows(self, batch: list[NdjsonLine], stored: list[Any]) -> list[dict[str, Any]]:
        """The batch's rows to insert (pairs neither stored nor inserted before), counting
        the lines that name a stored pair (unchanged)."""
        existing = {(d.query_id, d.external_id) for d in stored}
        rows: list[dict[str, Any]] = []
        for ln in batch:
            key = (self.queries[ln.query_id].id, ln.doc_id)
            if key in existing:
                self.documents_unchanged += 1
                continue
            if key in self.inserted:
                continue  # identical duplicate line inside the file
            self.inserted.add(key)
            rows.append(
                {
                    "collection_id": self.collection_id,
                    "query_id": key[0],
                    "external_id": ln.doc_id,
                    "title": ln.title,
                    "text": ln.text,
                    "html": ln.html,
                    "features": ln.features,
                    "grade": ln.grade,
                    "content_hash": ln.content_hash(),
                }
            )
        return rows


def documents_by_query(*, db: Database, collection_id: int) -> dict[str, int]:
    """Number of documents per query external id (for admin pages and tests)."""
    with db.read() as s:
        return repository.documents_per_query(s, collection_id)


@dataclass(frozen=True, slots=True)
class Guidelines:
    """A collection's judging guidelines: the admin's Markdown and its sanitised HTML."""

    collection_id: int
    collection_name: str
    markdown: str
    html: str


def get_guidelines(*, db: Database, collection_id: int, viewer: User | None) -> Guidelines:
    """The collection's guidelines (404 if there is no such collection or it is not for
    ``viewer``, see :func:`_scope`)."""
    with db.read() as s:
        coll = repository.collection_visible(s, collection_id, _scope(viewer))
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
        coll = repository.collection_by_id(s, collection_id)
        if coll is None:
            raise NotFound(f"no collection with id {collection_id}")
        coll.guidelines = markdown
        name = coll.name
    return Guidelines(collection_id, name, markdown, render_guidelines(markdown))
