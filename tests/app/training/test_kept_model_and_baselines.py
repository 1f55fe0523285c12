"""What a training run keeps and what it compares with (docs/training.md#the-kept-model,
docs/training.md#baselines), on SQLite and Postgres, the run executed in this process as a
worker would:

* the stored model is the refit on every query with the run's hyperparameters and the median
  of the folds' early-stopped iterations — recomputed here by fitting the estimator on the
  collection's rows read from the database, not a fold's model;
* the result table holds BM25 and LightGBM lambdarank on the same folds: BM25's figures
  recomputed with pytrec_eval (trec_eval's NDCG, its ties by document id descending, as BM25
  orders them) over a run built from the retrieval service's order; LightGBM's by fitting
  ``lightgbm.LGBMRanker`` directly on the same folds; the paired t-test with scipy on the
  per-query values; a missing LightGBM and a collection without BM25 are rows that say so;
* the page, ``GET /api/v1/training-runs/{id}`` and ``heapjudge admin training-run`` show it.
"""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from typer.testing import CliRunner

from app.kernel.models import Document, Query
from app.retrieval.service import bm25_run
from app.training import service as training
from app.training.execution import execute_run
from app.training.truth import load_parts
from ranking.data.dataset import QueryDataset
from ranking.estimators import Ranker
from tests.app.conftest import Api
from tests.app.web.test_pages import hidden_csrf
from tests.conftest import oracle

QUERIES, DOCS = 8, 8
WORDS = ("heap", "sort", "tree", "graph", "merge", "queue", "stack", "hash")
OPTIONS = {"truth": "imported", "folds": 4, "seed": 0}
PARAMS = {"epochs": 40, "eval_every": 2, "patience": 50}


def _rows(rng: np.random.Generator, *, text: bool, width: int) -> list[dict[str, Any]]:
    """Queries q0..q7 of eight documents: binary grades (at least one relevant per query),
    feature vectors loosely tied to the grade, texts where relevant documents hold the query's
    word more often."""
    rows = []
    for q in range(QUERIES):
        word = WORDS[q]
        grades = (rng.random(DOCS) < 0.35).astype(int)
        grades[rng.integers(DOCS)] = 1
        for i, g in enumerate(grades):
            row: dict[str, Any] = {
                "query_id": f"q{q}",
                "query": word if text else f"q{q}",
                "doc_id": f"q{q}-d{i}",
                "grade": int(g),
                "features": (rng.random(width) + 0.4 * g * (np.arange(width) % 2))
                .round(6)
                .tolist(),
            }
            if text:
                hits = int(rng.integers(0, 3)) + 2 * int(g) * int(rng.integers(0, 2))
                filler = " ".join(rng.choice(["data", "list", "note"], size=6))
                row["title"] = f"Document {q}-{i}"
                row["text"] = " ".join([word] * hits) + " " + filler
            rows.append(row)
    return rows


def _collection(api: Api, name: str, rows: list[dict[str, Any]]) -> int:
    r = api.post("admin", "/api/v1/collections", json={"name": name})
    assert r.status_code == 201, r.text
    cid = int(r.json()["id"])
    r = api.post(
        "admin",
        f"/api/v1/collections/{cid}/import",
        content="\n".join(json.dumps(x) for x in rows).encode(),
        headers={"Content-Type": "application/x-ndjson"},
    )
    assert r.status_code == 200, r.text
    return cid


@pytest.fixture(scope="module")
def texts(api: Api) -> int:
    return _collection(api, "kept-texts", _rows(np.random.default_rng(7), text=True, width=4))


@pytest.fixture(scope="module")
def done(api: Api, texts: int) -> dict[str, Any]:
    """A finished ranknet run on the text collection (executed here as a worker would)."""
    run = training.create_run(
        db=api.db, collection_id=texts, model="ranknet", params=PARAMS, options=OPTIONS
    )
    execute_run(run["id"], db=api.db)
    got = api.get("admin", f"/api/v1/training-runs/{run['id']}")
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["status"] == "done", body["error"]
    return dict(body)


def _dataset(api: Api, collection_id: int) -> QueryDataset:
    """Every graded row of the collection, read from the database by query and row order."""
    with api.db.read() as s:
        rows = s.execute(
            select(Query.external_id, Document.external_id, Document.features, Document.grade)
            .join(Document, Document.query_id == Query.id)
            .where(Query.collection_id == collection_id)
            .order_by(Query.id, Document.id)
        ).all()
    return QueryDataset.from_arrays(
        [r[2] for r in rows], [r[3] for r in rows], [r[0] for r in rows], [r[1] for r in rows]
    )


