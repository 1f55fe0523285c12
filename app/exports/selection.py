"""Whose labels an export writes (``docs/exports.md#label-sources``): the finished tasks of a
collection that an export selects (method by label kind, optionally one assessor's and one
plan's), one per query or all, and per query the labels of one task or an aggregate of
several (Borda, Bradley–Terry, mean grade).

κ-labels (Niu et al. 2012, "Top-k Learning to Rank: Labeling, Ranking and Evaluation",
§3.2.1): ``y_d = k + 1 − pos(d)`` for the ordered top-k, 0 for the rest of the pool."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy.orm import Session

from app.exports import repository
from app.judging.loop import replay_task
from app.judging.repository import live_judgments
from app.judging.uncertainty import task_machine_loss
from app.kernel.models import Task
from app.machine.alarms import task_audits
from labeling.analysis.aggregate import Preference, borda, bradley_terry
from labeling.protocol.spec import parse_machine
from labeling.study.uncertainty import LossEstimate, LossTotal, total
from ranking.io.topk import kappa_labels as kappa_labels


class Selection(Protocol):
    """What an export selects (:class:`app.exports.service.ExportRequest`, resolved)."""

    @property
    def collection_id(self) -> int: ...
    @property
    def format(self) -> str: ...
    @property
    def labels(self) -> str | None: ...
    @property
    def source(self) -> str: ...
    @property
    def assessor(self) -> str | None: ...
    @property
    def plan(self) -> str | None: ...
    @property
    def missing_features(self) -> str: ...


@dataclass(frozen=True, slots=True)
class TaskInfo:
    """A task that contributed to a query's labels."""

    task_id: int
    assessor: str
    judgments: int
    active_ms: int


@dataclass(slots=True)
class QueryLabels:
    """The labels of one query from one source (one task, or an aggregate of tasks).

    ``labels`` is in writing order: for κ-labels the top best first, then the rest by
    document id; for grades by document id. ``top``/``rest``/``k`` are set for κ-labels
    (``rest`` in the protocol's discard order, or the aggregate's rank order)."""

    query_id: str
    labels: dict[str, int]
    tasks: list[TaskInfo]
    aggregate: str | None = None
    k: int | None = None
    top: list[str] = field(default_factory=list)
    rest: list[str] = field(default_factory=list)
    #: Documents marked broken (id -> reason; docs/protocols.md#broken-documents): no label.
    broken: dict[str, str] = field(default_factory=dict)
    #: Live answers a machine gave in the tasks (docs/machine-judges.md#the-service).
    machine_answers: int = 0
    #: The tasks' machine judge (its version), None without one.
    judge: str | None = None
    #: The top documents whose label no machine answer touched.
    human_decided: list[str] = field(default_factory=list)
    #: The κ-NDCG@k loss the machine answers may have cost (one task's estimate; an
    #: aggregate's: its tasks' summed), docs/exports.md#machine-answers.
    machine: LossEstimate | LossTotal | None = None


def machine_touched(rows: Sequence[Any]) -> set[str]:
    """The documents a live machine answer of a task's log involved."""
    return {d for r in rows if r.source == "machine" for d in (r.left_doc, r.right_doc) if d}


def keep_human(ql: QueryLabels, touched: set[str]) -> QueryLabels:
    """``labels=human``: only the labels (and top/rest entries) of the documents no machine
    answer touched; the others are left out, unjudged (docs/exports.md#machine-answers)."""
    ql.labels = {d: v for d, v in ql.labels.items() if d not in touched}
    ql.top = [d for d in ql.top if d not in touched]
    ql.rest = [d for d in ql.rest if d not in touched]
    return ql


def method_of(labels: str | None) -> str:
    """The task method whose results give ``labels``."""
    return "graded" if labels == "grades" else "topk"


def finished_tasks(s: Session, req: Selection) -> list[tuple[Task, str, str]]:
    """(task, query id, assessor) of every finished task the export selects."""
    return repository.finished_tasks(
        s, req.collection_id, method_of(req.labels), assessor=req.assessor, plan=req.plan
    )


def chosen_tasks(s: Session, req: Selection) -> list[tuple[Task, str, str]]:
    """The finished tasks whose labels the export writes, one per query unless
    ``source`` is ``all`` or an aggregate (then every selected task)."""
    rows = finished_tasks(s, req)
    if req.source not in ("first", "assessor"):
        return rows
    seen: set[str] = set()
    out = []
    for task, qid, username in rows:
        if qid not in seen:
            seen.add(qid)
            out.append((task, qid, username))
    return out


