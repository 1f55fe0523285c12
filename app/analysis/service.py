"""Study analysis of a collection: Table 1 (time), Tables 2–3 (agreement), χ² tests, and the
preference-specific checks (position bias, self-consistency, transitivity, top-k overlap).

The numbers come from the pure modules :mod:`labeling.analysis.agreement`,
:mod:`labeling.analysis.timing`,
:mod:`labeling.analysis.consistency` and :mod:`labeling.analysis.stats`; this module only loads a
collection's
tasks and judgment log from the database into :mod:`labeling.analysis.records` and assembles one
JSON-ready report (``GET /api/v1/collections/{id}/analysis``, ``heapjudge analyze``, the admin
page). The top-k ground truth of a finished topk task is rebuilt by replaying its live log
(docs/architecture.md: the log is the only state).

Decisions: cancelled tasks are left out entirely; judgments of unfinished tasks count for time
per judgment, direct agreement and the consistency checks, while the per-query figures of
Table 1 and the inferred top-k relations use finished tasks only.

Second looks at a pair are all treated as re-asks, whatever asked for them: the configured
re-asks (option ``reask_fraction``) and the deliberate repeats of a strategy that combines
several answers per pair (``+robust``, :attr:`labeling.protocol.topk.TopKSession.repeats`). Direct
agreement uses an assessor's first answer to a pair, self-consistency counts the repeats as
re-asks, and time per judgment reports them apart (``docs/strategies-in-practice.md#analysis``).
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import aliased

from app.kernel.db import Database
from app.kernel.errors import Invalid, NotFound
from app.kernel.models import Collection, Judgment, Query, Task, User
from labeling.analysis.agreement import (
    MODES,
    SYMBOLS,
    AgreementTable,
    MethodComparison,
    Mode,
    agreement_by_assessor_pair,
    agreement_by_query,
    agreement_table,
    compare_methods,
    study_instances,
    topk_overlap,
)
from labeling.analysis.consistency import position_bias, self_consistency, transitivity
from labeling.analysis.records import JudgmentRecord, TaskRecord, is_reask
from labeling.analysis.stats import ChiSquare
from labeling.analysis.timing import time_histograms, time_table
from labeling.errors import LabelingError
from labeling.protocol.session import open_session
from labeling.protocol.types import BrokenAnswer, GradeAnswer, PairAnswer
from labeling.strategies.registry import check_strategy_name

#: Histogram of time per judgment on the admin page: 1-second bins up to 60 s, then "≥ 60 s".
HISTOGRAM_BIN_SECONDS = 1.0
HISTOGRAM_UPPER_SECONDS = 60.0

#: (task_id, seq) of one re-ask answer: a configured re-ask (task option ``reask_fraction``) or
#: a strategy's deliberate repeat of a pair (``TopKSession.repeats``).
Reask = tuple[Any, int]

METHOD_NAMES = {"topk": "Top-k labeling", "graded": "Five-grade judgment"}


def load_records(
    collection_id: int, *, db: Database
) -> tuple[dict[str, Any], list[JudgmentRecord], list[TaskRecord], list[str], set[Reask]]:
    """A collection's tasks and judgment log as plain records (one read transaction).

    Returns (collection info, judgments, tasks, warnings, re-asks). Raises NotFound for an
    unknown id.
    """
    with db.read() as s:
        collection = s.get(Collection, collection_id)
        if collection is None:
            raise NotFound(f"collection {collection_id} not found")
        info = {"id": collection.id, "name": collection.name}
        task_rows = s.execute(
            select(Task, User.username, Query.external_id)
            .join(User, Task.assessor_id == User.id)
            .join(Query, Task.query_id == Query.id)
            .where(Task.collection_id == collection_id, Task.status != "cancelled")
            .order_by(Task.id)
        ).all()
        # Plain column tuples (no ORM objects): a study log has tens of thousands of rows.
        second = aliased(User)
        log = [
            tuple(row)
            for row in s.execute(
                select(
                    Judgment.task_id,
                    Judgment.seq,
                    Judgment.left_doc,
                    Judgment.right_doc,
                    Judgment.outcome,
                    Judgment.doc_id,
                    Judgment.grade,
                    Judgment.active_ms,
                    Judgment.created_at,
                    Judgment.undone,
                    Judgment.reason,
                    second.username,
                )
                .join(Task, Judgment.task_id == Task.id)
                .outerjoin(second, second.id == Judgment.answered_by)
                .where(Task.collection_id == collection_id, Task.status != "cancelled")
                .order_by(Judgment.task_id, Judgment.seq, Judgment.id)
            )
        ]
        tasks_raw = [
            (
                t.id,
                name,
                qid,
                t.method,
                t.k,
                t.seed,
                dict(t.options or {}),
                list(t.doc_ids or []),
                t.status,
            )
            for t, name, qid in task_rows
        ]
    return (info, *build_records(tasks_raw, log))


def build_records(
    tasks_raw: Sequence[tuple[Any, ...]], log: Sequence[tuple[Any, ...]]
) -> tuple[list[JudgmentRecord], list[TaskRecord], list[str], set[Reask]]:
    """Turn task rows (id, assessor, query, method, k, seed, options, doc_ids, status) and log
    rows (task, seq, left, right, outcome, doc_id, grade, active_ms, created_at, undone,
    reason[, answered_by]) into records, replaying every topk task for the (task_id, seq) of
    its re-asks and deliberate repeats, and each finished one for its top-k ground truth.

    A document its assessor marked broken (docs/protocols.md#broken-documents) takes no part
    in agreement: the broken answer itself and every judgment of that task about the document
    give no record (the replay still sees them, so results stay those of the task).

    A judgment a second assessor gave (``answered_by``: a routed repeat, docs/noise.md) is
    that assessor's record: it counts in their time and self-consistency, never in the task
    assessor's; like every repeat it stays out of direct agreement and Table 1."""
    info = {row[0]: row for row in tasks_raw}
    judgments: list[JudgmentRecord] = []
    live_answers: dict[Any, list[Any]] = defaultdict(list)
    broken: dict[Any, set[str]] = defaultdict(set)
    for task_id, _, _, _, outcome, doc_id, _, _, _, undone, *_ in log:
        if outcome == "broken" and not undone:
            broken[task_id].add(doc_id)
    for row in log:
        task_id, seq, left, right, outcome, doc_id, grade, ms, created, undone, reason = row[:11]
        answered_by = row[11] if len(row) > 11 else None
        if task_id not in info:  # a task created after the task list was read (READ COMMITTED)
            continue
        if not undone:
            live_answers[task_id].append(
                BrokenAnswer(doc_id, reason, left, right)
                if outcome == "broken"
                else PairAnswer(left, right, outcome)
                if left is not None
                else GradeAnswer(doc_id, grade)
            )
        gone = broken.get(task_id)
        if outcome == "broken" or (gone and (left in gone or right in gone or doc_id in gone)):
            continue
        _, assessor, query_id, method, *_ = info[task_id]
        if answered_by:
            assessor = answered_by
        judgments.append(
            JudgmentRecord(
                task_id=task_id,
                assessor=assessor,
                query_id=query_id,
                method=method,
                left=left,
                right=right,
                outcome=outcome,
                doc_id=doc_id,
                grade=grade,
                active_ms=int(ms or 0),
                created_at=created,
                undone=bool(undone),
                seq=seq,
            )
        )
    tasks: list[TaskRecord] = []
    warnings: list[str] = []
    reasks: set[Reask] = set()
    for task_id, assessor, query_id, method, k, seed, options, doc_ids, status in tasks_raw:
        finished = status == "done"
        top = rest = None
        grades: dict[str, int] = {}
        if method == "topk":
            try:
                session = open_session(
                    "topk",
                    doc_ids,
                    k=k,
                    seed=seed,
                    options=options,
                    answers=live_answers.get(task_id, []),
                )
                reasks.update((task_id, seq) for seq in getattr(session, "reasks", {}))
                reasks.update((task_id, seq) for seq in getattr(session, "repeats", ()))
                if finished:
                    result = session.result()
                    top, rest = tuple(result.top), tuple(result.rest)
            except LabelingError as err:  # a log that does not replay is reported, not fatal
                what = "top-k result not rebuilt" if finished else "re-asks not identified"
                warnings.append(f"task {task_id}: {what}: {err}")
        elif method == "graded":
            for answer in live_answers.get(task_id, []):
                if isinstance(answer, GradeAnswer):
                    grades[answer.doc_id] = answer.grade
        tasks.append(
            TaskRecord(
                task_id=task_id,
                assessor=assessor,
                query_id=query_id,
                method=method,
                k=k,
                doc_ids=tuple(doc_ids),
                finished=finished,
                top=top,
                rest=rest,
                grades=grades,
            )
        )
    return judgments, tasks, warnings, reasks


def _chi2_dict(r: ChiSquare | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "statistic": r.statistic,
        "df": r.df,
        "p_value": r.p_value,
        "yates": r.yates,
        "table": [list(row) for row in r.table],
        "expected": [list(row) for row in r.expected],
    }


def _comparison_dict(c: MethodComparison) -> dict[str, Any]:
    return {"overall": _chi2_dict(c.overall), "no_tie": _chi2_dict(c.no_tie)}


def _agreement_block(
    judgments: Sequence[JudgmentRecord],
    tasks: Sequence[TaskRecord],
    method: str,
    mode: Mode,
    reasks: AbstractSet[Reask],
) -> tuple[AgreementTable, dict[str, Any]]:
    instances = study_instances(judgments, tasks, method=method, mode=mode, reasks=reasks)
    pooled = agreement_table(instances)
    return pooled, {
        "method": method,
        "relations_from": (
            "grades"
            if method == "graded"
            else ("direct judgments" if mode == "direct" else "top-k ground truth")
        ),
        "pooled": pooled.to_dict(),
        "per_query": {q: t.to_dict() for q, t in agreement_by_query(instances).items()},
        "per_assessor_pair": [
            {"assessors": [u, v], **t.to_dict()}
            for (u, v), t in agreement_by_assessor_pair(instances).items()
        ],
    }


def analyze_records(
    judgments: Sequence[JudgmentRecord],
    tasks: Sequence[TaskRecord],
    *,
    mode: Mode = "direct",
    reasks: AbstractSet[Reask] = frozenset(),
) -> dict[str, Any]:
    """The full analysis of a study's records as a JSON-ready dict (no database access).

    ``reasks``: (task_id, seq) of the re-ask answers, configured or a strategy's deliberate
    repeats (from :func:`build_records`):
    they are reported apart in the self-consistency rows and in their own Table 1 keys, and
    left out of the direct relations (agreement, transitivity), because the protocol acted on
    the first answer to the pair, not on its re-ask.

    ``mode`` selects the top-k relations (docs/analysis.md#agreement): ``direct`` pairs both
    assessors compared, or ``inferred`` from each assessor's top-k ground truth. Five-grade
    relations always come from the grades. The χ² tests compare top-k (row 1) with five-grade
    (row 2).
    """
    if mode not in MODES:
        raise ValueError(f"unknown agreement mode {mode!r}; expected one of {list(MODES)}")
    topk_table, topk_block = _agreement_block(judgments, tasks, "topk", mode, reasks)
    graded_table, graded_block = _agreement_block(judgments, tasks, "graded", mode, reasks)
    pairs = [r for r in judgments if r.method == "topk"]
    status: dict[str, dict[str, int]] = {}
    for t in tasks:
        row = status.setdefault(t.method, {"tasks": 0, "finished": 0})
        row["tasks"] += 1
        row["finished"] += int(t.finished)
    return {
        "mode": mode,
        "methods": {m: METHOD_NAMES[m] for m in ("topk", "graded")},
        "relations": [">", "<", "~"],
        "relation_symbols": [SYMBOLS[">"], SYMBOLS["<"], SYMBOLS["~"]],
        "tasks": status,
        "judgments": {
            "live": sum(1 for r in judgments if not r.undone),
            "undone": sum(1 for r in judgments if r.undone),
            "reasks": sum(1 for r in judgments if not r.undone and is_reask(r, reasks)),
        },
        "time": {
            m: row.to_dict() for m, row in time_table(judgments, tasks, reasks=reasks).items()
        },
        "agreement": {"topk": topk_block, "graded": graded_block},
        "chi2": {
            "pearson": _comparison_dict(compare_methods(topk_table, graded_table)),
            "yates": _comparison_dict(compare_methods(topk_table, graded_table, yates=True)),
        },
        "position_bias": [b.to_dict() for b in position_bias(pairs).values()],
        "self_consistency": [c.to_dict() for c in self_consistency(pairs, reasks).values()],
        "transitivity": [t.to_dict() for t in transitivity(pairs, reasks).values()],
        "topk_overlap": topk_overlap(tasks),
        "time_histogram": {
            "bin_seconds": HISTOGRAM_BIN_SECONDS,
            "upper_seconds": HISTOGRAM_UPPER_SECONDS,
            "counts": time_histograms(
                judgments,
                bin_seconds=HISTOGRAM_BIN_SECONDS,
                upper_seconds=HISTOGRAM_UPPER_SECONDS,
                reasks=reasks,
            ),
        },
    }


def collection_analysis(
    collection_id: int, *, db: Database, mode: Mode = "direct"
) -> dict[str, Any]:
    """Load a collection and analyse it (see :func:`analyze_records`); NotFound if unknown."""
    info, judgments, tasks, warnings, reasks = load_records(collection_id, db=db)
    report = analyze_records(judgments, tasks, mode=mode, reasks=reasks)
    return {"collection": info, **report, "warnings": warnings}


def find_collection_id(name_or_id: str, *, db: Database) -> int:
    """Resolve a collection given by name or numeric id (for the CLI); NotFound otherwise."""
    with db.read() as s:
        found = s.scalar(select(Collection.id).where(Collection.name == name_or_id))
        if found is None and name_or_id.isdigit():
            found = s.scalar(select(Collection.id).where(Collection.id == int(name_or_id)))
    if found is None:
        raise NotFound(f"collection {name_or_id!r} not found")
    return int(found)


# --- the simulated study --------------------------------------------------------------------------


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
    from labeling.sources.smart import load_cranfield

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
    import secrets

    from app.collections import service as collections
    from app.judging import service as judging
    from app.tasks import service as tasks
    from app.users import service as users
    from labeling.protocol.types import GradeQuestion, PairQuestion
    from labeling.study.assignment import fold_rotation
    from labeling.study.simulation import Assessor

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
    top_grade = len(config.grade_weights) - 1
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
        scores = perceived[(entry.assessor, entry.query_id)]
        if entry.method == "topk":
            sim = Assessor(
                scores, seed=rng.getrandbits(32), noise="thurstone", scale=config.pair_noise
            )
        else:
            grades = {d: min(top_grade, max(0, int(s))) for d, s in scores.items()}
            sim = Assessor.from_grades(grades, seed=rng.getrandbits(32), flip=config.grade_flip)
        user = people[entry.assessor]
        body = judging.next_question(db=db, user=user, task_id=view.id)
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
                judging.submit_judgment(db=db, user=user, task_id=view.id, data=slip)
                judging.undo_judgment(db=db, user=user, task_id=view.id)
                undone += 1
            data_["active_ms"] = round(1000 * sim.seconds(kind))
            body = judging.submit_judgment(db=db, user=user, task_id=view.id, data=data_)
            judgments += 1
        if progress is not None:
            progress(index + 1, len(plan.entries))
    return StudySummary(coll.id, len(plan.entries), judgments, undone)
