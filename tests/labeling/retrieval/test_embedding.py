"""labeling.retrieval.embedding and labeling.machine.embedding_judge: the packaged WordLlama
model loads offline, its cosines match a brute-force mean of token vectors, and the
``embedding`` judge is the logistic of the standardised BM25 + cosine difference."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from labeling.errors import ConfigError
from labeling.machine.embedding_judge import EmbeddingJudge
from labeling.machine.judges import JudgeQuery
from labeling.retrieval.bm25 import Bm25Index
from labeling.retrieval.embedding import (
    EmbeddingIndex,
    WordLlamaEmbedder,
    hybrid_scores,
    load_embedder,
    standardize,
)
from labeling.retrieval.text import document_text
from labeling.sources.smart import load_cranfield
from tests.conftest import oracle

DOCS = {
    "d1": "Flutter of a wing at supersonic speeds",
    "d2": "The wings and the wing flutter problem, flutter again",
    "d3": "Heat transfer in a boundary layer",
    "d4": "",
    "d5": "aeroelastic vibration of lifting surfaces in fast flow",
}


@pytest.fixture(scope="module")
def embedder() -> WordLlamaEmbedder:
    oracle("wordllama", "the embedding judge's model ships in the wordllama wheel")
    return load_embedder()


def brute_embedding(embedder: WordLlamaEmbedder, text: str) -> np.ndarray:
    """The mean of the text's token vectors (the packaged matrix, the packaged tokenizer),
    normalised: written out here, independent of the package's batching and padding."""
    inference = embedder._inference
    ids = inference.tokenizer.encode(text, add_special_tokens=False).ids
    if not ids:
        return np.zeros(inference.embedding.shape[1])
    v = inference.embedding[ids].astype(np.float64).mean(axis=0)
    return v / np.linalg.norm(v)


def test_cosines_are_the_brute_force_mean_of_token_vectors(embedder: WordLlamaEmbedder) -> None:
    index = EmbeddingIndex(DOCS.items(), embedder)
    query = "wing flutter at high speed"
    q = brute_embedding(embedder, query)
    want = [float(brute_embedding(embedder, t) @ q) for t in DOCS.values()]
    assert index.scores(query) == pytest.approx(want, abs=1e-4)
    # the empty document scores 0, never NaN; an empty query scores 0 everywhere
    assert index.scores(query)[3] == 0.0
    assert np.all(index.scores("") == 0.0)
    # meaning, not words: the paraphrase without a shared word ranks above heat transfer
    s = index.scores("wing flutter")
    assert s[4] > s[2]


def test_hybrid_is_the_sum_of_standardised_scores() -> None:
    bm25 = np.array([3.0, 1.0, 0.0, 0.0])
    cos = np.array([0.2, 0.4, 0.1, 0.1])
    z = lambda x: (x - x.mean()) / x.std()  # noqa: E731
    assert hybrid_scores(bm25, cos) == pytest.approx(z(bm25) + z(cos))
    assert np.all(standardize(np.ones(3)) == 0.0)  # a flat score stays 0
    with pytest.raises(ValueError, match="same documents"):
        hybrid_scores(bm25, cos[:3])


def test_judge_is_the_logistic_of_the_hybrid_difference(embedder: WordLlamaEmbedder) -> None:
    docs = [(d, document_text(t)) for d, t in DOCS.items()]
    bm25 = Bm25Index(docs)
    judge = EmbeddingJudge(bm25, EmbeddingIndex(docs, embedder), scale=2.0)
    query = JudgeQuery("q", "wing flutter")
    h = hybrid_scores(bm25.scores(query.text), judge.embedding.scores(query.text))
    got = judge.prefer(query, [("d1", "d3"), ("d5", "d2")])
    want = [1 / (1 + math.exp(-(h[0] - h[2]) / 2)), 1 / (1 + math.exp(-(h[4] - h[1]) / 2))]
    assert got == pytest.approx(want)
    assert judge.version.startswith("embedding/wordllama/l2_supercat_256/bm25/")
    assert "scale=2" in judge.version
    with pytest.raises(ValueError, match="not in the judge"):
        judge.prefer(query, [("d1", "nope")])


def test_judge_refuses_mismatched_indexes_and_bad_scales(embedder: WordLlamaEmbedder) -> None:
    docs = list(DOCS.items())
    with pytest.raises(ValueError, match="same documents"):
        EmbeddingJudge(Bm25Index(docs), EmbeddingIndex(docs[:3], embedder))
    with pytest.raises(ValueError, match="positive"):
        EmbeddingJudge(Bm25Index(docs), EmbeddingIndex(docs, embedder), scale=0.0)
    with pytest.raises(ConfigError, match="at least one document"):
        EmbeddingIndex([], embedder)


def test_judge_beats_bm25_on_cranfield_pairs(
    embedder: WordLlamaEmbedder, shared_data: Path
) -> None:
    """On the pairs of different grade among each query's BM25 top 30 (the first 60 queries),
    the embedding judge orders more pairs as the qrels do than BM25 alone (measured over all
    225 queries: 0.7675 against 0.7396, benchmarks/embedding_judge.py)."""
    c = load_cranfield(shared_data / "cranfield")
    docs = [(d.doc_id, document_text(d.title, d.text)) for d in c.documents]
    bm25 = Bm25Index(docs)
    judge = EmbeddingJudge(bm25, EmbeddingIndex(docs, embedder))
    qrels: dict[str, dict[str, int]] = {}
    for e in c.qrels:
        qrels.setdefault(e.query_id, {})[e.doc_id] = e.grade
    right = {"bm25": 0, "embedding": 0}
    pairs_seen = 0
    for topic in c.topics[:60]:
        top = [h.doc_id for h in bm25.search(topic.title, 30)]
        g = {d: qrels.get(topic.query_id, {}).get(d, 0) for d in top}
        pairs = [(a, b) for i, a in enumerate(top) for b in top[i + 1 :] if g[a] != g[b]]
        if not pairs:
            continue
        better_first = np.array([g[a] > g[b] for a, b in pairs])
        p = judge.prefer(JudgeQuery(topic.query_id, topic.title), pairs)
        s = bm25.scores(topic.title)
        pos = {d: i for i, d in enumerate(bm25.doc_ids)}
        d_bm = np.array([s[pos[a]] - s[pos[b]] for a, b in pairs])
        right["embedding"] += int(np.sum((p > 0.5) == better_first))
        right["bm25"] += int(np.sum((d_bm > 0) == better_first))
        pairs_seen += len(pairs)
    assert pairs_seen > 3000
    assert right["embedding"] > right["bm25"]
