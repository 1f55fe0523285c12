"""Bounded work: what an abandoned comparison, pool builds and a huge run upload cost a real
``heapjudge serve`` (docs/performance.md#bounded-requests). No assertion: figures vary on a
shared machine; the tests check the behaviour (tests/app/test_bounded_requests.py,
tests/app/test_pool_build_transaction.py).

Parts (``--part``, default all), each on a fresh SQLite database:

* ``leaderboard``: a collection with ``--runs`` stored runs (50 queries, 100 documents each);
  ``GET .../leaderboard?test=randomization`` with a ``--client-timeout`` client, then the
  server's CPU over the next 10 s (the work nobody reads). Served with
  ``HEAPJUDGE_COMPARE_MAX_RUNS`` above ``--runs`` (so the work starts; the default cap
  refuses it at once, printed too) and a time budget of 600 s (so the disconnect, not the
  budget, is what stops it).
* ``pools``: the judging loop of ``benchmarks/api_load.py`` (``--assessors`` paced at
  ``--rate`` judgments/s) alone, then beside ``--builds`` threads building pools from the
  collection's stored runs over REST in a loop: p50/p99/max of the submits and the builds
  done.
* ``upload``: a ``--lines`` run of documents the collection does not have, uploaded over REST,
  while a cheap GET is timed every 50 ms: the upload's answer and time, and the GET's
  slowest.

Usage::

    python benchmarks/bounded_work.py --part leaderboard --runs 150
    python benchmarks/bounded_work.py --part pools --assessors 16 --rate 160 --builds 3
    python benchmarks/bounded_work.py --part upload --lines 1000000
"""

from __future__ import annotations

import argparse
import io
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import api_load as L

PASSWORD = "bench-admin-password"
QUERIES = [f"t{i:02d}" for i in range(50)]
DOCS = 100


def _seed_runs(url: str, n_runs: int) -> int:
    """A collection of 50 queries x 100 graded documents with ``n_runs`` stored runs, and
    the admin ``benchadmin``."""
    import migrations
    from app.collections import service as collections
    from app.collections.uploads import UploadedFile
    from app.kernel.db import Database
    from app.kernel.settings import Settings
    from app.runs import service as runs
    from app.users import service as users

    migrations.upgrade(url)
    db = Database(Settings(database_url=url, dev=True))
    try:
        rng = random.Random(1)
        coll = collections.create_collection(db=db, name="bounded")
        rows = [
            f'{{"query_id": "{q}", "query": "q {q}", "doc_id": "{q}-{d}", "text": "x", '
            f'"grade": {rng.choice([0, 0, 1, 2])}}}'
            for q in QUERIES
            for d in range(DOCS)
        ]
        collections.import_ndjson(db=db, collection_id=coll.id, data="\n".join(rows).encode())
        for r in range(n_runs):
            lines = []
            for q in QUERIES:
                docs = rng.sample(range(DOCS), DOCS)
                lines += [f"{q} Q0 {q}-{d} {i + 1} {DOCS - i} r{r}" for i, d in enumerate(docs)]
            data = io.BytesIO(("\n".join(lines) + "\n").encode())
            runs.upload_runs(db=db, collection_id=coll.id, files=[UploadedFile(f"r{r:03d}", data)])
        users.create_user(db=db, username="benchadmin", password=PASSWORD, role="admin")
        return int(coll.id)
    finally:
        db.dispose()


def _admin(base: str) -> dict[str, str]:
    r = httpx.post(f"{base}/auth/token", data={"username": "benchadmin", "password": PASSWORD})
    return {"Authorization": f"Bearer {r.json()['access_token']}"}