def _rows_of(m: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in m["comparison"]["rows"]}


def test_the_stored_model_is_the_refit_on_all_queries(api: Api, texts: int, done: dict) -> None:
    m = done["metrics"]
    kept = m["kept"]
    best = [f["best_iteration"] for f in m["folds"]]
    assert kept["model"] == "refit" and kept["fold_best_iterations"] == best
    assert kept["iteration_param"] == "epochs"
    assert kept["iterations"] == max(1, round(float(np.median(best))))
    assert kept["queries"] == QUERIES and f"all {QUERIES} queries" in kept["why"]
    assert "model_fold" not in m
    # The same estimator fitted here on every row of the collection, epochs fixed.
    from ranking.estimators import RankNet

    data = _dataset(api, texts)
    params = {**PARAMS, "epochs": kept["iterations"]}
    again = RankNet(**params, seed=0).fit(data)
    stored = Ranker.from_dict(done["model_json"])
    assert stored.get_params()["epochs"] == kept["iterations"]
    assert np.allclose(stored.predict(data), again.predict(data), rtol=1e-7, atol=1e-10)
    # A model fitted on one fold's training queries only differs (what the run kept before).
    opts = training.check_options(OPTIONS)
    parts, scheme, _k, _name = load_parts(api.db, texts, opts)
    fold_train = QueryDataset.concat([parts[n] for n in scheme[0].train])
    part_model = RankNet(**params, seed=0).fit(fold_train)
    assert not np.allclose(stored.predict(data), part_model.predict(data), atol=1e-6)


def _pytrec_ndcg(
    grades: dict[str, dict[str, int]], run: dict[str, dict[str, float]], at: int
) -> dict[str, float]:
    pytrec_eval = oracle("pytrec_eval", "pytrec_eval is the trec_eval oracle")
    key = f"ndcg_cut_{at}"
    out = pytrec_eval.RelevanceEvaluator(grades, {key}).evaluate(run)
    return {q: float(v[key]) for q, v in out.items()}


def test_bm25_row_recomputed_with_trec_eval_on_the_same_folds(
    api: Api, texts: int, done: dict
) -> None:
    from scipy.stats import ttest_rel

    m = done["metrics"]
    rows = _rows_of(m)
    bm25 = rows["bm25"]
    assert bm25["available"] and "BM25 over its texts" in bm25["source"]
    data = _dataset(api, texts)
    grades: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    found = bm25_run(db=api.db, collection_id=texts, depth=1000)
    for a, b in zip(data.offsets[:-1], data.offsets[1:], strict=True):
        qid = str(data.qid[a])
        docs = [str(d) for d in data.doc_ids[a:b]]
        grades[qid] = {d: int(g) for d, g in zip(docs, data.labels[a:b], strict=True)}
        # The retrieval service's raw scores; documents without a query term score 0, and
        # trec_eval breaks ties by document id descending, as BM25's order does.
        hits = {h.doc_id: h.score for h in found.hits[qid]}
        run[qid] = {d: hits.get(d, 0.0) for d in docs}
    assert any(len(set(r.values())) < len(r) for r in run.values())  # ties occur
    opts = training.check_options(OPTIONS)
    parts, scheme, _k, _name = load_parts(api.db, texts, opts)
    for at in (5, 10):
        per_query = _pytrec_ndcg(grades, run, at)
        folds = [
            float(np.mean([per_query[str(q)] for n in f.test for q in parts[n].query_ids]))
            for f in scheme
        ]
        got = [f[f"ndcg@{at}"] for f in bm25["fold_test"]]
        assert got == pytest.approx(folds, abs=1e-12)
        assert bm25["mean_test"][f"ndcg@{at}"] == pytest.approx(np.mean(folds), abs=1e-12)
    # The model's per-query values are its folds' (means agree), and the paired test of the
    # model against BM25 is scipy's on the same queries.
    model = rows["ranknet"]
    assert model["role"] == "model" and set(model["per_query"]) == set(grades)
    for f, fold in zip(m["folds"], scheme, strict=True):
        qs = [str(q) for n in fold.test for q in parts[n].query_ids]
        assert np.mean([model["per_query"][q] for q in qs]) == pytest.approx(f["test"]["ndcg@10"])
    per_query = _pytrec_ndcg(grades, run, 10)
    qs = sorted(grades)
    x = np.array([model["per_query"][q] for q in qs])
    ref = np.array([per_query[q] for q in qs])
    cell = bm25["vs_model"]["ndcg@10"]
    assert cell["p"] == pytest.approx(float(ttest_rel(x, ref).pvalue), rel=1e-9)
    assert cell["better"] == ("model" if x.mean() > ref.mean() else "baseline")
    assert cell["significant"] == (cell["p"] < 0.05)
    first = "ranknet" if cell["better"] == "model" else "BM25"
    assert bm25["verdict"].startswith(f"{first} is better than")
    assert ("not significantly" in bm25["verdict"]) == (not cell["significant"])


