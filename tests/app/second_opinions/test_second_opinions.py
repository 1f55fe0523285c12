"""Second opinions over REST, on a real SQLite file and a real Postgres schema: a ``+robust``
task's repeats routed to a second assessor (docs/noise.md#routing-re-asks-to-a-second-assessor).

Oracles: a consistent simulated assessor's true top k (``labeling.study.simulation.Assessor``), the
labeling core's own replay of the stored log (which seqs are deliberate repeats), and the
database rows themselves (``judgment.answered_by``, ``second_opinion.status``).
"""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from app.kernel.models import Judgment, SecondOpinion, Task, User, utcnow
from labeling.protocol.session import open_session
from labeling.protocol.types import PairAnswer, PairQuestion
from labeling.study.simulation import Assessor
from tests.app.admin_support import make_collection
from tests.app.conftest import Api

N, K = 12, 4
STRATEGY = "tournament+robust"


@pytest.fixture(scope="module")
def coll(api: Api) -> tuple[int, dict[str, dict[str, float]]]:
    for name in ("ann", "bob", "cy", "dee"):
        api.add_user(name)
    return make_collection(api, "second-opinions", queries=6, docs=N)


def create(api: Api, cid: int, qid: str, assessor: str, **options: Any) -> dict[str, Any]:
    body = {
        "collection_id": cid,
        "query_id": qid,
        "assessor": assessor,
        "method": "topk",
        "k": K,
        "seed": 11,
        "options": {"strategy": STRATEGY, **options},
    }
    r = api.post("admin", "/api/v1/tasks", json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())


def pair_of(body: dict[str, Any]) -> tuple[str, str]:
    return body["pair"]["left"]["doc_id"], body["pair"]["right"]["doc_id"]


def answer_body(body: dict[str, Any], oracle: Assessor, active_ms: int = 700) -> dict[str, Any]:
    left, right = pair_of(body)
    outcome = oracle.answer_pair(PairQuestion(body["seq"], left, right)).outcome
    return {
        "seq": body["seq"],
        "left": left,
        "right": right,
        "outcome": outcome,
        "active_ms": active_ms,
    }


def run_both(
    api: Api, task_id: int, first: str, a: Assessor, second: str, b: Assessor
) -> tuple[dict[str, Any], int, int]:
    """Drive the task to its end: the first assessor answers what it shows; when it waits,
    the second assessor's queue must hold exactly that question, and they answer it. Returns
    the final body, the first assessor's answers and the second's."""
    body = api.get(first, f"/api/v1/tasks/{task_id}/next").json()
    own = routed = 0
    while not body["done"]:
        if "waiting" in body:
            waiting = body["waiting"]
            assert "seq" not in body and "pair" not in body
            assert waiting["assessor"] == second
            item = api.get(second, "/api/v1/second-opinions/next").json()
            assert item["done"] is False
            assert item["second_opinion"]["id"] == waiting["second_opinion_id"]
            assert item["second_opinion"]["task_id"] == task_id
            assert (
                item["seq"] == waiting["seq"] and item["second_opinion"]["first_assessor"] == first
            )
            r = api.post(
                second,
                f"/api/v1/second-opinions/{waiting['second_opinion_id']}/answer",
                json=answer_body(item, b, active_ms=900),
            )
            assert r.status_code == 200, r.text
            assert r.json()["done"] is True
            assert r.json()["second_opinion"]["status"] == "answered"
            routed += 1
            body = api.get(first, f"/api/v1/tasks/{task_id}/next").json()
        else:
            r = api.post(first, f"/api/v1/tasks/{task_id}/judgments", json=answer_body(body, a))
            assert r.status_code == 200, r.text
            body = r.json()
            own += 1
        assert own + routed < 2000
    return body, own, routed


def step(api: Api, user: str, task_id: int, body: dict[str, Any], oracle: Assessor) -> Any:
    """Answer the task's shown question with ``oracle``; the next body."""
    r = api.post(user, f"/api/v1/tasks/{task_id}/judgments", json=answer_body(body, oracle))
    assert r.status_code == 200, r.text
    return r.json()


