"""Use cases: create and list tasks; load a task for a user (ownership rules).

A task freezes everything its protocol is replayed from: method, k, seed, the validated options
(defaults filled in by :func:`labeling.protocol.options.validate_options`) and ``doc_ids``, the
snapshot of the query's pool in import order. Later imports into the query do not change existing
tasks, so their logs always replay.

A top-k task's prior (BM25, a LETOR feature, a TREC run, or none) is resolved here, once,
into the options ``initial_order`` and ``prior`` (:mod:`app.planning.priors`), so replay never
looks at the collection again (``docs/strategies-in-practice.md#priors``).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, case, func, select
from sqlalchemy.orm import Session

from app.auth.tokens import Identity
from app.judging.loop import check_task_access, replay_task
from app.judging.routing import check_second_assessors
from app.kernel.db import Database
from app.kernel.errors import Invalid, NotFound
from app.kernel.models import Collection, Document, Judgment, Query, Task, User
from app.machine import service as machine
from app.planning.priors import PriorResolver, PriorSource
from app.training.jobs import enqueue_opinions
from labeling.errors import ConfigError
from labeling.identifiers import normal_identifier
from labeling.protocol.options import validate_options
from labeling.protocol.prior_orders import NO_PRIOR
from labeling.protocol.session import open_session


@dataclass(frozen=True, slots=True)
class TaskView:
    """A task with the names a client needs (query id/text, assessor name, live count)."""

    id: int
    collection_id: int
    query_id: str
    query: str
    assessor: str
    method: str
    k: int
    seed: int
    options: dict[str, Any]
    n: int
    status: str
    plan: str | None
    judgments: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    collection: str = ""
    """The collection's name."""
    remaining: int | None = None
    """Estimated judgments left (0 when done); only from ``list_tasks(with_progress=True)``."""
    done: bool | None = None
    """Whether the replayed log is complete; only with ``with_progress=True``."""
    machine_answers: int = 0
    """Of the live judgments, those a machine judge gave (docs/machine-judges.md)."""


def create_task(
    *,
    db: Database,
    collection_id: int,
    query_id: str,
    assessor: str,
    method: str,
    k: int = 10,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    plan: str | None = None,
    prior: PriorSource | None = None,
) -> TaskView:
    """Assign ``assessor`` to judge ``query_id`` of a collection with ``method``.

    ``prior`` (top-k only) names where the initial order comes from; it is resolved against
    the query's pool now and stored as ``options.initial_order`` with ``options.prior``. A
    caller that gives ``options.initial_order`` itself gets ``prior = "explicit"``; neither
    gives ``prior = "none"`` (the seeded shuffle).

    ``options.second_assessor`` (a ``+robust`` strategy only) routes the strategy's repeats to
    those users (docs/noise.md#routing-re-asks-to-a-second-assessor): each must be an
    existing, active user other than ``assessor``.

    ``options.machine`` (a ``+assist`` strategy only): the machine judge, its scores stored
    now (docs/machine-judges.md#the-service; a 422 naming ``options.machine.source`` if it
    cannot judge the collection).

    404 for an unknown collection, query or user; 422 for a disabled assessor, a bad second
    assessor, a query without documents, a prior that cannot rank the pool or a bad
    configuration (the labeling core's ConfigError message)."""
    explicit = _check_prior_request(method, options or {}, prior)
    opts = validate_options(method, options)
    if seed is None:
        seed = secrets.randbelow(2**31)
    with db.write() as s:
        query, user = _query_and_assessor(s, collection_id, query_id, assessor)
        if opts.get("second_assessor"):
            check_second_assessors(s, opts["second_assessor"], assessor)
        pool = select(Document.external_id).where(Document.query_id == query.id)
        doc_ids = list(s.scalars(pool.order_by(Document.id)))
        if not doc_ids:
            raise Invalid(f"query {query_id!r} has no documents to judge")
        if method == "topk":
            if explicit:
                opts["prior"] = "explicit"
            else:
                resolver = PriorResolver(s, collection_id, prior or PriorSource(), db.settings)
                opts["initial_order"], opts["prior"] = resolver.resolve(query, doc_ids)
        try:
            opts = validate_options(method, opts)
            # Fail now, not at the first judgment, if the protocol cannot run this config.
            open_session(method, doc_ids, k=k, seed=seed, options=opts, answers=())
        except ConfigError as err:
            raise Invalid(str(err)) from None
        prepared = machine.prepare_task(s, collection_id, query, doc_ids, opts, db.settings)
        task = Task(
            collection_id=collection_id,
            query_id=query.id,
            assessor_id=user.id,
            method=method,
            k=k,
            seed=seed,
            options=opts,
            doc_ids=doc_ids,
            status="pending",
            plan=plan,
        )
        s.add(task)
        s.flush()
        machine.save_prepared(s, task.id, prepared)
        view = _view(task, query, user, 0)
    if prepared is not None and prepared.source == "llm":
        # After the commit: the job must find the task (docs/machine-judges.md#the-service).
        enqueue_opinions(db.settings, view.id)
    return view


