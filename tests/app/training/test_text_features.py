"""Text features stored as a collection's feature vectors (docs/features.md#stored-features):
the job on the queue (REST), the CLI, the stored numbers against the core extractor, the
``letor`` export and a training run on them; imported vectors kept unless replaced; a
training run with ``features: "text"`` computing them first, one without features refused at
once. A real ``heapjudge worker`` process executes the jobs."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from app.analysis.study import StudyConfig, run_simulated_study
from app.cli import cli
from app.collections.ndjson import document_content_hash
from app.kernel.errors import Conflict, Invalid, NotFound
from app.kernel.models import Document, Query, TrainingRun
from app.training.judge import model_judge
from labeling.machine.features import FEATURE_NAMES, FeatureExtractor
from labeling.machine.judges import JudgeQuery
from ranking.estimators import Ranker
from ranking.io.letor import read_letor
from tests.app.conftest import Api
from tests.app.training.support import Worker, finished, wait_for

STUDY = StudyConfig(assessors=4, queries=6, docs=6, k=3, seed=3, collection="text-study")
WORDS = [
    "wing",
    "flow",
    "heat",
    "plate",
    "shock",
    "boundary",
    "layer",
    "pressure",
    "buckling",
    "cylinder",
]


@pytest.fixture(scope="module")
def worker(api: Api, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    tmp = tmp_path_factory.mktemp("queue")
    queue = f"sqlite:///{tmp / 'queue.db'}"
    old = os.environ.get("HEAPJUDGE_QUEUE_URL")
    os.environ["HEAPJUDGE_QUEUE_URL"] = queue  # the CLI's environment
    old_setting = api.db.settings.queue_url
    api.db.settings.queue_url = queue  # the app's settings, read once
    w = Worker(api.settings.database_url, queue, tmp / "worker.log").start()
    try:
        yield w
    finally:
        w.stop()
        api.db.settings.queue_url = old_setting
        if old is None:
            os.environ.pop("HEAPJUDGE_QUEUE_URL", None)
        else:
            os.environ["HEAPJUDGE_QUEUE_URL"] = old


@pytest.fixture(scope="module")
def study(api: Api) -> int:
    """A text collection with finished top-k tasks (simulated assessors). The simulated
    study's synthetic texts give every document of a query the same query terms (every
    feature constant within a query, hence 0 once normalised), so queries and documents get
    texts of words from WORDS instead, whose features differ."""
    cid = run_simulated_study(db=api.db, config=STUDY).collection_id
    rng = np.random.default_rng(1)
    with api.db.write() as s:
        for query in s.scalars(select(Query).where(Query.collection_id == cid)):
            query.title = " ".join(rng.choice(WORDS, 2, replace=False))
        for doc in s.scalars(select(Document).where(Document.collection_id == cid)):
            doc.text = " ".join(rng.choice(WORDS, int(rng.integers(3, 12))))
    return cid


def import_ndjson(api: Api, name: str, *, features: bool, grades: bool = True) -> int:
    """A small text collection over REST: 5 queries × 6 documents of words from WORDS."""
    r = api.post("admin", "/api/v1/collections", json={"name": name})
    assert r.status_code == 201, r.text
    cid = int(r.json()["id"])
    rng = np.random.default_rng(len(name))
    lines = []
    for q in range(5):
        query = " ".join(rng.choice(WORDS, 2, replace=False))
        for d in range(6):
            text = " ".join(rng.choice(WORDS, 8))
            row: dict[str, Any] = {
                "query_id": f"q{q}",
                "query": query,
                "doc_id": f"d{q}-{d}",
                "title": f"paper {d} on {rng.choice(WORDS)}",
                "text": text,
            }
            if grades:
                row["grade"] = sum(w in text.split() for w in query.split())
            if features:
                row["features"] = [float(d), 1.0]
            lines.append(json.dumps(row))
    r = api.post(
        "admin",
        f"/api/v1/collections/{cid}/import",
        content="\n".join(lines).encode(),
        headers={"Content-Type": "application/x-ndjson"},
    )
    assert r.status_code == 200, r.text
    return cid


def features_path(cid: int) -> str:
    return f"/api/v1/admin/collections/{cid}/features"


def wait_features(api: Api, cid: int, timeout: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        view = api.get("admin", features_path(cid)).json()
        if (view["job"] or {}).get("status") in ("done", "failed"):
            return view
        assert time.monotonic() < deadline, view
        time.sleep(0.05)


def stored(api: Api, cid: int) -> dict[tuple[str, str], list[float] | None]:
    with api.db.read() as s:
        rows = s.execute(
            select(Query.external_id, Document.external_id, Document.features)
            .join(Query, Query.id == Document.query_id)
            .where(Document.collection_id == cid)
        )
        return {(q, d): f for q, d, f in rows}


def expected_vectors(api: Api, cid: int) -> dict[tuple[str, str], np.ndarray]:
    """The core extractor over the collection's documents, min–max per query by hand."""
    with api.db.read() as s:
        docs = {
            d: (t, x)
            for d, t, x in s.execute(
                select(Document.external_id, Document.title, Document.text).where(
                    Document.collection_id == cid
                )
            )
        }
        queries = dict(
            s.execute(
                select(Query.external_id, Query.title).where(Query.collection_id == cid)
            ).all()
        )
    fx = FeatureExtractor([(d, t, x) for d, (t, x) in docs.items()])
    out = {}
    for qid, text in queries.items():
        m = fx.matrix(text)
        lo, hi = m.min(axis=0), m.max(axis=0)
        span = np.where(hi > lo, hi - lo, 1.0)
        norm = np.where(hi > lo, (m - lo) / span, 0.0)
        for i, d in enumerate(fx.doc_ids):
            out[(qid, d)] = norm[i]
    return out


