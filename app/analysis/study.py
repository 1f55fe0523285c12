"""A simulated user study (docs/analysis.md#design): the paper's design (fold rotation, two
assignments) built and judged by simulated assessors through the concepts' use cases, as REST
clients would, on synthetic data or a Cranfield corpus."""

from __future__ import annotations

import json
import random
import secrets
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Literal

from app.collections import service as collections
from app.judging import service as judging
from app.kernel.db import Database
from app.kernel.errors import Invalid
from app.tasks import service as tasks
from app.users import service as users
from labeling.protocol.types import GradeQuestion, PairQuestion
from labeling.sources.smart import load_cranfield
from labeling.strategies.registry import check_strategy_name
from labeling.study.assignment import fold_rotation
from labeling.study.simulation import Assessor


@dataclass(frozen=True)
class StudyConfig:
    """The design of a simulated study (defaults: the paper's, docs/analysis.md#design).

    Latent truth per (query, document): a grade g drawn from ``grade_weights`` (web pools are
    mostly non-relevant) plus a uniform offset in [0, 1), so documents of one grade still have
    an order. Each simulated assessor perceives that score with a personal offset
    N(0, ``assessor_sd``²) per document (people disagree), then

    - pairs (T1): Thurstone judgments on the perceived scores with per-judgment noise
      ``pair_noise`` (``labeling.study.simulation.Assessor(noise="thurstone")``);
    - grades (T2): the grade of the perceived score, moved one step with probability
      ``grade_flip`` (grading is the noisier task, as the paper argues);
    - times: the log-normal time model of :mod:`labeling.study.simulation` (13.87 s per grade, 2.5×
      less per pair); ``undo_rate``: a slip answered the other way, undone, answered again.

    ``corpus``: a Cranfield directory (``cran.all.1400``, ``cran.qry``, ``cranqrel``) to use real
    queries and documents instead of synthetic ones: each query's pool is its judged documents
    plus a seeded sample of the others, and the graded qrels (0 for unjudged) are the truth.

    ``pair_cache`` is off by default, the paper's protocol: a pair the heap meets again is asked
    again (with the side shown decided afresh), which also measures self-consistency.
    ``reask_fraction``: the topk task option of that name (swapped re-asks of a seeded share of
    the pairs, reported apart by the analysis); 0, the default, is the paper's protocol.
    ``strategy``: the topk task option of that name (``heap``, the paper's, by default).
    """

    assessors: int = 5
    queries: int = 50
    docs: int = 50
    k: int = 10
    seed: int = 0
    pair_noise: float = 0.35
    assessor_sd: float = 0.35
    grade_flip: float = 0.35
    undo_rate: float = 0.01
    pair_cache: bool = False
    reask_fraction: float = 0.0
    strategy: str = "heap"
    grade_weights: tuple[float, ...] = (0.45, 0.25, 0.15, 0.10, 0.05)
    collection: str = "simulated-study"
    corpus: str | None = None


@dataclass(frozen=True)
class StudySummary:
    """What :func:`run_simulated_study` created."""

    collection_id: int
    tasks: int
    judgments: int
    undone: int


def _study_rows(
    config: StudyConfig, rng: random.Random
) -> tuple[list[dict[str, Any]], dict[str, dict[str, float]]]:
    """NDJSON rows of the collection and the latent truth score of every (query, document)."""
    if config.corpus is not None:
        return _cranfield_rows(config, rng)
    rows: list[dict[str, Any]] = []
    truth: dict[str, dict[str, float]] = {}
    grades = list(range(len(config.grade_weights)))
    for qi in range(config.queries):
        qid = f"Q{qi + 1:03d}"
        truth[qid] = {}
        for di in range(config.docs):
            doc = f"{qid}-D{di + 1:03d}"
            g = rng.choices(grades, weights=config.grade_weights)[0]
            truth[qid][doc] = g + rng.random()
            rows.append(
                {
                    "query_id": qid,
                    "query": f"Simulated query {qi + 1}",
                    "description": "A synthetic information need of the simulated study.",
                    "doc_id": doc,
                    "title": f"Document {di + 1} of query {qi + 1}",
                    "text": f"Synthetic document {doc}. Hidden relevance grade {g}.",
                }
            )
    return rows, truth


def _cranfield_rows(
    config: StudyConfig, rng: random.Random
) -> tuple[list[dict[str, Any]], dict[str, dict[str, float]]]:
    assert config.corpus is not None
    try:
        corpus = load_cranfield(config.corpus)
    except OSError as err:
        raise Invalid(f"cannot read the Cranfield collection in {config.corpus}: {err}") from err
    docs = {d.doc_id: d for d in corpus.documents}
    judged: dict[str, dict[str, int]] = defaultdict(dict)
    for q in corpus.qrels:
        if q.doc_id in docs:
            judged[q.query_id][q.doc_id] = q.grade
    topics = [t for t in corpus.topics if judged.get(t.query_id)][: config.queries]
    if len(topics) < config.queries:
        raise Invalid(f"the corpus has only {len(topics)} queries with relevance judgments")
    all_ids = sorted(docs)
    rows: list[dict[str, Any]] = []
    truth: dict[str, dict[str, float]] = {}
    for topic in topics:
        grades = dict(sorted(judged[topic.query_id].items())[: config.docs])
        others = [d for d in all_ids if d not in grades]
        for d in rng.sample(others, config.docs - len(grades)):
            grades[d] = 0
        truth[topic.query_id] = {d: g + rng.random() for d, g in grades.items()}
        for d in sorted(grades):
            rows.append(
                {
                    "query_id": topic.query_id,
                    "query": topic.title,
                    "doc_id": d,
                    "title": docs[d].title or f"Document {d}",
                    "text": docs[d].text or "",
                }
            )
    return rows, truth