def _query_and_assessor(
    s: Session, collection_id: int, query_id: str, assessor: str
) -> tuple[Query, User]:
    """The query ``query_id`` of the collection and the active user ``assessor``: 404 for an
    unknown collection, query or user, 422 for a disabled one."""
    if s.get(Collection, collection_id) is None:
        raise NotFound(f"no collection with id {collection_id}")
    query = s.scalar(
        select(Query).where(Query.collection_id == collection_id, Query.external_id == query_id)
    )
    if query is None and query_id != normal_identifier(query_id):
        # The stored spelling is NFC (docs/security.md#text-hygiene).
        query = s.scalar(
            select(Query).where(
                Query.collection_id == collection_id,
                Query.external_id == normal_identifier(query_id),
            )
        )
    if query is None:
        raise NotFound(f"no query {query_id!r} in collection {collection_id}")
    user = s.scalar(select(User).where(User.username == assessor))
    if user is None:
        raise NotFound(f"no user named {assessor!r}")
    if user.disabled:
        raise Invalid(f"user {assessor!r} is disabled")
    return query, user


def _check_prior_request(method: str, opts: Mapping[str, Any], prior: PriorSource | None) -> bool:
    """Whether the caller gave ``initial_order`` itself; Invalid for a prior on a graded task,
    for ``options.prior`` set by the caller (the service records it), and for an explicit
    order together with a prior to resolve."""
    requested = prior is not None and prior.spec != NO_PRIOR
    if method != "topk":
        if requested:
            raise Invalid(f"a prior orders the documents of a topk task; method is {method!r}")
        return False
    if opts.get("prior") is not None:
        raise Invalid(
            "options.prior is recorded by the service: give the prior to resolve as the "
            "field 'prior' (or the order itself as options.initial_order)"
        )
    explicit = opts.get("initial_order") is not None
    if explicit and requested:
        raise Invalid("give either options.initial_order or a prior to resolve, not both")
    return explicit


def _view(
    task: Task, query: Query, user: User, judgments: int, collection: str = "", **progress: Any
) -> TaskView:
    return TaskView(
        id=task.id,
        collection_id=task.collection_id,
        query_id=query.external_id,
        query=query.title,
        assessor=user.username,
        method=task.method,
        k=task.k,
        seed=task.seed,
        options=dict(task.options or {}),
        n=len(task.doc_ids),
        status=task.status,
        plan=task.plan,
        judgments=judgments,
        created_at=task.created_at,
        started_at=task.started_at,
        finished_at=task.finished_at,
        collection=collection,
        **progress,
    )


def blind(view: TaskView, viewer: User) -> TaskView:
    """What an assessor may read of a task: the same with the machine on or off
    (docs/machine-judges.md#blind): no ``options.machine``, people's judgments only, no
    machine answers. An admin sees everything."""
    if viewer.role == "admin":
        return view
    options = {key: value for key, value in view.options.items() if key != "machine"}
    return replace(
        view, options=options, judgments=view.judgments - view.machine_answers, machine_answers=0
    )


