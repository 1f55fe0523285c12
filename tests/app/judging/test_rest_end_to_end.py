"""REST API v1 end to end, on a real SQLite file and on Postgres (tests/app/conftest.py).

Covers the contract training pipelines rely on: token login, users, collections, NDJSON import,
tasks, the judging loop (next / judgments / undo / result) with its retry and conflict rules,
and every export format. A simulated assessor completes a topk task (n=50, k=10) through the
API and the outcome is compared with the oracle and with the labeling core run directly.
"""

from __future__ import annotations

import json
import random
from typing import Any

from sqlalchemy import select

from app.kernel.models import Judgment
from labeling.protocol.session import open_session
from labeling.protocol.types import PairAnswer, PairQuestion
from labeling.study.simulation import Assessor, run_session
from tests.app.conftest import Api
from tests.app.judging.support import (
    make_collection,
    make_task,
    ndjson,
    oracle_outcome,
    pair_body,
    pool,
)


def test_token_login_and_me(api: Api) -> None:
    r = api.client.post("/api/v1/auth/token", data={"username": "admin", "password": "wrong"})
    assert r.status_code == 401
    assert r.json() == {"detail": "incorrect username or password"}
    r = api.client.post("/api/v1/auth/token", data={"username": "nobody", "password": "x" * 9})
    assert r.status_code == 401 and r.json()["detail"] == "incorrect username or password"
    me = api.get("admin", "/api/v1/users/me")
    assert me.status_code == 200 and me.json()["role"] == "admin"
    assert api.client.get("/api/v1/users/me").status_code == 401
    bad = api.client.get("/api/v1/users/me", headers={"Authorization": "Bearer nope"})
    assert bad.status_code == 401 and "detail" in bad.json()


def test_users_endpoint(api: Api) -> None:
    body = {"username": "carol", "password": "carol-password", "role": "assessor"}
    r = api.post("admin", "/api/v1/users", json=body)
    assert r.status_code == 201 and r.json()["username"] == "carol"
    assert api.post("admin", "/api/v1/users", json=body).status_code == 409
    r = api.post("admin", "/api/v1/users", json={**body, "username": "dave", "role": "boss"})
    assert r.status_code == 422
    r = api.post("admin", "/api/v1/users", json={**body, "username": "erin", "password": "short"})
    assert r.status_code == 422


def test_collection_import_and_counts(api: Api) -> None:
    records = pool("q1", 6, query="first") + pool("q2", 4, query="second", prefix="e")
    cid = make_collection(api, "counts", records)
    again = api.post("admin", f"/api/v1/collections/{cid}/import", content=ndjson(records))
    assert again.status_code == 200
    assert again.json()["documents_created"] == 0
    assert again.json()["documents_unchanged"] == 10
    detail = api.get("admin", f"/api/v1/collections/{cid}").json()
    assert (detail["queries"], detail["documents"], detail["tasks"]) == (2, 10, {})
    queries = api.get("admin", f"/api/v1/collections/{cid}/queries").json()
    assert [(q["query_id"], q["title"], q["documents"]) for q in queries] == [
        ("q1", "first", 6),
        ("q2", "second", 4),
    ]
    names = [c["name"] for c in api.get("admin", "/api/v1/collections").json()]
    assert "counts" in names
    assert api.get("admin", "/api/v1/collections/999999").status_code == 404
    dup = api.post("admin", "/api/v1/collections", json={"name": "counts"})
    assert dup.status_code == 409


