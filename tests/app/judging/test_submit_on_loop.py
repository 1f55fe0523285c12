"""Postgres: the common submit on the event loop in one round trip
(``app.judging.service.submit_on_loop``, ``app.judging.repository.store_if_current``).

It must store exactly what the general path (``judging.submit_judgment``) would, and nothing
whenever the general path would refuse or the log moved on behind the cached session (then it
returns None and the general path answers). Real Postgres, a fresh schema per test; the
"other process" is a second :class:`~app.kernel.db.Database` on the same schema.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from app.auth.tokens import BearerToken
from app.collections import service as collections
from app.judging import loop
from app.judging import service as judging
from app.kernel.db import Database
from app.kernel.errors import Conflict, Forbidden, Unauthorized
from app.kernel.models import ApiToken, Judgment, Task, User, utcnow
from app.tasks import service as tasks
from app.users import service as users
from labeling.protocol.session import open_session
from labeling.protocol.types import PairAnswer
from tests.app.conftest import fresh_database

pytestmark = pytest.mark.postgres

N_DOCS = 6
SCORES = {f"d{i}": float(N_DOCS - i) for i in range(N_DOCS)}  # d0 best


@dataclass
class World:
    db: Database
    loop: asyncio.AbstractEventLoop
    url: str
    caller: BearerToken
    user: User
    other: User
    task_id: int
    doc_ids: list[str]

    def on_loop(self, data: dict[str, Any], caller: Any = None) -> Any:
        return self.loop.run_until_complete(
            judging.submit_on_loop(
                db=self.db, user=caller or self.caller, task_id=self.task_id, data=data
            )
        )

    def next(self) -> dict[str, Any]:
        return judging.next_question(db=self.db, user=self.caller, task_id=self.task_id)

    def stored(self) -> list[Judgment]:
        with self.db.read() as s:
            return list(
                s.scalars(
                    select(Judgment)
                    .where(Judgment.task_id == self.task_id, Judgment.undone.is_(False))
                    .order_by(Judgment.seq)
                )
            )

    def task(self) -> Task:
        with self.db.read() as s:
            found = s.get(Task, self.task_id)
            assert found is not None
            return found


@pytest.fixture()
def world(tmp_path: Path) -> Iterator[World]:
    import migrations

    with fresh_database("postgres", tmp_path) as url:
        migrations.upgrade(url)
        db = Database.from_url(url)
        loop = asyncio.new_event_loop()
        try:
            user = users.create_user(db=db, username="ann", password="on-the-loop-pw-1")
            other = users.create_user(db=db, username="bob", password="on-the-loop-pw-2")
            caller = BearerToken(create_token(db, user.id))
            coll = collections.create_collection(db=db, name="loop")
            lines = [
                f'{{"query_id":"q","query":"q","doc_id":"{d}","title":"t {d}","text":"x"}}'
                for d in SCORES
            ]
            collections.import_ndjson(db=db, collection_id=coll.id, data="\n".join(lines).encode())
            task = tasks.create_task(
                db=db,
                collection_id=coll.id,
                query_id="q",
                assessor="ann",
                method="topk",
                k=2,
                seed=3,
            )
            yield World(db, loop, url, caller, user, other, task.id, list(SCORES))
        finally:
            db.dispose()
            loop.close()


def create_token(db: Database, user_id: int) -> str:
    from app.auth import tokens

    return tokens.create_api_token(db, user_id, name="loop")


def answer(q: dict[str, Any]) -> dict[str, Any]:
    """The oracle's answer to question ``q`` (the better-scored document wins)."""
    left, right = q["pair"]["left"]["doc_id"], q["pair"]["right"]["doc_id"]
    outcome = "left" if SCORES[left] > SCORES[right] else "right"
    return {"seq": q["seq"], "left": left, "right": right, "outcome": outcome, "active_ms": 70}