def judge_until_routed(
    api: Api, user: str, task_id: int, body: dict[str, Any], oracle: Assessor
) -> Any:
    """Answer ``body`` and the questions after it until the task waits for a second opinion;
    the waiting body (the task must not finish first)."""
    while "waiting" not in body:
        body = step(api, user, task_id, body, oracle)
        assert not body["done"]
    return body


def log_rows(api: Api, task_id: int) -> list[Any]:
    with api.db.read() as s:
        return list(
            s.execute(
                select(
                    Judgment.seq,
                    Judgment.left_doc,
                    Judgment.right_doc,
                    Judgment.outcome,
                    Judgment.answered_by,
                    Judgment.active_ms,
                )
                .where(Judgment.task_id == task_id, Judgment.undone.is_(False))
                .order_by(Judgment.seq)
            )
        )


def user_id(api: Api, name: str) -> int:
    with api.db.read() as s:
        return int(s.scalar(select(User.id).where(User.username == name)))


def repeats_of(task: dict[str, Any], rows: list[Any], doc_ids: list[str]) -> list[int]:
    """The seqs the labeling core marks as deliberate repeats when it replays the log."""
    session = open_session(
        "topk",
        doc_ids,
        k=K,
        seed=task["seed"],
        options=task["options"],
        answers=[PairAnswer(r.left_doc, r.right_doc, r.outcome) for r in rows],
    )
    assert session.done
    return list(session.repeats)


def test_consistent_assessors_route_every_repeat_and_get_the_oracle_top_k(
    api: Api, coll: tuple[int, dict[str, dict[str, float]]]
) -> None:
    cid, scores = coll
    task = create(api, cid, "101", "ann", second_assessor="bob")
    assert task["options"]["second_assessor"] == ["bob"]
    assert task["options"]["second_opinion_timeout_s"] == 600
    oracle = Assessor(scores["101"], seed=1)
    final, own, routed = run_both(api, task["id"], "ann", oracle, "bob", oracle)
    assert final["done"] and routed > 0 and own > 0
    result = api.get("ann", f"/api/v1/tasks/{task['id']}/result").json()
    assert result["top"] == oracle.true_topk(K)
    assert result["judgments"] == own + routed
    rows = log_rows(api, task["id"])
    bob = user_id(api, "bob")
    by_bob = [r.seq for r in rows if r.answered_by == bob]
    assert [r.answered_by for r in rows if r.seq not in by_bob] == [None] * own
    # Exactly the strategy's deliberate repeats went to bob, and each one once.
    assert by_bob == repeats_of(task, rows, list(scores["101"]))
    assert all(r.active_ms == 900 for r in rows if r.answered_by == bob)
    with api.db.read() as s:
        statuses = list(
            s.scalars(select(SecondOpinion.status).where(SecondOpinion.task_id == task["id"]))
        )
    assert statuses == ["answered"] * routed
    # Exports and the analysis tell who answered: bob's answers are his records.
    r = api.get("admin", f"/api/v1/collections/{cid}/export?format=pairs-jsonl&assessor=ann")
    assert r.status_code == 200, r.text
    exported = [json.loads(line) for line in r.text.splitlines()]
    exported = [x for x in exported if x["task_id"] == task["id"]]
    assert [x["seq"] for x in exported if x["answered_by"] == "bob"] == by_bob
    assert all(x["answered_by"] is None for x in exported if x["seq"] not in by_bob)
    report = api.get("admin", f"/api/v1/collections/{cid}/analysis").json()
    consistency = {c["assessor"]: c for c in report["self_consistency"]}
    # Ann repeated nothing herself (every repeat went to bob, who saw each pair once).
    assert consistency.get("ann", {}).get("repeats", 0) == 0
    assert consistency.get("bob", {}).get("repeats", 0) == 0
    # Bob's queue is empty and counts what he answered; the task status is done.
    nxt = api.get("bob", "/api/v1/second-opinions/next").json()
    assert nxt["done"] is True and nxt["progress"]["judgments"] >= routed
    assert api.get("admin", f"/api/v1/tasks/{task['id']}").json()["status"] == "done"