def test_features_job_stores_the_extractors_vectors_and_letor_and_training_use_them(
    api: Api, study: int, worker: Worker, tmp_path: Path
) -> None:
    before = api.get("admin", features_path(study)).json()
    assert (before["source"], before["with_features"], before["job"]) == ("none", 0, None)
    r = api.post("admin", features_path(study))
    assert r.status_code == 202, r.text
    assert r.json()["job"]["status"] == "queued"
    view = wait_features(api, study)
    assert view["job"]["status"] == "done", view
    rows = STUDY.queries * STUDY.docs
    assert (view["source"], view["documents"], view["with_features"]) == ("text", rows, rows)
    fs = view["feature_set"]
    assert (fs["name"], fs["version"], fs["normalization"]) == ("heapjudge-text", 1, "query")
    assert fs["names"] == list(FEATURE_NAMES)
    assert view["job"]["report"]["rows"] == rows
    want = expected_vectors(api, study)
    got = stored(api, study)
    assert len(got) == rows
    assert np.count_nonzero(np.array(list(got.values()))) > 5 * rows  # features that differ
    for key, vector in got.items():
        assert vector is not None and len(vector) == 48
        assert np.allclose(vector, want[key], rtol=0, atol=1e-12), key

    r = api.get(
        "admin",
        f"/api/v1/collections/{study}/export",
        params={"format": "letor", "labels": "kappa"},
    )
    assert r.status_code == 200, r.text
    assert r.headers["X-Heapjudge-Feature-Set"] == "heapjudge-text/1"
    assert r.headers["X-Heapjudge-Feature-Names"].split(",") == list(FEATURE_NAMES)
    path = tmp_path / "study.letor"
    path.write_bytes(r.content)
    data = read_letor(path)
    assert data.features.shape == (rows, 48)
    for i in range(data.n_rows):
        key = (str(data.qids[i]), str(data.docids[i]))
        assert np.allclose(data.features[i], got[key], atol=1e-6)

    r = api.post(
        "admin",
        "/api/v1/training-runs",
        json={"collection_id": study, "model": "listnet", "params": {"epochs": 20}},
    )
    assert r.status_code == 202, r.text
    run = wait_for(api, r.json()["id"], finished)
    assert run["status"] == "done", run["error"]
    assert run["metrics"]["features"] == {
        "source": "text",
        "feature_set": {"name": "heapjudge-text", "version": 1},
        "width": 48,
    }

    # The judge model:<run id> scores a query's documents as the model scores the stored
    # vectors it was trained on, and prefers by the logistic of the difference.
    judge = model_judge(db=api.db, run_id=run["id"])
    assert judge.version.startswith(f"model:{run['id']}/features=48/norm=query")
    model = Ranker.from_dict(run["model_json"])
    with api.db.read() as s:
        queries = dict(
            s.execute(
                select(Query.external_id, Query.title).where(Query.collection_id == study)
            ).all()
        )
    position = {d: i for i, d in enumerate(judge.extractor.doc_ids)}
    for qid, text in queries.items():
        pool = sorted(d for q, d in got if q == qid)
        want_scores = model.predict(np.array([got[(qid, d)] for d in pool]))
        all_scores = judge.scores(text)
        assert np.allclose([all_scores[position[d]] for d in pool], want_scores, atol=1e-9)
        p = judge.prefer(JudgeQuery(qid, text), [(pool[0], pool[1])])[0]
        assert p == pytest.approx(1 / (1 + np.exp(want_scores[1] - want_scores[0])))


