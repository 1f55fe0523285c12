"""BM25 retrieval over a collection's documents (``docs/retrieval.md``).

The score of document d for query q (Lucene's BM25, the variant bm25s calls ``"lucene"``;
S. Robertson and H. Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009)::

    score(q, d) = sum over terms t of q:
        idf(t) * tf(t, d) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

with ``tf`` the count of t in d, ``|d|`` the length of d in terms, ``avgdl`` the mean length,
``N`` the number of documents and ``df(t)`` how many contain t. The classic ``(k1 + 1)``
factor in the numerator is left out (as Lucene does since version 8): it multiplies every
score by the same constant and changes no ranking. A term repeated in the query counts once
per occurrence. Terms come from :mod:`labeling.retrieval.text` (title + text, HTML stripped,
stopwords dropped, Snowball stems). Defaults ``k1 = 1.2, b = 0.75`` (Robertson and Zaragoza's usual
values).

The sparse scoring itself is `bm25s` (X. H. Lù, "BM25S: Orders of magnitude faster lexical
search via eager sparse scoring", 2024): it precomputes every (term, document) score into a
sparse matrix at indexing time, so a query costs one sparse row sum.

Orders are what trec_eval would rank: score descending, ties by document id descending (string
order), so the written run, a pool cut from it and the evaluation of that run agree.
Pure: no FastAPI, no SQLAlchemy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from labeling.errors import ConfigError
from labeling.retrieval.text import tokenize, tokenize_many

__all__ = ["Bm25Index", "Bm25Params", "Hit", "write_trec_run"]


@dataclass(frozen=True, slots=True)
class Bm25Params:
    """BM25's free parameters: term-frequency saturation ``k1`` and length normalisation
    ``b`` (0 = none, 1 = full)."""

    k1: float = 1.2
    b: float = 0.75

    def __post_init__(self) -> None:
        if not (math.isfinite(self.k1) and self.k1 >= 0):
            raise ConfigError(f"BM25 k1 must be a number >= 0, got {self.k1}")
        if not (math.isfinite(self.b) and 0 <= self.b <= 1):
            raise ConfigError(f"BM25 b must be in [0, 1], got {self.b}")


@dataclass(frozen=True, slots=True)
class Hit:
    doc_id: str
    score: float


class Bm25Index:
    """An in-memory BM25 index over ``(doc_id, text)`` pairs (ids unique)."""

    def __init__(
        self, documents: Iterable[tuple[str, str]], params: Bm25Params | None = None
    ) -> None:
        ids: list[str] = []
        texts: list[str] = []
        seen: set[str] = set()
        for doc_id, text in documents:
            if doc_id in seen:
                raise ConfigError(f"document {doc_id!r} is given twice")
            seen.add(doc_id)
            ids.append(doc_id)
            texts.append(text)
        if not ids:
            raise ConfigError("nothing to index: the collection has no documents")
        self.params = params or Bm25Params()
        self.doc_ids: tuple[str, ...] = tuple(ids)
        self._position = {d: i for i, d in enumerate(ids)}
        # Imported here, not at module level: bm25s loads numba and scipy (about 100 MB), which
        # a web process needs only once someone builds an index.
        import bm25s

        tokens = tokenize_many(texts)
        # A collection whose documents have no indexable term ("the", "!!") has no vocabulary;
        # bm25s cannot index it, and every score is 0: no model, zero scores.
        self._model: bm25s.BM25 | None = None
        if any(tokens):
            self._model = bm25s.BM25(
                k1=self.params.k1, b=self.params.b, method="lucene", dtype="float64"
            )
            self._model.index(tokens, show_progress=False)
        # Tie order of every ranking: document id descending (trec_eval's), as one rank
        # number per document so sorting is one vectorised lexsort.
        by_id = sorted(range(len(ids)), key=lambda i: ids[i], reverse=True)
        self._tie_rank = np.empty(len(ids), dtype=np.int64)
        self._tie_rank[by_id] = np.arange(len(ids))

    def __len__(self) -> int:
        return len(self.doc_ids)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every indexed document (index order) for the query text."""
        terms = tokenize(query)
        if not terms or self._model is None:
            return np.zeros(len(self.doc_ids))
        return np.asarray(self._model.get_scores(terms), dtype=np.float64)

    def _ranked(self, scores: np.ndarray, positions: np.ndarray) -> np.ndarray:
        # lexsort: last key first; score descending, then the tie rank ascending.
        return positions[np.lexsort((self._tie_rank[positions], -scores[positions]))]

    def search(self, query: str, depth: int | None = 100) -> list[Hit]:
        """The best ``depth`` documents (all with ``None``) that share a term with the query
        (score > 0), best first; ties by document id descending."""
        if depth is not None and depth < 1:
            raise ConfigError("depth must be at least 1")
        scores = self.scores(query)
        matched = np.flatnonzero(scores > 0)
        order = self._ranked(scores, matched)[:depth]
        return [Hit(self.doc_ids[i], float(scores[i])) for i in order]

    def order(self, query: str, doc_ids: Sequence[str] | None = None) -> list[str]:
        """``doc_ids`` (default: every indexed document) best first: score descending, ties
        (documents sharing no query term included) by document id descending. An id the
        index does not hold is a :class:`ConfigError`."""
        if doc_ids is None:
            positions = np.arange(len(self.doc_ids))
        else:
            missing = [d for d in doc_ids if d not in self._position]
            if missing:
                raise ConfigError(
                    f"{len(missing)} document(s) are not in the index, e.g. {missing[0]!r}"
                )
            positions = np.fromiter((self._position[d] for d in doc_ids), dtype=np.int64)
        return [self.doc_ids[i] for i in self._ranked(self.scores(query), positions)]

    def run(self, queries: Mapping[str, str], depth: int | None = 100) -> dict[str, list[Hit]]:
        """:meth:`search` for every ``{query_id: query text}``, in the mapping's order."""
        return {qid: self.search(text, depth) for qid, text in queries.items()}


def write_trec_run(run: Mapping[str, Sequence[Hit]], *, tag: str = "heapjudge-bm25") -> str:
    """A TREC run ``qid Q0 docid rank score tag`` (rank from 1 in the given order; scores with
    ``repr``, so they read back exactly and trec_eval sees the same order)."""
    if not tag or any(c.isspace() for c in tag):
        raise ConfigError(f"run tag must be a non-empty word, got {tag!r}")
    return "".join(
        f"{qid} Q0 {h.doc_id} {rank} {h.score!r} {tag}\n"
        for qid, hits in run.items()
        for rank, h in enumerate(hits, start=1)
    )
