"""Use cases: attach grades (a qrels file, any layout) or feature vectors (a LETOR file) to a
collection's documents, matched by (query id, doc id), in one write transaction (all or
nothing); lines that match no document are counted in the report (or are errors with
``strict``). The stored content hash is recomputed, so re-imports stay idempotent."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.collections import repository
from app.collections.ndjson import document_content_hash
from app.collections.uploads import (
    UploadedFile,
    check_qrels_format,
    check_sizes,
    read_features,
    read_qrels,
    source_invalid,
    upload_limit,
)
from app.kernel.db import Database
from app.kernel.errors import Invalid, NotFound
from app.kernel.models import Document
from labeling.sources import SourceError, join_features, join_grades
from labeling.sources.rows import Join


@dataclass(frozen=True, slots=True)
class AttachReport:
    collection_id: int
    what: str
    lines: int
    matched: int
    unmatched: int
    unmatched_lines: list[int] = field(default_factory=list)
    documents_without: int = 0


def _document_hash(doc: Document) -> str:
    """The service's content hash for a document row (kept consistent after an update so
    re-imports stay idempotent): the NDJSON import's own definition."""
    return document_content_hash(
        title=doc.title,
        text=doc.text,
        html=doc.html,
        features=doc.features,
        grade=doc.grade,
    )


def _require_collection(s: Any, collection_id: int) -> None:
    """NotFound unless the collection exists."""
    if repository.collection_by_id(s, collection_id) is None:
        raise NotFound(f"no collection with id {collection_id}")


def _collection_documents(s: Any, collection_id: int) -> dict[tuple[str, str], Document]:
    """The documents of an existing collection by (query id, document id); NotFound if none."""
    _require_collection(s, collection_id)
    return repository.documents_by_pair(s, collection_id)


def _attach_report(
    collection_id: int, what: str, lines: int, joined: Join, docs: dict[tuple[str, str], Document]
) -> AttachReport:
    """What an attach did: ``lines`` records read, of which ``joined`` matched a document."""
    return AttachReport(
        collection_id=collection_id,
        what=what,
        lines=lines,
        matched=len(joined.matched),
        unmatched=len(joined.unmatched),
        unmatched_lines=joined.unmatched[:20],
        documents_without=sum(1 for k in docs if k not in joined.matched),
    )


def attach_grades(
    *,
    db: Database,
    collection_id: int,
    qrels: UploadedFile,
    qrels_format: str = "auto",
    strict: bool = False,
    max_bytes: int | None = None,
) -> AttachReport:
    """Set ``document.grade`` from a qrels file (all or nothing; any layout, module doc)."""
    check_qrels_format(qrels_format)
    check_sizes({"qrels": qrels}, upload_limit(max_bytes, db))
    try:
        entries = read_qrels(qrels, qrels_format).entries
    except SourceError as err:
        raise source_invalid(err, "no grade was attached") from None
    with db.write() as s:
        docs = _collection_documents(s, collection_id)
        try:
            joined = join_grades(docs.keys(), entries, file=qrels.name, strict=strict)
        except SourceError as err:
            raise source_invalid(err, "no grade was attached") from None
        for key, grade in joined.matched.items():
            doc = docs[key]
            doc.grade = int(grade)
            doc.content_hash = _document_hash(doc)
    return _attach_report(collection_id, "grades", len(entries), joined, docs)


def attach_features(
    *,
    db: Database,
    collection_id: int,
    features: UploadedFile,
    strict: bool = False,
    max_bytes: int | None = None,
) -> AttachReport:
    """Set ``document.features`` from a LETOR file, matched by ``qid`` and the ``docid`` in the
    row comment (all or nothing; every vector must have the same length, also as the vectors
    already stored in the collection)."""
    check_sizes({"features": features}, upload_limit(max_bytes, db))
    try:
        rows = read_features(features)
    except SourceError as err:
        raise source_invalid(err, "no feature vector was attached") from None
    with db.write() as s:
        docs = _collection_documents(s, collection_id)
        try:
            joined = join_features(docs.keys(), rows, file=features.name, strict=strict)
        except SourceError as err:
            raise source_invalid(err, "no feature vector was attached") from None
        widths = {len(v) for v in joined.matched.values()}
        others = {
            len(d.features)
            for key, d in docs.items()
            if d.features is not None and key not in joined.matched
        }
        if len(widths | others) > 1:
            raise Invalid(
                f"feature vectors would have different lengths in one collection: "
                f"{sorted(widths | others)}"
            )
        for key, vector in joined.matched.items():
            doc = docs[key]
            doc.features = [float(x) for x in vector]
            doc.content_hash = _document_hash(doc)
        if joined.matched:
            repository.forget_feature_set(s, collection_id)
    return _attach_report(collection_id, "features", len(rows), joined, docs)
