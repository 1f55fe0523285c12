"""Exports for training pipelines through the one export endpoint: LETOR / SVMlight / group
files, qrels with label sources, pairs CSV; read back with ranking's own readers."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.kernel.models import Judgment, Task
from ranking.io.letor import read_group_file, read_letor
from ranking.io.trec import read_qrels
from tests.app.admin_support import judge_task, make_collection, oracle_top
from tests.app.conftest import Api

ASSESSORS = ("exp1", "exp2")
GRADERS = ("exp3", "exp4")
K = 3


@pytest.fixture(scope="module")
def labelled(api: Api):
    """Two assessors finish topk and graded tasks on every query (same oracle)."""
    for name in ASSESSORS:
        api.add_user(name)
    # Doc ids start with '=' so that the CSV export has something to neutralise.
    cid, scores = make_collection(api, "exports", queries=3, docs=7, prefix="=d")
    topk = {
        "collection_id": cid,
        "assessors": list(ASSESSORS),
        "scheme": "csv",
        "csv": "assessor,query_id,method\n"
        + "".join(f"{a},{q},topk\n" for a in ASSESSORS for q in scores),
        "k": K,
        "name": "exp",
    }
    r = api.post("admin", "/api/v1/admin/plans", json=topk)
    assert r.status_code == 201, r.text
    # Graded tasks on query 101 by two other assessors (requirement b forbids exp1/exp2).
    for name in GRADERS:
        api.add_user(name)
    graded = {
        "collection_id": cid,
        "assessors": list(GRADERS),
        "query_ids": ["101"],
        "scheme": "csv",
        "csv": "assessor,query_id,method\n" + "".join(f"{a},101,graded\n" for a in GRADERS),
        "name": "exp-graded",
    }
    r = api.post("admin", "/api/v1/admin/plans", json=graded)
    assert r.status_code == 201, r.text
    prog = api.get("admin", f"/api/v1/admin/collections/{cid}/progress").json()
    # One judgment answered "wrongly" and undone: it stays in the log but is not live.
    first = prog["tasks"][0]
    q = api.get(first["assessor"], f"/api/v1/tasks/{first['id']}/next").json()
    wrong = {"seq": 0, "left": q["pair"]["left"]["doc_id"], "right": q["pair"]["right"]["doc_id"]}
    s = scores[first["query_id"]]
    wrong["outcome"] = "right" if s[wrong["left"]] > s[wrong["right"]] else "left"
    assert (
        api.post(
            first["assessor"], f"/api/v1/tasks/{first['id']}/judgments", json=wrong
        ).status_code
        == 200
    )
    assert api.post(first["assessor"], f"/api/v1/tasks/{first['id']}/undo").status_code == 200
    for t in prog["tasks"]:
        judge_task(api, t["assessor"], t["id"], scores[t["query_id"]])
    return cid, scores


def _get(api: Api, cid: int, **params: str) -> bytes:
    r = api.get("admin", f"/api/v1/collections/{cid}/export", params=params)
    assert r.status_code == 200, r.text
    return r.content


def _expected_kappa(scores: dict[str, dict[str, float]]) -> dict[str, dict[str, int]]:
    out = {}
    for qid, s in scores.items():
        top = oracle_top(s, K)
        out[qid] = {d: (K - top.index(d) if d in top else 0) for d in s}
    return out


@pytest.mark.parametrize("source", ["first", "borda", "bt"])
def test_letor_round_trip(api: Api, labelled, tmp_path: Path, source: str) -> None:
    cid, scores = labelled
    path = tmp_path / f"{source}.txt"
    path.write_bytes(_get(api, cid, format="letor", labels="kappa", source=source))
    data = read_letor(path)
    expected = _expected_kappa(scores)
    assert data.n_queries == 3 and data.n_rows == 21
    for i in range(data.n_rows):
        qid, doc = str(data.qids[i]), str(data.docids[i])
        assert data.labels[i] == expected[qid][doc]
        assert data.features[i].tolist() == [scores[qid][doc] / 7, float(doc[2:]), float(qid) - 100]
    # LightGBM: rows without qid: plus the group file, in the same order.
    sv = tmp_path / f"{source}.svm"
    sv.write_bytes(_get(api, cid, format="svmlight", labels="kappa", source=source))
    group = tmp_path / f"{source}.svm.query"
    group.write_bytes(_get(api, cid, format="group", labels="kappa", source=source))
    assert read_group_file(group).tolist() == data.group_sizes.tolist()
    lgb = read_letor(sv)
    assert lgb.labels.tolist() == data.labels.tolist()
    assert lgb.features.tolist() == data.features.tolist()


def test_qrels_sources_read_back(api: Api, labelled, tmp_path: Path) -> None:
    cid, scores = labelled
    path = tmp_path / "q.txt"
    path.write_bytes(
        _get(api, cid, format="qrels", labels="kappa", source="assessor", assessor="exp2")
    )
    assert read_qrels(path) == _expected_kappa(scores)
    # Grades: only query 101 has graded tasks; mean of two identical assessors = their grade.
    path.write_bytes(_get(api, cid, format="qrels", labels="grades", source="mean"))
    grades = read_qrels(path)
    assert grades == {"101": {d: min(4, int(v) // 2) for d, v in scores["101"].items()}}
    # source=all: one block per task, the iteration column names the task.
    lines = _get(api, cid, format="qrels", labels="kappa", source="all").decode().splitlines()
    assert len(lines) == 2 * 21
    assert len({ln.split()[1] for ln in lines}) == 6


def test_pairs_csv_one_row_per_live_judgment(api: Api, labelled) -> None:
    cid, _ = labelled
    text = _get(api, cid, format="pairs-csv").decode()
    rows = list(csv.reader(io.StringIO(text)))
    assert tuple(rows[0]) == (
        "query_id",
        "assessor",
        "task_id",
        "seq",
        "left",
        "right",
        "outcome",
        "winner",
        "shown_swapped",
        "active_ms",
        "time",
        "broken_doc",
        "reason",
        "comment",
        "answered_by",
        "source",
        "machine_version",
        "probability",
    )
    prog = api.get("admin", f"/api/v1/admin/collections/{cid}/progress").json()
    live = sum(t["judgments"] for t in prog["tasks"] if t["method"] == "topk")
    assert len(rows) - 1 == live
    with api.db.read() as s:
        stored = s.scalar(
            select(func.count())
            .select_from(Judgment)
            .join(Task, Task.id == Judgment.task_id)
            .where(Task.collection_id == cid, Task.method == "topk")
        )
    assert stored == live + 1  # the undone judgment is kept in the log, not exported
    # Doc ids such as "=d3" are neutralised so a spreadsheet shows them as text.
    assert all(r[4].startswith("'=d") and r[5].startswith("'=d") for r in rows[1:])
    assert {r[6] for r in rows[1:]} <= {"left", "right", "tie", "not_relevant"}
    assert {r[8] for r in rows[1:]} <= {"true", "false"}


@pytest.mark.parametrize(
    "params",
    [
        {"format": "letor", "source": "all"},
        {"format": "letor", "labels": "grades", "source": "bt"},
        {"format": "qrels", "source": "assessor"},
        {"format": "qrels", "labels": "kappa", "source": "mean"},
    ],
)
def test_bad_export_requests(api: Api, labelled, params: dict[str, str]) -> None:
    cid, _ = labelled
    r = api.get("admin", f"/api/v1/collections/{cid}/export", params=params)
    assert r.status_code == 422, r.text
    r = api.get("admin", "/api/v1/collections/999999/export")
    assert r.status_code == 404


def test_letor_needs_features(api: Api) -> None:
    cid, scores = make_collection(api, "nofeatures", queries=1, docs=4, features=False)
    api.post(
        "admin",
        "/api/v1/admin/plans",
        json={
            "collection_id": cid,
            "assessors": ["exp1"],
            "scheme": "csv",
            "csv": "assessor,query_id,method\nexp1,101,topk\n",
            "k": 2,
        },
    )
    prog = api.get("admin", f"/api/v1/admin/collections/{cid}/progress").json()
    task = prog["tasks"][0]
    judge_task(api, "exp1", task["id"], scores["101"])
    r = api.get("admin", f"/api/v1/collections/{cid}/export", params={"format": "letor"})
    assert r.status_code == 422 and "no feature vector" in r.json()["detail"]
    ok = api.get(
        "admin",
        f"/api/v1/collections/{cid}/export",
        params={"format": "letor", "missing_features": "zero"},
    )
    assert ok.status_code == 200 and len(ok.text.splitlines()) == 4


def test_plan_label_filter(api: Api, labelled) -> None:
    cid, _ = labelled
    same = _get(api, cid, format="qrels", labels="kappa", source="first", plan="exp")
    assert same == _get(api, cid, format="qrels", labels="kappa", source="first")
    # A filter that selects nothing: the export says so instead of an empty file.
    r = api.get(
        "admin",
        f"/api/v1/collections/{cid}/export",
        params={"format": "qrels", "labels": "kappa", "plan": "nope"},
    )
    assert r.status_code == 409
    assert r.json()["detail"] == "nothing to export: no finished top-k tasks in plan 'nope' yet"
    # That plan has graded tasks, no pairs: no CSV with a header only.
    r = api.get(
        "admin",
        f"/api/v1/collections/{cid}/export",
        params={"format": "pairs-csv", "plan": "exp-graded"},
    )
    assert r.status_code == 409
    assert r.json()["detail"] == "nothing to export: no top-k judgments in plan 'exp-graded' yet"
