"""The machine judges' SQL: a task's judge and frozen calibration (``task_machine``), its
prepared raw scores (``machine_score``) and pair opinions (``machine_opinion``), and the
people's answers a study calibration learns from.

Creation runs in an ORM transaction (``db.write()``); the judging loop reads and freezes on the
raw cursor of its own transaction (:class:`MachineStore`, prepared statements as in
:mod:`app.judging.repository`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Table, and_, bindparam, delete, func, insert, or_, select, update
from sqlalchemy.orm import Session

from app.kernel.caches import Slot
from app.kernel.db import Database
from app.kernel.models import (
    Document,
    Judgment,
    MachineGold,
    MachineScore,
    PairOpinion,
    Task,
    TaskMachine,
    TrainingRun,
)
from app.kernel.prepared import Prepared, native

M = TaskMachine.__table__
S = MachineScore.__table__
O = PairOpinion.__table__  # noqa: E741 - the table's initial, as J and T elsewhere
J = Judgment.__table__
T = Task.__table__
G = MachineGold.__table__
assert isinstance(M, Table) and isinstance(S, Table) and isinstance(O, Table)
assert isinstance(G, Table)


# --------------------------------------------------------------------------- creation


def training_run(tx: Session, run_id: int) -> TrainingRun | None:
    """A training run by id."""
    return tx.get(TrainingRun, run_id)


def task_study(db: Database, task_id: int) -> tuple[int, str | None] | None:
    """A task's collection and plan (None: no such task): whose LLM tokens it spends."""
    with db.read() as tx:
        row = tx.execute(select(Task.collection_id, Task.plan).where(Task.id == task_id)).first()
    return None if row is None else (int(row[0]), row[1] or None)


def pool_features(tx: Session, query_id: int) -> dict[str, Any]:
    """The feature vectors of a query's documents by external id (None where absent)."""
    rows = tx.execute(
        select(Document.external_id, Document.features).where(Document.query_id == query_id)
    )
    return {doc: features for doc, features in rows}


def save_machine(
    tx: Session, task_id: int, source: str, judge: str, scores: Mapping[str, float], now: datetime
) -> None:
    """Record a task's judge and its raw scores (replacing any earlier ones)."""
    tx.execute(delete(MachineScore).where(MachineScore.task_id == task_id))
    tx.execute(delete(TaskMachine).where(TaskMachine.task_id == task_id))
    tx.execute(
        insert(TaskMachine).values(task_id=task_id, source=source, judge=judge, created_at=now)
    )
    if scores:
        tx.execute(
            insert(MachineScore),
            [{"task_id": task_id, "doc_id": d, "score": v} for d, v in scores.items()],
        )


def save_opinions(
    tx: Session,
    task_id: int,
    opinions: Mapping[tuple[str, str], float],
    now: datetime,
    prompt_hash: str | None = None,
) -> int:
    """Store prepared raw P(first better) of ordered pairs of a task (a job's output; pairs
    already stored are left as they are); how many were new."""
    known = {
        (a, b)
        for a, b in tx.execute(select(O.c.first_doc, O.c.second_doc).where(O.c.task_id == task_id))
    }
    rows = [
        {
            "task_id": task_id,
            "first_doc": a,
            "second_doc": b,
            "probability": p,
            "prompt_hash": prompt_hash,
            "created_at": now,
        }
        for (a, b), p in opinions.items()
        if (a, b) not in known
    ]
    if rows:
        tx.execute(insert(PairOpinion), rows)
    return len(rows)


# --------------------------------------------------------------------------- the judging loop

