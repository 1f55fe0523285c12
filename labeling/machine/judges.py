"""Machine judges: for a query and pairs of documents, P(first better) per pair, batched.

One interface (:class:`PairJudge`): ``prefer(query, pairs)`` returns a float array, entry i the
judge's raw (uncalibrated; :mod:`labeling.machine.calibration` calibrates it) probability that
``pairs[i][0]`` is better than ``pairs[i][1]`` for the query; the same judge version gives the
same numbers for the same inputs, whatever the batch. ``version`` names the judge and every
parameter that changes its answers; ``describe()`` says the same as JSON-safe data. Judges
that grade (five grades 0..4) also offer ``grades(query, doc_ids)``, one distribution per
document (:class:`GradeJudge`).

* :class:`Bm25Judge`: ``P = σ((s_A − s_B) / scale)`` with s the service's BM25 score
  (:mod:`labeling.retrieval.bm25`) and ``σ(z) = 1 / (1 + e^{−z})``; default scale 1 BM25 point (a
  difference of one point gives 0.73, of three 0.95).
* :class:`FeatureModelJudge`: the same logistic on the difference of a fitted ranking model's
  scores over the query's text features (:mod:`labeling.machine.features`), normalised per
  query over the whole collection (LETOR's QueryLevelNorm; the model must be trained on
  features normalised the same way).
* :class:`ThurstoneJudge`: a simulated judge (L. L. Thurstone, "A law of comparative judgment",
  1927; case V). Every document has a latent utility ``u ~ N(0, 1)`` (the truth) and the judge
  perceives ``v = u + σ·ε``, ``ε ~ N(0, 1)``, fixed per (query, document): it is a consistent
  judge. On a random pair, ``u_A − u_B ~ N(0, 2)`` and the noise difference ``~ N(0, 2σ²)``,
  so its pairwise accuracy (the sign of ``v_A − v_B`` agreeing with ``u_A − u_B``) is
  ``A = 1/2 + arcsin(1/√(1 + σ²))/π`` (the orthant probability of two normals with
  correlation ``ρ = 1/√(1 + σ²)``), hence ``σ = tan(π·(1 − A))``: 0.7265 for A = 0.80. Its
  probability is the exact posterior ``P(u_A > u_B | v) = Φ((v_A − v_B) / (σ·√(2·(1 + σ²))))``
  (since ``u | v ~ N(v/(1 + σ²), σ²/(1 + σ²))``), so it is calibrated; ``overconfidence``
  multiplies the argument of Φ to simulate an over- (> 1) or under-confident (< 1) judge. Its
  five grades cut u at the standard normal's quintiles (each grade a fifth of the documents);
  its grade distribution is the posterior mass of u in each grade's interval.
* :class:`CalibratedJudge`: any of them through a calibrator learned from people
  (:mod:`labeling.machine.calibration`).
* :class:`LlmJudge`: a prompt template (:mod:`labeling.machine.llm_prompts`) asked both orders
  through an injected ``ask`` function (the HTTP client lives in the service), combined so
  position bias cancels.
* :class:`LlmGrader`: the graded template (one digit 0..4 per document, UMBRELA's shape)
  through the same ``ask``: a :class:`GradeJudge` whose distribution is one-hot at the
  model's grade (a model at temperature 0 names one grade), a row of NaN for no opinion.
Pure: no FastAPI, no SQLAlchemy, no network.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from labeling.machine.calibration import Calibrator
from labeling.machine.features import FeatureExtractor
from labeling.machine.llm_prompts import (
    GRADED_V2,
    PAIRWISE_V2,
    PromptTemplate,
    combine_orders,
    parse_graded,
    parse_pairwise,
)
from labeling.retrieval.bm25 import Bm25Index
from ranking.data.dataset import normalize_per_query

__all__ = [
    "GRADE_CUTS",
    "N_GRADES",
    "Bm25Judge",
    "CalibratedJudge",
    "FeatureModelJudge",
    "GradeJudge",
    "JudgeQuery",
    "LlmAsker",
    "LlmGrader",
    "LlmJudge",
    "PairJudge",
    "Scorer",
    "ThurstoneJudge",
    "grade_distributions",
    "logistic_preference",
    "thurstone_sigma",
]

F64 = NDArray[np.float64]
#: Grades of a five-grade task, 0..4.
N_GRADES = 5
Pair = tuple[str, str]


@dataclass(frozen=True, slots=True)
class JudgeQuery:
    """The query a judge is asked about: its id (simulated judges key on it) and text."""

    query_id: str
    text: str


@runtime_checkable
class PairJudge(Protocol):
    """A machine judge of pairs (module docstring)."""

    @property
    def version(self) -> str:
        """Names the judge and every parameter that changes its answers."""
        ...

    def describe(self) -> dict[str, Any]:
        """The judge's kind, version and parameters (JSON-safe)."""
        ...

    def prefer(self, query: JudgeQuery, pairs: Sequence[Pair]) -> F64:
        """P(first better) per pair (NaN: no opinion)."""
        ...


