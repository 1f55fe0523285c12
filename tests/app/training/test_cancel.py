"""What cancelling a training run guarantees (docs/training.md#life-of-a-run), on SQLite and
Postgres: once cancel answers 200 the run is ``cancelled`` and never ends ``done``, even when
its fit finishes right after the cancel; a run that already ended answers 409 and keeps its
outcome. The races are made deterministic by cancelling from inside the fit, after its last
cancel check and before the worker's final write."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.training import execution
from app.training.execution import claim_run, execute_run, finish_run
from tests.app.conftest import Api

METRICS = {"mean_test": {"kappa_ndcg@5": 0.5}}


@pytest.fixture(scope="module")
def collection(api: Api) -> int:
    """A collection a run can train on (graded documents with feature vectors): a run that
    cannot succeed is refused at POST, before there is anything to cancel."""
    r = api.post("admin", "/api/v1/collections", json={"name": "cancel-races"})
    assert r.status_code == 201, r.text
    cid = int(r.json()["id"])
    lines = [
        json.dumps({"query_id": "q1", "query": "q", "doc_id": f"d{i}", "features": [i], "grade": i})
        for i in range(3)
    ]
    r = api.post(
        "admin",
        f"/api/v1/collections/{cid}/import",
        content="\n".join(lines).encode(),
        headers={"Content-Type": "application/x-ndjson"},
    )
    assert r.status_code == 200, r.text
    return cid


def _queued(api: Api, collection: int) -> int:
    r = api.post(
        "admin",
        "/api/v1/training-runs",
        json={
            "collection_id": collection,
            "model": "ranknet",
            "params": {"epochs": 1},
            "options": {"truth": "imported"},
        },
    )
    assert r.status_code == 202, r.text
    return int(r.json()["id"])


def _run(api: Api, run_id: int) -> dict[str, Any]:
    r = api.get("admin", f"/api/v1/training-runs/{run_id}")
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_cancel_as_the_fit_finishes_ends_cancelled_never_done(
    api: Api, collection: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = _queued(api, collection)
    answers: list[Any] = []

    def fit_then_cancel(db: Any, spec: dict[str, Any], watch: Any) -> tuple[Any, Any]:
        # The fit's last iteration passed its cancel check; the cancel lands now.
        answers.append(api.post("admin", f"/api/v1/training-runs/{run_id}/cancel"))
        return METRICS, {"weights": [1.0]}

    monkeypatch.setattr(execution, "_train", fit_then_cancel)
    execute_run(run_id, db=api.db)
    (answer,) = answers
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "cancelled"
    got = _run(api, run_id)
    assert got["status"] == "cancelled" and got["error"] == "cancelled while running"
    assert got["metrics"] is None and got["model_json"] is None
    assert got["attempts"] == 1 and got["finished_at"] == answer.json()["finished_at"]


def test_worker_final_write_after_cancel_changes_nothing(api: Api, collection: int) -> None:
    run_id = _queued(api, collection)
    claimed = claim_run(api.db, run_id)
    assert claimed is not None
    attempt, _spec = claimed
    r = api.post("admin", f"/api/v1/training-runs/{run_id}/cancel")
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    assert not finish_run(
        api.db, run_id, attempt, status="done", metrics=METRICS, model_json={}, error=None
    )
    got = _run(api, run_id)
    assert got["status"] == "cancelled" and got["metrics"] is None
    # A cancelled run is not claimed again (a duplicated queue message).
    assert claim_run(api.db, run_id) is None
    # Cancelling twice is harmless.
    again = api.post("admin", f"/api/v1/training-runs/{run_id}/cancel")
    assert again.status_code == 200 and again.json()["status"] == "cancelled"


def test_cancel_after_the_run_ended_is_409_and_keeps_it_done(api: Api, collection: int) -> None:
    run_id = _queued(api, collection)
    claimed = claim_run(api.db, run_id)
    assert claimed is not None
    assert finish_run(
        api.db, run_id, claimed[0], status="done", metrics=METRICS, model_json={}, error=None
    )
    r = api.post("admin", f"/api/v1/training-runs/{run_id}/cancel")
    assert r.status_code == 409, r.text
    got = _run(api, run_id)
    assert got["status"] == "done" and got["metrics"] == METRICS
    assert got["cancel_requested"] is False


def test_cancel_of_a_queued_run_and_of_a_missing_one(api: Api, collection: int) -> None:
    run_id = _queued(api, collection)
    r = api.post("admin", f"/api/v1/training-runs/{run_id}/cancel")
    assert r.status_code == 200
    assert r.json()["status"] == "cancelled"
    assert r.json()["error"] == "cancelled before it started"
    assert claim_run(api.db, run_id) is None
    assert api.post("admin", "/api/v1/training-runs/999999/cancel").status_code == 404
