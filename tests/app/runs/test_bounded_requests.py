"""Bounded work per request (SQLite and Postgres): a leaderboard or agreement of more runs
than the cap is refused with the cap and the count; a resampling test that runs out of its
time budget says so (no matrix; the agreement is refused); a client that disconnects during a
randomization test stops the work at the next chunk (read from the budget's own counter, not
from timing); run uploads past the line limit or the cap on unknown documents are refused
with the count and store nothing.

Each failed before the bounds existed: every stored run was compared, the test ran to its
end whoever waited, and an upload of any length was stored."""

from __future__ import annotations

import asyncio
import random
import threading
from typing import Any
from urllib.parse import urlencode

import pytest

from app.kernel.budget import WorkBudget
from app.runs import evaluation
from ranking.compare import significance
from tests.app.admin_support import ndjson
from tests.app.conftest import Api

QUERIES = [f"q{i:02d}" for i in range(25)]  # above the exact test's 20: resampled
DOCS = [f"d{j}" for j in range(6)]
RUNS = ["r1", "r2", "r3", "r4", "r5"]


def _run_file(seed: int, extra: dict[str, list[str]] | None = None) -> bytes:
    rng = random.Random(seed)
    lines = []
    for q in QUERIES:
        docs = DOCS + (extra or {}).get(q, [])
        for rank, d in enumerate(rng.sample(docs, len(docs)), start=1):
            lines.append(f"{q} Q0 {d} {rank} {100 - rank} tag{seed}")
    return ("\n".join(lines) + "\n").encode()


def _upload(api: Api, cid: int, name: str, body: bytes) -> Any:
    return api.post("admin", f"/api/v1/admin/collections/{cid}/runs", files={"run": (name, body)})


@pytest.fixture(scope="module")
def collection(api: Api) -> int:
    r = api.post("admin", "/api/v1/collections", json={"name": "bounded"})
    assert r.status_code == 201, r.text
    cid = r.json()["id"]
    rng = random.Random(3)
    rows = [
        {"query_id": q, "query": f"query {q}", "doc_id": d, "text": f"t {d}", "grade": g}
        for q in QUERIES
        for d, g in ((d, rng.choice([0, 1, 2])) for d in DOCS)
    ]
    r = api.post(
        "admin",
        f"/api/v1/collections/{cid}/import",
        content=ndjson(rows),
        headers={"Content-Type": "application/x-ndjson"},
    )
    assert r.status_code == 200, r.text
    for i, name in enumerate(RUNS):
        r = _upload(api, cid, name, _run_file(i))
        assert r.status_code == 201, r.text
    return cid


def _board(api: Api, cid: int, **params: Any) -> Any:
    query = urlencode({"label_set": "qrels", "metric": "ndcg@10", **params}, doseq=True)
    return api.get("admin", f"/api/v1/admin/collections/{cid}/leaderboard?{query}")


def _stored(api: Api, cid: int) -> list[str]:
    r = api.get("admin", f"/api/v1/admin/collections/{cid}/runs")
    return [run["name"] for run in r.json()["runs"]]


def test_more_runs_than_the_cap_is_refused_with_cap_and_count(
    api: Api, collection: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api.db.settings, "compare_max_runs", 3)
    r = _board(api, collection)
    assert r.status_code == 422, r.text
    msg = r.json()["detail"]
    assert "the collection has 5 runs" in msg and "at most 3 runs" in msg, msg
    assert "10 tested pairs" in msg and "HEAPJUDGE_COMPARE_MAX_RUNS" in msg
    r = api.get(
        "admin",
        f"/api/v1/admin/collections/{collection}/agreement?label_set=qrels&against=qrels",
    )
    assert r.status_code == 422 and "at most 3 runs" in r.json()["detail"], r.text
    # Choosing runs within the cap answers, with exactly those runs.
    r = _board(api, collection, run=["r1", "r3", "r5"])
    assert r.status_code == 200, r.text
    assert sorted(x["run"] for x in r.json()["runs"]) == ["r1", "r3", "r5"]
    r = _board(api, collection, run=["r1", "r2", "r3", "r4"])
    assert r.status_code == 422 and "4 runs chosen" in r.json()["detail"], r.text
    r = _board(api, collection, run=["r1", "nope"])
    assert r.status_code == 422 and "'nope'" in r.json()["detail"], r.text
    assert _stored(api, collection) == RUNS  # nothing changed