def test_a_flipping_first_assessor_is_outvoted_by_a_consistent_second(
    api: Api, coll: tuple[int, dict[str, dict[str, float]]], tmp_path: Path
) -> None:
    """Ann flips 20% of her answers; bob, consistent, gets every repeat. Every pair bob voted
    on twice is settled his way (2 of 3 votes: the robust rule's plurality), whatever ann
    said first; and he overturned at least one of her answers."""
    cid, scores = coll
    qid = "102"
    task = create(api, cid, qid, "ann", second_assessor=["bob"])
    truth = Assessor(scores[qid], seed=1)
    ann = Assessor(scores[qid], seed=5, flip=0.2)
    final, _own, routed = run_both(api, task["id"], "ann", ann, "bob", truth)
    assert final["done"] and routed > 0
    rows = log_rows(api, task["id"])
    bob = user_id(api, "bob")
    assert {r.answered_by for r in rows} == {None, bob}
    session = open_session(
        "topk",
        list(scores[qid]),
        k=K,
        seed=11,
        options=task["options"],
        answers=[PairAnswer(r.left_doc, r.right_doc, r.outcome) for r in rows],
    )
    result = api.get("ann", f"/api/v1/tasks/{task['id']}/result").json()
    assert result["top"] == session.result().top
    first: dict[frozenset[str], str] = {}
    bob_votes: dict[frozenset[str], int] = {}
    overturned = 0
    for r in rows:
        key = frozenset((r.left_doc, r.right_doc))
        winner = r.left_doc if r.outcome == "left" else r.right_doc
        if r.answered_by is None:
            first.setdefault(key, winner)
        else:
            assert winner == min(key, key=truth.rank.__getitem__)  # bob is consistent
            bob_votes[key] = bob_votes.get(key, 0) + 1
            overturned += first.get(key) not in (None, winner)
    assert overturned > 0
    _trec_prefs_keep_both_judges(api, cid, task["id"], bob, rows, tmp_path)
    combined = session.state.combined  # type: ignore[attr-defined]
    settled = [key for key, votes in bob_votes.items() if votes >= 2]
    assert settled
    for key in settled:
        a, b = sorted(key)
        assert combined[(a, b)][0] == min(key, key=truth.rank.__getitem__)


def _trec_prefs_keep_both_judges(
    api: Api, cid: int, task_id: int, bob: int, rows: Any, tmp: Path
) -> None:
    """The trec-prefs export (docs/trec-eval.md#prefs): bob's answers are the judgment group
    ``t<task>.u<bob>``, ann's ``t<task>`` (and ``t<task>.c<n>`` for an answer contradicting her
    earlier ones, which her flips make); one preference per answer, the winner at level 2,
    and trec_eval reads the file without an inconsistent group."""
    from ranking.trec_eval.cli import run as trec_eval

    r = api.get("admin", f"/api/v1/collections/{cid}/export?format=trec-prefs")
    assert r.status_code == 200, r.text
    group = f"t{task_id}"
    lines = [
        x.split()
        for x in r.text.splitlines()
        if x.split()[1] == group or x.split()[1].startswith(group + ".")
    ]
    by_group: dict[str, list[str]] = {}
    for _q, jg, _jsg, doc, level in lines:
        if level == "2":
            by_group.setdefault(jg, []).append(doc)
    bob_group = f"t{task_id}.u{bob}"
    winners = [r.left_doc if r.outcome == "left" else r.right_doc for r in rows]
    assert by_group[bob_group] == [
        w for w, r in zip(winners, rows, strict=True) if r.answered_by == bob
    ]
    ann = [w for w, r in zip(winners, rows, strict=True) if r.answered_by is None]
    ann_groups = [g for g in by_group if g != bob_group]
    assert sorted(d for g in ann_groups for d in by_group[g]) == sorted(ann)
    assert all(g == f"t{task_id}" or g.startswith(f"t{task_id}.c") for g in ann_groups)
    prefs, run = tmp / "second.prefs", tmp / "second.run"
    prefs.write_text("".join(" ".join(x) + "\n" for x in lines))
    docs = sorted({(q, d) for q, _, _, d, _ in lines})
    run.write_text("".join(f"{q} Q0 {d} {i} {-i} r\n" for i, (q, d) in enumerate(docs)))
    out, err = io.StringIO(), io.StringIO()
    assert trec_eval(["-m", "all_prefs", "-R", "prefs", str(prefs), str(run)], out, err) == 0, (
        err.getvalue()
    )