MACHINE_ROW = select(M.c.source, M.c.judge, M.c.calibration).where(
    M.c.task_id == bindparam("task_id")
)
SCORES = select(S.c.doc_id, native(S.c.score)).where(S.c.task_id == bindparam("task_id"))
OPINIONS = select(O.c.first_doc, O.c.second_doc, native(O.c.probability)).where(
    O.c.task_id == bindparam("task_id")
)
FREEZE = (
    update(M)
    .where(M.c.task_id == bindparam("task_id"), M.c.calibration.is_(None))
    .values(calibration=bindparam("calibration", type_=M.c.calibration.type))
    .values(calibrated_at=bindparam("now"))
)
#: The study calibration learns from the most recent people's answers only: its cost at a
#: task's start stays bounded whatever the study's size, and it follows the judge as the
#: study proceeds (docs/machine-judges.md#the-service).
EVIDENCE_WINDOW = 2000
_LEFT, _RIGHT = S.alias("score_left"), S.alias("score_right")
_AB, _BA = O.alias("opinion_ab"), O.alias("opinion_ba")


def _with_pair(query: Any, aliases: tuple[Any, ...], task: Any, first: Any, second: Any) -> Any:
    """``query`` outer-joined to a pair's raw scores (``first``, ``second`` of ``task``) and
    its prepared opinions in both orders (NULL where there is none); ``aliases`` the score
    tables of the two documents and the opinion tables of the two orders."""
    score_1, score_2, one_two, two_one = aliases
    return (
        query.outerjoin(score_1, and_(score_1.c.task_id == task, score_1.c.doc_id == first))
        .outerjoin(score_2, and_(score_2.c.task_id == task, score_2.c.doc_id == second))
        .outerjoin(
            one_two,
            and_(
                one_two.c.task_id == task,
                one_two.c.first_doc == first,
                one_two.c.second_doc == second,
            ),
        )
        .outerjoin(
            two_one,
            and_(
                two_one.c.task_id == task,
                two_one.c.first_doc == second,
                two_one.c.second_doc == first,
            ),
        )
    )


def _evidence(judge: Any) -> Any:
    """:data:`EVIDENCE` with the judge condition ``judge``."""
    return (
        _with_pair(
            select(
                J.c.outcome,
                native(_LEFT.c.score).label("left_score"),
                native(_RIGHT.c.score).label("right_score"),
                native(_AB.c.probability).label("left_first"),
                native(_BA.c.probability).label("right_first"),
            )
            .join(T, T.c.id == J.c.task_id)
            .join(M, M.c.task_id == J.c.task_id),
            (_LEFT, _RIGHT, _AB, _BA),
            J.c.task_id,
            J.c.left_doc,
            J.c.right_doc,
        )
        .where(
            T.c.collection_id == bindparam("collection_id"),
            judge,
            J.c.task_id != bindparam("task_id"),
            J.c.source == "person",
            J.c.undone.is_(False),
            or_(J.c.outcome == "left", J.c.outcome == "right"),
            J.c.left_doc.is_not(None),
        )
        .order_by(J.c.id.desc())
        .limit(bindparam("window"))
    )


#: People's pair answers (left or right) on other live tasks of the collection with the same
#: judge, newest first, each with the raw scores of its two documents and the prepared
#: opinions of both orders (NULL where there is none).
EVIDENCE = _evidence(M.c.judge == bindparam("judge"))
#: :data:`EVIDENCE` for every judge version of one source (``judge LIKE 'bm25/%'``).
SOURCE_EVIDENCE = _evidence(M.c.judge.like(bindparam("prefix")))

_BETTER, _WORSE = S.alias("score_better"), S.alias("score_worse")
_BW, _WB = O.alias("opinion_bw"), O.alias("opinion_wb")
#: The collection's gold pairs (docs/machine-judges.md#the-gold-set), each with the raw scores
#: and prepared opinions of its two documents in every task of its query with the judge
#: (the better document first; NULL where there is none), by gold pair then task.
GOLD_EVIDENCE = (
    _with_pair(
        select(
            G.c.id,
            native(_BETTER.c.score).label("better_score"),
            native(_WORSE.c.score).label("worse_score"),
            native(_BW.c.probability).label("better_first"),
            native(_WB.c.probability).label("worse_first"),
        )
        .join(T, and_(T.c.query_id == G.c.query_id, T.c.collection_id == G.c.collection_id))
        .join(M, and_(M.c.task_id == T.c.id, M.c.judge == bindparam("judge"))),
        (_BETTER, _WORSE, _BW, _WB),
        T.c.id,
        G.c.better_doc,
        G.c.worse_doc,
    )
    .where(G.c.collection_id == bindparam("collection_id"))
    .order_by(G.c.id, T.c.id)
)


