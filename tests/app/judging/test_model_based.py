"""Model-based test of the judging API: random mixes of answers, retries, conflicting and
premature answers, and undos, checked after every step against a plain list of answers
replayed through the labeling core (the model), and at the end against the stored log."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from app.kernel.models import Judgment
from labeling.protocol.session import open_session
from labeling.protocol.types import PairAnswer, PairQuestion
from tests.app.conftest import Api
from tests.app.judging.support import make_collection, make_task, pool

OPS = st.lists(
    st.sampled_from(["answer", "answer", "answer", "retry", "conflict", "ahead", "undo"]),
    min_size=1,
    max_size=25,
)
_counter = itertools.count()


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS, seed=st.integers(0, 10_000), flip=st.booleans())
def test_api_matches_the_replayed_model(api: Api, ops: list[str], seed: int, flip: bool) -> None:
    name = f"model{next(_counter)}"
    api.add_user(name)
    cid = make_collection(api, f"model-{name}", pool("m", 7))
    tid = make_task(api, cid, "m", name, k=3, seed=seed)
    doc_ids = [f"d{i:03d}" for i in range(7)]
    log: list[PairAnswer] = []
    answered = False  # a task stays "active" after its first stored judgment, even if undone
    url = f"/api/v1/tasks/{tid}"

    def expected() -> Any:  # the model: the answers so far, replayed by the labeling core
        return open_session("topk", doc_ids, k=3, seed=seed, answers=log)

    def body(q: PairQuestion, seq: int, outcome: str) -> dict[str, Any]:
        return {"seq": seq, "left": q.left, "right": q.right, "outcome": outcome}

    for op in ops:
        model = expected()
        pending = model.pending
        if op == "answer" and pending is not None:
            better = (
                min(pending.left, pending.right) if not flip else max(pending.left, pending.right)
            )
            outcome = "left" if better == pending.left else "right"
            r = api.post(name, f"{url}/judgments", json=body(pending, pending.seq, outcome))
            assert r.status_code == 200, r.text
            log.append(PairAnswer(pending.left, pending.right, outcome))
            answered = True
        elif op == "retry" and log:
            last = log[-1]
            q = PairQuestion(len(log) - 1, last.left, last.right)
            r = api.post(name, f"{url}/judgments", json=body(q, q.seq, last.outcome))
            assert r.status_code == 200, r.text
        elif op == "conflict" and log:
            last = log[-1]
            other = "right" if last.outcome == "left" else "left"
            q = PairQuestion(len(log) - 1, last.left, last.right)
            r = api.post(name, f"{url}/judgments", json=body(q, q.seq, other))
            assert r.status_code == 409 and r.json()["current"]["done"] == model.done
        elif op == "ahead" and pending is not None:
            r = api.post(name, f"{url}/judgments", json=body(pending, pending.seq + 1, "left"))
            assert r.status_code == 409 and r.json()["current"]["seq"] == pending.seq
        elif op == "undo":
            r = api.post(name, f"{url}/undo")
            assert r.status_code == (200 if log else 409)
            if log:
                log.pop()
        nxt = api.get(name, f"{url}/next").json()
        model = expected()
        assert nxt["done"] == model.done
        assert nxt["progress"]["judgments"] == len(log)
        if not model.done:
            shown = (nxt["seq"], nxt["pair"]["left"]["doc_id"], nxt["pair"]["right"]["doc_id"])
            assert shown == (model.pending.seq, model.pending.left, model.pending.right)

    with api.db.read() as s:
        live = list(
            s.scalars(
                select(Judgment)
                .where(Judgment.task_id == tid, Judgment.undone.is_(False))
                .order_by(Judgment.seq)
            )
        )
    assert [(j.seq, j.left_doc, j.right_doc, j.outcome) for j in live] == [
        (i, a.left, a.right, a.outcome) for i, a in enumerate(log)
    ]
    status = api.get(name, url).json()["status"]
    if expected().done:
        assert status == "done"
    else:
        assert status == ("active" if answered else "pending")
