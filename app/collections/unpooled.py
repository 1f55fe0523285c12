"""Judgments outside the pool (docs/data-formats.md#judgments-outside-the-pool): the qrels
grades an import was given for (query, document) pairs its pairing did not pool. They are
written in the import's one transaction, after its pooled rows, as ``unpooled_grade`` rows:
labels the ``qrels`` label set reads beside the pooled documents' grades, never documents an
assessor is shown.

Idempotent like the rest of the import: the same grade again changes nothing; another grade
for a stored pair is an error (nothing is imported); a pair that is a stored document of
the query keeps that document (its own grade stands) and is counted unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select

from app.collections.ndjson import ImportErrors
from app.kernel.models import Document, Query, UnpooledGrade
from labeling.identifiers import identifier_problem, normal_identifier


@dataclass(frozen=True, slots=True)
class UnpooledRow:
    """One judgment outside the pool, with its query's text (the query is created when the
    pool gave it no document)."""

    query_id: str
    query: str
    description: str
    doc_id: str
    grade: int


@dataclass(slots=True)
class UnpooledCounts:
    created: int = 0
    unchanged: int = 0


def write_unpooled(
    s: Any,
    collection_id: int,
    queries: dict[str, Query],
    rows: Sequence[UnpooledRow],
    errors: ImportErrors,
) -> UnpooledCounts:
    """Check ``rows`` against the stored judgments and documents and, when nothing disagrees
    (here or before, in ``errors``), insert the new ones; ``queries`` (by external id, the
    import's own) gains the queries created. Errors name the qrels pair (line 0: a pair
    is not a line of the generated rows)."""
    counts = UnpooledCounts()
    stored = _stored(s, collection_id)
    pooled = _pooled(s, collection_id, sorted({r.doc_id for r in rows}))
    new: dict[tuple[str, str], UnpooledRow] = {}
    for r in rows:
        doc = normal_identifier(r.doc_id)
        problem = identifier_problem(doc)
        q = queries.get(r.query_id)
        if problem is not None:
            errors.add(0, f"qrels document {r.doc_id!r} of query {r.query_id!r}: {problem}")
        elif q is not None and q.title != r.query:
            errors.add(0, f"query_id {r.query_id!r} already exists with query {q.title!r}")
        elif q is not None and (q.id, doc) in pooled:
            counts.unchanged += 1
        elif q is not None and (q.id, doc) in stored:
            if stored[(q.id, doc)] != r.grade:
                errors.add(
                    0,
                    f"query {r.query_id!r}, document {doc!r}: already judged "
                    f"{stored[(q.id, doc)]} outside the pool, not {r.grade}",
                )
            else:
                counts.unchanged += 1
        else:
            new[(r.query_id, doc)] = r
    if errors.total or not new:
        return counts
    for qid, _ in new:
        if qid not in queries:
            first = next(r for (q, _), r in new.items() if q == qid)
            queries[qid] = Query(
                collection_id=collection_id,
                external_id=qid,
                title=first.query,
                description=first.description,
            )
            s.add(queries[qid])
    s.flush()
    s.execute(
        insert(UnpooledGrade),
        [
            {"collection_id": collection_id, "query_id": queries[q].id, "doc_id": d}
            | {"grade": r.grade}
            for (q, d), r in new.items()
        ],
    )
    counts.created = len(new)
    return counts


def _stored(s: Any, collection_id: int) -> dict[tuple[int, str], int]:
    rows = s.execute(
        select(UnpooledGrade.query_id, UnpooledGrade.doc_id, UnpooledGrade.grade).where(
            UnpooledGrade.collection_id == collection_id
        )
    )
    return {(q, d): int(g) for q, d, g in rows}


def _pooled(s: Any, collection_id: int, doc_ids: list[str]) -> set[tuple[int, str]]:
    """(query row id, document id) of the stored documents among ``doc_ids``."""
    out: set[tuple[int, str]] = set()
    for start in range(0, len(doc_ids), 500):
        chunk = doc_ids[start : start + 500]
        rows = s.execute(
            select(Document.query_id, Document.external_id).where(
                Document.collection_id == collection_id, Document.external_id.in_(chunk)
            )
        )
        out.update((int(q), str(d)) for q, d in rows)
    return out
