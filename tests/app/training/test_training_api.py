"""``/api/v1/training-runs``: queued jobs executed by a real ``heapjudge worker`` process,
per-fold validation and test metrics, truth sources, bad requests, read-only GETs."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pytest
from sqlalchemy import select

from app.analysis.study import StudyConfig, run_simulated_study
from app.kernel.models import Document, TrainingRun
from tests.app.conftest import Api
from tests.app.training.support import Worker, finished, wait_for

TINY = StudyConfig(assessors=4, queries=4, docs=6, k=3, seed=5, collection="training-study")


@pytest.fixture(scope="module")
def worker(api: Api, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    """One worker for the module; the app enqueues on the same queue file."""
    tmp = tmp_path_factory.mktemp("queue")
    queue = f"sqlite:///{tmp / 'queue.db'}"
    with pytest.MonkeyPatch.context() as mp:
        # The app's settings, read once: the queue it enqueues on is the worker's.
        mp.setattr(api.db.settings, "queue_url", queue)
        w = Worker(api.settings.database_url, queue, tmp / "worker.log").start()
        try:
            yield w
        finally:
            w.stop()


@pytest.fixture(scope="module")
def study(api: Api) -> int:
    summary = run_simulated_study(db=api.db, config=TINY)
    rng = np.random.default_rng(0)
    with api.db.write() as s:
        for doc in s.scalars(
            select(Document).where(Document.collection_id == summary.collection_id)
        ):
            doc.features = rng.random(4).round(6).tolist()
            doc.grade = int(rng.integers(0, 3))
    api.add_user("dora")
    return summary.collection_id


def _post(api: Api, body: dict) -> dict:
    r = api.post("admin", "/api/v1/training-runs", json=body)
    assert r.status_code == 202, r.text
    return r.json()


def test_a_worker_trains_on_study_truth_with_per_fold_test_metrics(
    api: Api, study: int, worker: Worker
) -> None:
    run = _post(
        api,
        {"collection_id": study, "model": "focusednet", "params": {"beta": 0.5, "epochs": 20}},
    )
    assert run["status"] == "queued" and run["model_json"] is None and run["attempts"] == 0
    got = wait_for(api, run["id"], finished)
    assert got["status"] == "done", got["error"]
    assert got["attempts"] == 1 and got["progress"] == {"stage": "done"}
    m = got["metrics"]
    assert (m["truth"], m["kind"], m["k"], m["folds_scheme"]) == ("study", "topk", 3, "kfold")
    # 4 queries -> 4 folds, each: 2 train, 1 validation, 1 test; every query tested once.
    assert [f["name"] for f in m["folds"]] == ["Fold1", "Fold2", "Fold3", "Fold4"]
    for f in m["folds"]:
        assert (f["train_queries"], f["valid_queries"], f["test_queries"]) == (2, 1, 1)
        assert set(f["test"]) == {"kappa_ndcg@5", "kappa_ndcg@10", "kappa_err"}
        assert all(0.0 <= v <= 1.0 for v in f["test"].values())
    for measure, mean in m["mean_test"].items():
        assert mean == pytest.approx(np.mean([f["test"][measure] for f in m["folds"]]))
    # The kept model is the refit on all four queries (tests/app/training/
    # test_kept_model_and_baselines.py checks it equals one fitted independently).
    assert m["kept"]["model"] == "refit" and m["kept"]["queries"] == 4
    names = [r["name"] for r in m["comparison"]["rows"]]
    assert names == ["focusednet", "bm25", "lightgbm"]
    from ranking.estimators import Ranker

    model = Ranker.from_dict(got["model_json"])
    assert model.predict(np.zeros((2, 4))).shape == (2,)


def test_imported_grades_as_truth_graded_and_topk(api: Api, study: int, worker: Worker) -> None:
    graded = _post(
        api,
        {
            "collection_id": study,
            "model": "ranknet",
            "params": {"epochs": 10},
            "options": {"truth": "imported", "folds": 3},
        },
    )
    both = _post(
        api,
        {
            "collection_id": study,
            "model": "focusedboost",
            "params": {"n_rounds": 5},
            "options": {"truth": "both"},
        },
    )
    g = wait_for(api, graded["id"], finished)
    assert g["status"] == "done", g["error"]
    assert g["metrics"]["kind"] == "graded" and len(g["metrics"]["folds"]) == 3
    assert set(g["metrics"]["mean_test"]) == {"ndcg@5", "ndcg@10", "err"}
    b = wait_for(api, both["id"], finished)
    assert b["status"] == "done", b["error"]
    assert b["metrics"]["truth"] == "both" and b["metrics"]["kind"] == "topk"


def test_bad_requests_change_nothing(api: Api, study: int) -> None:
    with api.db.read() as s:
        before = s.scalar(select(TrainingRun.id).order_by(TrainingRun.id.desc()).limit(1))
    cases = [
        ({"collection_id": study, "model": "nope"}, 422, "nope"),
        ({"collection_id": study, "model": "focusednet", "params": {"gamma": 1}}, 422, "gamma"),
        ({"collection_id": study, "model": "ranknet", "options": {"truth": "x"}}, 422, "truth"),
        ({"collection_id": study, "model": "ranknet", "options": {"folds": 2}}, 422, "folds"),
        (
            {"collection_id": study, "model": "ranknet", "options": {"kind": "graded"}},
            422,
            "graded",
        ),
        ({"collection_id": study, "model": "ranknet", "time_limit_seconds": 0}, 422, "time"),
        ({"collection_id": 99999, "model": "ranknet"}, 404, "99999"),
    ]
    for body, code, word in cases:
        r = api.post("admin", "/api/v1/training-runs", json=body)
        assert r.status_code == code, (body, r.text)
        assert word in json.dumps(r.json()["detail"]), (body, r.text)
    assert api.get("admin", "/api/v1/training-runs/99999").status_code == 404
    assert api.post("admin", "/api/v1/training-runs/99999/cancel").status_code == 404
    r = api.post("dora", "/api/v1/training-runs", json={"collection_id": study, "model": "ranknet"})
    assert r.status_code == 403
    with api.db.read() as s:
        after = s.scalar(select(TrainingRun.id).order_by(TrainingRun.id.desc()).limit(1))
    assert after == before


def test_runs_that_cannot_succeed_are_refused_at_once(api: Api, study: int) -> None:
    """No feature vectors and no extractor chosen, or no truth of the kind asked: 422 at
    ``POST`` (not accepted, then failed by the worker), and no run recorded."""
    from app.collections.service import create_collection

    empty = create_collection(db=api.db, name="no-topk-yet")
    with api.db.read() as s:
        before = s.scalar(select(TrainingRun.id).order_by(TrainingRun.id.desc()).limit(1))
    cases = [
        ({"collection_id": empty.id, "model": "ranknet"}, "has a feature vector"),
        (
            {"collection_id": empty.id, "model": "ranknet", "options": {"features": "text"}},
            "no documents",
        ),
        (
            {"collection_id": empty.id, "model": "ranknet", "options": {"folds": "letor"}},
            "has a feature vector",
        ),
        ({"collection_id": study, "model": "ranknet", "options": {"features": "x"}}, "features"),
    ]
    for body, words in cases:
        r = api.post("admin", "/api/v1/training-runs", json=body)
        assert r.status_code == 422, (body, r.text)
        assert words in json.dumps(r.json()["detail"]), (body, r.text)
    with api.db.read() as s:
        after = s.scalar(select(TrainingRun.id).order_by(TrainingRun.id.desc()).limit(1))
    assert after == before


def test_gets_never_write(api: Api, study: int) -> None:
    """A run that looks abandoned stays as it is under GETs; only a worker's sweep acts."""
    from datetime import timedelta

    from app.kernel.models import utcnow

    with api.db.write() as s:
        run = TrainingRun(
            collection_id=study,
            model="ranknet",
            params={},
            options={},
            status="running",
            attempts=1,
            heartbeat_at=utcnow() - timedelta(days=1),
        )
        s.add(run)
        s.flush()
        run_id = run.id

    def row() -> tuple:
        with api.db.read() as s:
            r = s.get(TrainingRun, run_id)
            assert r is not None
            return (r.status, r.attempts, r.heartbeat_at, r.error, r.finished_at)

    before = row()
    for _ in range(3):
        assert api.get("admin", f"/api/v1/training-runs/{run_id}").json()["status"] == "running"
        assert any(x["id"] == run_id for x in api.get("admin", "/api/v1/training-runs").json())
    assert row() == before
    with api.db.write() as s:  # leave nothing for the module's worker to retry
        s.execute(
            TrainingRun.__table__.update()
            .where(TrainingRun.id == run_id)
            .values(status="failed", error="test row")
        )


def test_list_filters_by_collection(api: Api, study: int) -> None:
    rows = api.get("admin", f"/api/v1/training-runs?collection_id={study}").json()
    assert rows and all(r["collection_id"] == study and r["model_json"] is None for r in rows)
    assert [r["id"] for r in rows] == sorted((r["id"] for r in rows), reverse=True)


def test_strict_json_has_no_nan(api: Api, study: int, worker: Worker) -> None:
    # Without validation iterations, best_valid_score_ would be NaN; runs always early-stop on
    # validation, but the stored model and metrics must never carry NaN either way.
    run = _post(api, {"collection_id": study, "model": "ranksvm", "params": {"iterations": 5}})
    got = wait_for(api, run["id"], finished)
    text = api.get("admin", f"/api/v1/training-runs/{run['id']}").text
    assert "NaN" not in text and "Infinity" not in text
    assert got["status"] == "done", got["error"]
