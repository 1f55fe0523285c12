"""Use case: training runs, executed as queued jobs by a worker process (docs/training.md).

Life of a run (``training_run`` row, the only state; the queue carries just its id):

- :func:`create_run` validates the request and records it ``queued``; the router enqueues it
  (:func:`app.training.jobs.enqueue_training`);
- :func:`execute_run` (in ``heapjudge worker``) claims it (``queued -> running``, one more
  attempt), loads the truth and folds, and fits with a progress callback: between two
  iterations the fit stops when the run was cancelled (``cancelled``) or its time limit passed
  (``failed``). A heartbeat thread writes ``heartbeat_at`` and ``progress`` meanwhile;
- :func:`cancel_run` cancels a queued run at once and flags a running one;
- :func:`recover_stalled` (swept by every worker) retries or fails a running run whose
  heartbeat stopped (its worker was killed), and re-enqueues a queued run whose message is gone;
- :func:`get_run` and :func:`list_runs` only read.

Truth (``options.truth``): ``imported`` (the documents' imported grades; top-k models train on
the top k of a seeded random total order consistent with the grades, Niu et al. 2012 §6.3),
``study`` (the finished top-k tasks' κ-labels, the qrels export's choice of task per query) or
``both`` (study truth where a query has a finished top-k task, imported grades turned into
top-k truth elsewhere). ``options.kind`` says how the truth is measured: ``graded`` (NDCG@5,
NDCG@10, ERR; imported truth only) or ``topk`` (κ-NDCG@5, κ-NDCG@10, κ-ERR).

Folds (``options.folds``): ``"auto"`` takes LETOR's own rotation (S1..S5: train 3, validation
1, test 1) when every query was imported from a LETOR partition file, else seeded k-fold by
query with k = min(5, queries); ``"letor"`` insists on the former; an integer n >= 3 asks for
n seeded folds. Every fold reports validation and test measures; the stored model is the
fold's with the best validation value of the first measure.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

from sqlalchemy import CursorResult, Update, select, update
from sqlalchemy.orm import Session

from app.exports.service import sources
from app.judging.loop import replay_task
from app.judging.repository import live_judgments
from app.kernel.db import Database
from app.kernel.errors import Conflict, Invalid, NotFound
from app.kernel.models import Collection, Document, Query, Task, TrainingRun, utcnow
from app.training.jobs import JobSettings

TRUTHS = ("imported", "study", "both")
KINDS = ("graded", "topk")
FINISHED = ("done", "failed", "cancelled")
CANCEL_POLL_SECONDS = 0.2  # a cancel stops a fit within this plus one iteration


class StopFit(Exception):
    """Raised from the fit's progress callback to stop it between two iterations."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


# ================================================================================ requests
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


def check_options(options: dict[str, Any] | None) -> dict[str, Any]:
    """Validated options with defaults filled in (see the module docstring)."""
    opts = dict(options or {})
    unknown = sorted(set(opts) - {"truth", "kind", "folds", "k", "seed"})
    if unknown:
        raise Invalid(
            f"unknown option(s) {', '.join(unknown)}; allowed: truth, kind, folds, k, seed"
        )
    truth = opts.get("truth", "study")
    if truth not in TRUTHS:
        raise Invalid(f"truth must be one of {', '.join(TRUTHS)}, got {truth!r}")
    kind = opts.get("kind", "graded" if truth == "imported" else "topk")
    if kind not in KINDS:
        raise Invalid(f"kind must be graded or topk, got {kind!r}")
    if kind == "graded" and truth != "imported":
        raise Invalid(f"truth {truth!r} is top-k truth; kind 'graded' needs truth 'imported'")
    folds = opts.get("folds", "auto")
    if not (
        folds in ("auto", "letor")
        or (isinstance(folds, int) and not isinstance(folds, bool) and 3 <= folds <= 20)
    ):
        raise Invalid(f"folds must be 'auto', 'letor' or an integer 3..20, got {folds!r}")
    k = opts.get("k")
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 1000):
        raise Invalid(f"k must be an integer 1..1000, got {k!r}")
    seed = opts.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise Invalid(f"seed must be an integer, got {seed!r}")
    return {"truth": truth, "kind": kind, "folds": folds, "k": k, "seed": seed}