class _Clock:
    """A clock that moves one second at each reading."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_a_test_past_its_time_budget_says_so(
    api: Api, collection: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Deadline 6.5 "seconds": the 5 runs are scored at readings 2..6, the test's first chunk
    # reads 7 and stops.
    made: list[WorkBudget] = []

    def budget(_db: Any) -> WorkBudget:
        made.append(WorkBudget(5.5, clock=_Clock()))
        return made[-1]

    monkeypatch.setattr(evaluation, "request_budget", budget)
    r = _board(api, collection, test="randomization")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["matrix"] is None and len(body["runs"]) == 5
    assert "did not finish within 5.5 s" in body["matrix_note"], body["matrix_note"]
    assert "10 pairs of 5 runs" in body["matrix_note"]
    assert made[-1].stopped == "time" and made[-1].checks == len(RUNS) + 1
    r = api.get(
        "admin",
        f"/api/v1/admin/collections/{collection}/agreement?label_set=qrels&against=qrels"
        "&test=randomization",
    )
    assert r.status_code == 422 and "did not finish within 5.5 s" in r.json()["detail"], r.text


class _WaitingBudget(WorkBudget):
    """A budget whose check number ``hold_at`` marks the work as started and waits (at most
    30 s) until the budget is cancelled: the disconnect then arrives while the test runs."""

    def __init__(self, hold_at: int) -> None:
        super().__init__(None)
        self.hold_at = hold_at
        self.started = threading.Event()

    def check(self) -> None:
        if self.checks + 1 == self.hold_at:
            self.started.set()
            assert self._cancelled.wait(30), "the budget was never cancelled"
        super().check()


async def _disconnecting_get(app: Any, path: str, query: str, token: str, started: Any) -> int:
    """GET through the ASGI app directly; the client disconnects once ``started`` is set.
    The status sent (0 if none)."""
    sent: list[int] = []

    async def receive() -> dict[str, Any]:
        while not started.is_set():
            await asyncio.sleep(0.01)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            sent.append(message["status"])

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {token}".encode())],
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
        "root_path": "",
    }
    await app(scope, receive, send)
    return sent[0] if sent else 0


def test_a_client_that_disconnects_stops_the_randomization_test(
    api: Api, collection: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small chunks, so the test has many of them (one check each).
    monkeypatch.setattr(significance, "_BLOCK_CELLS", 256)
    made: list[WorkBudget] = []

    def counting(_db: Any) -> WorkBudget:
        made.append(WorkBudget(None))
        return made[-1]

    monkeypatch.setattr(evaluation, "request_budget", counting)
    r = _board(api, collection, test="randomization")
    assert r.status_code == 200 and r.json()["matrix"] is not None, r.text
    full = made[-1].checks
    assert made[-1].stopped is None and full > len(RUNS) + 100  # the test's chunks

    hold_at = len(RUNS) + 10  # the 10th chunk of the randomization test
    waiting = _WaitingBudget(hold_at)
    monkeypatch.setattr(evaluation, "request_budget", lambda _db: waiting)
    path = f"/api/v1/admin/collections/{collection}/leaderboard"
    query = "label_set=qrels&metric=ndcg%4010&test=randomization"
    status = asyncio.run(
        _disconnecting_get(api.client.app, path, query, api.tokens["admin"], waiting.started)
    )
    assert waiting.stopped == "disconnected"
    assert waiting.checks == hold_at < full  # stopped at the chunk it was in, no further
    assert status == 499


def test_an_upload_past_the_line_limit_is_refused_and_stores_nothing(
    api: Api, collection: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = _run_file(7)
    lines = body.count(b"\n")
    monkeypatch.setattr(api.db.settings, "run_max_lines", lines - 1)
    r = _upload(api, collection, "too-long", body)
    assert r.status_code == 422, r.text
    assert f"more than {lines - 1:,} lines" in r.text and "no run was stored" in r.text
    assert "too-long" not in _stored(api, collection)
    monkeypatch.setattr(api.db.settings, "run_max_lines", lines)
    r = _upload(api, collection, "just-fits", body)
    assert r.status_code == 201, r.text
    api.client.delete(
        f"/api/v1/admin/collections/{collection}/runs/{r.json()['runs'][0]['run']['id']}",
        headers=api.auth("admin"),
    )


def test_an_upload_past_the_unknown_document_cap_is_refused_with_the_count(
    api: Api, collection: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2 unknown documents in each of the first 3 queries: 6 entries outside the collection.
    extra = {q: [f"x-{q}-a", f"x-{q}-b"] for q in QUERIES[:3]}
    body = _run_file(8, extra)
    monkeypatch.setattr(api.db.settings, "run_max_unknown_documents", 5)
    r = _upload(api, collection, "outside", body)
    assert r.status_code == 422, r.text
    assert "6 entries so far name a document" in r.text and "more than the 5" in r.text
    assert "outside" not in _stored(api, collection)
    monkeypatch.setattr(api.db.settings, "run_max_unknown_documents", 6)
    r = _upload(api, collection, "outside", body)
    assert r.status_code == 201, r.text
    assert r.json()["runs"][0]["documents_outside"] == 6  # the same count as the store's
    api.client.delete(
        f"/api/v1/admin/collections/{collection}/runs/{r.json()['runs'][0]['run']['id']}",
        headers=api.auth("admin"),
    )
