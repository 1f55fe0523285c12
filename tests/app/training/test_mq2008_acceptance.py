"""Acceptance on MQ2008 with heapjudge commands and REST only: import S1..S5 as one LETOR
collection, ``heapjudge serve`` (with its training worker), a training run over REST on the
imported labels with the S1-S5 folds, the kept model checked against RankNet refitted on the
partition files themselves, then ``heapjudge cv --baseline lightgbm`` with strict JSON, whose
LightGBM folds the run's own LightGBM row equals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from tests.conftest import oracle
from tests.e2e.web_support import heapjudge_serve


def _cli(*args: str, cwd: Path, env: dict[str, str], stdin: str | None = None) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def _strict(text: str) -> object:
    def refuse(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.slow
def test_mq2008_letor_import_train_over_rest_and_cv_baseline(
    shared_data: Path, tmp_path: Path
) -> None:
    data = shared_data / "letor4-mq2008"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEAPJUDGE_")}
    env.update({"HEAPJUDGE_DEV": "1", "HEAPJUDGE_DATABASE_URL": f"sqlite:///{tmp_path / 'mq.db'}"})
    _cli("db", "upgrade", cwd=tmp_path, env=env)
    for part in ("S1", "S2", "S3", "S4", "S5"):
        _cli("admin", "import-letor", "mq2008", str(data / f"{part}.txt"), cwd=tmp_path, env=env)
    _cli(
        "create-user", "admin", "--role", "admin", cwd=tmp_path, env=env, stdin="a long password\n"
    )

    with heapjudge_serve(tmp_path, env) as base:
        token = httpx.post(
            f"{base}/api/v1/auth/token", data={"username": "admin", "password": "a long password"}
        ).json()["access_token"]
        h = {"Authorization": f"Bearer {token}"}
        (coll,) = [c for c in httpx.get(f"{base}/api/v1/collections", headers=h).json()]
        body = {
            "collection_id": coll["id"],
            "model": "ranknet",
            "params": {"epochs": 60, "eval_every": 5, "patience": 3},
            "options": {"truth": "imported", "folds": "letor"},
        }
        r = httpx.post(f"{base}/api/v1/training-runs", json=body, headers=h)
        assert r.status_code == 202, r.text
        run_id = r.json()["id"]
        deadline = time.monotonic() + 600
        while True:
            r = httpx.get(f"{base}/api/v1/training-runs/{run_id}", headers=h)
            run = _strict(r.text)
            assert isinstance(run, dict)
            if run["status"] in ("done", "failed", "cancelled"):
                break
            assert time.monotonic() < deadline, run
            time.sleep(0.5)
    assert run["status"] == "done", run["error"]
    m = run["metrics"]
    assert (m["truth"], m["kind"], m["folds_scheme"]) == ("imported", "graded", "letor")
    from ranking.data.dataset import QueryDataset
    from ranking.data.folds import letor4_folds
    from ranking.estimators import Ranker

    parts = {n: QueryDataset.read(data / f"{n}.txt") for n in ("S1", "S2", "S3", "S4", "S5")}
    folds = {f.name: f for f in letor4_folds()}
    assert [f["name"] for f in m["folds"]] == list(folds)
    for f in m["folds"]:
        spec = folds[f["name"]]
        assert f["test_queries"] == parts[spec.test[0]].n_queries
        assert f["valid_queries"] == parts[spec.vali[0]].n_queries
        assert f["train_queries"] == sum(parts[n].n_queries for n in spec.train)
    # Oracle: the kept model is RankNet refitted here on the five files read straight from
    # disk, with the run's epochs (the median of the folds' early-stopped counts).
    from ranking.estimators import RankNet

    kept = m["kept"]
    assert kept["model"] == "refit" and kept["queries"] == 784
    best = [f["best_iteration"] for f in m["folds"]]
    assert kept["iterations"] == max(1, round(float(np.median(best))))
    model = Ranker.from_dict(run["model_json"])
    everything = QueryDataset.concat([parts[n] for n in sorted(parts)])
    again = RankNet(**{**body["params"], "epochs": kept["iterations"]}, seed=0).fit(everything)
    assert np.allclose(model.predict(everything), again.predict(everything), atol=1e-8)
    # BM25 is LETOR 4.0's feature 25 here (no texts); the table holds LightGBM when installed.
    rows = {r["name"]: r for r in m["comparison"]["rows"]}
    assert "LETOR 4.0 feature 25" in rows["bm25"]["source"]
    assert rows["ranknet"]["mean_test"] == pytest.approx(m["mean_test"])
    for measure in ("ndcg@5", "ndcg@10", "err"):
        fold_means = [f["test"][measure] for f in m["folds"]]
        assert np.mean(fold_means) == pytest.approx(m["mean_test"][measure], abs=1e-12)
    assert 0.3 < m["mean_test"]["ndcg@10"] < 0.7  # MQ2008 rankers score about 0.5

    out = tmp_path / "cv.json"
    _cli(
        "cv", "--data", str(data), "--truth", "graded", "--models", "ranknet",
        "--tune", "iterations", "--baseline", "lightgbm", "--output", str(out),
        cwd=tmp_path, env=env,
    )  # fmt: skip
    result = _strict(out.read_text())
    assert isinstance(result, dict)
    graded = result["graded"]
    have_lgb = "lightgbm" not in graded["skipped"]
    if not have_lgb:
        assert "not installed" in graded["skipped"]["lightgbm"]
        oracle("lightgbm", "the cv LightGBM baseline needs the bench extra")
    assert set(graded["mean"]) == {"ranknet", "lightgbm"}
    assert len(graded["fold_means"]["lightgbm"]["ndcg@10"]) == 5
    assert 0.3 < graded["mean"]["lightgbm"]["ndcg@10"] < 0.7
    # The training run's LightGBM row is the cv baseline's: same folds, truth, seed, trees.
    assert rows["lightgbm"]["available"], rows["lightgbm"]
    for measure in ("ndcg@5", "ndcg@10", "err"):
        got = [f[measure] for f in rows["lightgbm"]["fold_test"]]
        assert got == pytest.approx(graded["fold_means"]["lightgbm"][measure], abs=1e-9)
    # The best baseline's own p-value is undefined: null in strict JSON, not NaN.
    assert None in [v["p"] for s in graded["significance"].values() for v in s.values()]
