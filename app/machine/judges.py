"""The service's machine judges by source, in one place (docs/machine-judges.md#the-service).

A task's option ``machine.source`` names its judge:

* ``bm25``: the collection's BM25 (:mod:`app.retrieval.service`), raw score per document;
* ``embedding``: BM25 and the packaged word embedding, standardised and summed per query
  (:class:`labeling.machine.embedding_judge.EmbeddingJudge`), raw score per document;
* ``model:<training run id>``: a finished training run's model over the documents' feature
  vectors (:class:`ranking.estimators.Ranker`), raw score per document (a document without a
  vector of the model's width has no score);
* ``llm``: an OpenAI-compatible endpoint (``HEAPJUDGE_LLM_BASE_URL``, ``HEAPJUDGE_LLM_MODEL``);
  its raw P(first better) per ordered pair is prepared by a job into ``machine_opinion``
  through :func:`llm_client` (:class:`app.machine.llm.LlmClient`: cache, budget, retries)
  and :func:`llm_pair_judge`, with the prompt template :data:`LLM_TEMPLATE`, whose key and
  hash are in the judge's version (:func:`llm_judge_version`).

Scores are computed once, when the task is created (:func:`prepare_scores`: a BM25 index is
cached per collection, a model predicts 50 rows in well under a millisecond, so creation
stays quick), and stored; the judging loop only reads them. A pair's raw P(first better) is
``σ((s_first − s_second) / SCALE)`` (:func:`score_preference`),
the prepared pair opinion where there is one, NaN (no opinion: a person is asked) where
neither exists. :class:`StoredJudge` is that judge as a :class:`labeling.machine.judges.PairJudge`,
so :class:`labeling.machine.opinion.JudgeOpinion` turns it into the task's machine.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from app.kernel.db import Database
from app.kernel.errors import Conflict, DomainError, Invalid, NotFound
from app.kernel.models import Query
from app.kernel.settings import Settings
from app.machine import judge_repository as repository
from app.machine.llm import LlmClient
from app.machine.repository import Study
from app.retrieval import service as retrieval
from labeling.machine.calibration import Calibrator
from labeling.machine.embedding_judge import EmbeddingJudge
from labeling.machine.judges import Bm25Judge, JudgeQuery, LlmJudge
from labeling.machine.llm_prompts import PAIRWISE_V2, PromptTemplate
from labeling.machine.trust import N_STRATA, StratumEvidence
from labeling.protocol.spec import (
    DEFAULT_LLM_ENDPOINT,
    Bm25Source,
    EmbeddingSource,
    LlmSource,
    MachineSource,
    ModelSource,
)
from labeling.retrieval.bm25 import Bm25Params
from labeling.retrieval.embedding import embedding_available

if TYPE_CHECKING:
    from ranking.estimators.base import Ranker

#: The logistic scale of the score-based judges (one score point: P = 0.73).
SCALE = 1.0
#: Field named by the 422s about the machine option.
FIELD = "options.machine.source"
#: Raw probabilities are rounded to this many decimals in the study calibration (keeps the
#: stored calibration at most a few thousand numbers, whatever the study's size).
ROUNDING = 3
#: The prompt template of the ``llm`` source: its key and hash are in the judge's version
#: and every machine answer's ``prompt_hash`` (both orders asked, combined).
LLM_TEMPLATE: PromptTemplate = PAIRWISE_V2
_LLM_TAIL = re.compile(r"/([A-Za-z0-9_.-]+@v[0-9]+)/([0-9a-f]{16,64})$")


@dataclass(frozen=True, slots=True)
class PreparedScores:
    """A task's judge: its source, its version and the raw score of each document it
    scored."""

    source: MachineSource
    judge: str
    scores: dict[str, float]


@dataclass(frozen=True, slots=True)
class TrainedModel:
    """A done training run as a judge's model (:func:`trained_model`)."""

    run_id: int
    collection_id: int
    model: str
    """The estimator's name (``ranknet``, ``listnet``, ...)."""
    ranker: Ranker
    width: int
    """The feature vectors' width the model takes."""
    features: Mapping[str, Any]
    """What it trained on (the run's ``metrics.features``: source, feature set, width)."""


