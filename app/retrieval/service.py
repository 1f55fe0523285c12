"""Use cases: BM25 over a collection's documents (``docs/retrieval.md``).

The index covers the collection's distinct documents (by document id; content is per
collection, so the first stored row of an id stands for all), indexed as title + text (HTML
reduced to its visible text) by :class:`labeling.retrieval.bm25.Bm25Index`. Queries are scored by
their
text (``query.title``). Three uses:

* :func:`bm25_run` — a TREC run naming queries and documents by the ids the import gave them
  (for SMART collections the collection's own numbers), so it evaluates against the original
  qrels file as it is (``heapjudge evaluate``);
* :func:`bm25_rankings` — every query's ranking over the collection, the pool source
  "top n by BM25" of :mod:`app.planning.service`;
* :func:`bm25_order` — one query's documents best first, the prior order of a task
  (the top-k option ``initial_order``).

The index is rebuilt on demand and kept in a small per-process cache keyed by the collection
and a fingerprint of its documents (count, highest row id and the content hashes), so a plan
over 225 queries indexes once and any import or attach builds a fresh one.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from app.kernel.db import Database
from app.kernel.errors import Invalid, NotFound
from app.retrieval import repository
from labeling.errors import ConfigError
from labeling.retrieval.bm25 import Bm25Index, Bm25Params, Hit, write_trec_run
from labeling.retrieval.embedding import EmbeddingIndex, load_embedder
from labeling.retrieval.text import document_text

#: Collections whose index stays in memory (per process).
CACHE_SIZE = 4
MAX_DEPTH = 10_000

_cache: OrderedDict[tuple[Any, ...], Bm25Index] = OrderedDict()
_cache_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Bm25Run:
    """A BM25 run over a collection: per query (in collection order) the hits, best first."""

    collection_id: int
    params: Bm25Params
    depth: int
    documents: int
    hits: dict[str, list[Hit]]
    seconds: float
    empty_queries: list[str] = field(default_factory=list)
    """Queries none of whose terms occurs in any document (no line in the run)."""

    def trec(self, tag: str = "heapjudge-bm25") -> str:
        return write_trec_run(self.hits, tag=tag)

    def summary(self) -> dict[str, Any]:
        return {
            "collection_id": self.collection_id,
            "k1": self.params.k1,
            "b": self.params.b,
            "depth": self.depth,
            "documents": self.documents,
            "queries": len(self.hits),
            "lines": sum(len(h) for h in self.hits.values()),
            "empty_queries": self.empty_queries,
            "seconds": round(self.seconds, 3),
        }


def _params(k1: float | None, b: float | None) -> Bm25Params:
    defaults = Bm25Params()
    try:
        return Bm25Params(k1=defaults.k1 if k1 is None else k1, b=defaults.b if b is None else b)
    except ConfigError as err:
        raise Invalid(str(err)) from None


def _fingerprint(s: Any, collection_id: int) -> tuple[int, int, str]:
    """(rows, highest row id, SHA-256 of the content hashes): changes with any import or
    attach."""
    count, top = repository.document_counts(s, collection_id)
    digest = hashlib.sha256()
    for h in repository.content_hashes(s, collection_id):
        digest.update(h.encode())
    return count, top, digest.hexdigest()


def collection_index(s: Any, collection_id: int, params: Bm25Params) -> Bm25Index:
    """The BM25 index of the collection's distinct documents, inside transaction ``s`` (cached;
    module doc). Invalid when the collection has no documents."""
    if not repository.collection_exists(s, collection_id):
        raise NotFound(f"no collection with id {collection_id}")
    key = (str(s.get_bind().url), collection_id, params, _fingerprint(s, collection_id))
    with _cache_lock:
        index = _cache.get(key)
        if index is not None:
            _cache.move_to_end(key)
            return index
    rows = repository.distinct_documents(s, collection_id)
    try:
        index = Bm25Index(((d, document_text(t, x, h)) for d, t, x, h in rows), params)
    except ConfigError as err:
        raise Invalid(f"collection {collection_id}: {err}") from None
    with _cache_lock:
        _cache[key] = index
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return index


_embeddings: OrderedDict[tuple[Any, ...], EmbeddingIndex] = OrderedDict()


def collection_embeddings(s: Any, collection_id: int) -> EmbeddingIndex:
    """The packaged word embedding of the collection's distinct documents, in the BM25
    index's order (:func:`collection_index`), inside transaction ``s``; cached like it (a
    collection's documents are embedded once per process and content). Invalid when the
    collection has no documents or the ``semantic`` extra is not installed."""
    index = collection_index(s, collection_id, Bm25Params())
    key = (str(s.get_bind().url), collection_id, _fingerprint(s, collection_id))
    with _cache_lock:
        found = _embeddings.get(key)
        if found is not None:
            _embeddings.move_to_end(key)
            return found
    texts = {
        d: document_text(t, x, h) for d, t, x, h in repository.distinct_documents(s, collection_id)
    }
    try:
        embedded = EmbeddingIndex(((d, texts[d]) for d in index.doc_ids), load_embedder())
    except ConfigError as err:
        raise Invalid(f"collection {collection_id}: {err}") from None
    with _cache_lock:
        _embeddings[key] = embedded
        while len(_embeddings) > CACHE_SIZE:
            _embeddings.popitem(last=False)
    return embedded


def _queries(s: Any, collection_id: int, query_ids: Sequence[str] | None) -> dict[str, str]:
    """Each query's text by id: every query's, or only ``query_ids``' (Invalid for an unknown
    one)."""
    texts = repository.query_texts(s, collection_id)
    if query_ids is None:
        return texts
    unknown = [q for q in query_ids if q not in texts]
    if unknown:
        raise Invalid(f"no query {unknown[0]!r} in collection {collection_id}")
    return {q: texts[q] for q in dict.fromkeys(query_ids)}


def bm25_run(
    *,
    db: Database,
    collection_id: int,
    depth: int = 100,
    query_ids: Sequence[str] | None = None,
    k1: float | None = None,
    b: float | None = None,
) -> Bm25Run:
    """The top ``depth`` documents of every query (or of ``query_ids``) by BM25 over the
    collection; documents sharing no term with the query are not listed."""
    if not 1 <= depth <= MAX_DEPTH:
        raise Invalid(f"depth must be in 1..{MAX_DEPTH}")
    params = _params(k1, b)
    start = time.perf_counter()
    with db.read() as s:
        index = collection_index(s, collection_id, params)
        queries = _queries(s, collection_id, query_ids)
    hits = index.run(queries, depth)
    return Bm25Run(
        collection_id=collection_id,
        params=params,
        depth=depth,
        documents=len(index),
        hits=hits,
        seconds=time.perf_counter() - start,
        empty_queries=[q for q, h in hits.items() if not h],
    )


def bm25_rankings(
    s: Any, collection_id: int, query_ids: Sequence[str], params: Bm25Params | None = None
) -> dict[str, list[str]]:
    """Every given query's ranking of all the collection's documents (ties and documents that
    share no query term last, by id descending), inside transaction ``s``."""
    index = collection_index(s, collection_id, params or Bm25Params())
    queries = _queries(s, collection_id, query_ids)
    return {q: index.order(text) for q, text in queries.items()}


def bm25_order(
    *,
    db: Database,
    collection_id: int,
    query_id: str,
    doc_ids: Sequence[str] | None = None,
    k1: float | None = None,
    b: float | None = None,
) -> list[str]:
    """The query's documents (or ``doc_ids``, e.g. a task's pool) best first by BM25 over the
    collection: the prior order a top-k task can start from (option ``initial_order``).
    Every document is returned; ties by id descending."""
    params = _params(k1, b)
    with db.read() as s:
        index = collection_index(s, collection_id, params)
        text = _queries(s, collection_id, [query_id])[query_id]
        if doc_ids is None:
            doc_ids = repository.query_doc_ids(s, collection_id, query_id)
    try:
        return index.order(text, doc_ids)
    except ConfigError as err:
        raise Invalid(f"query {query_id}: {err}") from None