def test_timeout_and_reclaim_return_the_question_to_the_first_assessor(
    api: Api, coll: tuple[int, dict[str, dict[str, float]]]
) -> None:
    cid, scores = coll
    task = create(api, cid, "103", "cy", second_assessor="dee", second_opinion_timeout_s=60)
    oracle = Assessor(scores["103"], seed=1)
    tid = task["id"]
    body = judge_until_routed(
        api, "cy", tid, api.get("cy", f"/api/v1/tasks/{tid}/next").json(), oracle
    )
    waiting = body["waiting"]
    item_id, seq = waiting["second_opinion_id"], waiting["seq"]
    # While it waits, the first assessor cannot answer it (409 with the waiting state).
    item = api.get("dee", f"/api/v1/second-opinions/{item_id}").json()
    guess = {
        "seq": seq,
        "left": item["pair"]["left"]["doc_id"],
        "right": item["pair"]["right"]["doc_id"],
        "outcome": "left",
    }
    r = api.post("cy", f"/api/v1/tasks/{tid}/judgments", json=guess)
    assert r.status_code == 409, r.text
    assert r.json()["current"]["waiting"]["second_opinion_id"] == item_id
    # The deadline passes (moved into the past here: no waiting in tests).
    with api.db.write() as s:
        row = s.get(SecondOpinion, item_id)
        assert row.deadline_at - row.created_at == timedelta(seconds=60)
        row.deadline_at = utcnow() - timedelta(seconds=1)
    assert api.get("dee", "/api/v1/second-opinions/next").json()["done"] is True
    body = api.get("cy", f"/api/v1/tasks/{tid}/next").json()
    assert "waiting" not in body and body["seq"] == seq
    assert pair_of(body) == (guess["left"], guess["right"])  # the same question, as routed
    late = api.post("dee", f"/api/v1/second-opinions/{item_id}/answer", json=guess)
    assert late.status_code == 409 and "expired" in late.text
    with api.db.read() as s:
        assert s.get(SecondOpinion, item_id).status == "expired"
    # Cy answers it herself: her own judgment.
    body = step(api, "cy", tid, body, oracle)
    assert log_rows(api, tid)[seq].answered_by is None
    # The next repeat is routed again; this time cy reclaims it ("ask me instead").
    body = judge_until_routed(api, "cy", tid, body, oracle)
    second_id, seq2 = body["waiting"]["second_opinion_id"], body["waiting"]["seq"]
    assert second_id != item_id
    r = api.post("cy", f"/api/v1/tasks/{tid}/second-opinion/reclaim")
    assert r.status_code == 200, r.text
    assert r.json()["seq"] == seq2 and "waiting" not in r.json()
    again = api.post("cy", f"/api/v1/tasks/{tid}/second-opinion/reclaim")  # idempotent
    assert again.status_code == 200 and again.json()["seq"] == seq2
    with api.db.read() as s:
        assert s.get(SecondOpinion, second_id).status == "reclaimed"
    reclaimed = api.get("dee", f"/api/v1/second-opinions/{second_id}").json()
    assert reclaimed["done"] is True and "pair" not in reclaimed
    r = api.post(
        "dee",
        f"/api/v1/second-opinions/{second_id}/answer",
        json={
            "seq": seq2,
            "left": pair_of(r.json())[0],
            "right": pair_of(r.json())[1],
            "outcome": "left",
        },
    )
    assert r.status_code == 409 and "reclaimed" in r.text
    assert len(log_rows(api, tid)) == seq2  # nothing stored by dee