def trained_model(s: Session, run_id: int, collection_id: int | None = None) -> TrainedModel:
    """**The one place a training run becomes a judge's model** (``model:<run id>``): the run
    must exist (404), belong to ``collection_id`` when given (422) and be done with a model
    (409); its fitted model is rebuilt. :func:`check_source` and the task's scores
    (:func:`prepare_scores`) use it, and so does :func:`app.training.judge.model_judge` (the
    same model over features computed from the texts)."""
    # The ranking core is loaded only where a model judges (as the training worker does).
    from ranking.estimators.base import Ranker

    run = repository.training_run(s, run_id)
    if run is None:
        raise NotFound(f"no training run with id {run_id}")
    if collection_id is not None and run.collection_id != collection_id:
        raise Invalid(
            f"training run {run_id} belongs to collection {run.collection_id}, not {collection_id}"
        )
    if run.status != "done" or not run.model_json:
        raise Conflict(f"training run {run_id} is not done (status {run.status}): it has no model")
    ranker = Ranker.from_dict(run.model_json)
    features = (run.metrics or {}).get("features") or {}
    return TrainedModel(
        run_id, run.collection_id, run.model, ranker, int(ranker.n_features_in_), features
    )


def check_source(s: Session, collection_id: int, source: MachineSource, settings: Settings) -> None:
    """422 naming ``options.machine.source`` unless the source can judge the collection: a
    training run that exists, belongs to the collection and is done (:func:`trained_model`);
    ``llm`` only when a model is configured (``HEAPJUDGE_LLM_MODEL``; the base URL has a
    default) and only the configured endpoint (``default``)."""
    if isinstance(source, LlmSource):
        if source.endpoint != DEFAULT_LLM_ENDPOINT:
            raise Invalid(
                f"{FIELD}: no LLM endpoint named {source.endpoint!r} (configured: "
                f"{DEFAULT_LLM_ENDPOINT}, written llm)"
            )
        if not settings.llm_model:
            raise Invalid(
                f"{FIELD}: the llm judge is not configured (set HEAPJUDGE_LLM_MODEL to the "
                "model's name and HEAPJUDGE_LLM_BASE_URL to an OpenAI-compatible endpoint)"
            )
        return
    if isinstance(source, EmbeddingSource):
        if not embedding_available():
            raise Invalid(
                f"{FIELD}: the embedding judge needs the wordllama package "
                "(pip install 'heapjudge[semantic]')"
            )
        return
    if isinstance(source, ModelSource):
        try:
            trained_model(s, source.run_id, collection_id)
        except DomainError as err:
            raise Invalid(f"{FIELD}: {err.detail}") from None


def llm_judge_version(settings: Settings) -> str:
    """The ``llm`` judge's version as recorded with the task at its creation and with every
    machine answer: ``llm/<model>/<template key>/<template hash>``, exactly
    :attr:`labeling.machine.judges.LlmJudge.version` of the judge the opinion job asks
    (:func:`llm_pair_judge`; a job whose judge differs stores nothing)."""
    return f"llm/{settings.llm_model}/{LLM_TEMPLATE.key}/{LLM_TEMPLATE.hash}"


def prompt_hash_of(version: str) -> str | None:
    """The prompt template hash in an LLM judge's version (``llm/<model>/<template>/<hash>``,
    possibly followed by ``+calibration/...``; the model's name may hold slashes), else
    None."""
    if not version.startswith("llm/"):
        return None
    match = _LLM_TAIL.search(version.split("+calibration/", 1)[0])
    return match.group(2) if match else None


def llm_client(db: Database, task_id: int) -> LlmClient:
    """The LLM client of a task's study (its plan, or its collection for a task without one:
    :class:`app.machine.repository.Study`) with the service's settings (``db.settings``:
    base URL, model, budget, retries; the API key read from the environment per request)
    and :data:`LLM_TEMPLATE`. Close it after use (a context manager)."""
    found = repository.task_study(db, task_id)
    if found is None:
        raise NotFound(f"no task {task_id}")
    return LlmClient(db, Study(*found), settings=db.settings, template=LLM_TEMPLATE)


def llm_ask(client: LlmClient) -> Callable[[Sequence[list[dict[str, str]]]], list[str | None]]:
    """The ``ask`` of :class:`labeling.machine.judges.LlmJudge`: the client's (cached,
    budgeted, retried; :meth:`app.machine.llm.LlmClient.ask`)."""
    return client.ask


def llm_pair_judge(texts: Mapping[str, str], client: LlmClient) -> LlmJudge:
    """The ``llm`` source's pair judge over the documents' ``texts`` (both orders of the
    pairwise prompt, combined: :class:`labeling.machine.judges.LlmJudge`), asking through
    ``client`` with its model and template."""
    return LlmJudge(llm_ask(client), texts, model=client.model, template=client.template)