def list_tasks(
    *,
    db: Database,
    user: User,
    collection_id: int | None = None,
    assessor: str | None = None,
    status: str | None = None,
    query_id: str | None = None,
    include_cancelled: bool = True,
    with_progress: bool = False,
) -> list[TaskView]:
    """Tasks visible to ``user``: an assessor sees only their own; an admin sees all, filtered
    by collection, assessor (username), status and query id when given.

    ``with_progress`` replays every task's live log (one query for all logs) to fill
    ``remaining`` and ``done``, as the assessor's task list shows them."""
    live = (
        select(
            Judgment.task_id,
            func.count().label("n"),
            func.sum(case((Judgment.source == "machine", 1), else_=0)).label("machine"),
        )
        .where(Judgment.undone.is_(False))
        .group_by(Judgment.task_id)
        .subquery()
    )
    stmt = (
        select(
            Task,
            Query,
            User,
            Collection.name,
            func.coalesce(live.c.n, 0),
            func.coalesce(live.c.machine, 0),
        )
        .join(Query, Query.id == Task.query_id)
        .join(User, User.id == Task.assessor_id)
        .join(Collection, Collection.id == Task.collection_id)
        .outerjoin(live, live.c.task_id == Task.id)
        .order_by(Task.id)
    )
    if user.role != "admin":
        stmt = stmt.where(Task.assessor_id == user.id)
    elif assessor is not None:
        stmt = stmt.where(User.username == assessor)
    if collection_id is not None:
        stmt = stmt.where(Task.collection_id == collection_id)
    if status is not None:
        stmt = stmt.where(Task.status == status)
    if not include_cancelled:
        stmt = stmt.where(Task.status != "cancelled")
    if query_id is not None:
        stmt = stmt.where(Query.external_id == query_id)
    with db.read() as s:
        rows = list(s.execute(stmt))
        if not with_progress:
            views = [_view(t, q, u, n, name, machine_answers=m) for t, q, u, name, n, m in rows]
            return [blind(v, user) for v in views]
        logs: dict[int, list[Any]] = {t.id: [] for t, *_ in rows}
        for j in s.scalars(
            select(Judgment)
            .where(Judgment.task_id.in_(list(logs)), Judgment.undone.is_(False))
            .order_by(Judgment.task_id, Judgment.seq)
        ):
            logs[j.task_id].append(j)
    views = []
    for t, q, u, name, n, m in rows:
        progress = replay_task(t, logs[t.id]).progress()
        left = 0 if progress.done else math.ceil(progress.expected_remaining - 1e-9)
        views.append(_view(t, q, u, n, name, remaining=left, done=progress.done, machine_answers=m))
    return [blind(v, user) for v in views]


_TASK = select(Task).where(Task.id == bindparam("task_id"))
_TASK_FOR_UPDATE = _TASK.with_for_update()


def load_task_for(
    s: Session, user: User | Identity, task_id: int, *, lock: bool = False, judge: bool = False
) -> Task:
    """The task if ``user`` may act on it (its assessor, or an admin; with ``judge=True`` only
    its assessor). 404 / 403 otherwise.

    ``lock=True`` takes the row lock (``SELECT ... FOR UPDATE`` on Postgres; on SQLite the
    write transaction's BEGIN IMMEDIATE already serialises writers), so judging and undo on one
    task are serialised while different tasks proceed in parallel."""
    task = s.scalar(_TASK_FOR_UPDATE if lock else _TASK, {"task_id": task_id})
    check_task_access(task, user, task_id, judge=judge)
    assert task is not None
    return task


def get_task(*, db: Database, user: User, task_id: int) -> TaskView:
    with db.read() as s:
        task = load_task_for(s, user, task_id)
        query = s.get(Query, task.query_id)
        owner = s.get(User, task.assessor_id)
        n, m = s.execute(
            select(func.count(), func.sum(case((Judgment.source == "machine", 1), else_=0))).where(
                Judgment.task_id == task.id, Judgment.undone.is_(False)
            )
        ).one()
        assert query is not None and owner is not None
        return blind(_view(task, query, owner, n or 0, machine_answers=int(m or 0)), user)