def test_answers_are_idempotent_and_only_the_assignee_may_answer(
    api: Api, coll: tuple[int, dict[str, dict[str, float]]]
) -> None:
    cid, scores = coll
    task = create(api, cid, "104", "ann", second_assessor="bob")
    oracle = Assessor(scores["104"], seed=1)
    tid = task["id"]
    body = judge_until_routed(
        api, "ann", tid, api.get("ann", f"/api/v1/tasks/{tid}/next").json(), oracle
    )
    item_id = body["waiting"]["second_opinion_id"]
    item = api.get("bob", f"/api/v1/second-opinions/{item_id}").json()
    payload = answer_body(item, oracle, active_ms=1234)
    # A third user, the first assessor and an admin may neither read nor answer it.
    for other in ("cy", "ann", "admin"):
        assert api.get(other, f"/api/v1/second-opinions/{item_id}").status_code == 403
        r = api.post(other, f"/api/v1/second-opinions/{item_id}/answer", json=payload)
        assert r.status_code == 403, r.text
    assert api.get("cy", "/api/v1/second-opinions").json() == []
    assert [i["id"] for i in api.get("bob", "/api/v1/second-opinions").json()] == [item_id]
    assert api.get("bob", "/api/v1/second-opinions/999999").status_code == 404
    # Bad input changes nothing: wrong seq, swapped pair (409), an outcome not offered (422).
    assert (
        api.post(
            "bob",
            f"/api/v1/second-opinions/{item_id}/answer",
            json={**payload, "seq": payload["seq"] + 1},
        ).status_code
        == 409
    )
    swapped = {**payload, "left": payload["right"], "right": payload["left"]}
    assert (
        api.post("bob", f"/api/v1/second-opinions/{item_id}/answer", json=swapped).status_code
        == 409
    )
    assert (
        api.post(
            "bob", f"/api/v1/second-opinions/{item_id}/answer", json={**payload, "outcome": "tie"}
        ).status_code
        == 422
    )
    assert (
        api.post(
            "bob", f"/api/v1/second-opinions/{item_id}/answer", json={**payload, "outcome": "maybe"}
        ).status_code
        == 422
    )
    assert len(log_rows(api, tid)) == payload["seq"]
    # The answer, then the same answer again: stored once.
    first = api.post("bob", f"/api/v1/second-opinions/{item_id}/answer", json=payload)
    assert first.status_code == 200, first.text
    retry = api.post("bob", f"/api/v1/second-opinions/{item_id}/answer", json=payload)
    assert retry.status_code == 200 and retry.json() == first.json()
    other = "left" if payload["outcome"] == "right" else "right"
    r = api.post(
        "bob", f"/api/v1/second-opinions/{item_id}/answer", json={**payload, "outcome": other}
    )
    assert (
        r.status_code == 409
        and r.json()["current"]["second_opinion"]["outcome"] == payload["outcome"]
    )
    rows = log_rows(api, tid)
    assert len(rows) == payload["seq"] + 1
    assert rows[-1].answered_by == user_id(api, "bob") and rows[-1].active_ms == 1234
    assert rows[-1].outcome == payload["outcome"]
    # The page's undo key for a second opinion is refused, with the item as current.
    r = api.post("bob", f"/api/v1/second-opinions/{item_id}/undo")
    assert r.status_code == 409 and r.json()["current"]["second_opinion"]["id"] == item_id
    # The first assessor's task moved on.
    nxt = api.get("ann", f"/api/v1/tasks/{tid}/next").json()
    assert nxt.get("seq", nxt.get("waiting", {}).get("seq")) == payload["seq"] + 1