def test_judging_loop_retry_conflict_undo_and_exports(api: Api) -> None:
    api.add_user("ann")
    cid = make_collection(api, "loop", pool("q1", 9))
    tid = make_task(api, cid, "q1", "ann", k=3, seed=11)
    rank = {f"d{i:03d}": i for i in range(9)}  # d000 is the best

    q = api.get("ann", f"/api/v1/tasks/{tid}/next").json()
    assert q["done"] is False and q["seq"] == 0 and q["progress"]["judgments"] == 0
    assert q["progress"]["estimated_remaining"] >= 1
    assert set(q["pair"]["left"]) >= {"doc_id", "title"}
    assert api.get("admin", f"/api/v1/tasks/{tid}/result").status_code == 409

    first = pair_body(q, oracle_outcome(q, rank))
    r1 = api.post("ann", f"/api/v1/tasks/{tid}/judgments", json=first)
    assert r1.status_code == 200 and r1.json()["seq"] == 1
    # An identical retry stores nothing and returns the same question.
    r2 = api.post("ann", f"/api/v1/tasks/{tid}/judgments", json={**first, "active_ms": 999})
    assert r2.status_code == 200 and r2.json() == r1.json()
    # A different answer for a used seq: 409 with the current question.
    flipped = {**first, "outcome": "right" if first["outcome"] == "left" else "left"}
    r3 = api.post("ann", f"/api/v1/tasks/{tid}/judgments", json=flipped)
    assert r3.status_code == 409 and r3.json()["current"]["seq"] == 1
    # The pending pair in swapped orientation, or a future seq: 409, nothing stored.
    q = r1.json()
    swapped = {**pair_body(q, "left"), "left": q["pair"]["right"]["doc_id"]}
    swapped["right"] = q["pair"]["left"]["doc_id"]
    assert api.post("ann", f"/api/v1/tasks/{tid}/judgments", json=swapped).status_code == 409
    ahead = {**pair_body(q, "left"), "seq": 5}
    assert api.post("ann", f"/api/v1/tasks/{tid}/judgments", json=ahead).status_code == 409
    # Invalid values: a tie when ties are off (422), a grade on a topk task (422).
    tie = pair_body(q, "tie")
    assert api.post("ann", f"/api/v1/tasks/{tid}/judgments", json=tie).status_code == 422
    wrong_shape = {"seq": 1, "doc_id": "d000", "grade": 2}
    assert api.post("ann", f"/api/v1/tasks/{tid}/judgments", json=wrong_shape).status_code == 422
    assert api.get("ann", f"/api/v1/tasks/{tid}/next").json()["seq"] == 1

    # Undo: back to question 1's predecessor; then answer to the end.
    u = api.post("ann", f"/api/v1/tasks/{tid}/undo")
    assert u.status_code == 200 and u.json()["seq"] == 0
    assert u.json()["pair"] == api.get("ann", f"/api/v1/tasks/{tid}/next").json()["pair"]
    q = u.json()
    steps = 0
    while not q["done"]:
        r = api.post(
            "ann", f"/api/v1/tasks/{tid}/judgments", json=pair_body(q, oracle_outcome(q, rank))
        )
        assert r.status_code == 200, r.text
        q = r.json()
        steps += 1
        assert steps < 200
    assert "seq" not in q and q["progress"]["done"] is True
    result = api.get("ann", f"/api/v1/tasks/{tid}/result").json()
    assert result["top"] == ["d000", "d001", "d002"]
    assert sorted(result["rest"]) == [f"d{i:03d}" for i in range(3, 9)]
    assert result["judgments"] == steps
    assert result["active_ms"] == 50 * steps
    assert result["k"] == 3
    # Done: a further judgment is a conflict (with the current state), undo reopens the task.
    late = api.post("ann", f"/api/v1/tasks/{tid}/judgments", json={**first, "seq": steps})
    assert late.status_code == 409 and late.json()["current"]["done"] is True
    task = api.get("ann", f"/api/v1/tasks/{tid}").json()
    assert task["status"] == "done" and task["judgments"] == steps
    counts = api.get("admin", f"/api/v1/collections/{cid}").json()["tasks"]
    assert counts == {"done": 1}

    qrels = api.get("admin", f"/api/v1/collections/{cid}/export?format=qrels")
    assert qrels.status_code == 200
    lines = [ln.split() for ln in qrels.text.splitlines()]
    assert lines[:3] == [
        ["q1", "0", "d000", "3"],
        ["q1", "0", "d001", "2"],
        ["q1", "0", "d002", "1"],
    ]
    assert {ln[3] for ln in lines[3:]} == {"0"} and len(lines) == 9
    assert qrels.headers["x-heapjudge-sources"] == f"q1:ann:{tid}"
    topk = [
        json.loads(x)
        for x in api.get(
            "admin", f"/api/v1/collections/{cid}/export?format=topk-jsonl"
        ).text.splitlines()
    ]
    assert topk == [
        {
            "query_id": "q1",
            "k": 3,
            "top": ["d000", "d001", "d002"],
            "rest": result["rest"],
            "assessor": "ann",
            "task_id": tid,
            "judgments": steps,
            "active_ms": 50 * steps,
            "broken": {},
            # Provenance (docs/exports.md#machine-answers): no machine, every label a person's.
            "machine_answers": 0,
            "judge": None,
            "human_decided": ["d000", "d001", "d002"],
            # No machine answer: nothing it may have cost (docs/exports.md#machine-answers).
            "machine": {
                "machine_answers": 0,
                "estimated_loss": 0.0,
                "interval": [0.0, 0.0],
                "level": 0.9,
                "replays": 0,
            },
        }
    ]
    pairs = api.get(
        "admin", f"/api/v1/collections/{cid}/export?format=pairs-jsonl"
    ).text.splitlines()
    assert len(pairs) == steps  # live judgments only (the undone one is not exported)
    rec = json.loads(pairs[0])
    assert set(rec) >= {"query_id", "assessor", "left", "right", "outcome", "active_ms", "time"}
    assert api.get("admin", f"/api/v1/collections/{cid}/export?format=xml").status_code == 422
    assert (
        api.get(
            "admin", f"/api/v1/collections/{cid}/export?format=qrels&assessor=ghost"
        ).status_code
        == 404
    )