def source_evidence(tx: Session, collection_id: int, source: str) -> list[Any]:
    """People's most recent pair answers (:data:`EVIDENCE_WINDOW`) on the collection's tasks
    whose judge is of ``source`` (``bm25``, ``model:<id>``, ``llm``), as
    :meth:`MachineStore.evidence` gives them for one version."""
    values = {
        "collection_id": collection_id,
        "prefix": f"{source}/%",
        "task_id": -1,
        "window": EVIDENCE_WINDOW,
    }
    return list(tx.execute(SOURCE_EVIDENCE, values))


#: The newest judgment's id (any task): how far the log has grown, read from the primary key.
LATEST = select(func.max(J.c.id).label("latest"))


class _Statements:
    def __init__(self, db: Database) -> None:
        dialect = db.engine.dialect
        self.latest = Prepared(LATEST, dialect)
        self.machine = Prepared(MACHINE_ROW, dialect)
        self.scores = Prepared(SCORES, dialect)
        self.opinions = Prepared(OPINIONS, dialect)
        self.freeze = Prepared(FREEZE, dialect)
        self.evidence = Prepared(EVIDENCE, dialect)
        self.gold = Prepared(GOLD_EVIDENCE, dialect)


_STATEMENTS: Slot[_Statements] = Slot("machine statements", _Statements)


class MachineStore:
    """The machine's reads and the calibration's freeze in one transaction (``cursor``)."""

    __slots__ = ("_sql", "cursor")

    def __init__(self, db: Database, cursor: Any) -> None:
        self._sql = _STATEMENTS.of(db)
        self.cursor = cursor

    def machine(self, task_id: int) -> Any:
        """The task's ``task_machine`` row (source, judge, calibration), or None."""
        return self._sql.machine.one_or_none(self.cursor, {"task_id": task_id})

    def scores(self, task_id: int) -> dict[str, float]:
        """The task's raw scores by document."""
        rows = self._sql.scores.rows(self.cursor, {"task_id": task_id})
        return {r.doc_id: float(r.score) for r in rows}

    def opinions(self, task_id: int) -> dict[tuple[str, str], float]:
        """The task's prepared raw P(first better) by ordered pair."""
        rows = self._sql.opinions.rows(self.cursor, {"task_id": task_id})
        return {(r.first_doc, r.second_doc): float(r.probability) for r in rows}

    def freeze(self, task_id: int, calibration: dict[str, Any], now: datetime) -> bool:
        """Store the task's calibration unless one is stored already; whether it was."""
        values = {"task_id": task_id, "calibration": calibration, "now": now}
        return self._sql.freeze.execute(self.cursor, values) == 1

    def latest_judgment(self) -> int:
        """The newest judgment's id (0 for an empty log)."""
        row = self._sql.latest.one_or_none(self.cursor)
        return int(row.latest or 0) if row is not None else 0

    def evidence(self, collection_id: int, judge: str, task_id: int) -> list[Any]:
        """People's most recent pair answers (:data:`EVIDENCE_WINDOW`) on the collection's
        other tasks with ``judge``: outcome, the two documents' raw scores and the prepared
        opinions of both orders (:data:`EVIDENCE`)."""
        values = {
            "collection_id": collection_id,
            "judge": judge,
            "task_id": task_id,
            "window": EVIDENCE_WINDOW,
        }
        return self._sql.evidence.rows(self.cursor, values)

    def gold(self, collection_id: int, judge: str) -> list[Any]:
        """The collection's gold pairs with the judge's raw numbers on them
        (:data:`GOLD_EVIDENCE`)."""
        values = {"collection_id": collection_id, "judge": judge}
        return self._sql.gold.rows(self.cursor, values)