def describe(run: TrainingRun) -> dict[str, Any]:
    """The JSON view of a run (strict JSON: no NaN)."""
    return {
        "id": run.id,
        "collection_id": run.collection_id,
        "model": run.model,
        "params": run.params,
        "options": run.options or {},
        "status": run.status,
        "progress": run.progress,
        "attempts": run.attempts,
        "cancel_requested": bool(run.cancel_requested),
        "time_limit_seconds": run.time_limit_seconds,
        "metrics": run.metrics,
        "model_json": run.model_json if run.status == "done" else None,
        "error": run.error,
        "created_at": run.created_at.isoformat() if run.created_at else None,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "heartbeat_at": run.heartbeat_at.isoformat() if run.heartbeat_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }


def create_run(
    *,
    db: Database,
    collection_id: int,
    model: str,
    params: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    time_limit_seconds: int | None = None,
    jobs: JobSettings | None = None,
) -> dict[str, Any]:
    """Validate and record a queued run; returns its JSON view (the caller enqueues it)."""
    params = dict(params or {})
    _estimator(model, params)
    opts = check_options(options)
    limit = time_limit_seconds or (jobs or JobSettings()).training_time_limit_seconds
    with db.write() as s:
        if s.get(Collection, collection_id) is None:
            raise NotFound(f"no collection with id {collection_id}")
        run = TrainingRun(
            collection_id=collection_id,
            model=model,
            params=params,
            options=opts,
            status="queued",
            time_limit_seconds=limit,
            heartbeat_at=utcnow(),  # enqueue time: the recovery sweep's clock for a queued run
        )
        s.add(run)
        s.flush()
        return describe(run)


def get_run(*, db: Database, run_id: int) -> dict[str, Any]:
    """The JSON view of run ``run_id`` (reads only)."""
    with db.read() as s:
        run = s.get(TrainingRun, run_id)
        if run is None:
            raise NotFound(f"no training run with id {run_id}")
        return describe(run)


def list_runs(*, db: Database, collection_id: int | None = None) -> list[dict[str, Any]]:
    """Runs, newest first, without their model JSON (reads only)."""
    query = select(TrainingRun).order_by(TrainingRun.id.desc())
    if collection_id is not None:
        query = query.where(TrainingRun.collection_id == collection_id)
    with db.read() as s:
        return [{**describe(r), "model_json": None} for r in s.scalars(query)]


def cancel_run(*, db: Database, run_id: int) -> dict[str, Any]:
    """Cancel a run: a queued one at once, a running one by flagging it (its worker stops the
    fit between two iterations and marks it ``cancelled``). Cancelling twice is harmless;
    a finished run (done or failed) is a 409."""
    with db.write() as s:
        run = s.get(TrainingRun, run_id)
        if run is None:
            raise NotFound(f"no training run with id {run_id}")
        if run.status in ("done", "failed"):
            raise Conflict(f"training run {run_id} already ended ({run.status})")
        if run.status == "queued":
            run.status = "cancelled"
            run.finished_at = utcnow()
            run.error = "cancelled before it started"
        run.cancel_requested = True
        s.flush()
        return describe(run)


# ================================================================================ recovery
def recover_stalled(
    *,
    db: Database,
    jobs: JobSettings,
    pending: Callable[[], set[int]],
    enqueue: Callable[[int], Any],
) -> dict[str, list[int]]:
    """Retry or fail runs whose worker is gone; re-enqueue queued runs whose message is gone.

    A ``running`` run whose ``heartbeat_at`` is older than ``training_stale_seconds`` lost its
    worker (killed, crashed, machine restarted): it is queued again while it has had fewer than
    ``training_max_attempts`` executions, else failed with a reason. A ``queued`` run that old
    whose id is not among the queue's ``pending()`` messages is enqueued again. Every change is
    a conditional UPDATE, so two workers sweeping at once act once.
    """
    cutoff = utcnow() - timedelta(seconds=jobs.training_stale_seconds)
    with db.read() as s:
        stale = list(
            s.execute(
                select(TrainingRun.id, TrainingRun.status, TrainingRun.attempts).where(
                    TrainingRun.status.in_(("queued", "running")),
                    TrainingRun.heartbeat_at < cutoff,
                )
            )
        )
    out: dict[str, list[int]] = {"retried": [], "failed": [], "requeued": []}
    if not stale:
        return out
    waiting = pending() if any(st == "queued" for _, st, _ in stale) else set()
    for run_id, status, attempts in stale:
        if status == "queued" and run_id in waiting:
            continue
        now = utcnow()
        guard = (
            (TrainingRun.id == run_id)
            & (TrainingRun.status == status)
            & (TrainingRun.attempts == attempts)
            & (TrainingRun.heartbeat_at < cutoff)
        )
        if status == "running" and attempts >= jobs.training_max_attempts:
            values: dict[str, Any] = {
                "status": "failed",
                "finished_at": now,
                "error": f"the worker stopped during attempt {attempts} of "
                f"{jobs.training_max_attempts} (no heartbeat for "
                f"{jobs.training_stale_seconds:g} s: killed or crashed); start a new run",
            }
            kind = "failed"
        else:
            values = {"status": "queued", "heartbeat_at": now, "progress": None}
            kind = "retried" if status == "running" else "requeued"
        with db.write() as s:
            changed = _rows_updated(s, update(TrainingRun).where(guard).values(**values))
        if changed:
            out[kind].append(run_id)
            if kind != "failed":
                enqueue(run_id)
    return out