def test_graded_task_and_grades_qrels(api: Api) -> None:
    api.add_user("gus")
    cid = make_collection(api, "graded", pool("g1", 5, prefix="g"))
    tid = make_task(api, cid, "g1", "gus", method="graded", seed=3)
    q = api.get("gus", f"/api/v1/tasks/{tid}/next").json()
    assert q["document"]["doc_id"].startswith("g") and "pair" not in q
    graded: dict[str, int] = {}
    while not q["done"]:
        doc = q["document"]["doc_id"]
        grade = int(doc[1:]) % 5
        body = {"seq": q["seq"], "doc_id": doc, "grade": grade, "active_ms": 10}
        bad = api.post("gus", f"/api/v1/tasks/{tid}/judgments", json={**body, "grade": 7})
        assert bad.status_code == 422
        r = api.post("gus", f"/api/v1/tasks/{tid}/judgments", json=body)
        assert r.status_code == 200, r.text
        graded[doc] = grade
        q = r.json()
    assert api.get("gus", f"/api/v1/tasks/{tid}/result").json()["grades"] == graded
    text = api.get("admin", f"/api/v1/collections/{cid}/export?format=grades-qrels").text
    assert sorted(text.splitlines()) == sorted(f"g1 0 {d} {g}" for d, g in graded.items())


def test_task_listing_and_filters(api: Api) -> None:
    api.add_user("lia")
    api.add_user("max")
    cid = make_collection(api, "listing", pool("l1", 4, prefix="l"))
    t1 = make_task(api, cid, "l1", "lia", k=2)
    t2 = make_task(api, cid, "l1", "max", method="graded")
    own = [t["id"] for t in api.get("lia", "/api/v1/tasks").json()]
    assert own == [t1]
    assert api.get("max", f"/api/v1/tasks/{t1}").status_code == 403
    every = api.get("admin", f"/api/v1/tasks?collection_id={cid}").json()
    assert [t["id"] for t in every] == [t1, t2]
    only = api.get("admin", f"/api/v1/tasks?collection_id={cid}&assessor=max").json()
    assert [t["id"] for t in only] == [t2]
    assert api.get("admin", "/api/v1/tasks?status=bogus").status_code == 422
    body = {"collection_id": cid, "query_id": "nope", "assessor": "lia", "method": "topk"}
    assert api.post("admin", "/api/v1/tasks", json=body).status_code == 404
    body = {**body, "query_id": "l1", "options": {"colour": "blue"}}
    r = api.post("admin", "/api/v1/tasks", json=body)
    assert r.status_code == 422 and "colour" in r.json()["detail"]
    assert api.get("admin", "/api/v1/tasks/99999/next").status_code == 404


def test_simulated_assessor_topk_n50_k10(api: Api) -> None:
    """The REST loop is the labeling core: same seed -> same questions, same count, and the
    result and the qrels export equal the oracle's top-k."""
    api.add_user("sim")
    n, k, seed = 50, 10, 20260
    rng = random.Random(5)
    scores = {f"s{i:03d}": rng.random() for i in range(n)}
    records = [
        {"query_id": "sim-q", "query": "simulated", "doc_id": d, "title": d, "text": "t"}
        for d in scores
    ]
    cid = make_collection(api, "simulated", records)
    tid = make_task(api, cid, "sim-q", "sim", k=k, seed=seed)
    oracle = Assessor(scores, seed=1)

    q = api.get("sim", f"/api/v1/tasks/{tid}/next").json()
    judgments = 0
    while not q["done"]:
        question = PairQuestion(q["seq"], q["pair"]["left"]["doc_id"], q["pair"]["right"]["doc_id"])
        answer = oracle.answer_pair(question)
        r = api.post("sim", f"/api/v1/tasks/{tid}/judgments", json=pair_body(q, answer.outcome))
        assert r.status_code == 200, r.text
        q = r.json()
        judgments += 1
    truth = oracle.true_topk(k)
    result = api.get("sim", f"/api/v1/tasks/{tid}/result").json()
    assert result["top"] == truth
    assert result["judgments"] == judgments

    direct = run_session(
        open_session("topk", [r["doc_id"] for r in records], k=k, seed=seed),
        Assessor(scores, seed=1),
        timed=False,
    )
    assert direct.judgments == judgments
    assert list(direct.result.top) == truth

    qrels = api.get("admin", f"/api/v1/collections/{cid}/export?format=qrels").text.splitlines()
    labelled = [(ln.split()[2], int(ln.split()[3])) for ln in qrels]
    assert labelled[:k] == [(doc, k - i) for i, doc in enumerate(truth)]
    assert all(label == 0 for _doc, label in labelled[k:]) and len(labelled) == n