def test_undo_past_a_routed_question_cancels_it(
    api: Api, coll: tuple[int, dict[str, dict[str, float]]]
) -> None:
    cid, scores = coll
    task = create(api, cid, "105", "bob", second_assessor="ann")
    oracle = Assessor(scores["105"], seed=1)
    tid = task["id"]
    body = judge_until_routed(
        api, "bob", tid, api.get("bob", f"/api/v1/tasks/{tid}/next").json(), oracle
    )
    item_id, seq = body["waiting"]["second_opinion_id"], body["waiting"]["seq"]
    item = api.get("ann", f"/api/v1/second-opinions/{item_id}").json()
    # Undo of the last answer: the routed question after it is cancelled.
    r = api.post("bob", f"/api/v1/tasks/{tid}/undo", json={"to_seq": seq - 1})
    assert r.status_code == 200, r.text
    assert r.json()["seq"] == seq - 1
    with api.db.read() as s:
        assert s.get(SecondOpinion, item_id).status == "cancelled"
    assert api.get("ann", "/api/v1/second-opinions/next").json()["done"] is True
    late = api.post(
        "ann", f"/api/v1/second-opinions/{item_id}/answer", json=answer_body(item, oracle)
    )
    assert late.status_code == 409 and "cancelled" in late.text
    assert len(log_rows(api, tid)) == seq - 1
    # Answering seq - 1 again routes the repeat anew (a new row), which ann answers; an undo
    # of that answer (bob's log, his to undo) puts it back in the queue as a new question.
    body = step(api, "bob", tid, r.json(), oracle)
    body = judge_until_routed(api, "bob", tid, body, oracle)
    new_id = body["waiting"]["second_opinion_id"]
    assert new_id != item_id
    item = api.get("ann", f"/api/v1/second-opinions/{new_id}").json()
    done = api.post(
        "ann", f"/api/v1/second-opinions/{new_id}/answer", json=answer_body(item, oracle)
    )
    assert done.status_code == 200
    answered_seq = item["seq"]
    r = api.post("bob", f"/api/v1/tasks/{tid}/undo", json={"to_seq": answered_seq})
    assert r.status_code == 200
    assert r.json()["waiting"]["seq"] == answered_seq
    assert r.json()["waiting"]["second_opinion_id"] not in (item_id, new_id)
    with api.db.read() as s:
        undone = s.scalars(
            select(Judgment.undone).where(Judgment.task_id == tid, Judgment.seq == answered_seq)
        ).all()
        assert sorted(undone) == [False, True] or sorted(undone) == [True]
        assert s.get(SecondOpinion, new_id).status == "answered"


def test_second_assessor_option_is_validated(
    api: Api, coll: tuple[int, dict[str, dict[str, float]]]
) -> None:
    cid, _ = coll
    with api.db.read() as s:
        before = len(s.scalars(select(Task.id)).all())
    base = {"collection_id": cid, "query_id": "106", "assessor": "ann", "method": "topk", "k": K}
    cases = [
        ({"strategy": STRATEGY, "second_assessor": "ann"}, "own assessor"),
        ({"strategy": STRATEGY, "second_assessor": "nobody"}, "no user named 'nobody'"),
        ({"strategy": "tournament", "second_assessor": "bob"}, "+robust"),
        ({"strategy": STRATEGY, "second_assessor": []}, "second_assessor"),
        ({"strategy": STRATEGY, "second_assessor": ["bob", "bob"]}, "listed twice"),
        ({"strategy": STRATEGY, "second_assessor": "bob", "second_opinion_timeout_s": 5}, "[60"),
        (
            {"strategy": STRATEGY, "second_assessor": "bob", "second_opinion_timeout_s": "x"},
            "whole number",
        ),
    ]
    for options, message in cases:
        r = api.post("admin", "/api/v1/tasks", json={**base, "options": options})
        assert r.status_code == 422, (options, r.text)
        assert message in r.text, (options, r.text)
    with api.db.write() as s:
        s.execute(update(User).where(User.username == "dee").values(disabled=True))
    try:
        r = api.post(
            "admin",
            "/api/v1/tasks",
            json={**base, "options": {"strategy": STRATEGY, "second_assessor": "dee"}},
        )
        assert r.status_code == 422 and "disabled" in r.text
    finally:
        with api.db.write() as s:
            s.execute(update(User).where(User.username == "dee").values(disabled=False))
    with api.db.read() as s:
        assert len(s.scalars(select(Task.id)).all()) == before