def run_simulated_study(
    *, db: Database, config: StudyConfig = StudyConfig(), progress: Any = None
) -> StudySummary:
    """Build and judge the paper's study design on ``db`` through the service layer.

    Users, the collection and its documents, the fold-rotation plan (two assignments, shifts 0
    and 2: every query gets two assessors per method and no assessor sees a query under both
    tools), the tasks, and every judgment go through the concepts' use cases exactly as REST
    clients would. ``progress(done, total)`` is called after each task if given.
    """
    if config.assessors < 4:
        raise Invalid("the study design needs at least 4 assessors (two disjoint assignments)")
    if config.queries < config.assessors:
        raise Invalid(f"need at least as many queries as assessors ({config.assessors})")
    if config.docs < 2:
        raise Invalid("need at least 2 documents per query")
    check_strategy_name(config.strategy)  # before anything is written
    rng = random.Random(config.seed)
    rows, truth = _study_rows(config, rng)
    names = [f"assessor{i + 1}" for i in range(config.assessors)]
    people = {
        name: users.create_user(db=db, username=name, password=secrets.token_urlsafe(16))
        for name in names
    }
    coll = collections.create_collection(
        db=db, name=config.collection, description="Simulated user study (heapjudge)"
    )
    data = "\n".join(json.dumps(r) for r in rows).encode("utf-8")
    collections.import_ndjson(db=db, collection_id=coll.id, data=data)
    plan = fold_rotation(names, sorted(truth), shifts=(0, 2))
    # Each person perceives the latent scores with a personal offset per document.
    perceived = {
        (name, qid): {d: s + rng.gauss(0.0, config.assessor_sd) for d, s in truth[qid].items()}
        for name in names
        for qid in truth
    }
    judgments = undone = 0
    for index, entry in enumerate(plan.entries):
        view = tasks.create_task(
            db=db,
            collection_id=coll.id,
            query_id=entry.query_id,
            assessor=entry.assessor,
            method=entry.method,
            k=config.k,
            seed=rng.getrandbits(31),
            options=(
                {
                    "pair_cache": config.pair_cache,
                    "reask_fraction": config.reask_fraction,
                    "strategy": config.strategy,
                }
                if entry.method == "topk"
                else None
            ),
            plan=entry.label,
        )
        sim = _assessor(config, entry.method, perceived[(entry.assessor, entry.query_id)], rng)
        done, slips = _judge_task(db, people[entry.assessor], view.id, sim, config, rng)
        judgments += done
        undone += slips
        if progress is not None:
            progress(index + 1, len(plan.entries))
    return StudySummary(coll.id, len(plan.entries), judgments, undone)


def _assessor(
    config: StudyConfig, method: str, scores: dict[str, float], rng: random.Random
) -> Assessor:
    """The simulated assessor of one task: Thurstone pairs, or grades with flips."""
    if method == "topk":
        return Assessor(
            scores, seed=rng.getrandbits(32), noise="thurstone", scale=config.pair_noise
        )
    top_grade = len(config.grade_weights) - 1
    grades = {d: min(top_grade, max(0, int(s))) for d, s in scores.items()}
    return Assessor.from_grades(grades, seed=rng.getrandbits(32), flip=config.grade_flip)


def _judge_task(
    db: Database,
    user: Any,
    task_id: int,
    sim: Assessor,
    config: StudyConfig,
    rng: random.Random,
) -> tuple[int, int]:
    """Answer every question of a task as ``sim`` through the judging use cases, with a slip
    answered the other way and undone at ``config.undo_rate``; (judgments, undone)."""
    top_grade = len(config.grade_weights) - 1
    judgments = undone = 0
    body = judging.next_question(db=db, user=user, task_id=task_id)
    while not body["done"]:
        seq = body["seq"]
        kind: Literal["pair", "grade"]
        if "pair" in body:
            left = body["pair"]["left"]["doc_id"]
            right = body["pair"]["right"]["doc_id"]
            answer = sim.answer_pair(PairQuestion(seq, left, right))
            data_ = {"seq": seq, "left": left, "right": right, "outcome": answer.outcome}
            slip = {**data_, "outcome": "right" if answer.outcome == "left" else "left"}
            kind = "pair"
        else:
            doc = body["document"]["doc_id"]
            grade = sim.answer_grade(GradeQuestion(seq, doc)).grade
            data_ = {"seq": seq, "doc_id": doc, "grade": grade}
            slip = {**data_, "grade": (grade + 1) % (top_grade + 1)}
            kind = "grade"
        if config.undo_rate and rng.random() < config.undo_rate:
            slip["active_ms"] = round(1000 * sim.seconds(kind))
            judging.submit_judgment(db=db, user=user, task_id=task_id, data=slip)
            judging.undo_judgment(db=db, user=user, task_id=task_id)
            undone += 1
        data_["active_ms"] = round(1000 * sim.seconds(kind))
        body = judging.submit_judgment(db=db, user=user, task_id=task_id, data=data_)
        judgments += 1
    return judgments, undone