def test_a_whole_task_judged_on_the_loop_is_stored_as_the_protocol_says(world: World) -> None:
    q = world.next()
    assert world.task().status == "pending"
    expected = open_session("topk", world.doc_ids, k=2, seed=3)
    answered = 0
    while not q["done"]:
        data = answer(q)
        nxt = world.on_loop(data)
        assert nxt is not None, "a warm fresh answer is stored on the loop"
        expected.submit(PairAnswer(data["left"], data["right"], data["outcome"]))
        answered += 1
        assert nxt["seq"] == q["seq"] + 1 if not nxt["done"] else nxt["done"]
        assert nxt["progress"]["judgments"] == answered
        assert nxt["active_ms"] == 70 * answered
        if answered == 1:
            task = world.task()
            assert task.status == "active" and task.started_at is not None
        q = nxt
    rows = world.stored()
    assert [r.seq for r in rows] == list(range(answered))
    assert [(r.left_doc, r.right_doc, r.outcome) for r in rows] == [
        (a.left, a.right, a.outcome) for a in expected.answers
    ]
    task = world.task()
    assert task.status == "done" and task.finished_at is not None
    assert task.started_at is not None and task.started_at <= task.finished_at
    assert expected.done and expected.result().top == ["d0", "d1"]


def test_a_warm_submit_on_the_loop_is_one_round_trip(world: World, tmp_path: Path) -> None:
    """libpq's trace of three submits on one connection: each is one message and one wait; a
    statement is prepared once per connection (the first answer's status change is a variant
    of its own)."""
    q = world.next()
    traces = [tmp_path / f"submit{i}.txt" for i in range(3)]

    async def traced_submits() -> list[Any]:
        connections = world.db.loop_connections
        assert connections is not None
        async with connections.connection() as conn:  # the connection the submits reuse
            pgconn = conn.connection.pgconn
        answers, current = [], q
        for trace in traces:
            with trace.open("w") as out:
                pgconn.trace(out.fileno())
                try:
                    current = await judging.submit_on_loop(
                        db=world.db,
                        user=world.caller,
                        task_id=world.task_id,
                        data=answer(current),
                    )
                finally:
                    pgconn.untrace()
            assert current is not None
            answers.append(current)
        return answers

    answers = world.loop.run_until_complete(traced_submits())
    assert [a["progress"]["judgments"] for a in answers] == [1, 2, 3]
    prepared = []
    for trace in traces:
        # One message per entry: "timestamp, F(rontend) or B(ackend), length, kind, detail"
        # (a statement's text may span lines).
        entries = re.split(r"\n(?=\d{4}-\d\d-\d\d )", trace.read_text().strip())
        messages = [entry.split("\t") for entry in entries]
        # The client waits for the server each time its messages are followed by the server's.
        turns = sum(1 for a, b in itertools.pairwise(messages) if a[1] == "F" and b[1] == "B")
        assert turns == 1, messages
        sent = [m for m in messages if m[1] == "F"]
        assert [m[3] for m in sent] == ["Query"]
        text = sent[0][4]
        assert text.count("EXECUTE heapjudge_") == 2
        assert text.index("EXECUTE heapjudge_lock_task") < text.index("EXECUTE heapjudge_store")
        prepared.append(re.findall(r"PREPARE (\w+)", text))
    assert prepared == [
        ["heapjudge_lock_task", "heapjudge_store_token_start"],
        ["heapjudge_store_token_only"],
        [],
    ]
    assert len(world.stored()) == 3


def test_nothing_is_stored_on_the_loop_when_another_process_moved_the_log(
    world: World,
) -> None:
    q = world.next()  # this process caches the session at the empty log
    elsewhere = Database.from_url(world.url)
    try:
        judging.submit_judgment(
            db=elsewhere, user=world.caller, task_id=world.task_id, data=answer(q)
        )
    finally:
        elsewhere.dispose()
    assert world.on_loop(answer(q)) is None  # the cached session is behind the log
    assert len(world.stored()) == 1
    # The general path sees an identical retry: nothing stored, the next question returned.
    nxt = judging.submit_judgment(
        db=world.db, user=world.caller, task_id=world.task_id, data=answer(q)
    )
    assert nxt["seq"] == q["seq"] + 1 and len(world.stored()) == 1


def test_a_retry_or_a_conflicting_answer_is_left_to_the_general_path(world: World) -> None:
    q = world.next()
    assert world.on_loop(answer(q)) is not None
    assert world.on_loop(answer(q)) is None  # seq already answered: not a fresh answer
    flipped = answer(q) | {"outcome": "right" if answer(q)["outcome"] == "left" else "left"}
    assert world.on_loop(flipped) is None
    with pytest.raises(Conflict):
        judging.submit_judgment(db=world.db, user=world.caller, task_id=world.task_id, data=flipped)
    assert len(world.stored()) == 1