# ================================================================================ execution
def _claim(db: Database, run_id: int) -> tuple[int, dict[str, Any]] | None:
    """``queued -> running`` with one more attempt; None when the run is not queued (cancelled,
    or another worker took it: a duplicated message is harmless)."""
    now = utcnow()
    with db.write() as s:
        run = s.get(TrainingRun, run_id)
        if run is None or run.status != "queued" or run.cancel_requested:
            return None
        run.status = "running"
        run.attempts += 1
        run.started_at = now
        run.heartbeat_at = now
        run.progress = None
        run.error = None
        return run.attempts, {
            "collection_id": run.collection_id,
            "model": run.model,
            "params": dict(run.params or {}),
            "options": check_options(run.options),
            "time_limit": run.time_limit_seconds,
        }


def _finish(db: Database, run_id: int, attempt: int, **fields: Any) -> bool:
    """Record the outcome unless the run moved on (recovered by a sweep, or finished)."""
    values = {**fields, "finished_at": utcnow(), "heartbeat_at": utcnow()}
    with db.write() as s:
        return bool(
            _rows_updated(
                s,
                update(TrainingRun)
                .where(
                    TrainingRun.id == run_id,
                    TrainingRun.status == "running",
                    TrainingRun.attempts == attempt,
                )
                .values(**values),
            )
        )


def _rows_updated(s: Session, stmt: Update) -> int:
    """Rows an UPDATE matched: its guard tells whether this caller won the transition."""
    result = s.execute(stmt)
    # Session.execute is typed as returning a Result; for DML without RETURNING it is a
    # CursorResult, which carries the rowcount.
    assert isinstance(result, CursorResult)
    return result.rowcount


class _Watch:
    """The job's link to its row while it runs: a thread polls the cancel flag every
    ``CANCEL_POLL_SECONDS`` and writes the heartbeat and progress every ``heartbeat``
    seconds; :meth:`check` (the fit's progress callback) raises :class:`StopFit` on cancel or
    at the time limit. The fit itself never touches the database."""

    def __init__(self, db: Database, run_id: int, time_limit: float, heartbeat: float) -> None:
        self.db, self.run_id = db, run_id
        self.deadline = time.monotonic() + time_limit
        self.time_limit = time_limit
        self.heartbeat = heartbeat
        self.progress: dict[str, Any] = {"stage": "loading"}
        self.cancelled = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> _Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        last_beat = time.monotonic()
        while not self._stop.wait(CANCEL_POLL_SECONDS):
            try:
                with self.db.read() as s:
                    flag = s.scalar(
                        select(TrainingRun.cancel_requested).where(TrainingRun.id == self.run_id)
                    )
                if flag:
                    self.cancelled.set()
                if time.monotonic() - last_beat >= self.heartbeat:
                    last_beat = time.monotonic()
                    with self.db.write() as s:
                        s.execute(
                            update(TrainingRun)
                            .where(TrainingRun.id == self.run_id, TrainingRun.status == "running")
                            .values(heartbeat_at=utcnow(), progress=dict(self.progress))
                        )
            except Exception:  # a busy database delays a beat; the next tick tries again
                continue

    def check(self) -> None:
        if self.cancelled.is_set():
            raise StopFit("cancelled", "cancelled while running")
        if time.monotonic() > self.deadline:
            raise StopFit("failed", f"time limit of {self.time_limit:g} s reached")

    def on_iteration(self, fold: int, folds: int, i: int, total: int) -> None:
        self.progress = {
            "stage": "fitting",
            "fold": fold,
            "folds": folds,
            "iteration": i,
            "iterations": total,
        }
        self.check()