def test_imported_vectors_are_kept_unless_replaced(api: Api, worker: Worker) -> None:
    cid = import_ndjson(api, "imported-vectors", features=True)
    before = stored(api, cid)
    r = api.post("admin", features_path(cid))
    assert r.status_code == 409, r.text
    assert "replace=true" in r.json()["detail"] and "imported feature vectors" in r.json()["detail"]
    r = api.post(
        "admin",
        "/api/v1/training-runs",
        json={"collection_id": cid, "model": "ranknet", "options": {"features": "text"}},
    )
    assert r.status_code == 409, r.text
    assert stored(api, cid) == before
    assert api.get("admin", features_path(cid)).json()["source"] == "imported"
    r = api.post(
        "admin",
        "/api/v1/training-runs",
        json={"collection_id": cid, "model": "ranknet", "options": {"truth": "imported"}},
    )
    assert r.status_code == 202, r.text
    imported_run = wait_for(api, r.json()["id"], finished)
    assert imported_run["metrics"]["features"]["source"] == "imported"
    with pytest.raises(Invalid, match="did not train on heapjudge's text features"):
        model_judge(db=api.db, run_id=imported_run["id"])
    r = api.post("admin", features_path(cid), params={"replace": "true"})
    assert r.status_code == 202, r.text
    view = wait_features(api, cid)
    assert view["job"]["status"] == "done" and view["job"]["report"]["replaced_imported"]
    assert view["source"] == "text"
    assert all(v is not None and len(v) == 48 for v in stored(api, cid).values())