def prepare_scores(
    s: Session,
    collection_id: int,
    query: Query,
    doc_ids: Sequence[str],
    source: MachineSource,
    settings: Settings,
) -> PreparedScores:
    """The judge of a new task and its raw score of each document of the pool (none for
    ``llm``, whose opinions a job prepares)."""
    if isinstance(source, Bm25Source):
        params = Bm25Params()
        index = retrieval.collection_index(s, collection_id, params)
        judge = Bm25Judge(index, scale=SCALE)
        all_scores = index.scores(query.title)
        position = {d: i for i, d in enumerate(index.doc_ids)}
        scores = {d: float(all_scores[position[d]]) for d in doc_ids if d in position}
        return PreparedScores(source, judge.version, scores)
    if isinstance(source, EmbeddingSource):
        return _embedding_scores(s, collection_id, query, doc_ids, source)
    if isinstance(source, ModelSource):
        return _model_scores(s, query, doc_ids, source)
    return PreparedScores(source, llm_judge_version(settings), {})


def _embedding_scores(
    s: Session, collection_id: int, query: Query, doc_ids: Sequence[str], source: EmbeddingSource
) -> PreparedScores:
    """The ``embedding`` judge's raw score of each pool document: BM25 and the cosine, each
    standardised over the collection for the query (:class:`EmbeddingJudge`); its pair
    probability is then ``σ((h_A − h_B) / SCALE)`` like every score-based judge."""
    index = retrieval.collection_index(s, collection_id, Bm25Params())
    judge = EmbeddingJudge(index, retrieval.collection_embeddings(s, collection_id), scale=SCALE)
    all_scores = judge.scores(query.title)
    position = {d: i for i, d in enumerate(index.doc_ids)}
    scores = {d: float(all_scores[position[d]]) for d in doc_ids if d in position}
    return PreparedScores(source, judge.version, scores)


def _model_scores(
    s: Session, query: Query, doc_ids: Sequence[str], source: ModelSource
) -> PreparedScores:
    trained = trained_model(s, source.run_id)  # check_source ran first
    width = trained.width
    features = repository.pool_features(s, query.id)
    docs = [d for d in doc_ids if isinstance(features.get(d), list) and len(features[d]) == width]
    scores: dict[str, float] = {}
    if docs:
        x = np.asarray([features[d] for d in docs], dtype=np.float64)
        predicted = np.asarray(trained.ranker.predict(x), dtype=np.float64).reshape(-1)
        scores = {d: float(v) for d, v in zip(docs, predicted, strict=True) if math.isfinite(v)}
    judge = f"{source.text}/{trained.model}/features={width}/scale={SCALE:g}"
    return PreparedScores(source, judge, scores)


def score_preference(first: float, second: float) -> float:
    """``σ((first − second) / SCALE)`` for one pair, as
    :func:`labeling.machine.judges.logistic_preference` computes it (``(1 + tanh(z/2))/2``), in
    plain floats: the judging loop asks one pair at a time."""
    return 0.5 * (1.0 + math.tanh(0.5 * (first - second) / SCALE))


class StoredJudge:
    """A :class:`labeling.machine.judges.PairJudge` over a task's stored raw scores and
    prepared pair opinions (module docstring): a prepared opinion of the ordered pair first,
    else ``σ((s_a − s_b) / SCALE)``, else NaN."""

    def __init__(
        self,
        version: str,
        scores: Mapping[str, float],
        opinions: Mapping[tuple[str, str], float] | None = None,
    ) -> None:
        self._version = version
        self.scores = dict(scores)
        self.opinions = dict(opinions or {})

    @property
    def version(self) -> str:
        return self._version

    def describe(self) -> dict[str, Any]:
        return {"kind": "stored", "version": self._version, "scale": SCALE}

    def raw(self, a: str, b: str) -> float:
        """Raw P(a better than b); NaN: no opinion."""
        p = self.opinions.get((a, b))
        if p is not None:
            return p
        p = self.opinions.get((b, a))
        if p is not None:
            return 1.0 - p
        sa, sb = self.scores.get(a), self.scores.get(b)
        if sa is None or sb is None:
            return math.nan
        return score_preference(sa, sb)

    def prefer(self, query: JudgeQuery, pairs: Sequence[tuple[str, str]]) -> NDArray[np.float64]:
        return np.array([self.raw(a, b) for a, b in pairs], dtype=np.float64)


# --------------------------------------------------------------------------- calibration


