"""Use case: train a ranker on a collection's top-k ground truth (issue 6 item 6).

``create_run`` validates the request and records a ``queued`` ``training_run``; ``execute_run``
(run in the background by the router) trains and stores the outcome:

1. truth: per query, the finished top-k task the exports use (:func:`app.services.exports.
   sources`: the first finished one), replayed into ``(top, rest)``;
2. features: the documents' feature vectors (``document.features``, as imported);
3. data: :func:`ranking.dataset.dataset_from_topk` (κ-labels, k from the tasks);
4. split: a seeded 80/20 split of the queries into train / validation (validation early-stops
   the iterations and reports the metrics); with a single query it trains and validates on it;
5. fit the estimator of :data:`ranking.estimators.ESTIMATORS` with the given params; store
   validation κ-NDCG@5, κ-NDCG@10, κ-ERR and the fitted model's JSON (no pickle).

Any failure sets ``status = failed`` with the error message; nothing else changes.

Orphaned runs. Training runs inside the web process (a background task), so a crash or restart
would leave a run ``queued`` or ``running`` for ever. Each run therefore records the process
that owns it in ``metrics["worker"]`` (host, pid, the pid's start time and a per-process boot
id) until it finishes. :func:`reap_orphans` (called by :func:`get_run`, and meant for app start)
marks a run ``failed`` only when its owner is provably gone: same host and either this very
process under a new boot id (e.g. pid 1 after a container restart), or a pid that no longer
exists or now belongs to a process started at another time; or this process owns it but is not
executing it. Runs owned by another host are left alone (their liveness is unknown here).
"""

from __future__ import annotations

import math
import os
import socket
import threading
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import select

from app.db import Database
from app.errors import Invalid, NotFound
from app.models import Collection, Document, Query, Task, TrainingRun, utcnow
from app.services.exports import sources
from app.services.judging import live_judgments, replay_task

VALID_FRACTION = 0.2
ORPHAN_ERROR = (
    "orphaned: the server process that ran this training run ({owner}) stopped before it "
    "finished; start a new run"
)


def _start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (Linux ``/proc``), or None where unavailable."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return None
    # Field 22 (starttime) counted after the parenthesised command name, which may hold spaces.
    return stat.rsplit(")", 1)[1].split()[19]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


#: This process: who owns the runs it creates and executes.
WORKER: dict[str, Any] = {
    "host": socket.gethostname(),
    "pid": os.getpid(),
    "started": _start_time(os.getpid()),
    "boot": uuid.uuid4().hex,
}
_active: set[int] = set()  # run ids this process is executing right now
_active_lock = threading.Lock()


def _owner_gone(worker: Any, run_id: int, status: str) -> bool:
    """True only when the process recorded in ``worker`` provably no longer runs ``run_id``."""
    if not isinstance(worker, dict) or worker.get("host") != WORKER["host"]:
        return False
    if worker.get("boot") == WORKER["boot"]:
        # Ours: a queued run waits for its background task; a running one must be executing.
        with _active_lock:
            return status == "running" and run_id not in _active
    pid = worker.get("pid")
    if not isinstance(pid, int):
        return False
    if pid == WORKER["pid"]:
        return True  # same pid, other boot id: the owner was an earlier life of this pid
    if not _pid_alive(pid):
        return True
    started = worker.get("started")
    return started is not None and _start_time(pid) not in (None, started)


def reap_orphans(*, db: Database, run_id: int | None = None) -> int:
    """Mark orphaned ``queued``/``running`` runs (all, or only ``run_id``) failed; return count.

    Reads first and writes only when a run is orphaned, so a GET of a live run stays read-only.
    """
    query = select(TrainingRun.id, TrainingRun.status, TrainingRun.metrics).where(
        TrainingRun.status.in_(("queued", "running"))
    )
    if run_id is not None:
        query = query.where(TrainingRun.id == run_id)
    with db.read() as s:
        candidates = [
            rid
            for rid, status, metrics in s.execute(query)
            if _owner_gone((metrics or {}).get("worker"), rid, status)
        ]
    if not candidates:
        return 0
    reaped = 0
    with db.write() as s:
        for rid in candidates:
            run = s.get(TrainingRun, rid)
            # Re-check inside the write: the run may have finished meanwhile.
            if run is None or run.status not in ("queued", "running"):
                continue
            worker = (run.metrics or {}).get("worker")
            if not _owner_gone(worker, rid, run.status):
                continue
            run.status = "failed"
            run.metrics = None
            run.error = ORPHAN_ERROR.format(owner=f"host {worker['host']}, pid {worker['pid']}")
            run.finished_at = utcnow()
            reaped += 1
    return reaped


def _estimator(model: str, params: dict[str, Any]) -> Any:
    from ranking.estimators import ESTIMATORS

    if model not in ESTIMATORS:
        raise Invalid(f"unknown model {model!r}; expected one of {', '.join(ESTIMATORS)}")
    if not isinstance(params, dict):
        raise Invalid("params must be a JSON object")
    try:
        return ESTIMATORS[model](**params)
    except TypeError as exc:
        allowed = ", ".join(ESTIMATORS[model]().get_params())
        raise Invalid(f"bad params for {model}: {exc}; allowed: {allowed}") from None


