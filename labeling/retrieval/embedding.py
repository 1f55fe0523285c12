"""Static word embeddings that ship inside their wheel: semantic scores with no network and
no GPU (docs/machine-judges.md#the-embedding-judge).

The model is WordLlama's ``l2_supercat`` at 256 dimensions (D. Miller, "WordLlama", 2024: the
token embeddings of a large language model's input layer, distilled so that the mean of a
text's token vectors is a sentence embedding). Its weights (16 MB) and tokenizer are files of
the ``wordllama`` wheel; :func:`load_embedder` reads them from the installed package directly,
because the package's own loader looks for the tokenizer in a folder name it does not ship and
then tries the network.

A text's embedding is the package's: the average of its token vectors, L2-normalised, so the
score of a document for a query is the cosine ``cos(q, d) = e_q · e_d``. Documents are embedded
once, when an :class:`EmbeddingIndex` is built (about 3.5 ms a Cranfield abstract on one core);
a query is embedded when it is scored.

:func:`hybrid_scores` is what the ``embedding`` judge ranks by: the sum of the BM25 scores and
the cosines, each standardised over the collection for the query,
``h(d) = (b_d − mean b) / sd b + (c_d − mean c) / sd c`` (a standard deviation of 0 counts as 1).
Alone, the cosine orders Cranfield's pairs no better than BM25; the two disagree where each is
wrong, and their sum orders them better than either (the measurement is in the docs above).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from labeling.errors import ConfigError

F64 = NDArray[np.float64]

#: The packaged model: configuration name and dimension (the files' names in the wheel).
MODEL = "l2_supercat"
DIM = 256
#: Its name in judge versions: changing the model changes every score.
MODEL_VERSION = f"wordllama/{MODEL}_{DIM}"
#: Texts are cut to this many characters before embedding (an abstract is a few hundred; a
#: long web page's first few thousand carry its topic, and the cost stays linear).
MAX_CHARS = 8_000


class Embedder(Protocol):
    """Embeds texts into unit vectors (one row per text)."""

    version: str

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """``(len(texts), dim)``, each row of norm 1 (a text without tokens: zeros)."""
        ...


def embedding_available() -> bool:
    """Whether the ``wordllama`` package is installed (the ``semantic`` extra)."""
    return importlib.util.find_spec("wordllama") is not None


class WordLlamaEmbedder:
    """The packaged WordLlama model (module docstring)."""

    version = MODEL_VERSION

    def __init__(self, inference: Any) -> None:
        self._inference = inference

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        cut = [t[:MAX_CHARS] for t in texts]
        raw = np.asarray(self._inference.embed(cut, norm=False), dtype=np.float32)
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        # A text without tokens has a zero vector: it stays zero (cosine 0) instead of NaN.
        out: NDArray[np.float32] = np.divide(raw, norms, out=np.zeros_like(raw), where=norms > 0)
        return out


@cache
def load_embedder() -> WordLlamaEmbedder:
    """The packaged model, loaded once per process from the installed wheel's files;
    ConfigError when ``wordllama`` is not installed or its files are missing."""
    if not embedding_available():
        raise ConfigError(
            "the embedding judge needs the wordllama package: pip install 'heapjudge[semantic]'"
        )
    import wordllama  # optional: loaded on first use
    from safetensors import safe_open
    from tokenizers import Tokenizer
    from wordllama.inference import WordLlamaInference

    root = Path(wordllama.__file__).parent
    weights = root / "weights" / f"{MODEL}_{DIM}.safetensors"
    tokenizer = root / "tokenizers" / f"{MODEL}_tokenizer_config.json"
    for path in (weights, tokenizer):
        if not path.is_file():
            raise ConfigError(f"the wordllama package has no {path.name} (reinstall it)")
    with safe_open(str(weights), framework="np") as fh:
        matrix = fh.get_tensor("embedding.weight")
    return WordLlamaEmbedder(WordLlamaInference(matrix, Tokenizer.from_file(str(tokenizer))))


class EmbeddingIndex:
    """The embeddings of a collection's documents, for cosine scores of any query."""

    def __init__(self, docs: Iterable[tuple[str, str]], embedder: Embedder) -> None:
        pairs = list(docs)
        if not pairs:
            raise ConfigError("an embedding index needs at least one document")
        self.doc_ids = [d for d, _ in pairs]
        self.embedder = embedder
        self.vectors = embedder.embed([text for _, text in pairs])

    def __len__(self) -> int:
        return len(self.doc_ids)

    def scores(self, query: str) -> F64:
        """``cos(q, d)`` for every document, in index order (zeros for a query without
        tokens)."""
        q = self.embedder.embed([query])[0]
        out: F64 = (self.vectors @ q).astype(np.float64)
        return out


def standardize(x: F64) -> F64:
    """``(x − mean x) / sd x`` (population sd; 1 where it is 0, so a flat score stays 0)."""
    sd = float(x.std())
    out: F64 = (x - x.mean()) / (sd if sd > 0 else 1.0)
    return out


def hybrid_scores(bm25: F64, cosine: F64) -> F64:
    """``standardize(bm25) + standardize(cosine)``: the ``embedding`` judge's score of every
    document of the collection (module docstring)."""
    if bm25.shape != cosine.shape:
        raise ValueError("bm25 and cosine must score the same documents")
    return standardize(np.asarray(bm25, dtype=np.float64)) + standardize(
        np.asarray(cosine, dtype=np.float64)
    )