def test_question_payload_names_the_challenger_side(api: Api) -> None:
    """``challenger`` is the side showing Step 2's new document: null while the heap is built
    (Step 1), "left" or "right" in Step 2 (n = 12, k = 3), checked against the labeling core's
    ``pending_challenger`` replayed from the same answers."""
    api.add_user("chal")
    records = pool("ch", 12)
    cid = make_collection(api, "challenger", records)
    options = {"not_relevant": True}
    tid = make_task(api, cid, "ch", "chal", k=3, seed=11, options=options)
    oracle = open_session("topk", [r["doc_id"] for r in records], k=3, seed=11, options=options)
    q = api.get("chal", f"/api/v1/tasks/{tid}/next").json()
    sides = []
    while not q["done"]:
        pending = oracle.pending
        assert (pending.left, pending.right) == (
            q["pair"]["left"]["doc_id"],
            q["pair"]["right"]["doc_id"],
        )
        expected = {pending.left: "left", pending.right: "right"}.get(oracle.pending_challenger)
        assert q["challenger"] == expected
        # "not relevant" is offered exactly for a Step-2 root comparison, i.e. with a challenger
        assert ("not_relevant" in q["allowed_outcomes"]) == (q["challenger"] is not None)
        sides.append(q["challenger"])
        oracle.submit(PairAnswer(pending.left, pending.right, "left"))
        q = api.post("chal", f"/api/v1/tasks/{tid}/judgments", json=pair_body(q, "left")).json()
    assert sides[0] is None  # the first questions build the heap
    assert {"left", "right"} & set(sides)  # the stream phase has challengers


def test_cached_session_never_hides_another_writer(api: Api) -> None:
    """The in-process replay cache is checked against the log version in the write
    transaction: a change made by another process (here: another Database on the same URL)
    is seen at once. The other process undoes question 0 and answers it differently, so the
    app's cached session (after "left") poses a different question 1 than the log does: a
    stale cache would store an answer the log cannot replay."""
    from app.judging import loop
    from app.judging import service as judging
    from app.kernel.db import Database

    api.add_user("cachy")
    cid = make_collection(api, "cache-check", pool("cc", 10))
    url = "/api/v1/tasks/{tid}/judgments"
    for seed in range(21, 60):  # a seed whose question 1 depends on the answer to question 0
        tid = make_task(api, cid, "cc", "cachy", k=3, seed=seed)
        q0 = api.get("cachy", f"/api/v1/tasks/{tid}/next").json()
        q1 = api.post("cachy", url.format(tid=tid), json=pair_body(q0, "left")).json()
        other = Database.from_url(api.db.engine.url.render_as_string(hide_password=False))
        try:
            user = next(u for u in _users(other) if u.username == "cachy")
            judging.undo_judgment(db=other, user=user, task_id=tid)
            body = pair_body(q0, "right")
            theirs = judging.submit_judgment(db=other, user=user, task_id=tid, data=body)
        finally:
            other.dispose()
        if theirs["pair"] != q1["pair"]:
            break
    else:
        raise AssertionError("no seed makes question 1 depend on question 0")
    r = api.post("cachy", url.format(tid=tid), json=pair_body(q1, "left"))
    assert r.status_code == 409, r.text
    assert r.json()["current"] == theirs
    # The identical retry of the other process's answer is idempotent here too.
    r = api.post("cachy", url.format(tid=tid), json=pair_body(q0, "right"))
    assert r.status_code == 200 and r.json() == theirs
    with api.db.read() as s:
        live = s.execute(
            select(Judgment.seq, Judgment.outcome)
            .where(Judgment.task_id == tid, Judgment.undone.is_(False))
            .order_by(Judgment.seq)
        ).all()
    assert [tuple(x) for x in live] == [(0, "right")]
    # Answering on goes through the cache again and agrees with a fresh replay.
    q2 = api.post("cachy", url.format(tid=tid), json=pair_body(theirs, "left")).json()
    loop.clear_caches(api.db)
    assert api.get("cachy", f"/api/v1/tasks/{tid}/next").json() == q2


def _users(db: Any) -> list[Any]:
    from app.kernel.models import User

    with db.read() as s:
        return list(s.scalars(select(User)))