def test_planner_gives_robust_tasks_their_querys_other_topk_assessors(
    api: Api, coll: tuple[int, dict[str, dict[str, float]]]
) -> None:
    cid, _ = make_collection(api, "second-opinions-plan", queries=2, docs=N)
    csv = (
        "assessor,query_id,method\n"
        "ann,101,topk\nbob,101,topk\ncy,101,topk\ndee,101,graded\n"
        "ann,102,graded\nbob,102,graded\ncy,102,graded\ndee,102,topk\n"
    )
    body = {
        "collection_id": cid,
        "scheme": "csv",
        "csv": csv,
        "name": "routed",
        "k": K,
        "strategy": STRATEGY,
        "options": {"topk": {"second_opinion_timeout_s": 120}},
    }
    preview = api.post("admin", "/api/v1/admin/plans/preview", json=body)
    assert preview.status_code == 200, preview.text
    planned = {(t["assessor"], t["query_id"], t["method"]): t for t in preview.json()["tasks"]}
    # Only top-k assessors of the same query; the graded assessor is never asked (no one sees
    # a query under both methods), and a query with one top-k assessor routes nothing.
    assert planned[("ann", "101", "topk")]["second_assessor"] == ["bob", "cy"]
    assert planned[("bob", "101", "topk")]["second_assessor"] == ["ann", "cy"]
    assert planned[("dee", "101", "graded")]["second_assessor"] == []
    assert planned[("dee", "102", "topk")]["second_assessor"] == []
    r = api.post("admin", "/api/v1/admin/plans", json=body)
    assert r.status_code == 201, r.text
    with api.db.read() as s:
        tasks = list(s.scalars(select(Task).where(Task.id.in_(r.json()["task_ids"]))))
        names = dict(s.execute(select(User.id, User.username)).all())
    topk = [t for t in tasks if t.method == "topk"]
    routed = sorted(t.options["second_assessor"] for t in topk if t.options["second_assessor"])
    assert routed == [["ann", "bob"], ["ann", "cy"], ["bob", "cy"]]
    assert all(t.options["second_opinion_timeout_s"] == 120 for t in topk)
    assert [names[t.assessor_id] for t in topk if not t.options["second_assessor"]] == ["dee"]
    # Off on request, and never for a strategy without repeats.
    for extra in ({"second_opinions": False}, {"strategy": "tournament"}):
        p = api.post("admin", "/api/v1/admin/plans/preview", json={**body, **extra}).json()
        assert all(t["second_assessor"] == [] for t in p["tasks"]), extra
    # A plan does not take a second assessor as a plan-wide option.
    bad = {**body, "options": {"topk": {"second_assessor": ["ann"]}}}
    r = api.post("admin", "/api/v1/admin/plans/preview", json=bad)
    assert r.status_code == 422 and "per task" in r.text


def test_workload_counts_a_second_opinion_for_its_second_assessor(
    api: Api, coll: tuple[int, dict[str, dict[str, float]]]
) -> None:
    """After the tests above, bob answered second opinions in ann's tasks: the workload
    counts them (and their time) for bob, from the log itself."""
    with api.db.read() as s:
        bob = user_id(api, "bob")
        rows = s.execute(
            select(Judgment.active_ms, Judgment.answered_by, Task.assessor_id)
            .join(Task, Task.id == Judgment.task_id)
            .where(Judgment.undone.is_(False))
        ).all()
    expected = [ms for ms, by, owner in rows if (by or owner) == bob]
    assert any(by == bob for _, by, _ in rows)
    loads = {w["username"]: w for w in api.get("admin", "/api/v1/admin/users/workload").json()}
    assert loads["bob"]["judgments"] == len(expected)
    assert loads["bob"]["active_ms"] == sum(expected)
