"""Use case: training runs, executed as queued jobs by a worker process (docs/training.md).

Life of a run (``training_run`` row, the only state; the queue carries just its id):

- :func:`create_run` validates the request and records it ``queued``; the router enqueues it
  (:func:`app.training.jobs.enqueue_training`);
- :func:`app.training.execution.execute_run` (in ``heapjudge worker``) claims it
  (``queued -> running``, one more attempt), loads the truth and folds, and fits with a
  progress callback: between two iterations the fit stops when the run was cancelled
  or its time limit passed (``failed``); its final write is conditional on the run still
  running, so a cancelled run stays ``cancelled``. A heartbeat thread writes
  ``heartbeat_at`` and ``progress`` meanwhile;
- :func:`cancel_run` cancels a queued or running run at once (a running one's worker stops
  the fit at its next iteration and drops its outcome);
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
n seeded folds. Every fold reports validation and test measures (cross-validation figures
only); the stored model is the refit on every query with the run's params and the median of
the folds' early-stopped iteration counts, and the metrics put BM25 and LightGBM beside it on
the same folds (:mod:`app.training.baselines`, docs/training.md#the-kept-model).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from app.kernel.db import Database
from app.kernel.errors import Conflict, Invalid, NotFound
from app.kernel.models import TrainingRun, utcnow
from app.kernel.settings import Settings
from app.training import repository
from app.training.features import check_computable

TRUTHS = ("imported", "study", "both")
KINDS = ("graded", "topk")
FINISHED = ("done", "failed", "cancelled")
FEATURES = ("stored", "text")


def make_estimator(model: str, params: dict[str, Any]) -> Any:
    """The estimator ``model`` with ``params`` (:data:`ranking.estimators.ESTIMATORS`);
    Invalid naming the models or the allowed params otherwise."""
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
    unknown = sorted(set(opts) - {"truth", "kind", "folds", "k", "seed", "features"})
    if unknown:
        raise Invalid(
            f"unknown option(s) {', '.join(unknown)}; allowed: truth, kind, folds, k, seed, "
            "features"
        )
    features = opts.get("features", "stored")
    if features not in FEATURES:
        raise Invalid(f"features must be one of {', '.join(FEATURES)}, got {features!r}")
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
    return {
        "truth": truth,
        "kind": kind,
        "folds": folds,
        "k": k,
        "seed": seed,
        "features": features,
    }


def refuse_hopeless(s: Any, collection_id: int, opts: dict[str, Any]) -> None:
    """In transaction ``s``, refuse at once a run that cannot succeed (NotFound, Conflict or
    Invalid naming what is missing and what to do): features to train on (``stored``: some
    document row has a vector; ``text``: they can be computed, as
    :func:`app.training.features.check_computable` says) and truth of the kind asked
    (imported grades; a finished top-k task)."""
    if not repository.collection_exists(s, collection_id):
        raise NotFound(f"no collection with id {collection_id}")
    if opts["features"] == "text":
        check_computable(s, collection_id, replace=False)
    else:
        _rows, with_vectors = repository.vector_counts(s, collection_id)
        if not with_vectors:
            raise Invalid(
                f"no document of collection {collection_id} has a feature vector, so nothing "
                "can be trained: compute heapjudge's text features first (POST "
                f"/api/v1/admin/collections/{collection_id}/features, or heapjudge admin "
                'features), train with options.features = "text", or attach LETOR vectors'
            )
    graded = repository.graded_rows(s, collection_id)
    finished = repository.finished_topk_tasks(s, collection_id)
    truth = opts["truth"]
    if truth == "imported" and not graded:
        raise Invalid(f"truth 'imported': no document of collection {collection_id} has a grade")
    if truth == "study" and not finished:
        raise Invalid(
            f"truth 'study': collection {collection_id} has no finished top-k task to train on"
        )
    if truth == "both" and not (graded or finished):
        raise Invalid(
            f"truth 'both': collection {collection_id} has neither finished top-k tasks nor "
            "imported grades"
        )


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
) -> dict[str, Any]:
    """Validate and record a queued run; returns its JSON view (the caller enqueues it)."""
    params = dict(params or {})
    make_estimator(model, params)
    opts = check_options(options)
    limit = time_limit_seconds or db.settings.training_time_limit_seconds
    with db.write() as s:
        refuse_hopeless(s, collection_id, opts)
        run = TrainingRun(
            collection_id=collection_id,
            model=model,
            params=params,
            options=opts,
            status="queued",
            time_limit_seconds=limit,
            heartbeat_at=utcnow(),  # enqueue time: the recovery sweep's clock for a queued run
        )
        return describe(repository.add_run(s, run))


def get_run(*, db: Database, run_id: int) -> dict[str, Any]:
    """The JSON view of run ``run_id`` (reads only)."""
    with db.read() as s:
        run = repository.run_by_id(s, run_id)
        if run is None:
            raise NotFound(f"no training run with id {run_id}")
        return describe(run)


def list_runs(*, db: Database, collection_id: int | None = None) -> list[dict[str, Any]]:
    """Runs, newest first, without their model JSON nor the per-query values of their result
    table (GET of one run has both; reads only)."""
    with db.read() as s:
        return [
            {**describe(r), "metrics": _brief_metrics(r.metrics), "model_json": None}
            for r in repository.runs(s, collection_id)
        ]


def _brief_metrics(metrics: dict[str, Any] | None) -> dict[str, Any] | None:
    """``metrics`` without the comparison rows' ``per_query`` values (a list stays small)."""
    if not metrics or not metrics.get("comparison"):
        return metrics
    table = metrics["comparison"]
    rows = [{k: v for k, v in row.items() if k != "per_query"} for row in table.get("rows", [])]
    return {**metrics, "comparison": {**table, "rows": rows}}