@runtime_checkable
class GradeJudge(Protocol):
    """A machine judge of single documents on five grades."""

    @property
    def version(self) -> str:
        """Names the judge and every parameter that changes its answers."""
        ...

    def grades(self, query: JudgeQuery, doc_ids: Sequence[str]) -> F64:
        """``(len(doc_ids), 5)``: row i is the distribution of document i's grade 0..4."""
        ...


class Scorer(Protocol):
    """A fitted ranking model: one score per feature row (:class:`ranking.estimators.Ranker`
    is one)."""

    def predict(self, X: F64) -> NDArray[Any]:
        """Scores of the rows of ``X``."""
        ...


def logistic_preference(first: F64, second: F64, scale: float) -> F64:
    """``σ((first − second) / scale)``, ``σ(z) = 1/(1 + e^{−z})``, elementwise."""
    z = (np.asarray(first, dtype=np.float64) - np.asarray(second, dtype=np.float64)) / scale
    out: F64 = 0.5 * (1.0 + np.tanh(0.5 * z))
    return out


def _positions(index: Mapping[str, int], pairs: Sequence[Pair]) -> tuple[NDArray[Any], ...]:
    try:
        first = np.fromiter((index[a] for a, _ in pairs), dtype=np.int64, count=len(pairs))
        second = np.fromiter((index[b] for _, b in pairs), dtype=np.int64, count=len(pairs))
    except KeyError as exc:
        raise ValueError(f"document {exc.args[0]!r} is not in the judge's collection") from None
    return first, second


