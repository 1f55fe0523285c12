"""Use cases: heapjudge's text features of a collection, stored as its documents' feature
vectors (docs/features.md#stored-features).

:func:`compute_features` builds a :class:`labeling.machine.features.FeatureExtractor` over the
collection's distinct documents (title; text, or the visible text of the HTML), computes the 48
features of every query (its title) against every document, normalises them per query over
the whole collection (LETOR's QueryLevelNorm, the normalisation
:class:`labeling.machine.judges.FeatureModelJudge` applies, so a model trained on the stored
vectors judges with the same numbers), and stores each (query, document) row's vector,
recording the feature set (name, version, column names, normalisation, parameters) on the
collection, all in one transaction (with each row's content hash, which covers its vector, as
an attach of LETOR vectors does). Imported vectors (LETOR files) are kept: the call is a
409 unless ``replace`` is set. Computing again replaces heapjudge's own vectors (after an
import added documents, say).

It takes seconds (Cranfield's 225 queries over 924 documents, 1,837 rows: about 6 s on a
shared machine, docs/features.md#stored-features), so the REST call and the web button put it
on the job queue (:func:`request_features`, executed by ``heapjudge worker`` as
:func:`run_features_job`), with the job's state on the collection (``feature_job``), and the
CLI runs it in its own process. A training run with ``features: "text"`` computes them in its
worker before it trains.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from app.collections.ndjson import document_content_hash
from app.kernel.db import Database
from app.kernel.errors import Conflict, DomainError, Invalid, NotFound
from app.kernel.models import utcnow
from app.training import repository
from labeling.machine.features import FEATURE_NAMES, FeatureExtractor, FeatureParams
from labeling.retrieval.text import strip_html
from ranking.data.dataset import normalize_per_query

#: The name and version of heapjudge's text feature set (bump the version when a formula,
#: a parameter or the analyser changes: vectors of two versions must not be mixed).
FEATURE_SET = "heapjudge-text"
FEATURE_SET_VERSION = 1
#: How the stored vectors are normalised.
NORMALIZATION = "query"


@dataclass(frozen=True, slots=True)
class FeatureStatus:
    """What a collection's documents carry: rows, rows with a vector, and the feature set
    (None: imported vectors, or none)."""

    collection_id: int
    documents: int
    with_features: int
    feature_set: dict[str, Any] | None

    @property
    def source(self) -> str:
        """``none``, ``imported`` or ``text`` (heapjudge's own)."""
        if is_text_feature_set(self.feature_set):
            return "text"
        return "imported" if self.with_features else "none"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "source": self.source}


def is_text_feature_set(feature_set: dict[str, Any] | None) -> bool:
    """Whether ``feature_set`` (a collection's) names heapjudge's text features."""
    return bool(feature_set) and (feature_set or {}).get("name") == FEATURE_SET


def text_feature_set(params: FeatureParams | None = None) -> dict[str, Any]:
    """The feature set recorded on a collection whose vectors heapjudge computed."""
    return {
        "name": FEATURE_SET,
        "version": FEATURE_SET_VERSION,
        "names": list(FEATURE_NAMES),
        "normalization": NORMALIZATION,
        "params": asdict(params or FeatureParams()),
    }


def feature_status(*, db: Database, collection_id: int) -> FeatureStatus:
    """The collection's :class:`FeatureStatus` (reads only; NotFound for an unknown id)."""
    with db.read() as s:
        return _status_in(s, collection_id)


def _status_in(s: Any, collection_id: int) -> FeatureStatus:
    coll = repository.collection_by_id(s, collection_id)
    if coll is None:
        raise NotFound(f"no collection with id {collection_id}")
    rows, with_vectors = repository.vector_counts(s, collection_id)
    return FeatureStatus(collection_id, rows, with_vectors, coll.feature_set)


def _refuse_imported(s: Any, collection_id: int) -> FeatureStatus:
    """The status, or Conflict when the collection's documents carry imported vectors (they
    are kept unless replaced explicitly)."""
    status = _status_in(s, collection_id)
    if status.source == "imported":
        where = repository.first_with_vector(s, collection_id)
        example = f" (query {where[0]!r}, document {where[1]!r}, ...)" if where else ""
        raise Conflict(
            f"collection {collection_id} has imported feature vectors on "
            f"{status.with_features} of its {status.documents} document rows{example}; "
            "they are kept: pass replace=true to replace them with heapjudge's text features"
        )
    return status


def _check_texts(s: Any, collection_id: int) -> None:
    if not repository.texts_present(s, collection_id):
        raise Invalid(
            f"no document of collection {collection_id} has a title, text or HTML: text "
            "features need texts (a LETOR import has none; its own feature vectors are used)"
        )


def check_computable(s: Any, collection_id: int, *, replace: bool) -> FeatureStatus:
    """In transaction ``s``: the status, or the reason text features cannot be computed now
    (NotFound, Conflict for imported vectors without ``replace``, Invalid without texts)."""
    status = _status_in(s, collection_id) if replace else _refuse_imported(s, collection_id)
    if not status.documents:
        raise Invalid(f"collection {collection_id} has no documents to compute features from")
    _check_texts(s, collection_id)
    return status


