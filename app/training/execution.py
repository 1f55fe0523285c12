"""Executing a training run in a worker (docs/training.md): claim it (``queued -> running``,
one more attempt), load the truth and folds (:mod:`app.training.truth`), fit with a progress
callback that stops between two iterations on cancel or at the time limit, and record the
outcome unless the run moved on meanwhile (cancelled, or recovered by a sweep). A thread
writes the heartbeat and progress while the fit runs; the fit itself never touches the
database. The ranking core's experiments load inside :func:`execute_run`'s fit, in the worker
only."""

from __future__ import annotations

import threading
import time
from statistics import median
from typing import Any

from app.kernel.db import Database
from app.kernel.models import utcnow
from app.training import repository
from app.training.features import compute_features, feature_status
from app.training.service import check_options, make_estimator
from app.training.truth import load_parts

CANCEL_POLL_SECONDS = 0.2  # a cancel stops a fit within this plus one iteration


class StopFit(Exception):
    """Raised from the fit's progress callback to stop it between two iterations."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


def claim_run(db: Database, run_id: int) -> tuple[int, dict[str, Any]] | None:
    """``queued -> running`` with one more attempt (one conditional UPDATE): the attempt and
    what to train; None when the run is not queued (cancelled, or another worker took it: a
    duplicated message is harmless)."""
    with db.write() as s:
        if not repository.claim(s, run_id, utcnow()):
            return None
        run = repository.run_by_id(s, run_id)
        assert run is not None  # claimed in this transaction
        return run.attempts, {
            "collection_id": run.collection_id,
            "model": run.model,
            "params": dict(run.params or {}),
            "options": check_options(run.options),
            "time_limit": run.time_limit_seconds,
        }


def finish_run(db: Database, run_id: int, attempt: int, **fields: Any) -> bool:
    """Record the outcome of ``attempt`` in one UPDATE conditional on the run still running it;
    False when it moved on (cancelled, recovered by a sweep): the outcome is dropped, and a
    cancelled run's ``heartbeat_at`` says when this worker stopped (docs/training.md)."""
    now = utcnow()
    values = {**fields, "finished_at": now, "heartbeat_at": now}
    with db.write() as s:
        if repository.finish_attempt(s, run_id, attempt, values):
            return True
        repository.note_stopped(s, run_id, attempt, now)
        return False


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
                    flag = repository.cancel_requested(s, self.run_id)
                if flag:
                    self.cancelled.set()
                if time.monotonic() - last_beat >= self.heartbeat:
                    last_beat = time.monotonic()
                    with self.db.write() as s:
                        repository.beat(s, self.run_id, dict(self.progress))
            except Exception:  # a busy database delays a beat; the next tick tries again
                continue

    def check(self) -> None:
        if self.cancelled.is_set():
            raise StopFit("cancelled", "cancelled while running")
        if time.monotonic() > self.deadline:
            raise StopFit("failed", f"time limit of {self.time_limit:g} s reached")

    def on_stage(self, stage: str, i: int, total: int) -> None:
        """Progress after the folds: the refit and the baselines (``iteration`` of
        ``iterations`` when they count any)."""
        self.progress = {"stage": stage, "iteration": i, "iterations": total}
        self.check()

    def on_iteration(self, fold: int, folds: int, i: int, total: int) -> None:
        self.progress = {
            "stage": "fitting",
            "fold": fold,
            "folds": folds,
            "iteration": i,
            "iterations": total,
        }
        self.check()