def judge_of(task: Task) -> str | None:
    """The task's machine judge version (option ``machine.judge``), None without one."""
    machine = parse_machine((task.options or {}).get("machine"))
    return None if machine is None else machine.judge


def _labels_of_task(
    s: Session, task: Task, qid: str, username: str, human: bool = False
) -> QueryLabels:
    rows = live_judgments(s, task.id)
    session = replay_task(task, rows)
    result = session.result()
    info = TaskInfo(task.id, username, len(rows), sum(r.active_ms for r in rows))
    broken = dict(result.broken)
    if task.method == "topk":
        top, rest = list(result.top), list(result.rest)
        labels = kappa_labels(top, sorted(rest), result.k)
        touched = machine_touched(rows)
        ql = QueryLabels(
            qid,
            labels,
            [info],
            k=result.k,
            top=top,
            rest=rest,
            broken=broken,
            machine_answers=sum(r.source == "machine" for r in rows),
            judge=judge_of(task),
            human_decided=[d for d in top if d not in touched],
            machine=task_machine_loss(None, task, rows, session, audits=task_audits(s, task)),
        )
        return keep_human(ql, touched) if human else ql
    grades = {doc: result.grades[doc] for doc in sorted(result.grades)}
    return QueryLabels(qid, grades, [info], broken=broken)


def query_labels(s: Session, req: Selection) -> Iterator[QueryLabels]:
    """Per query (in import order), the labels chosen by ``req.source`` (resolved request)."""
    if req.source not in ("borda", "bt", "mean"):
        for task, qid, username in chosen_tasks(s, req):
            yield _labels_of_task(s, task, qid, username, human=req.labels == "human")
        return
    groups: dict[str, list[tuple[Task, str]]] = {}
    for task, qid, username in finished_tasks(s, req):
        groups.setdefault(qid, []).append((task, username))
    for qid, tasks in groups.items():
        yield _aggregate(s, req.source, qid, tasks)


def _aggregate(s: Session, source: str, qid: str, tasks: list[tuple[Task, str]]) -> QueryLabels:
    replayed = []
    infos = []
    touched: set[str] = set()
    machine_answers = 0
    losses: list[LossEstimate] = []
    for task, username in tasks:
        rows = live_judgments(s, task.id)
        session = replay_task(task, rows)
        replayed.append((task, session.result()))
        if task.method == "topk":
            losses.append(task_machine_loss(None, task, rows, session, audits=task_audits(s, task)))
        infos.append(TaskInfo(task.id, username, len(rows), sum(r.active_ms for r in rows)))
        touched |= machine_touched(rows)
        machine_answers += sum(r.source == "machine" for r in rows)
    # A document any of the tasks marked broken gets no aggregate label (its first reason is
    # listed), so every aggregate covers the same documents.
    broken: dict[str, str] = {}
    for _, r in replayed:
        for doc, reason in r.broken.items():
            broken.setdefault(doc, reason)
    if source == "mean":
        # Mean grade, rounded half up (floor(x + 0.5)), over the tasks that graded the doc.
        given: dict[str, list[int]] = {}
        for _, r in replayed:
            for doc, g in r.grades.items():
                if doc not in broken:
                    given.setdefault(doc, []).append(g)
        labels = {d: math.floor(sum(v) / len(v) + 0.5) for d, v in sorted(given.items())}
        return QueryLabels(qid, labels, infos, aggregate=source, broken=broken)
    universe = [
        d for d in dict.fromkeys(d for task, _ in replayed for d in task.doc_ids) if d not in broken
    ]
    k = max(task.k for task, _ in replayed)
    if source == "borda":
        agg = borda([r.top for _, r in replayed], k=k, universe=universe)
    else:
        prefs = [
            Preference(j.a, j.b, "tie" if j.winner is None else ("a" if j.winner == j.a else "b"))
            for _, r in replayed
            for j in r.judged
            if not j.cached and j.a not in broken and j.b not in broken
        ]
        agg = bradley_terry(prefs, universe=universe)
    top, rest = agg.top(min(k, len(agg.order)))
    labels = kappa_labels(top, sorted(rest), k)
    judges = [j for task, _ in replayed if (j := judge_of(task))]
    return QueryLabels(
        qid,
        labels,
        infos,
        aggregate=source,
        k=k,
        top=top,
        rest=rest,
        broken=broken,
        machine_answers=machine_answers,
        judge=judges[0] if judges else None,
        human_decided=[d for d in top if d not in touched],
        machine=total(losses),
    )