def body_text(text: str | None, html: str | None) -> str:
    """A document's body as the extractor reads it: its text, else its HTML's visible text."""
    return text if text is not None else strip_html(html) if html else ""


def collection_extractor(
    rows: list[tuple[str, str, Any, Any]], params: FeatureParams | None = None
) -> FeatureExtractor:
    """The extractor over ``(doc id, title, text, html)`` rows (Invalid when there is no
    document, or no document has any text)."""
    docs = [(d, title or "", body_text(text, html)) for d, title, text, html in rows]
    if not docs:
        raise Invalid("the collection has no documents to compute features from")
    if not any(title.strip() or body.strip() for _d, title, body in docs):
        raise Invalid(
            "no document of the collection has a title, text or HTML: text features need "
            "texts (a LETOR import has none; its own feature vectors are used instead)"
        )
    return FeatureExtractor(docs, params)


def normalized_matrix(extractor: FeatureExtractor, query: str) -> np.ndarray:
    """The query's features of every document of the extractor, min–max normalised per query
    over them all (LETOR's QueryLevelNorm: a constant feature becomes 0)."""
    x = extractor.matrix(query)
    out: np.ndarray = normalize_per_query(x, np.array([0, x.shape[0]]))
    return out


def compute_features(*, db: Database, collection_id: int, replace: bool = False) -> dict[str, Any]:
    """Compute and store the text features of every (query, document) row of the collection
    (module docstring); returns a report: rows and queries written, the feature set, the
    time taken. Conflict for imported vectors without ``replace``; Invalid without texts."""
    started = time.perf_counter()
    with db.read() as s:
        before = check_computable(s, collection_id, replace=replace)
        documents = repository.distinct_documents(s, collection_id)
        pools = repository.pools(s, collection_id)
    extractor = collection_extractor(documents)
    position = {d: i for i, d in enumerate(extractor.doc_ids)}
    rows: list[tuple[int, list[float], str]] = []
    for text, pool in pools.values():
        if not pool:
            continue
        x = normalized_matrix(extractor, text)
        picked = x[[position[row[1]] for row in pool]]
        for (row_id, _doc, title, body, html, grade), vector in zip(
            pool, picked.tolist(), strict=True
        ):
            # The hash covers the vector: re-imports stay idempotent, as after an attach.
            content = document_content_hash(
                title=title, text=body, html=html, features=vector, grade=grade
            )
            rows.append((row_id, vector, content))
    computed = time.perf_counter() - started
    feature_set = text_feature_set(extractor.params)
    with db.write() as s:
        if not replace:
            _refuse_imported(s, collection_id)  # vectors attached meanwhile are kept too
        repository.store_vectors(s, rows)
        repository.set_feature_set(s, collection_id, feature_set)
    return {
        "collection_id": collection_id,
        "rows": len(rows),
        "queries": sum(1 for _t, pool in pools.values() if pool),
        "documents": len(extractor),
        "feature_set": feature_set,
        "replaced_imported": replace and before.source == "imported",
        "seconds": {
            "compute": round(computed, 3),
            "total": round(time.perf_counter() - started, 3),
        },
    }


def _job_state(status: str, **fields: Any) -> dict[str, Any]:
    return {"status": status, **fields}


def request_features(*, db: Database, collection_id: int, replace: bool = False) -> dict[str, Any]:
    """Check that the features can be computed (as :func:`compute_features` would) and record
    a queued features job on the collection; the caller enqueues it. Returns the status view
    (:func:`features_view`)."""
    with db.write() as s:
        check_computable(s, collection_id, replace=replace)
        job = _job_state("queued", replace=replace, requested_at=utcnow().isoformat())
        repository.set_feature_job(s, collection_id, job)
    return features_view(db=db, collection_id=collection_id)


def run_features_job(collection_id: int, replace: bool, *, db: Database) -> None:
    """The worker's side of :func:`request_features`: running, then done with the report or
    failed with the reason (a refusal found now, such as vectors imported meanwhile, too)."""
    started = utcnow().isoformat()
    with db.write() as s:
        if repository.collection_by_id(s, collection_id) is None:
            return  # deleted meanwhile: nothing to record it on
        repository.set_feature_job(
            s, collection_id, _job_state("running", replace=replace, started_at=started)
        )
    try:
        report = compute_features(db=db, collection_id=collection_id, replace=replace)
        job = _job_state("done", replace=replace, started_at=started, report=report)
    except Exception as exc:  # the job records any failure; the worker carries on
        detail = exc.detail if isinstance(exc, DomainError) else f"{type(exc).__name__}: {exc}"
        job = _job_state("failed", replace=replace, started_at=started, error=str(detail))
    job["finished_at"] = utcnow().isoformat()
    with db.write() as s:
        if repository.collection_by_id(s, collection_id) is not None:
            repository.set_feature_job(s, collection_id, job)


def features_view(*, db: Database, collection_id: int) -> dict[str, Any]:
    """The collection's feature status and its last features job (reads only)."""
    with db.read() as s:
        status = _status_in(s, collection_id)
        coll = repository.collection_by_id(s, collection_id)
        job = coll.feature_job if coll is not None else None
    return {**status.as_dict(), "job": job}
