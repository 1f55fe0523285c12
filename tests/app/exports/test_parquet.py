"""Parquet exports: every tabular format's Parquet form holds the rows of its text form, with
the column names and types docs/exports.md lists, readable by pyarrow and pandas (and by
``datasets.load_dataset("parquet", ...)`` where it is installed); the CLI writes the same
file; ids the whitespace-separated text formats refuse are carried as they are."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from app.cli import cli as app_cli
from app.exports.service import FORMATS
from ranking.io.letor import read_letor
from tests.app.admin_support import judge_task, make_collection
from tests.app.conftest import Api
from tests.app.machine_support import judge_consistently, machine_collection, machine_task
from tests.conftest import oracle

K = 3
ASSESSORS = ("pq1", "pq2")
GRADERS = ("pq3",)

#: Column names and Arrow types, as docs/exports.md#parquet lists them (as read back).
_QRELS = {"query_id": "string", "iteration": "int64", "doc_id": "string", "label": "int64"}
SCHEMAS: dict[str, dict[str, str]] = {
    "qrels-parquet": _QRELS,
    "grades-qrels-parquet": _QRELS,
    "topk-parquet": {
        "query_id": "string",
        "k": "int64",
        "top": "list<element: string>",
        "rest": "list<element: string>",
        "assessor": "string",
        "task_id": "int64",
        "judgments": "int64",
        "active_ms": "int64",
        "aggregate": "string",
        "assessors": "list<element: string>",
        "task_ids": "list<element: int64>",
        "broken": "list<element: struct<doc_id: string, reason: string>>",
        "machine_answers": "int64",
        "judge": "string",
        "human_decided": "list<element: string>",
        "machine": "struct<machine_answers: int64, estimated_loss: double, interval: "
        "list<element: double>, level: double, replays: int64, tasks: int64>",
    },
    "letor-parquet": {
        "label": "int64",
        "query_id": "string",
        "doc_id": "string",
        "features": "list<element: double>",
    },
    "pairs-parquet": {
        "query_id": "string",
        "assessor": "string",
        "task_id": "int64",
        "seq": "int64",
        "left": "string",
        "right": "string",
        "outcome": "string",
        "winner": "string",
        "shown_swapped": "bool",
        "active_ms": "int64",
        "time": "timestamp[us, tz=UTC]",
        "broken_doc": "string",
        "reason": "string",
        "comment": "string",
        "answered_by": "string",
        "source": "string",
        "machine_version": "string",
        "probability": "double",
    },
}


def _schema(table: pa.Table) -> dict[str, str]:
    return {f.name: str(f.type) for f in table.schema}


@pytest.fixture(scope="module")
def labelled(api: Api) -> tuple[int, dict[str, dict[str, float]]]:
    """Two assessors finish top-k tasks on every query, one grades query 101."""
    for name in (*ASSESSORS, *GRADERS):
        api.add_user(name)
    cid, scores = make_collection(api, "parquet", queries=3, docs=6, prefix="p")
    for method, who, queries in (("topk", ASSESSORS, list(scores)), ("graded", GRADERS, ["101"])):
        body = {
            "collection_id": cid,
            "assessors": list(who),
            "query_ids": queries,
            "scheme": "csv",
            "csv": "assessor,query_id,method\n"
            + "".join(f"{a},{q},{method}\n" for a in who for q in queries),
            "k": K,
            "name": f"pq-{method}",
        }
        r = api.post("admin", "/api/v1/admin/plans", json=body)
        assert r.status_code == 201, r.text
    tasks = api.get("admin", f"/api/v1/admin/collections/{cid}/progress").json()["tasks"]
    for t in tasks:
        judge_task(api, t["assessor"], t["id"], scores[t["query_id"]])
    return cid, scores


def _get(api: Api, cid: int, **params: str) -> bytes:
    r = api.get("admin", f"/api/v1/collections/{cid}/export", params=params)
    assert r.status_code == 200, r.text
    return r.content


def _table(data: bytes) -> pa.Table:
    return pq.read_table(io.BytesIO(data))


def test_every_tabular_format_has_a_parquet_form() -> None:
    for text, parquet in (
        ("qrels", "qrels-parquet"),
        ("grades-qrels", "grades-qrels-parquet"),
        ("topk-jsonl", "topk-parquet"),
        ("letor", "letor-parquet"),
        ("pairs-csv", "pairs-parquet"),
    ):
        spec = FORMATS[parquet]
        assert spec.media_type == "application/vnd.apache.parquet"
        assert spec.file_name.endswith(".parquet")
        assert (spec.labels, spec.sources) == (FORMATS[text].labels, FORMATS[text].sources)


@pytest.mark.parametrize(
    ("labels", "source"), [("kappa", "first"), ("kappa", "all"), ("grades", "mean")]
)
def test_qrels_parquet_equals_the_text(api: Api, labelled: Any, labels: str, source: str) -> None:
    cid, _ = labelled
    params = {"labels": labels, "source": source}
    text = _get(api, cid, format="qrels", **params).decode().splitlines()
    table = _table(_get(api, cid, format="qrels-parquet", **params))
    assert _schema(table) == SCHEMAS["qrels-parquet"]
    expected = [(q, int(i), d, int(label)) for q, i, d, label in (ln.split() for ln in text)]
    rows = list(zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True))
    assert rows == expected
    assert len(rows) == {"first": 18, "all": 36, "mean": 6}[source]
    grades = _table(_get(api, cid, format="grades-qrels-parquet", source="first"))
    graded = _get(api, cid, format="grades-qrels", source="first").decode().split()
    assert grades.column("label").to_pylist() == [int(x) for x in graded[3::4]]


@pytest.mark.parametrize("source", ["first", "borda", "all"])
def test_topk_parquet_equals_the_jsonl(api: Api, labelled: Any, source: str) -> None:
    cid, _ = labelled
    records = [
        json.loads(x) for x in _get(api, cid, format="topk-jsonl", source=source).splitlines()
    ]
    table = _table(_get(api, cid, format="topk-parquet", source=source))
    assert _schema(table) == SCHEMAS["topk-parquet"]
    rows = table.to_pylist()
    assert len(rows) == len(records) == (6 if source == "all" else 3)
    assert rows == [_topk_row(record) for record in records]
    assert all(row["machine_answers"] == 0 and row["judge"] is None for row in rows)
    if source == "borda":
        assert rows[0]["aggregate"] == "borda" and rows[0]["assessor"] is None


def _topk_row(record: dict[str, Any]) -> dict[str, Any]:
    """A ``topk-jsonl`` record as its ``topk-parquet`` row: every column, null where the
    record has no key, ``broken`` as (doc_id, reason) pairs."""
    broken = [{"doc_id": d, "reason": r} for d, r in record["broken"].items()]
    # The machine block: one task's has no "tasks", an aggregate's no "level"/"replays".
    fields = ("machine_answers", "estimated_loss", "interval", "level", "replays", "tasks")
    machine = {**dict.fromkeys(fields), **record["machine"]}
    return {
        **dict.fromkeys(SCHEMAS["topk-parquet"]),
        **record,
        "broken": broken,
        "machine": machine,
    }


def test_letor_parquet_equals_the_text(api: Api, labelled: Any, tmp_path: Path) -> None:
    cid, scores = labelled
    path = tmp_path / "l.txt"
    path.write_bytes(_get(api, cid, format="letor", labels="kappa"))
    data = read_letor(path)
    table = _table(_get(api, cid, format="letor-parquet", labels="kappa"))
    assert _schema(table) == SCHEMAS["letor-parquet"]
    assert table.column("label").to_pylist() == data.labels.astype(int).tolist()
    assert table.column("query_id").to_pylist() == data.qids.tolist()
    assert table.column("doc_id").to_pylist() == data.docids.tolist()
    assert table.column("features").to_pylist() == data.features.tolist()
    first = table.slice(0, 1).to_pylist()[0]
    qid, doc = first["query_id"], first["doc_id"]
    assert first["features"] == [scores[qid][doc] / 6, float(doc[1:]), float(qid) - 100]


def test_pairs_parquet_equals_the_csv_and_jsonl(api: Api, labelled: Any) -> None:
    cid, _ = labelled
    jsonl = [json.loads(x) for x in _get(api, cid, format="pairs-jsonl").splitlines()]
    rows_csv = list(csv.DictReader(io.StringIO(_get(api, cid, format="pairs-csv").decode())))
    table = _table(_get(api, cid, format="pairs-parquet"))
    assert _schema(table) == SCHEMAS["pairs-parquet"]
    rows = table.to_pylist()
    assert len(rows) == len(jsonl) == len(rows_csv) > 0
    for row, j, c in zip(rows, jsonl, rows_csv, strict=True):
        for key in ("query_id", "assessor", "task_id", "seq", "left", "right", "outcome"):
            assert row[key] == j[key], key
        assert row["time"].isoformat() == j["time"]
        assert row["broken_doc"] == j["doc_id"] and row["reason"] == j["reason"]
        assert row["winner"] == (c["winner"] or None)
        assert str(row["shown_swapped"]).lower() == c["shown_swapped"]
        assert (row["source"], row["machine_version"], row["probability"]) == (
            j["source"],
            j["machine_version"],
            j["probability"],
        )


def test_pandas_reads_every_parquet_export(api: Api, labelled: Any, tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    cid, _ = labelled
    for name in SCHEMAS:
        path = tmp_path / f"{name}.parquet"
        path.write_bytes(_get(api, cid, format=name))
        frame = pd.read_parquet(path)
        assert list(frame.columns) == list(SCHEMAS[name]), name
        assert len(frame) == _table(path.read_bytes()).num_rows > 0, name


def test_datasets_loads_a_parquet_export(api: Api, labelled: Any, tmp_path: Path) -> None:
    datasets = oracle("datasets", "Hugging Face datasets reads the Parquet export (bench extra)")
    cid, _ = labelled
    path = tmp_path / "q.parquet"
    path.write_bytes(_get(api, cid, format="qrels-parquet"))
    loaded = datasets.load_dataset("parquet", data_files=str(path), split="train")
    assert loaded.column_names == ["query_id", "iteration", "doc_id", "label"]
    assert len(loaded) == 18


def test_cli_writes_the_same_parquet(
    api: Api, labelled: Any, database_url: str, tmp_path: Path
) -> None:
    cid, _ = labelled
    out = tmp_path / "cli.parquet"
    args = ["export", str(cid), "-f", "topk-parquet", "-o", str(out)]
    result = CliRunner().invoke(app_cli, [*args, "--database-url", database_url])
    assert result.exit_code == 0, result.output
    assert (
        _table(out.read_bytes()).to_pylist()
        == _table(_get(api, cid, format="topk-parquet")).to_pylist()
    )


# --------------------------------------------------------------------------- machine answers


@pytest.fixture(scope="module")
def assisted(api: Api) -> tuple[int, set[str]]:
    """Six queries judged with a BM25 machine (``insertion+assist``; from a cold start it
    earns its answers on the later ones): the collection and the documents a live machine
    answer compared."""
    api.add_user("pqm")
    cid, truth = machine_collection(api, "parquet-machine", queries=6, docs=24)
    for qid in truth:
        # A generous stated loss: at k = 3 every answer risks much, and six small queries
        # would give the default (a fifth of 0.01 per answer) no machine answer to export.
        task_id = machine_task(api, cid, qid, "pqm", K, max_loss=0.1)
        judge_consistently(api, "pqm", task_id, truth[qid])
    pairs = [json.loads(x) for x in _get(api, cid, format="pairs-jsonl").splitlines()]
    touched = {p[side] for p in pairs if p["source"] == "machine" for side in ("left", "right")}
    assert touched
    return cid, touched


def test_pairs_parquet_carries_the_machine_provenance(api: Api, assisted: Any) -> None:
    cid, _ = assisted
    jsonl = [json.loads(x) for x in _get(api, cid, format="pairs-jsonl").splitlines()]
    rows_csv = list(csv.DictReader(io.StringIO(_get(api, cid, format="pairs-csv").decode())))
    table = _table(_get(api, cid, format="pairs-parquet"))
    assert _schema(table) == SCHEMAS["pairs-parquet"]
    rows = table.to_pylist()
    assert len(rows) == len(jsonl) == len(rows_csv)
    machine = [r for r in rows if r["source"] == "machine"]
    assert machine and len(machine) < len(rows)
    for row, j, c in zip(rows, jsonl, rows_csv, strict=True):
        assert (row["task_id"], row["seq"], row["source"]) == (j["task_id"], j["seq"], j["source"])
        assert row["machine_version"] == j["machine_version"] == (c["machine_version"] or None)
        assert row["probability"] == j["probability"]
        assert c["probability"] == ("" if j["probability"] is None else str(j["probability"]))
        if row["source"] == "machine":
            assert row["machine_version"].startswith("bm25/") and 0.5 <= row["probability"] <= 1
        else:
            assert row["machine_version"] is None and row["probability"] is None


@pytest.mark.parametrize("labels", ["hybrid", "human", "kappa"])
@pytest.mark.parametrize("source", ["first", "all"])
def test_topk_and_qrels_parquet_take_the_labels_of_the_text_forms(
    api: Api, assisted: Any, labels: str, source: str
) -> None:
    cid, touched = assisted
    params = {"labels": labels, "source": source}
    records = [json.loads(x) for x in _get(api, cid, format="topk-jsonl", **params).splitlines()]
    table = _table(_get(api, cid, format="topk-parquet", **params))
    assert _schema(table) == SCHEMAS["topk-parquet"]
    rows = table.to_pylist()
    assert rows == [_topk_row(record) for record in records] and len(rows) == 6
    assert all(row["judge"].startswith("bm25/") for row in rows)
    assert sum(row["machine_answers"] for row in rows) > 0
    text = _get(api, cid, format="qrels", **params).decode().splitlines()
    qrels = _table(_get(api, cid, format="qrels-parquet", **params))
    expected = [(q, int(i), d, int(label)) for q, i, d, label in (ln.split() for ln in text)]
    got = list(zip(*(qrels.column(c).to_pylist() for c in qrels.column_names), strict=True))
    assert got == expected
    labelled = {d for _, _, d, _ in got}
    if labels == "human":
        # Only the documents no machine answer compared keep a label.
        assert not labelled & touched and len(labelled) == 144 - len(touched)
        assert all(set(r["top"]) <= set(r["human_decided"]) for r in rows)
        assert not {d for r in rows for d in r["top"] + r["rest"]} & touched
    else:
        assert len(labelled) == 144 and touched <= labelled