@pytest.mark.filterwarnings("ignore:The argument 'eval_set' is deprecated")
def test_lightgbm_row_is_lightgbm_fitted_on_the_same_folds(
    api: Api, texts: int, done: dict
) -> None:
    lgb = pytest.importorskip("lightgbm", reason="the bench extra (CI installs .[dev,bench])")
    from ranking.estimators.experiments import folds_from_parts
    from ranking.metrics import ndcg

    row = _rows_of(done["metrics"])["lightgbm"]
    assert row["available"], row
    opts = training.check_options(OPTIONS)
    parts, scheme, k, _name = load_parts(api.db, texts, opts)
    folds = folds_from_parts(parts, scheme, truth="graded", k=k, seed=0)
    for f, got in zip(folds, row["fold_test"], strict=True):
        ranker = lgb.LGBMRanker(
            objective="lambdarank",
            n_estimators=1000,
            learning_rate=0.05,
            num_leaves=31,
            min_child_samples=20,
            random_state=0,
            n_jobs=1,
            verbose=-1,
        )
        ranker.fit(
            f.train.X,
            f.train.labels.astype(int),
            group=f.train.sizes,
            eval_set=[(f.valid.X, f.valid.labels.astype(int))],
            eval_group=[f.valid.sizes],
            eval_at=[10],
            callbacks=[lgb.early_stopping(50, verbose=False)],
        )
        scores = ranker.predict(f.test.X, num_iteration=ranker.best_iteration_)
        labels, mask = f.test.pad(f.test.labels)
        padded, _ = f.test.pad(scores)
        assert got["ndcg@10"] == pytest.approx(float(ndcg(labels, padded, mask, at=10).mean()))


