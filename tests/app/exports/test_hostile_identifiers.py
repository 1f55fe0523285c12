"""Hostile identifiers stored before the import checked them (inserted straight into the
database): every export format either carries them intact (JSON Lines escape, CSV quotes)
or refuses them with a 422 naming them (qrels and LETOR columns are whitespace-separated);
none writes a forged line."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow.parquet as pq
import pytest

from app.auth.passwords import hash_password
from app.exports.service import FORMATS
from app.kernel.models import Collection, Document, Judgment, Query, Task, User
from labeling.csv_safety import unneutralise_cell
from labeling.protocol.session import open_session
from labeling.protocol.spec import validate_options
from labeling.protocol.types import GradeAnswer, PairAnswer, PairQuestion
from tests.app.conftest import Api

QUERY = "q 1\r\nq2 0 forged 4"
# "d\r8": the csv module's minimal quoting leaves a bare CR unquoted (a reader then splits).
DOCS = ["d0", "d 1", "d\t2", "d\n3 0 forged 4", "d\u20284", "d\x855", "#d6", "d7", "d\r8"]
K = 2


def answers_preferring_earlier(
    method: str, doc_ids: list[str], seed: int, *, k: int = K
) -> list[Any]:
    """Answers of an assessor who prefers earlier documents, until the protocol is done."""
    options = validate_options(method, None)
    answers: list[Any] = []
    while True:
        session = open_session(method, doc_ids, k=k, seed=seed, options=options, answers=answers)
        q = session.pending
        if q is None:
            return answers
        if isinstance(q, PairQuestion):
            better = doc_ids.index(q.left) < doc_ids.index(q.right)
            answers.append(PairAnswer(q.left, q.right, "left" if better else "right"))
        else:
            answers.append(GradeAnswer(q.doc_id, doc_ids.index(q.doc_id) % 5))


@pytest.fixture(scope="module")
def hostile(api: Api) -> dict[str, Any]:
    """A collection whose query and document ids were stored unchecked, with one finished
    topk task and one finished graded task (logs inserted as the judging service would)."""
    now = datetime.now(UTC)
    with api.db.write() as s:
        coll = Collection(name="hostile ids")
        user = User(username="old-assessor", password_hash=hash_password("x" * 12))
        s.add_all([coll, user])
        s.flush()
        query = Query(collection_id=coll.id, external_id=QUERY, title="t")
        s.add(query)
        s.flush()
        for i, doc in enumerate(DOCS):
            s.add(
                Document(
                    collection_id=coll.id,
                    query_id=query.id,
                    external_id=doc,
                    title=doc,
                    text="x",
                    features=[float(i), 1.0],
                    content_hash=f"h{i}",
                )
            )
        logs = {}
        for offset, method in enumerate(("topk", "graded")):
            task = Task(
                collection_id=coll.id,
                query_id=query.id,
                assessor_id=user.id,
                method=method,
                k=K,
                seed=5,
                options=validate_options(method, None),
                doc_ids=list(DOCS),
                status="done",
                started_at=now,
                finished_at=now + timedelta(seconds=offset),
            )
            s.add(task)
            s.flush()
            answers = answers_preferring_earlier(method, list(DOCS), 5)
            for seq, a in enumerate(answers):
                if isinstance(a, PairAnswer):
                    row = Judgment(
                        task_id=task.id, seq=seq, left_doc=a.left, right_doc=a.right,
                        outcome=a.outcome, active_ms=10,
                    )  # fmt: skip
                else:
                    row = Judgment(
                        task_id=task.id, seq=seq, doc_id=a.doc_id, grade=a.grade, active_ms=10
                    )
                s.add(row)
            logs[method] = answers
        cid = coll.id
    return {"cid": cid, "logs": logs}


def _export(api: Api, cid: int, fmt: str, **params: str) -> Any:
    return api.get("admin", f"/api/v1/collections/{cid}/export", params={"format": fmt, **params})


REFUSED = ["qrels", "grades-qrels", "letor", "svmlight", "group", "trec-prefs", "qrels-jg"]


@pytest.mark.parametrize("fmt", REFUSED)
def test_column_formats_refuse_and_name_the_ids(api: Api, hostile: dict[str, Any], fmt: str):
    r = _export(api, hostile["cid"], fmt)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert f"cannot be written to {fmt}" in detail
    assert repr(QUERY) in detail  # the query id, as a Python literal (escapes visible)
    assert repr("d 1") in detail or "more" in detail
    assert "x-heapjudge-sources" not in r.headers and "set-cookie" not in r.headers


def test_json_lines_carry_every_id_intact(api: Api, hostile: dict[str, Any]) -> None:
    cid = hostile["cid"]
    topk = _export(api, cid, "topk-jsonl")
    assert topk.status_code == 200, topk.text
    # One record per line for any line splitter, including str.splitlines (U+2028, U+0085).
    lines = topk.text.splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    expected = open_session(
        "topk", DOCS, k=K, seed=5, options=validate_options("topk", None),
        answers=hostile["logs"]["topk"],
    ).result()  # fmt: skip
    assert record["query_id"] == QUERY
    assert record["top"] == list(expected.top) and record["rest"] == list(expected.rest)
    assert set(record["top"]) | set(record["rest"]) == set(DOCS)
    pairs = _export(api, cid, "pairs-jsonl")
    assert pairs.status_code == 200
    rows = [json.loads(x) for x in pairs.text.splitlines()]
    log = hostile["logs"]["topk"]
    assert [(r["query_id"], r["left"], r["right"], r["outcome"]) for r in rows] == [
        (QUERY, a.left, a.right, a.outcome) for a in log
    ]


def test_csv_quotes_line_breaks(api: Api, hostile: dict[str, Any]) -> None:
    r = _export(api, hostile["cid"], "pairs-csv")
    assert r.status_code == 200
    rows = list(csv.reader(io.StringIO(r.text, newline="")))
    log = hostile["logs"]["topk"]
    assert len(rows) == 1 + len(log)
    got = [tuple(unneutralise_cell(c) for c in (row[0], row[4], row[5])) for row in rows[1:]]
    assert got == [(QUERY, a.left, a.right) for a in log]


PARQUET = ["qrels-parquet", "grades-qrels-parquet", "topk-parquet", "letor-parquet"]
PARQUET += ["pairs-parquet"]


@pytest.mark.parametrize("fmt", PARQUET)
def test_parquet_carries_every_id_intact(api: Api, hostile: dict[str, Any], fmt: str) -> None:
    """A Parquet string column holds any text: the ids the column formats refuse come back
    exactly as stored, one row each, and no row is forged."""
    r = _export(api, hostile["cid"], fmt)
    assert r.status_code == 200, r.text
    rows = pq.read_table(io.BytesIO(r.content)).to_pylist()
    assert {row["query_id"] for row in rows} == {QUERY}
    if fmt == "topk-parquet":
        (row,) = rows
        assert set(row["top"]) | set(row["rest"]) == set(DOCS)
    elif fmt == "pairs-parquet":
        log = hostile["logs"]["topk"]
        assert [(x["left"], x["right"]) for x in rows] == [(a.left, a.right) for a in log]
    else:
        assert sorted(row["doc_id"] for row in rows) == sorted(DOCS)


def test_every_format_is_covered() -> None:
    covered = set(REFUSED) | {"topk-jsonl", "pairs-jsonl", "pairs-csv"} | set(PARQUET)
    assert covered == set(FORMATS)