def execute_run(run_id: int, *, db: Database, jobs: JobSettings | None = None) -> None:
    """Train run ``run_id`` (queued -> running -> done | failed | cancelled); in a worker."""
    jobs = jobs or JobSettings()
    claimed = _claim(db, run_id)
    if claimed is None:
        return
    attempt, spec = claimed
    limit = float(spec["time_limit"] or jobs.training_time_limit_seconds)
    with _Watch(db, run_id, limit, jobs.heartbeat_seconds) as watch:
        try:
            metrics, model_json = _train(db, spec, watch)
        except StopFit as stop:
            _finish(db, run_id, attempt, status=stop.status, metrics=None, error=str(stop))
            return
        except Exception as exc:  # the run records any failure; the worker carries on
            _finish(
                db,
                run_id,
                attempt,
                status="failed",
                metrics=None,
                error=f"{type(exc).__name__}: {exc}",
            )
            return
    _finish(
        db,
        run_id,
        attempt,
        status="done",
        metrics=metrics,
        model_json=model_json,
        error=None,
        progress={"stage": "done"},
    )


def _train(db: Database, spec: dict[str, Any], watch: _Watch) -> tuple[dict[str, Any], Any]:
    from ranking.estimators import experiments as E

    opts = spec["options"]
    est = _estimator(spec["model"], spec["params"])
    parts, scheme, k, scheme_name = _load_parts(db, spec["collection_id"], opts)
    watch.check()
    folds = E.folds_from_parts(parts, scheme, truth=opts["kind"], k=k, seed=opts["seed"])
    params = dict(spec["params"])
    if "k" in est.get_params() and "k" not in params:
        params["k"] = k
    seed = int(params.pop("seed", opts["seed"]))
    outcomes = E.evaluate_folds(
        folds,
        spec["model"],
        params,
        truth=opts["kind"],
        seed=seed,
        progress=watch.on_iteration,
    )
    measures = E.MEASURES[opts["kind"]]
    best = max(outcomes, key=lambda o: o.valid[measures[0]])
    metrics = {
        "truth": opts["truth"],
        "kind": opts["kind"],
        "k": k,
        "folds_scheme": scheme_name,
        "measures": list(measures),
        "folds": [
            {
                "name": o.name,
                "train_queries": o.train_queries,
                "valid_queries": o.valid_queries,
                "test_queries": o.test_queries,
                "best_iteration": o.best_iteration,
                "valid": o.valid,
                "test": o.test,
            }
            for o in outcomes
        ],
        "mean_test": {m: sum(o.test[m] for o in outcomes) / len(outcomes) for m in measures},
        "model_fold": best.name,
    }
    return E.strict_json(metrics), E.strict_json(best.model.to_dict())


# ================================================================================ truth
def _study_truth(db: Database, collection_id: int) -> tuple[dict[str, Any], set[int]]:
    """Per query with a finished top-k task: ``(top, rest)``; and the k values used."""
    truth: dict[str, tuple[list[str], list[str]]] = {}
    ks: set[int] = set()
    with db.read() as s:
        for src in sources(db=db, collection_id=collection_id, method="topk"):
            task = s.get(Task, src.task_id)
            assert task is not None
            result = replay_task(task, live_judgments(s, task.id)).result()
            truth[src.query_id] = (list(result.top), list(result.rest))
            ks.add(result.k)
    return truth, ks


def _documents(db: Database, collection_id: int) -> dict[str, dict[str, Any]]:
    """Per query (external id): description and ``{doc: (features, grade)}``."""
    out: dict[str, dict[str, Any]] = {}
    with db.read() as s:
        rows = s.execute(
            select(
                Query.external_id,
                Query.description,
                Document.external_id,
                Document.features,
                Document.grade,
            )
            .join(Document, Document.query_id == Query.id)
            .where(Query.collection_id == collection_id)
            .order_by(Query.id, Document.id)
        )
        for qid, description, doc, features, grade in rows:
            q = out.setdefault(qid, {"description": description, "docs": {}})
            q["docs"][doc] = (features, grade)
    return out


def _graded_dataset(docs: dict[str, dict[str, Any]], qids: Iterable[str]) -> Any:
    """Imported grades with feature vectors as a graded :class:`QueryDataset`."""
    from ranking.data.dataset import QueryDataset

    X, y, q, ids = [], [], [], []
    for qid in qids:
        for doc, (features, grade) in docs[qid]["docs"].items():
            if grade is None:
                continue  # not judged in the import: no truth for it
            if features is None:
                raise Invalid(
                    f"query {qid!r}: document {doc!r} has a grade but no feature vector "
                    "(import documents with 'features', or attach them)"
                )
            X.append(features)
            y.append(grade)
            q.append(qid)
            ids.append(doc)
    if not X:
        raise Invalid("no imported grades with feature vectors to train on")
    widths = {len(x) for x in X}
    if len(widths) != 1:
        raise Invalid(f"feature vectors of different lengths {sorted(widths)}")
    return QueryDataset.from_arrays(X, y, q, ids)


