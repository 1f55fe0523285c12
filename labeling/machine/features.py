"""LETOR-4.0-like text features of (query, document) pairs, computed from the texts.

Every formula, with its parameters and references, is in docs/features.md; this docstring is
the summary. Three fields per document: ``title``, ``body`` and ``whole`` (title then body, the
text :class:`labeling.retrieval.bm25.Bm25Index` indexes). Terms come from the project's analyser
:func:`labeling.retrieval.text.tokenize` (lower case, Lucene's English stop set, Snowball stems),
so the
``whole.bm25`` feature is the service's BM25 score exactly.

A query q is the multiset of its terms; ``c(t)`` is how often t occurs in q and the sums run
over the distinct terms t of q weighted by ``c(t)`` (as BM25 counts a repeated query term once
per occurrence). Per field f, with ``tf`` the count of t in the field of d, ``|d|`` the field's
length in terms, N the number of documents, ``df(t)`` how many documents' field holds t,
``cf(t)`` its count over the collection's field and ``|C|`` the field's total length:

=================  ==========================================================================
``covered``        number of distinct query terms with ``tf > 0``
``covered_ratio``  ``covered`` / number of distinct query terms
``tf_sum``         Σ c(t)·tf(t, d)
``tf_min``         min over distinct query terms of tf(t, d)
``tf_max``         max over distinct query terms of tf(t, d)
``tf_mean``        mean over distinct query terms of tf(t, d)
``ntf_sum``        ``tf_sum`` / |d| (0 for an empty field)
``idf_sum``        Σ c(t)·idf(t), ``idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5))`` (Lucene's)
``tfidf_sum``      Σ c(t)·tf(t, d)·idf(t)
``dl``             |d|
``bm25``           Σ c(t)·idf(t)·tf / (tf + k1·(1 − b + b·|d|/avgdl)), k1 = 1.2, b = 0.75
``lm_dir``         Σ c(t)·ln((tf + μ·p(t|C)) / (|d| + μ)), μ = 2000
``lm_jm``          Σ c(t)·ln((1 − λ)·tf/|d| + λ·p(t|C)), λ = 0.1
``lm_abs``         Σ c(t)·ln(max(tf − δ, 0)/|d| + δ·u(d)/|d|·p(t|C)), δ = 0.7
``min_window``     tokens in the shortest stretch of the field holding every distinct query
                   term the field holds (0 when it holds none)
``window_density`` ``covered`` / ``min_window`` (0 when the field holds no query term)
=================  ==========================================================================

``p(t|C) = cf(t)/|C|``; ``u(d)`` is the number of distinct terms of the field. The language
model sums skip query terms that occur nowhere in the field's collection (``cf = 0``: they
would add ln 0 to every document alike); for an empty field ``tf/|d|`` is read as 0 and the
absolute-discounting estimate as ``p(t|C)``. References: T. Qin and T.-Y. Liu, "Introducing
LETOR 4.0 datasets", 2013 (the feature list); C. Zhai and J. Lafferty, "A study of smoothing
methods for language models applied to information retrieval", TOIS 2004 (the three smoothed
models and their usual parameters); S. Robertson and H. Zaragoza, "The Probabilistic Relevance
Framework: BM25 and Beyond", 2009; T. Tao and C. Zhai, "An exploration of proximity measures
in information retrieval", SIGIR 2007 (the MinCover span behind ``min_window``).

Output: one ``(documents × features)`` float64 matrix per query, columns named
``<field>.<feature>`` in :data:`FEATURE_NAMES` order, rows in the documents' given order.
Deterministic. Vectorised per query: the query's term occurrences are found with one table
look-up in each field's postings, term frequencies with one ``bincount``, the windows with
one running maximum per distinct query term, never a loop over (query, document) pairs.
Pure: no FastAPI, no SQLAlchemy.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from labeling.retrieval.text import tokenize, tokenize_many

__all__ = [
    "FEATURE_NAMES",
    "FIELDS",
    "FIELD_FEATURES",
    "FeatureExtractor",
    "FeatureMatrix",
    "FeatureParams",
    "lucene_idf",
]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
ArrayLikeF = NDArray[np.float64] | NDArray[np.int64] | Sequence[float]

#: The document fields, in column order.
FIELDS: tuple[str, ...] = ("title", "body", "whole")
#: The features computed for every field, in column order (module docstring).
FIELD_FEATURES: tuple[str, ...] = (
    "covered",
    "covered_ratio",
    "tf_sum",
    "tf_min",
    "tf_max",
    "tf_mean",
    "ntf_sum",
    "idf_sum",
    "tfidf_sum",
    "dl",
    "bm25",
    "lm_dir",
    "lm_jm",
    "lm_abs",
    "min_window",
    "window_density",
)
#: Every column name, ``<field>.<feature>``: the fields in :data:`FIELDS` order, each with
#: :data:`FIELD_FEATURES` in order.
FEATURE_NAMES: tuple[str, ...] = tuple(f"{f}.{n}" for f in FIELDS for n in FIELD_FEATURES)


@dataclass(frozen=True, slots=True)
class FeatureParams:
    """Free parameters: BM25's ``k1`` and ``b`` (the service's defaults), Dirichlet ``mu``,
    Jelinek–Mercer ``lam`` and absolute-discounting ``delta`` (Zhai and Lafferty's usual
    values)."""

    k1: float = 1.2
    b: float = 0.75
    mu: float = 2000.0
    lam: float = 0.1
    delta: float = 0.7

    def __post_init__(self) -> None:
        checks = {
            "k1 >= 0": self.k1 >= 0,
            "0 <= b <= 1": 0 <= self.b <= 1,
            "mu > 0": self.mu > 0,
            "0 < lam <= 1": 0 < self.lam <= 1,
            "0 < delta < 1": 0 < self.delta < 1,
        }
        values = (self.k1, self.b, self.mu, self.lam, self.delta)
        bad = [rule for rule, ok in checks.items() if not ok]
        if bad or not all(math.isfinite(v) for v in values):
            raise ValueError(f"feature parameters must satisfy {', '.join(checks)}: {self}")


@dataclass(frozen=True, slots=True)
class FeatureMatrix:
    """The features of every document for one query: ``values[i, j]`` is feature
    ``names[j]`` of document ``doc_ids[i]``."""

    query_id: str
    doc_ids: tuple[str, ...]
    names: tuple[str, ...]
    values: F64


def lucene_idf(df: ArrayLikeF, n_docs: int) -> F64:
    """``ln(1 + (N − df + 0.5) / (df + 0.5))``: BM25's IDF as Lucene and
    :mod:`labeling.retrieval.bm25` compute it (positive for every ``df``, defined for ``df =
    0``)."""
    d = np.asarray(df, dtype=np.float64)
    out: F64 = np.log1p((n_docs - d + 0.5) / (d + 0.5))
    return out


@dataclass(frozen=True, slots=True)
class _Field:
    """One field of every document as flat arrays: ``tokens`` (term ids, documents in order),
    ``doc_of`` (the document of each token), per-document length ``dl`` and distinct-term count
    ``uniq``, per-term ``df`` and ``cf``; ``postings[starts[t]:starts[t + 1]]`` are the token
    positions of term t, ascending (an inverted index)."""

    tokens: I64
    doc_of: I64
    dl: F64
    uniq: F64
    df: I64
    cf: I64
    postings: I64
    starts: I64

    @classmethod
    def build(cls, ids: Sequence[I64], vocabulary_size: int) -> _Field:
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        tokens = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
        doc_of = np.repeat(np.arange(len(ids), dtype=np.int64), lengths)
        pairs = np.unique(doc_of * vocabulary_size + tokens)  # distinct (document, term)
        df = np.bincount(pairs % vocabulary_size, minlength=vocabulary_size)
        uniq = np.bincount(pairs // vocabulary_size, minlength=len(ids)).astype(np.float64)
        cf = np.bincount(tokens, minlength=vocabulary_size)
        postings = np.argsort(tokens, kind="stable").astype(np.int64)
        starts = np.concatenate(([0], np.cumsum(cf))).astype(np.int64)
        return cls(tokens, doc_of, lengths.astype(np.float64), uniq, df, cf, postings, starts)


class FeatureExtractor:
    """Text features (module docstring) over a fixed collection of ``(doc_id, title, body)``
    documents (plain text: reduce HTML with :func:`labeling.retrieval.text.strip_html` first;
    ``None``
    for a missing field; ids unique)."""

    def __init__(
        self,
        documents: Iterable[tuple[str, str | None, str | None]],
        params: FeatureParams | None = None,
    ) -> None:
        docs = list(documents)
        ids = [d[0] for d in docs]
        if len(set(ids)) != len(ids):
            raise ValueError("document ids must be unique")
        if not docs:
            raise ValueError("no documents to extract features from")
        self.params = params or FeatureParams()
        self.doc_ids: tuple[str, ...] = tuple(ids)
        terms = tokenize_many([d[1] or "" for d in docs] + [d[2] or "" for d in docs])
        flat = [t for ts in terms for t in ts]
        vocabulary, inverse = np.unique(np.array(flat, dtype=object), return_inverse=True)
        self._vocabulary: dict[str, int] = {str(t): i for i, t in enumerate(vocabulary)}
        cuts = np.cumsum([len(ts) for ts in terms])[:-1]
        per_doc = [np.asarray(x, dtype=np.int64) for x in np.split(inverse.ravel(), cuts)]
        n, v = len(docs), max(len(vocabulary), 1)  # 1: a collection without any term
        title, body = per_doc[:n], per_doc[n:]
        whole = [np.concatenate((a, b)) for a, b in zip(title, body, strict=True)]
        self._fields = {
            "title": _Field.build(title, v),
            "body": _Field.build(body, v),
            "whole": _Field.build(whole, v),
        }

    @property
    def names(self) -> tuple[str, ...]:
        """The column names (:data:`FEATURE_NAMES`)."""
        return FEATURE_NAMES

    def __len__(self) -> int:
        return len(self.doc_ids)

    def matrix(self, query: str) -> F64:
        """The ``(documents × features)`` matrix of the query text (rows in document order)."""
        counts = Counter(tokenize(query))
        terms = list(counts)  # distinct terms in order of first occurrence
        n = len(self.doc_ids)
        if not terms:
            return np.zeros((n, len(FEATURE_NAMES)))
        ids = np.array([self._vocabulary.get(t, -1) for t in terms], dtype=np.int64)
        weight = np.array([counts[t] for t in terms], dtype=np.float64)
        blocks = [self._field_block(self._fields[f], ids, weight) for f in FIELDS]
        return np.hstack(blocks)

    def extract(self, queries: Mapping[str, str]) -> dict[str, FeatureMatrix]:
        """:meth:`matrix` for every ``{query_id: query text}``, in the mapping's order."""
        return {
            qid: FeatureMatrix(qid, self.doc_ids, FEATURE_NAMES, self.matrix(text))
            for qid, text in queries.items()
        }

    @staticmethod
    def _occurrences(field: _Field, ids: I64) -> tuple[I64, I64, I64]:
        """Global token positions, query-term slots and documents of every occurrence of a
        query term in ``field`` (ascending position, hence grouped by document), read from
        the field's postings."""
        spans = [(j, field.starts[t], field.starts[t + 1]) for j, t in enumerate(ids) if t >= 0]
        if not spans:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty
        pos = np.concatenate([field.postings[a:b] for _, a, b in spans])
        term = np.concatenate([np.full(b - a, j, dtype=np.int64) for j, a, b in spans])
        order = np.argsort(pos, kind="stable")
        pos, term = pos[order], term[order]
        return pos, term, field.doc_of[pos]

    def _field_block(self, field: _Field, ids: I64, weight: F64) -> F64:
        p = self.params
        n, m = len(self.doc_ids), len(ids)
        pos, term, doc = self._occurrences(field, ids)
        tf = np.bincount(doc * m + term, minlength=n * m).reshape(n, m).astype(np.float64)
        df = np.where(ids >= 0, field.df[np.maximum(ids, 0)], 0)
        cf = np.where(ids >= 0, field.cf[np.maximum(ids, 0)], 0).astype(np.float64)
        idf = lucene_idf(df, n)
        dl = field.dl
        has = dl > 0
        safe_dl = np.where(has, dl, 1.0)
        covered = (tf > 0).sum(axis=1).astype(np.float64)
        tf_sum = tf @ weight
        avgdl = float(dl.mean()) or 1.0
        norm = p.k1 * (1.0 - p.b + p.b * dl / avgdl)
        denominator = tf + norm[:, None]
        saturation = np.divide(tf, denominator, out=np.zeros_like(tf), where=denominator > 0)
        min_window = _min_windows(pos, term, doc, covered, n, m)
        columns = {
            "covered": covered,
            "covered_ratio": covered / m,
            "tf_sum": tf_sum,
            "tf_min": tf.min(axis=1),
            "tf_max": tf.max(axis=1),
            "tf_mean": tf.mean(axis=1),
            "ntf_sum": np.where(has, tf_sum / safe_dl, 0.0),
            "idf_sum": np.full(n, float(weight @ idf)),
            "tfidf_sum": tf @ (weight * idf),
            "dl": dl,
            "bm25": saturation @ (weight * idf),
            **self._language_models(field, tf, cf, weight, safe_dl, has),
            "min_window": min_window,
            "window_density": np.divide(covered, min_window, out=np.zeros(n), where=min_window > 0),
        }
        return np.column_stack([columns[name] for name in FIELD_FEATURES])

    def _language_models(
        self, field: _Field, tf: F64, cf: F64, weight: F64, safe_dl: F64, has: NDArray[np.bool_]
    ) -> dict[str, F64]:
        """The three smoothed query log-likelihoods (docs/features.md#language-models)."""
        p = self.params
        total = float(field.tokens.size)
        keep = cf > 0
        w = weight[keep]
        t = tf[:, keep]
        pc = cf[keep] / total if total else np.zeros(int(keep.sum()))
        d = safe_dl[:, None]
        dirichlet = (t + p.mu * pc) / (np.where(has, safe_dl, 0.0)[:, None] + p.mu)
        ml = np.where(has[:, None], t / d, 0.0)
        jelinek = (1.0 - p.lam) * ml + p.lam * pc
        discounted = np.maximum(t - p.delta, 0.0) / d + p.delta * (field.uniq[:, None] / d) * pc
        absolute = np.where(has[:, None], discounted, pc)
        return {
            "lm_dir": np.log(dirichlet) @ w,
            "lm_jm": np.log(jelinek) @ w,
            "lm_abs": np.log(absolute) @ w,
        }