def test_text_option_computes_features_first_and_no_features_is_refused_at_once(
    api: Api, worker: Worker
) -> None:
    cid = import_ndjson(api, "plain-texts", features=False)
    with api.db.read() as s:
        last = s.scalar(select(TrainingRun.id).order_by(TrainingRun.id.desc()).limit(1))
    body: dict[str, Any] = {
        "collection_id": cid,
        "model": "ranknet",
        "params": {"epochs": 10},
        "options": {"truth": "imported", "folds": 3},
    }
    r = api.post("admin", "/api/v1/training-runs", json=body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert "no document of collection" in detail and '"text"' in detail
    r = api.post("admin", "/api/v1/training-runs", json={**body, "options": {"truth": "study"}})
    assert r.status_code == 422  # no feature vectors, and no finished top-k task either
    with api.db.read() as s:
        assert s.scalar(select(TrainingRun.id).order_by(TrainingRun.id.desc()).limit(1)) == last
    body["options"]["features"] = "text"
    r = api.post("admin", "/api/v1/training-runs", json=body)
    assert r.status_code == 202, r.text
    run = wait_for(api, r.json()["id"], finished)
    assert run["status"] == "done", run["error"]
    assert run["metrics"]["features"]["source"] == "text"
    assert run["metrics"]["kind"] == "graded" and len(run["metrics"]["folds"]) == 3
    assert api.get("admin", features_path(cid)).json()["with_features"] == 30
    r = api.post("admin", "/api/v1/training-runs", json={**body, "options": {"truth": "study"}})
    assert r.status_code == 422 and "no finished top-k task" in r.json()["detail"]
    r = api.post("admin", "/api/v1/training-runs", json=body)
    assert r.status_code == 202
    cancelled = api.post("admin", f"/api/v1/training-runs/{r.json()['id']}/cancel")
    assert cancelled.json()["status"] == "cancelled"
    with pytest.raises(Conflict, match="not done"):
        model_judge(db=api.db, run_id=r.json()["id"])


def test_refusals_name_what_is_missing(api: Api) -> None:
    assert api.post("admin", features_path(99999)).status_code == 404
    with pytest.raises(NotFound):
        model_judge(db=api.db, run_id=99999)
    r = api.post("admin", "/api/v1/collections", json={"name": "no-documents"})
    cid = int(r.json()["id"])
    r = api.post("admin", features_path(cid))
    assert r.status_code == 422 and "no documents" in r.json()["detail"]
    api.add_user("erin")
    assert api.post("erin", features_path(cid)).status_code == 403
    assert api.get("erin", features_path(cid)).status_code == 403
    assert api.get("admin", features_path(cid)).json()["job"] is None


def test_cli_computes_in_its_own_process(api: Api) -> None:
    cid = import_ndjson(api, "cli-texts", features=False, grades=False)
    url = api.settings.database_url
    r = CliRunner().invoke(cli, ["admin", "features", "cli-texts", "--database-url", url])
    assert r.exit_code == 0, r.output
    assert "heapjudge-text v1: 48 features for 30 rows (5 queries over 30 documents)" in r.output
    want = expected_vectors(api, cid)
    for key, vector in stored(api, cid).items():
        assert np.allclose(vector, want[key], rtol=0, atol=1e-12), key
    imported = import_ndjson(api, "cli-imported", features=True)
    r = CliRunner().invoke(cli, ["admin", "features", str(imported), "--database-url", url])
    assert r.exit_code == 1 and "replace=true" in r.output


def test_every_trainer_trains_on_text_features(api: Api, study: int, worker: Worker) -> None:
    """Every registered model, on the study's top-k truth over stored text features (the
    first test computed them; a run with features "text" would recompute them)."""
    from ranking.estimators import ESTIMATORS

    short = {"epochs": 20, "iterations": 20, "n_rounds": 10}
    ids = {}
    for name, cls in ESTIMATORS.items():
        params = {p: v for p, v in short.items() if p in cls().get_params()}
        body = {"collection_id": study, "model": name, "params": params, "options": {"k": 3}}
        r = api.post("admin", "/api/v1/training-runs", json=body)
        assert r.status_code == 202, (name, r.text)
        ids[name] = r.json()["id"]
    for name, run_id in ids.items():
        run = wait_for(api, run_id, finished, timeout=300)
        assert run["status"] == "done", (name, run["error"])
        assert run["metrics"]["features"]["source"] == "text", name
        assert all(0 <= v <= 1 for v in run["metrics"]["mean_test"].values()), name


def test_imported_vectors_after_text_features_make_them_imported(api: Api) -> None:
    """A row's vector is part of its content (its hash), and imported vectors written after
    the text features make the collection's vectors imported again (kept from then on)."""
    cid = import_ndjson(api, "texts-then-vectors", features=False, grades=False)
    url = api.settings.database_url
    r = CliRunner().invoke(cli, ["admin", "features", str(cid), "--database-url", url])
    assert r.exit_code == 0, r.output
    assert api.get("admin", features_path(cid)).json()["source"] == "text"
    with api.db.read() as s:
        doc = s.scalars(select(Document).where(Document.collection_id == cid)).first()
        assert doc is not None
        assert doc.content_hash == document_content_hash(
            title=doc.title, text=doc.text, html=doc.html, features=doc.features, grade=doc.grade
        )
    line = {"query_id": "q0", "query": "x", "doc_id": "new", "title": "t", "features": [1.0]}
    with api.db.read() as s:
        line["query"] = s.scalar(
            select(Query.title).where(Query.collection_id == cid, Query.external_id == "q0")
        )
    r = api.post(
        "admin",
        f"/api/v1/collections/{cid}/import",
        content=json.dumps(line).encode(),
        headers={"Content-Type": "application/x-ndjson"},
    )
    assert r.status_code == 200, r.text
    view = api.get("admin", features_path(cid)).json()
    assert (view["source"], view["feature_set"]) == ("imported", None)
    assert api.post("admin", features_path(cid)).status_code == 409