def cancel_run(*, db: Database, run_id: int) -> dict[str, Any]:
    """Cancel a queued or running run: one conditional UPDATE makes it ``cancelled`` at once,
    so once this returns the run never ends otherwise (a running fit's worker stops at its
    next iteration and its outcome is dropped, docs/training.md#life-of-a-run). Cancelling a
    cancelled run is harmless; a run that ended ``done`` or ``failed`` is a 409."""
    with db.write() as s:
        changed = repository.cancel(s, run_id, utcnow())
        run = repository.run_by_id(s, run_id)
        if run is None:
            raise NotFound(f"no training run with id {run_id}")
        if not changed and run.status != "cancelled":
            raise Conflict(f"training run {run_id} already ended ({run.status})")
        return describe(run)


def recover_stalled(
    *,
    db: Database,
    pending: Callable[[], set[int]],
    enqueue: Callable[[int], Any],
    settings: Settings | None = None,
) -> dict[str, list[int]]:
    """Retry or fail runs whose worker is gone; re-enqueue queued runs whose message is gone.

    A ``running`` run whose ``heartbeat_at`` is older than ``training_stale_seconds`` lost its
    worker (killed, crashed, machine restarted): it is queued again while it has had fewer than
    ``training_max_attempts`` executions, else failed with a reason. A ``queued`` run that old
    whose id is not among the queue's ``pending()`` messages is enqueued again. Every change is
    a conditional UPDATE, so two workers sweeping at once act once.
    """
    jobs = settings or db.settings
    cutoff = utcnow() - timedelta(seconds=jobs.training_stale_seconds)
    with db.read() as s:
        stale = repository.stale_runs(s, cutoff)
    out: dict[str, list[int]] = {"retried": [], "failed": [], "requeued": []}
    if not stale:
        return out
    waiting = pending() if any(st == "queued" for _, st, _ in stale) else set()
    for run_id, status, attempts in stale:
        if status == "queued" and run_id in waiting:
            continue
        now = utcnow()
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
            changed = repository.move_stale(s, run_id, status, attempts, cutoff, values)
        if changed:
            out[kind].append(run_id)
            if kind != "failed":
                enqueue(run_id)
    return out