class _ScoreCache:
    """The last ``size`` queries' score vectors, by query text."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._scores: OrderedDict[str, F64] = OrderedDict()

    def get(self, text: str, compute: Callable[[str], F64]) -> F64:
        if text in self._scores:
            self._scores.move_to_end(text)
            return self._scores[text]
        scores = self._scores[text] = compute(text)
        if len(self._scores) > self.size:
            self._scores.popitem(last=False)
        return scores


class Bm25Judge:
    """``P(first better) = σ((BM25_A − BM25_B) / scale)`` over an index of the collection."""

    def __init__(self, index: Bm25Index, *, scale: float = 1.0) -> None:
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError("scale must be a positive number")
        self.index = index
        self.scale = scale
        self._position = {d: i for i, d in enumerate(index.doc_ids)}
        self._cache = _ScoreCache()

    @property
    def version(self) -> str:
        p = self.index.params
        return f"bm25/k1={p.k1:g}/b={p.b:g}/scale={self.scale:g}"

    def describe(self) -> dict[str, Any]:
        p = self.index.params
        return {
            "kind": "bm25",
            "version": self.version,
            "k1": p.k1,
            "b": p.b,
            "scale": self.scale,
            "documents": len(self.index),
        }

    def prefer(self, query: JudgeQuery, pairs: Sequence[Pair]) -> F64:
        scores = self._cache.get(query.text, self.index.scores)
        first, second = _positions(self._position, pairs)
        return logistic_preference(scores[first], scores[second], self.scale)


class FeatureModelJudge:
    """``P(first better) = σ((f(x_A) − f(x_B)) / scale)`` with f a fitted ranking model over
    the query's text features, normalised per query over the whole collection (module
    docstring). ``name`` identifies the model (e.g. ``model:<training run id>``)."""

    def __init__(
        self,
        extractor: FeatureExtractor,
        model: Scorer,
        *,
        name: str,
        scale: float = 1.0,
        normalize: bool = True,
    ) -> None:
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError("scale must be a positive number")
        self.extractor = extractor
        self.model = model
        self.name = name
        self.scale = scale
        self.normalize = normalize
        self._position = {d: i for i, d in enumerate(extractor.doc_ids)}
        self._cache = _ScoreCache()

    @property
    def version(self) -> str:
        norm = "query" if self.normalize else "none"
        return f"{self.name}/features={len(self.extractor.names)}/norm={norm}/scale={self.scale:g}"

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "model",
            "version": self.version,
            "model": self.name,
            "features": list(self.extractor.names),
            "normalize": "query" if self.normalize else None,
            "scale": self.scale,
        }

    def scores(self, text: str) -> F64:
        """The model's score of every document of the collection for the query text."""
        x = self.extractor.matrix(text)
        if self.normalize:
            x = normalize_per_query(x, np.array([0, x.shape[0]]))
        return np.asarray(self.model.predict(x), dtype=np.float64).reshape(-1)

    def prefer(self, query: JudgeQuery, pairs: Sequence[Pair]) -> F64:
        scores = self._cache.get(query.text, self.scores)
        first, second = _positions(self._position, pairs)
        return logistic_preference(scores[first], scores[second], self.scale)


def thurstone_sigma(accuracy: float) -> float:
    """The noise σ of a Thurstone judge with pairwise accuracy ``A`` on random pairs:
    ``σ = tan(π·(1 − A))`` for ``1/2 < A ≤ 1`` (module docstring)."""
    if not 0.5 < accuracy <= 1.0:
        raise ValueError(f"accuracy must be in (0.5, 1], got {accuracy}")
    return 0.0 if accuracy == 1.0 else math.tan(math.pi * (1.0 - accuracy))


_NORMAL = NormalDist()
#: Grade cut points on the utility scale: the standard normal's quintiles.
GRADE_CUTS: tuple[float, ...] = tuple(_NORMAL.inv_cdf(q / N_GRADES) for q in range(1, N_GRADES))
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _phi(x: F64) -> F64:
    out: F64 = 0.5 * (1.0 + _erf(np.asarray(x, dtype=np.float64) / math.sqrt(2.0)))
    return out


