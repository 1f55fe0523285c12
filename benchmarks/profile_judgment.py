"""The request path of one warm judgment: which functions run, and where the CPU goes.

Builds the app over a fresh SQLite file (one assessor, a 50-document topk task, k=10), drives
it in process through its ASGI interface (no sockets: only the server's side is measured),
warms the task up (``GET .../next`` and a few judgments, so the session and documents are
cached and the submit qualifies for the event loop), then:

1. records one more ``POST /api/v1/tasks/{id}/judgments`` with :func:`sys.setprofile` and
   prints every *project* function called (under ``app/`` and ``labeling/``) in first-call
   order, with the number of functions and files: the request path a reader follows;
2. times ``--judgments`` more judgments (CPU time each, in process, one at a time),
   then runs as many under :mod:`cProfile` and prints the ``--top`` functions by own time.

Usage::

    python benchmarks/profile_judgment.py                  # path + profile of 300 judgments
    python benchmarks/profile_judgment.py --judgments 0    # the path only
    python benchmarks/profile_judgment.py --repo ../other-checkout   # another version's code
    python benchmarks/profile_judgment.py --postgres-url postgresql+psycopg://u:p@127.0.0.1/db

With ``--postgres-url`` the app runs over a fresh schema on that Postgres server (dropped at
the end) instead of a SQLite file; the CPU figures then include psycopg's side of every round
trip, and the wall time per judgment (one at a time, so no queueing) is printed too.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import pstats
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PROJECT_PARTS = ("app", "labeling")


def seed(url: str) -> tuple[str, list[int], dict[str, float]]:
    """Migrate ``url`` and create an assessor, its token and a few topk tasks over one
    50-document query; returns (token, task ids, document scores)."""
    import migrations
    from app.auth import tokens
    from app.collections import service as collections
    from app.kernel.db import Database
    from app.tasks import service as tasks
    from app.users import service as users

    migrations.upgrade(url)
    db = Database.from_url(url)
    try:
        user = users.create_user(db=db, username="prof", password="profile-pw-1", role="assessor")
        token = tokens.create_api_token(db, user.id, name="profile")
        rng = random.Random(3)
        scores = {f"doc{i:03d}": rng.random() for i in range(50)}
        coll = collections.create_collection(db=db, name="profile")
        lines = [
            json.dumps({"query_id": "q", "query": "p", "doc_id": d, "title": d, "text": "t"})
            for d in scores
        ]
        collections.import_ndjson(db=db, collection_id=coll.id, data="\n".join(lines).encode())
        ids = [
            tasks.create_task(
                db=db,
                collection_id=coll.id,
                query_id="q",
                assessor="prof",
                method="topk",
                k=10,
                seed=s,
            ).id
            for s in range(1, 41)
        ]
    finally:
        db.dispose()
    return token, ids, scores


class Client:
    """Calls an ASGI app directly: one request at a time, on one event loop."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.headers = [
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-type", b"application/json"),
            (b"host", b"127.0.0.1"),
        ]
        self.loop = asyncio.new_event_loop()

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, Any]:
        raw = json.dumps(body).encode() if body is not None else b""
        headers = [*self.headers, (b"content-length", str(len(raw)).encode())]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": b"",
            "headers": headers,
            "client": ("127.0.0.1", 5000),
            "server": ("127.0.0.1", 8000),
            "state": {},
        }
        sent = False
        status = 0
        chunks: list[bytes] = []

        async def receive() -> dict:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": raw, "more_body": False}
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        self.loop.run_until_complete(self.app(scope, receive, send))
        return status, json.loads(b"".join(chunks))


def judge(client: Client, task_id: int, q: dict, scores: dict[str, float]) -> dict:
    """Answer question ``q`` as the oracle would; returns the next question."""
    left, right = q["pair"]["left"]["doc_id"], q["pair"]["right"]["doc_id"]
    body = {
        "seq": q["seq"],
        "left": left,
        "right": right,
        "outcome": "left" if scores[left] > scores[right] else "right",
        "active_ms": 1500,
    }
    status, answer = client.call("POST", f"/api/v1/tasks/{task_id}/judgments", body)
    if status != 200:
        raise RuntimeError(f"judgment refused: {status} {answer}")
    return answer


