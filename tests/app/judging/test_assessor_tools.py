"""Assessor tools through the judging API, on SQLite and Postgres: a comment on a judgment,
broken documents, the review list and undo back to a chosen answer
(docs/rest-api.md#the-judging-loop, docs/protocols.md#broken-documents)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from sqlalchemy import select

from app.kernel.models import Judgment
from labeling.protocol.session import open_session
from labeling.protocol.types import BrokenAnswer, PairAnswer
from tests.app.conftest import Api
from tests.app.judging.support import (
    make_collection,
    make_task,
    oracle_outcome,
    pair_body,
    pool,
)

RANK = {f"d{i:03d}": i for i in range(9)}  # d000 is the best


def _next(api: Api, who: str, tid: int) -> dict[str, Any]:
    r = api.get(who, f"/api/v1/tasks/{tid}/next")
    assert r.status_code == 200, r.text
    return r.json()


def _judge(api: Api, tid: int, body: dict[str, Any], who: str = "ann") -> Any:
    return api.post(who, f"/api/v1/tasks/{tid}/judgments", json=body)


def _setup(api: Api, name: str, method: str = "topk", **kw: Any) -> tuple[int, int]:
    if "ann" not in api.tokens:  # one database per module and backend
        api.add_user("ann")
    cid = make_collection(api, name, pool("q1", 9))
    return cid, make_task(api, cid, "q1", "ann", method=method, **kw)


def test_a_comment_is_stored_trimmed_returned_and_exported(api: Api) -> None:
    cid, tid = _setup(api, "comments", k=3, seed=5)
    q = _next(api, "ann", tid)
    note = '=HYPERLINK("x")  \nsecond line'
    r = _judge(api, tid, {**pair_body(q, oracle_outcome(q, RANK)), "comment": f"  {note}  "})
    assert r.status_code == 200, r.text
    q2 = r.json()
    assert _judge(api, tid, {**pair_body(q2, "left"), "comment": "   "}).status_code == 200
    answers = api.get("ann", f"/api/v1/tasks/{tid}/answers").json()
    assert [a["comment"] for a in answers] == [note.strip(), None]  # blank is no comment
    pairs = api.get("admin", f"/api/v1/collections/{cid}/export?format=pairs-jsonl").text
    assert [json.loads(x)["comment"] for x in pairs.splitlines()] == [note.strip(), None]
    text = api.get("admin", f"/api/v1/collections/{cid}/export?format=pairs-csv").text
    rows = list(csv.reader(io.StringIO(text)))
    col = rows[0].index("comment")
    # The task's own assessor (answered_by empty), a person (docs/exports.md#machine-answers).
    assert rows[0][col + 1 :] == ["answered_by", "source", "machine_version", "probability"]
    assert rows[1][col + 1 :] == ["", "person", "", ""] == rows[2][col + 1 :]
    # Neutralised against formula injection: a leading quote, the line break kept inside.
    assert rows[1][col] == "'" + note.strip() and rows[2][col] == ""


def test_bad_comments_and_reasons_are_422_and_store_nothing(api: Api) -> None:
    _, tid = _setup(api, "bad-notes", k=3, seed=5)
    q = _next(api, "ann", tid)
    body = pair_body(q, "left")
    left = body["left"]
    bad = [
        {**body, "comment": "x" * 2001},  # over the limit
        {**body, "comment": "a\x00b"},  # a NUL
        {**body, "comment": 5},  # not text
        {**body, "reason": "why"},  # a reason on a pair answer
        {**body, "outcome": "broken", "doc_id": left},  # no reason
        {**body, "outcome": "broken", "doc_id": left, "reason": "a\nb"},  # not one line
        {**body, "outcome": "broken", "doc_id": left, "reason": "   "},  # blank
        {**body, "outcome": "broken", "reason": "x"},  # names no document
        {**body, "outcome": "broken", "doc_id": "d999", "reason": "x"},  # not shown
    ]
    for b in bad:
        r = _judge(api, tid, b)
        assert r.status_code == 422, (b, r.text)
        assert r.json()["detail"]
    assert api.get("ann", f"/api/v1/tasks/{tid}/answers").json() == []
    assert _next(api, "ann", tid)["seq"] == 0


def test_broken_document_topk_matches_the_labeling_core_and_is_exported(api: Api) -> None:
    cid, tid = _setup(api, "broken-topk", k=3, seed=11)
    task = api.get("ann", f"/api/v1/tasks/{tid}").json()
    docs = [f"d{i:03d}" for i in range(9)]
    q = _next(api, "ann", tid)
    answers: list[Any] = []
    broke = None
    while not q["done"]:
        body = pair_body(q, oracle_outcome(q, RANK))
        if q["seq"] == 2:  # break the better of the two shown (it would be in the top)
            broke = min(body["left"], body["right"], key=RANK.__getitem__)
            body |= {"outcome": "broken", "doc_id": broke, "reason": "page is empty"}
            answers.append(BrokenAnswer(broke, "page is empty", body["left"], body["right"]))
        else:
            answers.append(PairAnswer(body["left"], body["right"], body["outcome"]))
        r = _judge(api, tid, body)
        assert r.status_code == 200, r.text
        # A retry of the same answer stores nothing and returns the same question.
        assert _judge(api, tid, body).json() == r.json()
        q = r.json()
    core = open_session("topk", docs, k=3, seed=11, options=task["options"], answers=answers)
    result = api.get("ann", f"/api/v1/tasks/{tid}/result").json()
    expected = core.result()
    assert result["top"] == expected.top == sorted(set(docs) - {broke}, key=RANK.get)[:3]
    assert result["broken"] == {broke: "page is empty"} and broke not in result["kappa_labels"]
    assert result["judgments"] == len(answers)
    qrels = api.get("admin", f"/api/v1/collections/{cid}/export?format=qrels").text
    assert broke not in {ln.split()[2] for ln in qrels.splitlines()}
    assert len(qrels.splitlines()) == 8
    topk = json.loads(api.get("admin", f"/api/v1/collections/{cid}/export?format=topk-jsonl").text)
    assert topk["broken"] == {broke: "page is empty"} and broke not in topk["top"] + topk["rest"]
    pairs = [
        json.loads(x)
        for x in api.get(
            "admin", f"/api/v1/collections/{cid}/export?format=pairs-jsonl"
        ).text.splitlines()
    ]
    (row,) = [p for p in pairs if p["outcome"] == "broken"]
    assert (row["seq"], row["doc_id"], row["reason"]) == (2, broke, "page is empty")
    review = api.get("ann", f"/api/v1/tasks/{tid}/answers").json()
    assert review[2]["kind"] == "broken" and review[2]["document"]["doc_id"] == broke
    assert review[2]["reason"] == "page is empty" and review[2]["outcome"] is None


def test_broken_document_graded_is_skipped(api: Api) -> None:
    cid, tid = _setup(api, "broken-graded", method="graded", seed=3)
    q = _next(api, "ann", tid)
    first = q["document"]["doc_id"]
    r = _judge(api, tid, {"seq": 0, "outcome": "broken", "doc_id": first, "reason": "404"})
    assert r.status_code == 200, r.text
    q = r.json()
    assert q["progress"]["judgments"] == 1 and q["progress"]["max_remaining"] == 8
    # A graded broken answer names no pair.
    pair = {"seq": 1, "outcome": "broken", "doc_id": q["document"]["doc_id"], "reason": "x"}
    assert _judge(api, tid, {**pair, "left": "d001"}).status_code == 422
    while not q["done"]:
        q = _judge(
            api, tid, {"seq": q["seq"], "doc_id": q["document"]["doc_id"], "grade": 2}
        ).json()
    result = api.get("ann", f"/api/v1/tasks/{tid}/result").json()
    assert first not in result["grades"] and len(result["grades"]) == 8
    assert result["broken"] == {first: "404"}
    grades = api.get(
        "admin", f"/api/v1/collections/{cid}/export?format=qrels&labels=grades"
    ).text.splitlines()
    assert len(grades) == 8 and first not in {ln.split()[2] for ln in grades}


def test_review_list_and_undo_back_to_a_chosen_answer(api: Api) -> None:
    _, tid = _setup(api, "review", k=3, seed=7)
    q = _next(api, "ann", tid)
    shown = []
    for i in range(5):
        shown.append((q["pair"]["left"]["doc_id"], q["pair"]["right"]["doc_id"]))
        body = {**pair_body(q, oracle_outcome(q, RANK), active_ms=10 + i), "comment": f"c{i}"}
        q = _judge(api, tid, body).json()
    review = api.get("ann", f"/api/v1/tasks/{tid}/answers").json()
    assert [a["seq"] for a in review] == [0, 1, 2, 3, 4]
    assert [(a["left"]["doc_id"], a["right"]["doc_id"]) for a in review] == shown
    assert review[0]["left"]["title"].startswith("Document d")
    assert [a["comment"] for a in review] == [f"c{i}" for i in range(5)]
    assert [a["active_ms"] for a in review] == [10, 11, 12, 13, 14] and review[0]["time"]
    # An admin may read it; another assessor may not.
    assert api.get("admin", f"/api/v1/tasks/{tid}/answers").status_code == 200
    if "bob" not in api.tokens:
        api.add_user("bob")
    assert api.get("bob", f"/api/v1/tasks/{tid}/answers").status_code == 403
    assert api.get("ann", "/api/v1/tasks/99999/answers").status_code == 404
    # Undo back to seq 2: answers 2, 3, 4 go in one request; the pending question is seq 2.
    r = api.post("ann", f"/api/v1/tasks/{tid}/undo", json={"to_seq": 2})
    assert r.status_code == 200, r.text
    after = r.json()
    assert after["seq"] == 2 and after["progress"]["judgments"] == 2
    assert (after["pair"]["left"]["doc_id"], after["pair"]["right"]["doc_id"]) == shown[2]
    # The same request again (a double click) changes nothing.
    again = api.post("ann", f"/api/v1/tasks/{tid}/undo", json={"to_seq": 2})
    assert again.status_code == 200 and again.json() == after
    assert len(api.get("ann", f"/api/v1/tasks/{tid}/answers").json()) == 2
    with api.db.read() as s:
        undone = s.scalars(
            select(Judgment.seq).where(Judgment.task_id == tid, Judgment.undone.is_(True))
        ).all()
    assert sorted(undone) == [2, 3, 4]  # kept in the log, marked undone
    # Bad to_seq: 422; another assessor: 403; the plain undo still undoes the last one.
    assert api.post("ann", f"/api/v1/tasks/{tid}/undo", json={"to_seq": -1}).status_code == 422
    assert api.post("ann", f"/api/v1/tasks/{tid}/undo", json={"to_seq": "1"}).status_code == 422
    assert api.post("bob", f"/api/v1/tasks/{tid}/undo", json={"to_seq": 0}).status_code == 403
    plain = api.post("ann", f"/api/v1/tasks/{tid}/undo")
    assert plain.status_code == 200 and plain.json()["seq"] == 1
    assert api.post("ann", f"/api/v1/tasks/{tid}/undo", json={"to_seq": 0}).json()["seq"] == 0
    assert api.post("ann", f"/api/v1/tasks/{tid}/undo").status_code == 409  # nothing left


def test_undo_to_seq_reopens_a_done_task_and_undoes_a_broken_answer(api: Api) -> None:
    _, tid = _setup(api, "reopen", k=2, seed=9)
    q = _next(api, "ann", tid)
    body = pair_body(q, "left") | {"outcome": "broken", "doc_id": q["pair"]["left"]["doc_id"]}
    before = q
    q = _judge(api, tid, {**body, "reason": "garbled"}).json()
    while not q["done"]:
        q = _judge(api, tid, pair_body(q, oracle_outcome(q, RANK))).json()
    assert api.get("ann", f"/api/v1/tasks/{tid}").json()["status"] == "done"
    r = api.post("ann", f"/api/v1/tasks/{tid}/undo", json={"to_seq": 0})
    assert r.status_code == 200
    assert api.get("ann", f"/api/v1/tasks/{tid}").json()["status"] == "active"
    after = r.json()
    assert after["pair"] == before["pair"] and after["progress"] == before["progress"]


def test_guidelines_are_edited_by_admins_and_rendered_sanitised(api: Api) -> None:
    cid, _ = _setup(api, "guided", k=3, seed=1)
    empty = api.get("ann", f"/api/v1/collections/{cid}/guidelines").json()
    assert empty == {"collection_id": cid, "collection_name": "guided", "markdown": "", "html": ""}
    source = (
        "# Rules\n\n**Relevant** means on topic. <script>alert(1)</script>\n\n"
        "[spec](https://example.org/spec) [bad](javascript:alert(1))\n\n"
        '<img src=x onerror="alert(1)">'
    )
    r = api.client.put(
        f"/api/v1/collections/{cid}/guidelines",
        json={"markdown": source},
        headers=api.auth("admin"),
    )
    assert r.status_code == 200, r.text
    got = api.get("ann", f"/api/v1/collections/{cid}/guidelines").json()
    assert got["markdown"] == source and got == r.json()
    html = got["html"]
    assert "<h1>Rules</h1>" in html and "<strong>Relevant</strong>" in html
    assert '<a href="https://example.org/spec" rel="noopener noreferrer">spec</a>' in html
    # No raw HTML passes: tags in the source are text, javascript: is no link.
    assert "<script" not in html and "<img" not in html and 'href="javascript' not in html
    assert "&lt;script&gt;" in html
    put = api.client.put
    forbidden = put(
        f"/api/v1/collections/{cid}/guidelines", json={"markdown": "x"}, headers=api.auth("ann")
    )
    assert forbidden.status_code == 403
    for body in ({"markdown": "a\x00b"}, {"markdown": "x" * 50_001}, {"text": "x"}):
        bad = put(f"/api/v1/collections/{cid}/guidelines", json=body, headers=api.auth("admin"))
        assert bad.status_code == 422, body
    nothing = put(
        "/api/v1/collections/99999/guidelines", json={"markdown": ""}, headers=api.auth("admin")
    )
    assert nothing.status_code == 404
    assert api.get("ann", f"/api/v1/collections/{cid}/guidelines").json()["markdown"] == source


def test_documents_refs_answers_name_the_documents_without_their_texts(api: Api) -> None:
    _, tid = _setup(api, "refs", k=3, seed=5)
    q = _next(api, "ann", tid)
    assert "text" in q["pair"]["left"]  # /next: full documents
    body = pair_body(q, oracle_outcome(q, RANK))
    r = _judge(api, tid, {**body, "documents": "refs"})
    assert r.status_code == 200, r.text
    lean = r.json()
    full = _next(api, "ann", tid)
    assert lean["seq"] == full["seq"] == 1
    for side in ("left", "right"):
        doc = full["pair"][side]
        assert lean["pair"][side] == {"doc_id": doc["doc_id"], "title": doc["title"]}
    assert {k: v for k, v in lean.items() if k != "pair"} == {
        k: v for k, v in full.items() if k != "pair"
    }
    # An identical retry may ask for either shape; the answer is stored once.
    assert _judge(api, tid, body).json()["pair"] == full["pair"]
    r = api.post("ann", f"/api/v1/tasks/{tid}/undo", json={"to_seq": 0, "documents": "refs"})
    assert r.status_code == 200 and r.json()["seq"] == 0
    assert set(r.json()["pair"]["left"]) == {"doc_id", "title"}
    assert len(api.get("ann", f"/api/v1/tasks/{tid}/answers").json()) == 0
    # Anything else is a 422 that stores nothing.
    r = _judge(api, tid, {**pair_body(_next(api, "ann", tid), "left"), "documents": "none"})
    assert r.status_code == 422
    assert len(api.get("ann", f"/api/v1/tasks/{tid}/answers").json()) == 0