def _min_windows(pos: I64, term: I64, doc: I64, covered: F64, n: int, m: int) -> F64:
    """Per document, the token count of the shortest stretch holding every distinct query term
    the document holds (0 when it holds none).

    For every occurrence k (in position order) and query term j, ``last_j(k)`` is the latest
    occurrence of j at or before k in the same document (a running maximum over occurrence
    indices). A window ends at k when every term the document holds has a ``last_j(k)``; its
    start is the earliest of those. The shortest over k is the MinCover span.
    """
    out = np.zeros(n)
    if pos.size == 0:
        return out
    index = np.arange(pos.size)
    first = np.searchsorted(doc, doc, side="left")  # first occurrence index of k's document
    seen = np.zeros(pos.size, dtype=np.int64)
    start = np.full(pos.size, np.iinfo(np.int64).max)
    for j in range(m):
        last = np.maximum.accumulate(np.where(term == j, index, -1))
        present = last >= first
        seen += present
        start = np.where(present, np.minimum(start, pos[np.maximum(last, 0)]), start)
    width = np.where(seen == covered[doc], pos - start + 1, np.iinfo(np.int64).max)
    groups = np.flatnonzero(np.r_[True, doc[1:] != doc[:-1]])
    out[doc[groups]] = np.minimum.reduceat(width, groups)
    return out