def project_path(repo: Path, call: Callable[[], Any]) -> list[tuple[str, int, str]]:
    """The project functions (of ``repo``) ``call()`` enters, in first-call order (file,
    line, name; comprehensions and nested functions count as functions)."""
    seen: dict[tuple[str, int, str], None] = {}
    dirs = tuple(f"{repo / part}/" for part in PROJECT_PARTS)

    def tracer(frame: Any, event: str, _arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            if code.co_filename.startswith(dirs):
                rel = str(Path(code.co_filename).relative_to(repo))
                seen.setdefault((rel, code.co_firstlineno, code.co_qualname), None)

    sys.setprofile(tracer)
    try:
        call()
    finally:
        sys.setprofile(None)
    return list(seen)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judgments", type=int, default=300, help="profiled judgments")
    parser.add_argument("--top", type=int, default=25, help="functions listed by own time")
    parser.add_argument("--sort", default="tottime", help="cProfile sort key (tottime, cumulative)")
    parser.add_argument("--repo", type=Path, default=REPO, help="checkout whose code runs")
    parser.add_argument("--postgres-url", help="profile on a fresh schema of this Postgres")
    args = parser.parse_args()
    repo = args.repo.resolve()
    sys.path.insert(0, str(repo))

    from app.kernel.settings import Settings
    from app.main import create_app

    schema = None
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'profile.db'}"
        if args.postgres_url:
            from benchmarks.api_load import postgres_url

            url, schema = postgres_url(args.postgres_url)
        try:
            return run(args, repo, url, create_app, Settings)
        finally:
            if schema is not None:
                from benchmarks.api_load import drop_schema

                drop_schema(args.postgres_url, schema)


def run(args: argparse.Namespace, repo: Path, url: str, create_app: Any, settings: Any) -> int:
    """Seed ``url``, then print the path, the CPU time and the profile (module docstring)."""
    token, task_ids, scores = seed(url)
    app = create_app(settings(database_url=url, dev=True))
    # As the app's lifespan does in the server (not run here): what was imported and
    # built so far is moved out of the collector's sight, so the cost of full collections
    # does not grow with the size of the imported libraries.
    gc.collect()
    gc.freeze()
    client = Client(app, token)
    tasks = iter(task_ids)
    task_id = next(tasks)
    _status, q = client.call("GET", f"/api/v1/tasks/{task_id}/next")
    for _ in range(3):  # warm: session and documents cached, the submit's cost known
        q = judge(client, task_id, q, scores)

    path: list[tuple[str, int, str]] = []

    def one() -> None:
        nonlocal q
        q = judge(client, task_id, q, scores)

    path = project_path(repo, one)
    files = sorted({f for f, _, _ in path})
    print(f"{repo}: one warm judgment (POST /api/v1/tasks/{{id}}/judgments), project functions:")
    for file, line, name in path:
        print(f"  {file}:{line}  {name}")
    print(f"{len(path)} project functions in {len(files)} files: {', '.join(files)}")

    walls: list[float] = []

    def judge_many(n: int, profiler: cProfile.Profile | None = None) -> list[float]:
        """CPU seconds (this process: server side and the in-process client) of each of
        ``n`` more judgments, tasks taken in turn (their wall seconds go to ``walls``)."""
        nonlocal q, task_id
        costs: list[float] = []
        walls.clear()
        while len(costs) < n:
            if q["done"]:
                task_id = next(tasks)
                _status, q = client.call("GET", f"/api/v1/tasks/{task_id}/next")
                continue
            t0, w0 = time.process_time(), time.perf_counter()
            if profiler is not None:
                profiler.enable()
            q = judge(client, task_id, q, scores)
            if profiler is not None:
                profiler.disable()
            costs.append(time.process_time() - t0)
            walls.append(time.perf_counter() - w0)
        return costs

    if args.judgments > 0:
        costs = judge_many(args.judgments)
        # CPU time, not wall time: the machine is shared, and a judgment preempted by
        # another process would count its wait. Per batch of 100: the median resists the
        # odd batch a collection makes slow; the fastest batch is the figure least
        # disturbed by other processes (which still slow a CPU shared by hyperthreads).
        batches = sorted(sum(costs[i : i + 100]) / 100 for i in range(0, len(costs) - 99, 100)) or [
            sum(costs) / len(costs)
        ]
        print(
            f"\n{args.judgments} judgments: {1000 * statistics.median(batches):.3f} ms of "
            f"CPU each (median of batches of 100; fastest batch {1000 * batches[0]:.3f} ms; "
            "server and in-process client, one judgment at a time); wall time median "
            f"{1000 * statistics.median(walls):.3f} ms"
        )
        profiler = cProfile.Profile()
        judge_many(args.judgments, profiler)
        print(f"{args.judgments} more under cProfile, by own time:")
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.top)
    app.state.db.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