def execute_run(run_id: int, *, db: Database) -> None:
    """Train run ``run_id`` (queued -> running -> done | failed | cancelled); in a worker."""
    jobs = db.settings
    claimed = claim_run(db, run_id)
    if claimed is None:
        return
    attempt, spec = claimed
    limit = float(spec["time_limit"] or jobs.training_time_limit_seconds)
    with _Watch(db, run_id, limit, jobs.heartbeat_seconds) as watch:
        try:
            metrics, model_json = _train(db, spec, watch)
        except StopFit as stop:
            finish_run(db, run_id, attempt, status=stop.status, metrics=None, error=str(stop))
            return
        except Exception as exc:  # the run records any failure; the worker carries on
            finish_run(
                db,
                run_id,
                attempt,
                status="failed",
                metrics=None,
                error=f"{type(exc).__name__}: {exc}",
            )
            return
    finish_run(
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
    est = make_estimator(spec["model"], spec["params"])
    if opts["features"] == "text":
        watch.progress = {"stage": "features"}
        compute_features(db=db, collection_id=spec["collection_id"])
        watch.check()
    trained_on = feature_status(db=db, collection_id=spec["collection_id"])
    parts, scheme, k, scheme_name = load_parts(db, spec["collection_id"], opts)
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
    kept, kept_model = _refit(parts, spec["model"], params, outcomes, opts, k, seed, watch)
    table = _baselines(db, spec, parts, folds, outcomes, opts, scheme_name, seed, watch)
    metrics = {
        "truth": opts["truth"],
        "kind": opts["kind"],
        "k": k,
        "folds_scheme": scheme_name,
        "features": {
            "source": trained_on.source,
            "feature_set": _brief(trained_on.feature_set),
            "width": int(parts[next(iter(parts))].X.shape[1]),
        },
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
        "kept": kept,
        "comparison": table,
    }
    return E.strict_json(metrics), E.strict_json(kept_model.to_dict())


def _refit(
    parts: Any,
    model: str,
    params: dict[str, Any],
    outcomes: list[Any],
    opts: dict[str, Any],
    k: int,
    seed: int,
    watch: _Watch,
) -> tuple[dict[str, Any], Any]:
    """The kept model: refit on every query with the run's hyperparameters and the median of
    the folds' early-stopped iteration counts (no part is left to early-stop on); the fold
    models stay cross-validation figures only (docs/training.md#the-kept-model)."""
    from ranking.estimators import experiments as E

    best = [int(o.best_iteration) for o in outcomes]
    iterations = max(1, round(median(best)))
    name = E.iteration_param(model)
    queries = sum(p.n_queries for p in parts.values())

    def step(i: int, total: int) -> None:
        watch.on_stage("refit", i, total)

    est = E.refit(
        parts,
        model,
        {key: v for key, v in params.items() if key != name},
        truth=opts["kind"],
        iterations=iterations,
        k=k,
        seed=seed,
        progress=step,
    )
    kept = {
        "model": "refit",
        "queries": queries,
        "params": {**{key: v for key, v in params.items() if key != name}, name: iterations},
        "iteration_param": name,
        "iterations": iterations,
        "fold_best_iterations": best,
        "why": f"refit on all {queries} queries with the run's hyperparameters and {name} = "
        f"{iterations}, the median of the folds' early-stopped counts {best}: every query "
        "trains the kept model; the fold models, each trained on part of the queries and "
        "chosen on a different validation part, are kept only as the cross-validation "
        "figures",
    }
    return kept, est


def _baselines(
    db: Database,
    spec: dict[str, Any],
    parts: Any,
    folds: Any,
    outcomes: list[Any],
    opts: dict[str, Any],
    scheme_name: str,
    seed: int,
    watch: _Watch,
) -> dict[str, Any]:
    """BM25 and LightGBM on the run's folds and truth, and the table with the model
    (:mod:`app.training.baselines`). A baseline that cannot run is a row saying why; a
    cancel or the time limit still stops the run."""
    from app.training import baselines
    from ranking.data.dataset import QueryDataset
    from ranking.estimators import experiments as E

    kind = opts["kind"]
    rows: list[tuple[str, Any, str]] = []
    watch.on_stage("baseline bm25", 0, 0)
    try:
        everything = QueryDataset.concat([parts[n] for n in sorted(parts)])
        scorer, source = baselines.bm25_scorer(
            db, spec["collection_id"], everything, scheme=scheme_name
        )
        values = None if scorer is None else E.score_folds(folds, scorer, truth=kind)
    except StopFit:
        raise
    except Exception as exc:  # the run's model is still worth keeping; the row says why
        values, source = None, f"not available: {type(exc).__name__}: {exc}"
    rows.append(("bm25", values, source))
    missing = E.lightgbm_missing()
    if missing:
        rows.append(("lightgbm", None, f"not available: {missing}"))
    else:

        def step(fold: int, n: int, i: int, total: int) -> None:
            watch.on_stage(f"baseline lightgbm, fold {fold} of {n}", i, total)

        try:
            fitted = E.evaluate_folds(
                folds, E.LIGHTGBM, {"n_jobs": 1}, truth=kind, seed=seed, progress=step
            )
            rows.append(
                (
                    "lightgbm",
                    [o.test_values for o in fitted],
                    "LightGBM lambdarank on the same folds and truth, trees early-stopped on "
                    "each fold's validation part (NDCG@10), "
                    f"best iterations {[o.best_iteration for o in fitted]}",
                )
            )
        except StopFit:
            raise
        except Exception as exc:
            rows.append(("lightgbm", None, f"not available: {type(exc).__name__}: {exc}"))
    return baselines.comparison(
        model=spec["model"],
        measures=E.MEASURES[kind],
        model_values=[o.test_values for o in outcomes],
        baselines=rows,
        query_ids=[[str(q) for q in f.test.query_ids] for f in folds],
    )


def _brief(feature_set: dict[str, Any] | None) -> dict[str, Any] | None:
    """The feature set's name and version (its column names are on the collection)."""
    if not feature_set:
        return None
    return {"name": feature_set.get("name"), "version": feature_set.get("version")}