def calibrator_to_json(calibrator: Calibrator) -> dict[str, Any]:
    """A study calibration as stored with a task: the method, the prior and the answers as
    counts per (raw p rounded to :data:`ROUNDING` decimals, first better), sorted. At most
    ``2·(10^ROUNDING + 1)`` entries, whatever the number of answers."""
    data = calibrator.to_dict()
    counts: dict[tuple[float, int], int] = {}
    for p, y in zip(data["raw"], data["first_better"], strict=True):
        key = (round(float(p), ROUNDING), int(y))
        counts[key] = counts.get(key, 0) + 1
    return {
        "method": data["method"],
        "prior_weight": data["prior_weight"],
        "prior_trust": data["prior_trust"],
        "answers": data["answers"],
        "counts": [[p, y, n] for (p, y), n in sorted(counts.items())],
    }


def calibrator_from_json(data: Mapping[str, Any]) -> Calibrator:
    """The calibrator :func:`calibrator_to_json` stored (the same answers, in sorted order:
    every replay of the task rebuilds the same numbers)."""
    out = Calibrator(data["method"], float(data["prior_weight"]), float(data["prior_trust"]))
    counts = data.get("counts") or []
    if counts:
        raw = [float(p) for p, _y, n in counts for _ in range(int(n))]
        first = [int(y) for _p, y, n in counts for _ in range(int(n))]
        out.update(raw, first)
    return out


def gold_evidence(rows: Sequence[Any]) -> list[list[float]]:
    """The gold set as frozen with a task's calibration (docs/machine-judges.md#the-gold-set):
    per gold pair (rows of :data:`app.machine.judge_repository.GOLD_EVIDENCE`, by pair then
    task), the judge's raw P(better first) from the first task with an opinion on it, rounded
    to :data:`ROUNDING` decimals, as ``[p, 1]`` (the better shown first), sorted; pairs the
    judge has no opinion on are left out."""
    found: dict[int, float] = {}
    for gold_id, *numbers in rows:
        if gold_id in found:
            continue
        p = evidence_probability(*numbers)
        if not math.isnan(p):
            found[int(gold_id)] = round(p, ROUNDING)
    return sorted([p, 1] for p in found.values())


def gold_from_json(data: Mapping[str, Any]) -> list[tuple[float, bool]]:
    """The gold set a task's frozen calibration holds (:func:`gold_evidence`), as
    :class:`labeling.machine.opinion.JudgeOpinion` takes it: ``(raw p, first better)``."""
    return [(float(p), bool(y)) for p, y in data.get("gold") or []]


def strata_from_json(calibration: Mapping[str, Any]) -> StratumEvidence:
    """The assist rule's evidence per stratum frozen with a task's calibration (its
    ``strata``: answers and contradictions per stratum, docs/machine-judges.md#the-rule); none
    for a task frozen before strata were stored (its session learns from its own answers)."""
    data = calibration.get("strata")
    if not isinstance(data, Mapping):
        return StratumEvidence()
    answers, wrong = list(data.get("answers") or []), list(data.get("wrong") or [])
    if len(answers) != N_STRATA or len(wrong) != N_STRATA:
        return StratumEvidence()
    return StratumEvidence([int(x) for x in answers], [int(x) for x in wrong])


def evidence_probability(
    left_score: float | None,
    right_score: float | None,
    left_first: float | None,
    right_first: float | None,
) -> float:
    """Raw P(left better) of a pair people answered, from its task's prepared opinion (either
    order) or the two documents' raw scores; NaN: no opinion."""
    if left_first is not None:
        return float(left_first)
    if right_first is not None:
        return 1.0 - float(right_first)
    if left_score is None or right_score is None:
        return math.nan
    return score_preference(left_score, right_score)


def judge_calibration(answers: Sequence[Any]) -> Calibrator:
    """The study calibration (isotonic, the default prior) learned from people's pair answers
    ``(outcome, left score, right score, opinion left-first, opinion right-first)`` on pairs
    the judge had an opinion on (:func:`evidence_probability`), raw probabilities rounded to
    :data:`ROUNDING` decimals (docs/machine-judges.md#the-service)."""
    raw: list[float] = []
    first: list[int] = []
    for outcome, *numbers in answers:
        p = evidence_probability(*numbers)
        if math.isnan(p):
            continue
        raw.append(round(p, ROUNDING))
        first.append(1 if outcome == "left" else 0)
    calibrator = Calibrator("isotonic")
    if raw:
        calibrator.update(raw, first)
    return calibrator