def test_a_missing_lightgbm_and_a_collection_without_bm25_say_so(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ranking.estimators import experiments as E

    monkeypatch.setattr(E, "lightgbm_missing", lambda: "LightGBM is not installed (test)")
    cid = _collection(api, "kept-no-text", _rows(np.random.default_rng(3), text=False, width=3))
    run = training.create_run(
        db=api.db, collection_id=cid, model="ranknet", params=PARAMS, options=OPTIONS
    )
    execute_run(run["id"], db=api.db)
    got = training.get_run(db=api.db, run_id=run["id"])
    assert got["status"] == "done", got["error"]
    rows = _rows_of(got["metrics"])
    assert rows["lightgbm"] == {
        "name": "lightgbm",
        "label": "LightGBM lambdarank",
        "role": "baseline",
        "available": False,
        "reason": "not available: LightGBM is not installed (test)",
    }
    assert not rows["bm25"]["available"]
    assert "no texts" in rows["bm25"]["reason"] and "3-column" in rows["bm25"]["reason"]
    assert rows["ranknet"]["available"] and got["metrics"]["kept"]["model"] == "refit"


def test_letor4_vectors_without_text_use_feature_25(api: Api) -> None:
    """46-column vectors from the S1..S5 partitions: BM25 is LETOR 4.0's feature 25."""
    rng = np.random.default_rng(11)
    rows = _rows(rng, text=False, width=46)
    parts = {f"q{q}": f"S{q % 5 + 1}" for q in range(QUERIES)}
    for r in rows:
        r["description"] = f"LETOR part {parts[r['query_id']]}"
        r["features"][24] = round(r["features"][24] * 3) / 3  # ties in the BM25 column
    cid = _collection(api, "kept-letor", rows)
    run = training.create_run(
        db=api.db, collection_id=cid, model="ranknet", params=PARAMS, options={"truth": "imported"}
    )
    execute_run(run["id"], db=api.db)
    got = training.get_run(db=api.db, run_id=run["id"])
    assert got["status"] == "done", got["error"]
    m = got["metrics"]
    assert m["folds_scheme"] == "letor"
    bm25 = _rows_of(m)["bm25"]
    assert bm25["available"] and "LETOR 4.0 feature 25" in bm25["source"]
    # Recomputed: each S_i (the test part of one fold) ranked by column 25 with trec_eval.
    grades = {q: {r["doc_id"]: r["grade"] for r in rows if r["query_id"] == q} for q in parts}
    run_25 = {
        q: {r["doc_id"]: r["features"][24] for r in rows if r["query_id"] == q} for q in parts
    }
    per_query = _pytrec_ndcg(grades, run_25, 10)
    from ranking.data.folds import letor4_folds

    want = [
        float(np.mean([per_query[q] for q, p in parts.items() if p in f.test]))
        for f in letor4_folds()
    ]
    assert [f["ndcg@10"] for f in bm25["fold_test"]] == pytest.approx(want, abs=1e-12)


def test_page_api_and_cli_show_the_table(api: Api, done: dict) -> None:
    run_id = done["id"]
    rows = _rows_of(done["metrics"])
    # The page, as the admin's browser session sees it.
    client: TestClient = api.client
    token = hidden_csrf(client.get("/login").text)
    r = client.post(
        "/login",
        data={
            "username": "admin",
            "password": "pw-admin-secret",
            "csrf_token": token,
            "next": "/admin",
        },
        follow_redirects=False,
    )
    assert r.status_code == 303, r.text
    page = client.get(f"/admin/training-runs/{run_id}")
    assert page.status_code == 200, page.text
    html = page.text
    for name in ("ranknet", "bm25", "lightgbm"):
        assert f'data-testid="comparison-{name}"' in html
    assert 'data-testid="kept-model"' in html and "refit on all 8 queries" in html
    cell = re.search(r'data-testid="cmp-bm25-ndcg@10">([0-9.]+)<', html)
    assert cell is not None
    assert float(cell.group(1)) == pytest.approx(rows["bm25"]["mean_test"]["ndcg@10"], abs=5e-5)
    verdict = rows["bm25"]["verdict"]
    assert escape(verdict, quote=False) in html
    # The command line: the same rows and sentences.
    from app.cli import cli

    out = CliRunner().invoke(
        cli, ["admin", "training-run", str(run_id), "--database-url", api.settings.database_url]
    )
    assert out.exit_code == 0, out.output
    assert "| BM25 |" in out.output and "| LightGBM lambdarank |" in out.output
    assert verdict in out.output and done["metrics"]["kept"]["why"] in out.output
    listed = api.get("admin", f"/api/v1/training-runs?collection_id={done['collection_id']}")
    (brief,) = [r for r in listed.json() if r["id"] == run_id]
    assert all("per_query" not in r for r in brief["metrics"]["comparison"]["rows"])
    assert [r["name"] for r in brief["metrics"]["comparison"]["rows"]] == list(rows)
    as_json = CliRunner().invoke(
        cli,
        [
            "admin",
            "training-run",
            str(run_id),
            "--json",
            "--database-url",
            api.settings.database_url,
        ],
    )
    assert json.loads(as_json.output)["metrics"]["comparison"] == done["metrics"]["comparison"]


def test_admin_train_queues_a_run_and_refuses_bad_json(
    api: Api, texts: int, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.cli import cli
    from app.kernel.models import TrainingRun
    from app.kernel.settings import Settings
    from app.training.jobs import TRAINING, pending_run_ids

    queue = f"sqlite:///{tmp_path / 'queue.db'}"
    monkeypatch.setenv("HEAPJUDGE_QUEUE_URL", queue)
    url = api.settings.database_url

    def last_id() -> Any:
        with api.db.read() as s:
            return s.scalar(select(TrainingRun.id).order_by(TrainingRun.id.desc()).limit(1))

    before = last_id()
    bad = CliRunner().invoke(
        cli, ["admin", "train", str(texts), "ranknet", "--params", "{x", "--database-url", url]
    )
    assert bad.exit_code == 2 and "--params is not JSON" in bad.output
    assert last_id() == before
    out = CliRunner().invoke(
        cli,
        [
            "admin", "train", str(texts), "ranknet",
            "--params", json.dumps(PARAMS), "--options", json.dumps(OPTIONS),
            "--database-url", url,
        ],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    run_id = last_id()
    assert run_id != before and f"training run {run_id} queued" in out.output
    huey = TRAINING.huey(Settings(database_url=url, queue_url=queue))
    assert run_id in pending_run_ids(huey)
    execute_run(run_id, db=api.db)  # as the worker that takes the message would
    shown = CliRunner().invoke(cli, ["admin", "training-run", str(run_id), "--database-url", url])
    assert shown.exit_code == 0 and "status done" in shown.output, shown.output
