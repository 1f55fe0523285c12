"""A collection's study as plain records (:mod:`labeling.analysis.records`): its tasks and judgment
log loaded in one read transaction, every topk task replayed for its re-asks and repeats and
each finished one for its top-k ground truth (docs/architecture.md: the log is the only
state)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from app.analysis import repository
from app.kernel.db import Database
from app.kernel.errors import NotFound
from labeling.analysis.records import JudgmentRecord, TaskRecord
from labeling.errors import LabelingError
from labeling.protocol.session import open_session
from labeling.protocol.types import BrokenAnswer, GradeAnswer, MachineAnswer, PairAnswer

#: (task_id, seq) of one re-ask answer: a configured re-ask (task option ``reask_fraction``) or
#: a strategy's deliberate repeat of a pair (``TopKSession.repeats``).
Reask = tuple[Any, int]


def load_records(
    collection_id: int, *, db: Database
) -> tuple[dict[str, Any], list[JudgmentRecord], list[TaskRecord], list[str], set[Reask]]:
    """A collection's tasks and judgment log as plain records (one read transaction).

    Returns (collection info, judgments, tasks, warnings, re-asks). Raises NotFound for an
    unknown id.
    """
    with db.read() as s:
        collection = repository.collection_by_id(s, collection_id)
        if collection is None:
            raise NotFound(f"collection {collection_id} not found")
        info = {"id": collection.id, "name": collection.name}
        task_rows = repository.tasks(s, collection_id)
        log = repository.judgment_log(s, collection_id)
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
    reason[, answered_by, source, probability, machine_version]) into records, replaying
    every topk task for the (task_id, seq) of its re-asks and deliberate repeats, and each
    finished one for its top-k ground truth. A machine's answer is replayed, never a record.

    A document its assessor marked broken (docs/protocols.md#broken-documents) takes no part
    in agreement: the broken answer itself and every judgment of that task about the document
    give no record (the replay still sees them, so results stay those of the task).

    A judgment a second assessor gave (``answered_by``: a routed repeat, docs/noise.md) is
    that assessor's record: it counts in their time and self-consistency, never in the task
    assessor's; like every repeat it stays out of direct agreement and Table 1."""
    info = {row[0]: row for row in tasks_raw}
    live_answers, judgments = _judgment_records(info, log)
    tasks: list[TaskRecord] = []
    warnings: list[str] = []
    reasks: set[Reask] = set()
    for row in tasks_raw:
        record, task_reasks, warning = _task_record(row, live_answers.get(row[0], []))
        tasks.append(record)
        reasks.update(task_reasks)
        if warning is not None:
            warnings.append(warning)
    return judgments, tasks, warnings, reasks


def _answer(left: Any, right: Any, outcome: Any, doc_id: Any, grade: Any, reason: Any) -> Any:
    """A log row's answer as the protocol replays it."""
    if outcome == "broken":
        return BrokenAnswer(doc_id, reason, left, right)
    if left is not None:
        return PairAnswer(left, right, outcome)
    return GradeAnswer(doc_id, grade)


def _judgment_records(
    info: dict[Any, tuple[Any, ...]], log: Sequence[tuple[Any, ...]]
) -> tuple[dict[Any, list[Any]], list[JudgmentRecord]]:
    """Each task's live answers (for the replay), and the log's records without the broken
    documents (see :func:`build_records`)."""
    live_answers: dict[Any, list[Any]] = defaultdict(list)
    broken: dict[Any, set[str]] = defaultdict(set)
    for task_id, _, _, _, outcome, doc_id, _, _, _, undone, *_ in log:
        if outcome == "broken" and not undone:
            broken[task_id].add(doc_id)
    judgments: list[JudgmentRecord] = []
    for row in log:
        task_id, seq, left, right, outcome, doc_id, grade, ms, created, undone, reason = row[:11]
        answered_by = row[11] if len(row) > 11 else None
        if task_id not in info:  # a task created after the task list was read (READ COMMITTED)
            continue
        if len(row) > 14 and row[12] == "machine":
            # A machine's answer (docs/machine-judges.md#the-service): replayed as given, never
            # a person's record (time, agreement, consistency are people's figures).
            if not undone:
                live_answers[task_id].append(
                    MachineAnswer(left, right, outcome, float(row[13]), str(row[14]))
                )
            continue
        if not undone:
            live_answers[task_id].append(_answer(left, right, outcome, doc_id, grade, reason))
        gone = broken.get(task_id)
        if outcome == "broken" or (gone and (left in gone or right in gone or doc_id in gone)):
            continue
        _, assessor, query_id, method, *_ = info[task_id]
        judgments.append(
            JudgmentRecord(
                task_id=task_id,
                assessor=answered_by or assessor,
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
    return live_answers, judgments


def _task_record(
    row: tuple[Any, ...], answers: list[Any]
) -> tuple[TaskRecord, set[Reask], str | None]:
    """A task row as a record (a finished topk task's top-k rebuilt by replaying
    ``answers``), the (task_id, seq) of its re-asks and repeats, and a warning when its log
    does not replay."""
    task_id, assessor, query_id, method, k, seed, options, doc_ids, status = row
    finished = status == "done"
    top = rest = None
    grades: dict[str, int] = {}
    reasks: set[Reask] = set()
    warning = None
    if method == "topk":
        try:
            session = open_session(
                "topk", doc_ids, k=k, seed=seed, options=options, answers=answers
            )
            reasks.update((task_id, seq) for seq in getattr(session, "reasks", {}))
            reasks.update((task_id, seq) for seq in getattr(session, "repeats", ()))
            if finished:
                result = session.result()
                top, rest = tuple(result.top), tuple(result.rest)
        except LabelingError as err:  # a log that does not replay is reported, not fatal
            what = "top-k result not rebuilt" if finished else "re-asks not identified"
            warning = f"task {task_id}: {what}: {err}"
    elif method == "graded":
        for answer in answers:
            if isinstance(answer, GradeAnswer):
                grades[answer.doc_id] = answer.grade
    record = TaskRecord(
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
    return record, reasks, warning