@pytest.mark.parametrize("refusal", ["revoked", "expired", "disabled", "cancelled", "foreign"])
def test_nothing_is_stored_on_the_loop_for_what_the_general_path_refuses(
    world: World, refusal: str
) -> None:
    q = world.next()
    caller: Any = world.caller
    with world.db.write() as s:
        if refusal == "revoked":
            s.execute(update(ApiToken).values(token_hash="revoked"))
        elif refusal == "expired":
            s.execute(update(ApiToken).values(expires_at=utcnow() - timedelta(seconds=1)))
        elif refusal == "disabled":
            s.execute(update(User).where(User.id == world.user.id).values(disabled=True))
        elif refusal == "cancelled":
            s.execute(update(Task).values(status="cancelled"))
    if refusal == "foreign":  # another assessor's browser session
        caller = world.other
    assert world.on_loop(answer(q), caller) is None
    assert world.stored() == []
    expected = {"cancelled": Conflict, "foreign": Forbidden}.get(refusal, Unauthorized)
    with pytest.raises(expected):
        judging.submit_judgment(db=world.db, user=caller, task_id=world.task_id, data=answer(q))
    assert world.stored() == []
    assert world.task().status == ("cancelled" if refusal == "cancelled" else "pending")


def test_a_browser_session_is_the_assessor_on_the_loop(world: World) -> None:
    q = world.next()
    assert world.on_loop(answer(q), world.user) is not None
    assert len(world.stored()) == 1


def test_the_token_is_refreshed_on_the_loop_when_due(world: World) -> None:
    long_ago = utcnow() - timedelta(hours=2)
    with world.db.write() as s:
        s.execute(update(ApiToken).values(last_used_at=long_ago))
    q = world.next()  # a read path: refreshes it in a transaction of its own
    with world.db.write() as s:
        s.execute(update(ApiToken).values(last_used_at=long_ago))
    before = utcnow()
    assert world.on_loop(answer(q)) is not None
    with world.db.read() as s:
        refreshed = s.scalar(select(ApiToken.last_used_at))
    assert refreshed is not None and refreshed >= before
    # Used again at once: not due, left as it is.
    q = world.next()
    assert world.on_loop(answer(q)) is not None
    with world.db.read() as s:
        assert s.scalar(select(ApiToken.last_used_at)) == refreshed


def test_text_is_stored_on_the_loop_exactly_as_sent(world: World) -> None:
    """The arguments are bound client-side (quoted as literals): quotes, backslashes, a
    semicolon, a dollar-quote and non-ASCII text come back unchanged."""
    q = world.next()
    comment = 'it\'s \\ "quoted"; DROP TABLE judgment; -- $$ $1 %(seq)s ünïcödé ✓'
    assert world.on_loop(answer(q) | {"comment": comment}) is not None
    [row] = world.stored()
    assert row.comment == comment


def test_a_dead_connection_sends_the_submit_to_the_general_path(world: World) -> None:
    from tests.app.kernel.test_connection_pool import terminate

    q = world.next()

    async def backend_of_the_idle_connection() -> int:
        connections = world.db.loop_connections
        assert connections is not None
        async with connections.connection() as conn:
            cursor = await conn.connection.execute("SELECT pg_backend_pid()")
            row = await cursor.fetchone()
            assert row is not None
            return int(row[0])

    terminate(world.loop.run_until_complete(backend_of_the_idle_connection()))
    assert world.on_loop(answer(q)) is None  # the server went away: nothing stored here
    assert world.stored() == []
    nxt = judging.submit_judgment(
        db=world.db, user=world.caller, task_id=world.task_id, data=answer(q)
    )
    assert len(world.stored()) == 1
    assert world.on_loop(answer(nxt)) is not None  # a new connection, the session cached again
    assert len(world.stored()) == 2


def test_documents_not_cached_are_read_off_the_loop(world: World) -> None:
    """The session cached, its documents not (evicted): the judgment is still stored in one
    round trip, and the next question comes with its documents (read on a worker)."""
    from app.judging.loop import DocumentCache

    q = world.next()
    loop.LOOP_CACHES.of(world.db).documents = DocumentCache()  # as if every entry was evicted
    nxt = world.on_loop(answer(q))
    assert nxt is not None and len(world.stored()) == 1
    for side in ("left", "right"):
        assert nxt["pair"][side]["title"] == f"t {nxt['pair'][side]['doc_id']}"
        assert nxt["pair"][side]["text"] == "x"