def _load_dataset(db: Database, collection_id: int, opts: dict[str, Any]) -> tuple[Any, int]:
    """The whole collection's truth as one data set, and the top-k k."""
    from ranking.data.dataset import QueryDataset, dataset_from_topk

    docs = _documents(db, collection_id)
    if opts["truth"] == "imported":
        data = _graded_dataset(docs, docs)
        return data, int(opts["k"] or 10)
    study, ks = _study_truth(db, collection_id)
    if len(ks) > 1:
        raise Invalid(f"the finished top-k tasks use different k values {sorted(ks)}")
    if opts["truth"] == "study" and not study:
        raise Invalid("the collection has no finished top-k task to train on")
    k = int(opts["k"] or (next(iter(ks)) if ks else 10))
    if ks and k not in ks:
        raise Invalid(f"k={k} differs from the k={next(iter(ks))} of the finished top-k tasks")
    parts = []
    if study:
        features: dict[str, dict[str, list[float]]] = {}
        for qid, (top, rest) in study.items():
            feats = {d: f for d, (f, _g) in docs[qid]["docs"].items() if f is not None}
            missing = [d for d in (*top, *rest) if d not in feats]
            if missing:
                raise Invalid(
                    f"query {qid!r}: document {missing[0]!r} has no feature vector "
                    "(import documents with 'features')"
                )
            features[qid] = feats
        parts.append(dataset_from_topk(features, study, k=k))
    if opts["truth"] == "both":
        others = [
            q
            for q in docs
            if q not in study and any(g is not None for _f, g in docs[q]["docs"].values())
        ]
        if others:
            parts.append(_graded_dataset(docs, others).to_topk(k, seed=opts["seed"]))
    if not parts:
        raise Invalid("the collection has neither finished top-k tasks nor imported grades")
    return QueryDataset.concat(parts), k


def _load_parts(
    db: Database, collection_id: int, opts: dict[str, Any]
) -> tuple[Any, Any, int, str]:
    """Data parts, the fold scheme over them, k, and the scheme's name (``letor``: the
    collection's own LETOR partitions; ``kfold``: seeded k-fold by query)."""
    from labeling.sources import letor_part
    from ranking.data.folds import letor4_folds, ohsumed_folds, rotation_folds
    from ranking.estimators import experiments as E

    data, k = _load_dataset(db, collection_id, opts)
    with db.read() as s:
        descriptions = dict(
            s.execute(
                select(Query.external_id, Query.description).where(
                    Query.collection_id == collection_id
                )
            ).all()
        )
    qids = [str(q) for q in data.query_ids]
    part_of = {q: letor_part(descriptions.get(q, "")) for q in qids}
    named = all(p is not None for p in part_of.values())
    if opts["folds"] == "letor" and not named:
        bare = next(q for q, p in part_of.items() if p is None)
        raise Invalid(
            f"folds 'letor' needs every query imported from a LETOR partition file "
            f"(S1.txt..S5.txt); query {bare!r} was not"
        )
    if named and opts["folds"] in ("auto", "letor"):
        names = sorted({p for p in part_of.values() if p is not None})
        index = {q: i for i, q in enumerate(qids)}
        parts = {n: data.subset(sorted(index[q] for q in qids if part_of[q] == n)) for n in names}
        if names == ["S1", "S2", "S3", "S4", "S5"]:
            scheme = letor4_folds()
        elif names == [f"Fold{i}_test" for i in range(1, 6)]:
            scheme = ohsumed_folds()
        elif len(names) >= 3:
            scheme = rotation_folds(names)
        else:
            raise Invalid(f"LETOR parts {names} are too few for folds (need 3 or more)")
        return parts, scheme, k, "letor"
    n = opts["folds"] if isinstance(opts["folds"], int) else min(5, data.n_queries)
    if data.n_queries < max(n, 3):
        raise Invalid(
            f"{data.n_queries} queries with truth are too few for {max(n, 3)} folds "
            "(train, validation and test need one query each)"
        )
    try:
        parts = E.kfold_parts(data, n, seed=opts["seed"])
    except ValueError as exc:
        raise Invalid(str(exc)) from None
    return parts, rotation_folds(list(parts)), k, "kfold"
