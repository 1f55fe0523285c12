"""The ``embedding`` judge: BM25 and a static word embedding together
(docs/machine-judges.md#the-embedding-judge).

``P(first better) = σ((h_A − h_B) / scale)``, ``h`` the hybrid score of
:func:`labeling.retrieval.embedding.hybrid_scores` (BM25 and the cosine of the packaged
WordLlama embedding, each standardised over the collection for the query), ``σ(z) = 1/(1 +
e^{−z})``; default scale 1 standard deviation. Like every raw judge it is calibrated on people's
answers before it is trusted (:mod:`labeling.machine.calibration`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from labeling.machine.judges import JudgeQuery, logistic_preference
from labeling.retrieval.bm25 import Bm25Index
from labeling.retrieval.embedding import EmbeddingIndex, hybrid_scores

F64 = NDArray[np.float64]


class EmbeddingJudge:
    """A :class:`labeling.machine.judges.PairJudge` over a BM25 index and an embedding index of
    the same documents (module docstring)."""

    def __init__(self, bm25: Bm25Index, embedding: EmbeddingIndex, *, scale: float = 1.0) -> None:
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError("scale must be a positive number")
        if list(bm25.doc_ids) != list(embedding.doc_ids):
            raise ValueError("the BM25 and embedding indexes must hold the same documents")
        self.bm25 = bm25
        self.embedding = embedding
        self.scale = scale
        self._position = {d: i for i, d in enumerate(embedding.doc_ids)}
        self._last: tuple[str, F64] | None = None

    @property
    def version(self) -> str:
        p = self.bm25.params
        return (
            f"embedding/{self.embedding.embedder.version}/bm25/k1={p.k1:g}/b={p.b:g}"
            f"/scale={self.scale:g}"
        )

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "embedding",
            "version": self.version,
            "model": self.embedding.embedder.version,
            "scale": self.scale,
            "documents": len(self.embedding),
        }

    def scores(self, text: str) -> F64:
        """The hybrid score of every document for the query ``text`` (index order)."""
        if self._last is not None and self._last[0] == text:
            return self._last[1]
        out = hybrid_scores(self.bm25.scores(text), self.embedding.scores(text))
        self._last = (text, out)
        return out

    def prefer(self, query: JudgeQuery, pairs: Sequence[tuple[str, str]]) -> F64:
        scores = self.scores(query.text)
        try:
            first = np.array([self._position[a] for a, _ in pairs], dtype=np.int64)
            second = np.array([self._position[b] for _, b in pairs], dtype=np.int64)
        except KeyError as exc:
            raise ValueError(f"document {exc.args[0]!r} is not in the judge's collection") from None
        return logistic_preference(scores[first], scores[second], self.scale)