def part_leaderboard(args: argparse.Namespace, tmp: Path) -> None:
    url = f"sqlite:///{tmp / 'board.db'}"
    cid = _seed_runs(url, args.runs)
    port = L.free_port()
    raised = {"HEAPJUDGE_COMPARE_MAX_RUNS": str(args.runs + 1)}
    server = L.start_server(
        url, port, settings={**raised, "HEAPJUDGE_COMPARE_BUDGET_SECONDS": "600"}
    )
    base = f"http://127.0.0.1:{port}/api/v1"
    path = f"{base}/admin/collections/{cid}/leaderboard?label_set=qrels&test=randomization"
    try:
        h = _admin(base)
        start = time.monotonic()
        try:
            r = httpx.get(path, headers=h, timeout=args.client_timeout)
            print(f"leaderboard answered {r.status_code} in {time.monotonic() - start:.1f} s")
        except httpx.TimeoutException:
            print(f"leaderboard: the client left after {args.client_timeout:g} s")
        cpu0 = L.cpu_seconds(server.pid)
        time.sleep(10.0)
        busy = (L.cpu_seconds(server.pid) - cpu0) / 10.0
        rss, hwm = L.memory_mb(server.pid)
        print(
            f"server CPU over the 10 s after the client left: {100 * busy:.0f}% of a core; "
            f"RSS {rss:.0f} MB (peak {hwm:.0f} MB)"
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
    port = L.free_port()
    server = L.start_server(url, port)  # the default cap
    base = f"http://127.0.0.1:{port}/api/v1"
    try:
        start = time.monotonic()
        r = httpx.get(
            f"{base}/admin/collections/{cid}/leaderboard?label_set=qrels&test=randomization",
            headers=_admin(base),
            timeout=600,
        )
        detail = r.json().get("detail") if r.status_code != 200 else "(a leaderboard)"
        print(f"default settings: {r.status_code} in {time.monotonic() - start:.2f} s: {detail}")
    finally:
        server.terminate()
        server.wait(timeout=30)


def _build_loop(
    base: str, h: dict[str, str], cid: int, stop: threading.Event, done: list, who: int
) -> None:
    n = 0
    while not stop.is_set():
        n += 1
        body = {"stored_runs": "all", "method": "mtf", "depth": 100, "name": f"b{who}-{n}"}
        started = time.monotonic()
        r = httpx.post(f"{base}/admin/collections/{cid}/pools", headers=h, json=body, timeout=600)
        done.append((r.status_code, time.monotonic() - started))


def part_pools(args: argparse.Namespace, tmp: Path) -> None:
    url = f"sqlite:///{tmp / 'pools.db'}"
    levels = [(args.assessors, args.rate), (args.assessors, args.rate)]
    seeded = L.seed_database(url, levels, args.duration)
    cid = _seed_runs(url, args.pool_runs)
    port = L.free_port()
    server = L.start_server(url, port)
    base = f"http://127.0.0.1:{port}/api/v1"
    try:
        h = _admin(base)
        print(L.HEADER)
        alone = L.Level("alone", args.assessors, args.rate)
        L.run_level(port, seeded, 0, alone, args.duration, 200_000)
        alone.stored = L.count_stored(url, alone.task_ids)
        L.print_row(alone)
        stop, done = threading.Event(), []  # type: ignore[var-annotated]
        builders = [
            threading.Thread(target=_build_loop, args=(base, h, cid, stop, done, i), daemon=True)
            for i in range(args.builds)
        ]
        for t in builders:
            t.start()
        beside = L.Level(f"{args.builds} builds", args.assessors, args.rate)
        L.run_level(port, seeded, 1, beside, args.duration, 200_000)
        stop.set()
        for t in builders:
            t.join(timeout=600)
        beside.stored = L.count_stored(url, beside.task_ids)
        L.print_row(beside)
        for lv in (alone, beside):
            print(
                f"{lv.backend}: submit p99 {1000 * L.percentile(lv.latencies, 99):.1f} ms, "
                f"max {1000 * max(lv.latencies):.1f} ms over {len(lv.latencies)} submits"
            )
        seconds = [s for code, s in done if code == 201]
        codes = sorted({code for code, _ in done})
        print(
            f"pool builds: {len(seconds)} stored of {len(done)} (answers {codes}; "
            f"mean {sum(seconds) / max(1, len(seconds)):.2f} s each)"
        )
    finally:
        server.terminate()
        server.wait(timeout=30)


def part_upload(args: argparse.Namespace, tmp: Path) -> None:
    url = f"sqlite:///{tmp / 'upload.db'}"
    cid = _seed_runs(url, 0)
    port = L.free_port()
    server = L.start_server(url, port, settings={"HEAPJUDGE_MAX_BODY_BYTES": str(200 << 20)})
    base = f"http://127.0.0.1:{port}/api/v1"
    per_query = args.lines // len(QUERIES)
    body = "".join(
        f"{q} Q0 unknown-{q}-{i} {i + 1} {per_query - i} huge\n"
        for q in QUERIES
        for i in range(per_query)
    ).encode()
    slowest = [0.0]
    stop = threading.Event()
    try:
        h = _admin(base)

        def probe() -> None:
            with httpx.Client(timeout=120) as c:
                while not stop.is_set():
                    t = time.monotonic()
                    c.get(f"{base}/admin/collections/{cid}/runs", headers=h)
                    slowest[0] = max(slowest[0], time.monotonic() - t)
                    time.sleep(0.05)

        prober = threading.Thread(target=probe, daemon=True)
        prober.start()
        start = time.monotonic()
        r = httpx.post(
            f"{base}/admin/collections/{cid}/runs",
            headers=h,
            files={"run": ("huge", body)},
            timeout=600,
        )
        took = time.monotonic() - start
        stop.set()
        prober.join(timeout=10)
        answer: Any = r.json()
        shown = answer.get("detail") if r.status_code != 201 else answer["runs"][0]["run"]
        print(
            f"upload of {len(body) >> 20} MB, {per_query * len(QUERIES):,} lines: "
            f"{r.status_code} in {took:.1f} s: {str(shown)[:300]}"
        )
        print(f"slowest GET .../runs meanwhile: {1000 * slowest[0]:.0f} ms")
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["all", "leaderboard", "pools", "upload"], default="all")
    ap.add_argument("--runs", type=int, default=150)
    ap.add_argument("--client-timeout", type=float, default=5.0)
    ap.add_argument("--assessors", type=int, default=16)
    ap.add_argument("--rate", type=float, default=160.0)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--builds", type=int, default=3)
    ap.add_argument("--pool-runs", type=int, default=30)
    ap.add_argument("--lines", type=int, default=1_000_000)
    args = ap.parse_args()
    parts = ["leaderboard", "pools", "upload"] if args.part == "all" else [args.part]
    with tempfile.TemporaryDirectory() as tmp:
        for part in parts:
            print(f"== {part}")
            globals()[f"part_{part}"](args, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