def describe(run: TrainingRun) -> dict[str, Any]:
    """The JSON view of a run."""
    return {
        "id": run.id,
        "collection_id": run.collection_id,
        "model": run.model,
        "params": run.params,
        "status": run.status,
        "metrics": run.metrics,
        "model_json": run.model_json if run.status == "done" else None,
        "error": run.error,
        "created_at": run.created_at.isoformat() if run.created_at else None,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }


def create_run(
    *, db: Database, collection_id: int, model: str, params: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Validate and record a queued run; returns its JSON view."""
    params = dict(params or {})
    _estimator(model, params)
    with db.write() as s:
        if s.get(Collection, collection_id) is None:
            raise NotFound(f"no collection with id {collection_id}")
        run = TrainingRun(
            collection_id=collection_id,
            model=model,
            params=params,
            status="queued",
            metrics={"worker": WORKER},
        )
        s.add(run)
        s.flush()
        return describe(run)


def get_run(*, db: Database, run_id: int) -> dict[str, Any]:
    """The JSON view of run ``run_id``, after failing it if its owner process is gone."""
    reap_orphans(db=db, run_id=run_id)
    with db.read() as s:
        run = s.get(TrainingRun, run_id)
        if run is None:
            raise NotFound(f"no training run with id {run_id}")
        return describe(run)


def _load_dataset(db: Database, collection_id: int) -> Any:
    from ranking.dataset import dataset_from_topk

    chosen = sources(db=db, collection_id=collection_id, method="topk")
    if not chosen:
        raise Invalid("the collection has no finished top-k task to train on")
    truth: dict[str, tuple[list[str], list[str]]] = {}
    features: dict[str, dict[str, list[float]]] = {}
    ks = set()
    with db.read() as s:
        for src in chosen:
            task = s.get(Task, src.task_id)
            assert task is not None
            result = replay_task(task, live_judgments(s, task.id)).result()
            truth[src.query_id] = (list(result.top), list(result.rest))
            ks.add(result.k)
            rows = s.execute(
                select(Document.external_id, Document.features)
                .join(Query, Query.id == Document.query_id)
                .where(Query.collection_id == collection_id, Query.external_id == src.query_id)
            )
            feats = {doc: f for doc, f in rows if f is not None}
            missing = [d for d in (*result.top, *result.rest) if d not in feats]
            if missing:
                raise Invalid(
                    f"query {src.query_id!r}: document {missing[0]!r} has no feature "
                    "vector (import documents with 'features')"
                )
            features[src.query_id] = feats
    if len(ks) != 1:
        raise Invalid(f"the finished top-k tasks use different k values {sorted(ks)}")
    return dataset_from_topk(features, truth, k=ks.pop())


def _finish(db: Database, run_id: int, **fields: Any) -> None:
    with db.write() as s:
        run = s.get(TrainingRun, run_id)
        if run is None:
            return
        for name, value in fields.items():
            setattr(run, name, value)
        run.finished_at = utcnow()


def execute_run(run_id: int, *, db: Database) -> None:
    """Train run ``run_id`` (queued -> running -> done | failed)."""
    with _active_lock:
        _active.add(run_id)  # before "running" is visible, so a reaper never sees a gap
    try:
        with db.write() as s:
            run = s.get(TrainingRun, run_id)
            if run is None or run.status != "queued":
                return
            run.status = "running"
            run.started_at = utcnow()
            run.metrics = {"worker": WORKER}
            collection_id, model, params = run.collection_id, run.model, dict(run.params or {})
        _train(db, run_id, collection_id, model, params)
    finally:
        with _active_lock:
            _active.discard(run_id)


def _train(
    db: Database, run_id: int, collection_id: int, model: str, params: dict[str, Any]
) -> None:
    """Fit and record the outcome; every failure ends as ``status = failed`` with its message."""
    from ranking.estimators import metric_values

    try:
        est = _estimator(model, params)
        data = _load_dataset(db, collection_id)
        if "k" in est.get_params() and "k" not in params:
            est.set_params(k=data.topk)
        rng = np.random.default_rng(int(params.get("seed", 0)))
        order = rng.permutation(data.n_queries)
        n_valid = math.ceil(VALID_FRACTION * data.n_queries) if data.n_queries > 1 else 0
        valid_q, train_q = order[:n_valid], order[n_valid:]
        train = data.subset(np.sort(train_q))
        valid = data.subset(np.sort(valid_q)) if n_valid else train
        est.fit(train, valid=valid)
        scores = est.predict(valid)
        metrics = {
            "kappa_ndcg@5": float(np.mean(metric_values("kappa_ndcg@5", valid, scores))),
            "kappa_ndcg@10": float(np.mean(metric_values("kappa_ndcg@10", valid, scores))),
            "kappa_err": float(np.mean(metric_values("kappa_err", valid, scores))),
            "k": data.topk,
            "train_queries": int(train.n_queries),
            "valid_queries": int(valid.n_queries) if n_valid else 0,
            "documents": int(data.n_docs),
            "best_iteration": int(est.best_iteration_),
        }
        _finish(db, run_id, status="done", metrics=metrics, model_json=est.to_dict(), error=None)
    except Exception as exc:  # the run records any failure; the API stays up
        _finish(db, run_id, status="failed", metrics=None, error=f"{type(exc).__name__}: {exc}")