class ThurstoneJudge:
    """A simulated consistent judge with pairwise accuracy ``accuracy`` on random pairs (module
    docstring). Utilities and noise are standard normals drawn from a hash of (seed, query id,
    document id), so they do not depend on which pairs are asked or in what order; ``truth``
    replaces the drawn utilities (then the stated accuracy holds only for N(0, 1) utilities)."""

    def __init__(
        self,
        accuracy: float = 0.8,
        *,
        seed: int = 0,
        overconfidence: float = 1.0,
        truth: Callable[[str, str], float] | None = None,
    ) -> None:
        if not (math.isfinite(overconfidence) and overconfidence > 0):
            raise ValueError("overconfidence must be a positive number")
        self.accuracy = accuracy
        self.sigma = thurstone_sigma(accuracy)
        self.seed = seed
        self.overconfidence = overconfidence
        self.truth = truth

    @property
    def version(self) -> str:
        source = "drawn" if self.truth is None else "given"
        return (
            f"thurstone/A={self.accuracy:g}/seed={self.seed}"
            f"/overconfidence={self.overconfidence:g}/truth={source}"
        )

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "thurstone",
            "version": self.version,
            "accuracy": self.accuracy,
            "sigma": self.sigma,
            "seed": self.seed,
            "overconfidence": self.overconfidence,
        }

    def _normal(self, kind: str, query_id: str, doc_id: str) -> float:
        key = f"{self.seed}\x1f{kind}\x1f{query_id}\x1f{doc_id}".encode()
        bits = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")
        return _NORMAL.inv_cdf((bits + 0.5) / 2.0**64)

    def utility(self, query_id: str, doc_id: str) -> float:
        """The latent (true) utility u of the document for the query."""
        if self.truth is not None:
            return float(self.truth(query_id, doc_id))
        return self._normal("u", query_id, doc_id)

    def perceived(self, query_id: str, doc_id: str) -> float:
        """The judge's utility ``v = u + σ·ε``."""
        return self.utility(query_id, doc_id) + self.sigma * self._normal("e", query_id, doc_id)

    def true_grade(self, query_id: str, doc_id: str) -> int:
        """The grade 0..4 of the latent utility (cut at :data:`GRADE_CUTS`)."""
        return int(np.searchsorted(GRADE_CUTS, self.utility(query_id, doc_id)))

    def prefer(self, query: JudgeQuery, pairs: Sequence[Pair]) -> F64:
        # Each document's perceived utility once (a query's all pairs name each n - 1 times).
        docs = dict.fromkeys(d for pair in pairs for d in pair)
        v = {d: self.perceived(query.query_id, d) for d in docs}
        diff = np.array([v[a] - v[b] for a, b in pairs], dtype=np.float64)
        if self.sigma == 0.0:
            return np.where(diff > 0, 1.0, np.where(diff < 0, 0.0, 0.5))
        z = diff / (self.sigma * math.sqrt(2.0 * (1.0 + self.sigma**2)))
        return _phi(self.overconfidence * z)

    def grades(self, query: JudgeQuery, doc_ids: Sequence[str]) -> F64:
        v = np.array([self.perceived(query.query_id, d) for d in doc_ids], dtype=np.float64)
        s2 = self.sigma**2
        mean = v / (1.0 + s2)
        sd = math.sqrt(s2 / (1.0 + s2)) / self.overconfidence
        cuts = np.array([-np.inf, *GRADE_CUTS, np.inf])
        if sd == 0.0:
            grade = np.searchsorted(GRADE_CUTS, mean)
            return np.eye(N_GRADES)[grade]
        cdf = _phi((cuts[None, :] - mean[:, None]) / sd)
        return np.diff(cdf, axis=1)


class CalibratedJudge:
    """A judge's raw P(first better) through a :class:`Calibrator` learned from people. Its
    version adds the calibration method and answer count to the judge's, so a version still
    names fixed answers (NaN, no opinion, stays NaN)."""

    def __init__(self, judge: PairJudge, calibrator: Calibrator) -> None:
        self.judge = judge
        self.calibrator = calibrator

    @property
    def version(self) -> str:
        c = self.calibrator
        return (
            f"{self.judge.version}+calibrated/{c.kind}/prior={c.prior_weight:g}"
            f",{c.prior_trust:g}/answers={c.n_answers}"
        )

    def describe(self) -> dict[str, Any]:
        return {
            **self.judge.describe(),
            "version": self.version,
            "calibration": self.calibrator.describe(),
        }

    def prefer(self, query: JudgeQuery, pairs: Sequence[Pair]) -> F64:
        raw = self.judge.prefer(query, pairs)
        known = ~np.isnan(raw)
        out = np.full(raw.shape, np.nan)
        out[known] = self.calibrator.probability(raw[known])
        return out


#: ``ask(messages_batch)``: the model's reply text per prompt, ``None`` for a failed call.
Ask = Callable[[Sequence[list[dict[str, str]]]], Sequence[str | None]]


class LlmAsker:
    """What an LLM judge and grader share: the ``ask`` function, the documents' ``texts``, the
    model's name and a prompt template of the subclass's :attr:`KIND`; the version
    ``llm/<model>/<template key>/<template hash>``; :attr:`malformed` counts the replies that
    parsed to no opinion over the object's life."""

    #: The template kind the subclass asks (``pairwise`` or ``graded``).
    KIND = "pairwise"
    #: ``describe()["kind"]``.
    LABEL = "llm"
    #: The template used when none is given.
    DEFAULT_TEMPLATE: PromptTemplate = PAIRWISE_V2

    def __init__(
        self,
        ask: Ask,
        texts: Mapping[str, str],
        *,
        model: str,
        template: PromptTemplate | None = None,
    ) -> None:
        template = self.DEFAULT_TEMPLATE if template is None else template
        if template.kind != self.KIND:
            raise ValueError(f"{type(self).__name__} needs a {self.KIND} template")
        self.ask = ask
        self.texts = texts
        self.model = model
        self.template = template
        self.malformed = 0

    @property
    def version(self) -> str:
        return f"llm/{self.model}/{self.template.key}/{self.template.hash}"

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.LABEL,
            "version": self.version,
            "model": self.model,
            "template": self.template.key,
            "prompt_hash": self.template.hash,
        }

    def _replies(self, prompts: list[list[dict[str, str]]]) -> list[str | None]:
        replies = list(self.ask(prompts))
        if len(replies) != len(prompts):
            raise ValueError(f"ask returned {len(replies)} replies for {len(prompts)} prompts")
        return replies


class LlmJudge(LlmAsker):
    """A pairwise prompt asked in both orders through ``ask``; a parsed "A"/"B" reads as
    P(first shown better) 1/0 and the two orders combine by
    :func:`labeling.machine.llm_prompts.combine_orders` (NaN when neither order gave an
    opinion). ``texts`` gives each document's text. Deterministic for a given model at
    temperature 0 and a response cache; ``model`` names it in the version."""

    def _reading(self, reply: str | None) -> float | None:
        answer = parse_pairwise(reply)
        if answer is None:
            self.malformed += 1
            return None
        return 1.0 if answer == "A" else 0.0

    def prefer(self, query: JudgeQuery, pairs: Sequence[Pair]) -> F64:
        try:
            prompts = [
                self.template.render(query.text, self.texts[x], self.texts[y])
                for a, b in pairs
                for x, y in ((a, b), (b, a))
            ]
        except KeyError as exc:
            raise ValueError(f"no text for document {exc.args[0]!r}") from None
        replies = self._replies(prompts)
        out = np.empty(len(pairs))
        for i in range(len(pairs)):
            p = combine_orders(self._reading(replies[2 * i]), self._reading(replies[2 * i + 1]))
            out[i] = math.nan if p is None else p
        return out


class LlmGrader(LlmAsker):
    """The graded prompt template asked once per document through ``ask`` (the ``ask`` of
    :class:`LlmJudge`): a reply :func:`labeling.machine.llm_prompts.parse_graded` reads as
    grade g gives the distribution one-hot at g; anything else (malformed, a failed call) a
    row of NaN (no opinion), counted in :attr:`malformed` when a reply came. Deterministic for
    a given model at temperature 0 and a response cache; ``model`` names it in the version."""

    KIND = "graded"
    LABEL = "llm-grader"
    DEFAULT_TEMPLATE = GRADED_V2

    def grades(self, query: JudgeQuery, doc_ids: Sequence[str]) -> F64:
        try:
            prompts = [self.template.render(query.text, self.texts[d]) for d in doc_ids]
        except KeyError as exc:
            raise ValueError(f"no text for document {exc.args[0]!r}") from None
        replies = self._replies(prompts)
        self.malformed += sum(r is not None and parse_graded(r) is None for r in replies)
        return grade_distributions(replies)


def grade_distributions(replies: Sequence[str | None]) -> F64:
    """``(len(replies), 5)``: the distribution one-hot at the grade
    :func:`labeling.machine.llm_prompts.parse_graded` reads in each reply, a row of NaN where it
    reads none (a malformed reply, or ``None`` for no reply): how :class:`LlmGrader` reads the
    graded template's replies, also for replies taken from a cache."""
    out = np.full((len(replies), N_GRADES), math.nan)
    for i, reply in enumerate(replies):
        grade = parse_graded(reply)
        if grade is not None:
            out[i] = 0.0
            out[i, grade] = 1.0
    return out
