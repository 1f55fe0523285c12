"""Load benchmark of the judging loop over HTTP against a real ``heapjudge serve``.

Simulated assessors (consistent oracles) run the submit-and-get-next loop concurrently against
a real uvicorn server on 127.0.0.1 (started through the CLI in a subprocess), at 1, 8 and 32
concurrent assessors, on SQLite and on Postgres. Each level is bounded in time and count.
Printed per level: judgments per second, p50/p95/p99 latency of ``POST .../judgments`` (which
returns the next question), accepted vs stored judgments (must be equal: none lost, none
doubled), the server's resident memory (VmRSS, and its peak VmHWM), and the server's CPU time
per accepted judgment (``cpu ms/j``, user + system from /proc: a figure that depends little on
how busy the machine is; one server process runs its Python on one core at a time, so
``1 / cpu ms/j`` roughly bounds its throughput), and the load client's own CPU per judgment
(``client``: it shares the machine's cores with the server).

Two kinds of run, on the same server:

- **saturation** (the levels): every assessor answers as soon as its next question arrives, so
  the server is never idle; j/s is the capacity at that concurrency, and by Little's law mean
  latency = assessors / throughput (32 / 960 j/s = 33 ms), whatever the server does;
- **paced** (the target run, ``--target-rate``, default 330 j/s at 32 assessors): the
  assessors answer at a steady total rate offered from random phases, as people who look at a
  pair before answering; latency is then what an assessor waits at that load. The target
  "at 32 assessors >= 300 judgments/s with p99 <= 50 ms" (SQLite, and Postgres with
  ``--workers 2``) is judged on this run (served j/s and p99), printed as a verdict at the end
  with the other targets (zero lost or doubled, RSS < 300 MB). The client runs each level
  without its garbage collector (:func:`run_level` says why).

``--rate R`` paces the levels too. ``--machine bm25``: every task ``insertion+assist`` with a
BM25 judge that is right (texts repeat the query term by the oracle's order); people's counts.

Usage::

    python benchmarks/api_load.py                       # SQLite, and Postgres if configured
    python benchmarks/api_load.py --backend sqlite --duration 10 --levels 1,8,32
    python benchmarks/api_load.py --backend sqlite --levels 32 --rate 300 --target-rate 0
    HEAPJUDGE_TEST_POSTGRES_URL=postgresql+psycopg://u:p@127.0.0.1/db python benchmarks/api_load.py

Targets (2-core machine): >= 300 judgments/s at 32 assessors with p99 <= 50 ms on SQLite and
on Postgres (``--workers 2``), zero lost or doubled, server RSS < 300 MB.
"""

from __future__ import annotations

import argparse
import gc
import http.client
import json
import math
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from labeling.analysis.timing import quantile  # noqa: E402

N_DOCS = 50
K = 10
#: Tasks are created so that no assessor runs out within a level: enough for this many
#: judgments per second in total (a finished n=50, k=10 task takes ~135 judgments).
PLANNED_RATE = 2000
JUDGMENTS_PER_TASK = 120


@dataclass
class Level:
    backend: str
    assessors: int
    rate: float = 0.0  # offered judgments/s in total (0: saturation)
    accepted: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0
    stored: int = 0
    rss_mb: float = 0.0
    hwm_mb: float = 0.0
    server_cpu: float = 0.0
    client_cpu: float = 0.0
    task_ids: list[int] = field(default_factory=list)


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (q in 0..100): :func:`labeling.analysis.timing.quantile` (linear
    interpolation, numpy's default), NaN for no values."""
    return quantile(sorted(values), q / 100) if values else float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _with_children(pid: int) -> list[int]:
    """The server process and its direct children (uvicorn worker processes)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    return [pid, *(int(c) for c in children)]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds used so far by a process and its live children."""
    total = 0.0
    for p in _with_children(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def memory_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MB, summed over its children (uvicorn workers)."""
    rss = hwm = 0.0
    for p in _with_children(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss += int(line.split()[1]) / 1024
                elif line.startswith("VmHWM:"):
                    hwm += int(line.split()[1]) / 1024
        except OSError:
            pass
    return rss, hwm


def seed_database(url: str, runs: list[tuple[int, float]], duration: float) -> dict:
    """Migrate, then create users, tokens, one 50-document query and the tasks of every run
    (``runs``: (assessors, offered rate or 0), planned by position)."""
    import migrations
    from app.auth.passwords import hash_password
    from app.auth.tokens import create_api_token
    from app.collections import service as collections
    from app.kernel.db import Database
    from app.kernel.models import User
    from app.kernel.settings import Settings
    from app.tasks import service as tasks

    migrations.upgrade(url)
    max_assessors = max(n for n, _ in runs)
    db = Database(Settings(database_url=url, dev=True))
    rng = random.Random(7)
    scores = {f"doc{i:03d}": rng.random() for i in range(N_DOCS)}
    password_hash = hash_password("benchmark-password")  # one hash for everyone
    tokens: dict[str, str] = {}
    with db.write() as s:
        for i in range(max_assessors):
            s.add(User(username=f"a{i:02d}", password_hash=password_hash, role="assessor"))
    for i in range(max_assessors):
        user = next(u for u in _users(db) if u.username == f"a{i:02d}")
        tokens[user.username] = create_api_token(db, user.id, name="bench")
    coll = collections.create_collection(db=db, name=f"load-{uuid.uuid4().hex[:6]}")
    machine = {"source": os.environ.get("HEAPJUDGE_BENCH_MACHINE")}  # --machine (module doc)
    options = {"strategy": "insertion+assist", "machine": machine} if machine["source"] else None
    lines = [
        f'{{"query_id": "q", "query": "load", "doc_id": "{d}", "title": "{d}", '
        f'"text": "{"load " * int(v * 20)}t"}}'
        for d, v in scores.items()
    ]
    collections.import_ndjson(db=db, collection_id=coll.id, data="\n".join(lines).encode())
    plan: list[dict[str, list[int]]] = []
    seed = 0
    for level, rate in runs:
        plan.append({})
        for i in range(level):
            name = f"a{i:02d}"
            plan[-1][name] = []
            total = (rate or PLANNED_RATE) * duration
            per_assessor = math.ceil(total / (level * JUDGMENTS_PER_TASK))
            for _ in range(max(2, per_assessor)):
                seed += 1
                view = tasks.create_task(
                    db=db,
                    collection_id=coll.id,
                    query_id="q",
                    assessor=name,
                    method="topk",
                    k=K,
                    seed=seed,
                    options=options,
                )
                plan[-1][name].append(view.id)
    db.dispose()
    return {"scores": scores, "tokens": tokens, "plan": plan}


def _users(db):
    from sqlalchemy import select

    from app.kernel.models import User

    with db.read() as s:
        return list(s.scalars(select(User)))


def count_stored(url: str, task_ids: list[int]) -> int:
    from sqlalchemy import func, select

    from app.kernel.db import Database
    from app.kernel.models import Judgment
    from app.kernel.settings import Settings

    db = Database(Settings(database_url=url, dev=True))
    people = (Judgment.task_id.in_(task_ids), ~Judgment.undone, Judgment.source == "person")
    try:
        with db.read() as s:
            return s.scalar(select(func.count()).where(*people)) or 0
    finally:
        db.dispose()


def assessor_loop(
    port: int,
    token: str,
    task_ids: list[int],
    scores: dict[str, float],
    level: Level,
    deadline: float,
    budget: list[int],
    lock: threading.Lock,
    interval: float = 0.0,
) -> None:
    """One simulated assessor on its own keep-alive connection. (A thread per assessor with
    http.client: httpx's async pool saturated a core by itself at 32 connections and
    measured the client instead of the server.)

    ``interval`` > 0 paces the assessor: it submits at most once per ``interval`` seconds
    (from a random phase, so the assessors do not fire in lockstep), as a person who reads the
    pair before answering; when a response comes late it answers at once (it never "catches
    up" with bursts). ``interval`` = 0 submits as soon as the next question arrives."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def call(method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        conn.request(method, path, body=json.dumps(body) if body else None, headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read())

    latencies: list[float] = []
    accepted = errors = 0
    # Paced assessors start at random moments within one interval (people do not open their
    # tasks in the same millisecond); the first answer follows one interval later.
    time.sleep(random.random() * interval)
    next_at = time.perf_counter() + interval
    try:
        for tid in task_ids:
            _status, q = call("GET", f"/api/v1/tasks/{tid}/next")
            while not q["done"]:
                if interval:
                    pause = next_at - time.perf_counter()
                    if pause > 0:
                        time.sleep(pause)
                    next_at = max(next_at + interval, time.perf_counter())
                with lock:
                    if time.perf_counter() >= deadline or budget[0] <= 0:
                        return
                    budget[0] -= 1
                left, right = q["pair"]["left"]["doc_id"], q["pair"]["right"]["doc_id"]
                body = {
                    "seq": q["seq"],
                    "left": left,
                    "right": right,
                    "outcome": "left" if scores[left] > scores[right] else "right",
                    "active_ms": 1500,
                }
                t0 = time.perf_counter()
                status, answer = call("POST", f"/api/v1/tasks/{tid}/judgments", body)
                latencies.append(time.perf_counter() - t0)
                if status != 200:
                    errors += 1
                    _status, q = call("GET", f"/api/v1/tasks/{tid}/next")
                    continue
                accepted += 1
                q = answer
    finally:
        conn.close()
        with lock:
            level.latencies.extend(latencies)
            level.accepted += accepted
            level.errors += errors


def run_level(port: int, seeded: dict, run: int, level: Level, duration: float, max_j: int) -> None:
    """Run one level (``level.rate`` > 0 paces the assessors to that many judgments/s in total)
    with the tasks planned for run number ``run``."""
    plan, tokens, scores = seeded["plan"][run], seeded["tokens"], seeded["scores"]
    budget = [max_j]
    # The client must not measure itself: a full collection of this process (it holds every
    # latency of the run) stopped all 32 assessor threads for 75-86 ms, and every request in
    # flight then counted the pause as server latency (one such pause is a whole percentile
    # of a 10 s paced run). A level allocates a few MB at most, so it runs without the
    # collector, with what was built before it moved out of the collector's sight.
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        _run_assessors(port, tokens, plan, scores, level, duration, budget)
    finally:
        gc.enable()
        gc.unfreeze()


def _run_assessors(
    port: int,
    tokens: dict[str, str],
    plan: dict[str, list[int]],
    scores: dict[str, float],
    level: Level,
    duration: float,
    budget: list[int],
) -> None:
    """One thread per assessor of ``plan`` (see :func:`assessor_loop`), joined."""
    interval = level.assessors / level.rate if level.rate else 0.0
    lock = threading.Lock()
    level.task_ids = [t for ids in plan.values() for t in ids]
    start = time.perf_counter()
    deadline = start + duration
    threads = [
        threading.Thread(
            target=assessor_loop,
            args=(
                port,
                tokens[name],
                ids,
                scores,
                level,
                deadline,
                budget,
                lock,
                interval,
            ),
        )
        for name, ids in plan.items()
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=duration + 120)
    level.seconds = time.perf_counter() - start


def start_server(
    url: str, port: int, workers: int = 1, settings: dict[str, str] | None = None
) -> subprocess.Popen:
    """``heapjudge serve`` on ``port``, without its training worker: that is a process of its
    own (idle here, ~115 MB) that the server's RSS and CPU figures must not include."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEAPJUDGE_")}
    env |= {"HEAPJUDGE_DEV": "1", "HEAPJUDGE_DATABASE_URL": url, **(settings or {})}
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1"),
            *("--port", str(port), "--workers", str(workers), "--no-training-worker"),
        ],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
        if proc.poll() is not None:
            raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "server exited")
    proc.kill()
    raise RuntimeError("server did not start within 60 s")


def postgres_url(base: str) -> tuple[str, str]:
    """A fresh schema on the Postgres server: (url with search_path, schema)."""
    from sqlalchemy import create_engine, text

    from app.kernel.db import normalise_url

    base = normalise_url(base)
    schema = f"hjbench_{uuid.uuid4().hex[:10]}"
    engine = create_engine(base, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    engine.dispose()
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}options={quote(f'-csearch_path={schema}')}", schema


def drop_schema(base: str, schema: str) -> None:
    from sqlalchemy import create_engine, text

    from app.kernel.db import normalise_url

    engine = create_engine(normalise_url(base), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    engine.dispose()


def bench_backend(
    backend: str,
    url: str,
    runs: list[tuple[int, float]],
    duration: float,
    max_j: int,
    workers: int = 1,
    settings: dict[str, str] | None = None,
) -> list[Level]:
    """``runs``: (assessors, offered j/s or 0 for saturation), one after the other on one
    server."""
    seeded = seed_database(url, runs, duration)
    port = free_port()
    proc = start_server(url, port, workers, settings)
    results = []
    try:
        for index, (n, rate) in enumerate(runs):
            level = Level(backend if not rate else f"{backend}@{rate:g}", n, rate)
            cpu0, client0 = cpu_seconds(proc.pid), time.process_time()
            run_level(port, seeded, index, level, duration, max_j)
            level.server_cpu = cpu_seconds(proc.pid) - cpu0
            level.client_cpu = time.process_time() - client0
            level.rss_mb, level.hwm_mb = memory_mb(proc.pid)
            level.stored = count_stored(url, level.task_ids)
            results.append(level)
            print_row(level)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    return results


HEADER = (
    f"{'backend':<13}{'assessors':>10}{'judgments':>10}{'secs':>7}{'j/s':>8}{'p50 ms':>8}"
    f"{'p95 ms':>8}{'p99 ms':>8}{'errors':>7}{'stored=accepted':>17}{'RSS MB':>8}{'peak MB':>8}"
    f"{'cpu ms/j':>9}{'client':>7}"
)


def print_row(lv: Level) -> None:
    ms = [x * 1000 for x in lv.latencies]
    rate = lv.accepted / lv.seconds if lv.seconds else 0.0
    ok = "yes" if lv.stored == lv.accepted else f"NO ({lv.stored})"
    print(
        f"{lv.backend:<13}{lv.assessors:>10}{lv.accepted:>10}{lv.seconds:>7.1f}{rate:>8.0f}"
        f"{percentile(ms, 50):>8.1f}{percentile(ms, 95):>8.1f}{percentile(ms, 99):>8.1f}"
        f"{lv.errors:>7}{ok:>17}{lv.rss_mb:>8.0f}{lv.hwm_mb:>8.0f}"
        f"{1000 * lv.server_cpu / max(lv.accepted, 1):>9.2f}"
        f"{1000 * lv.client_cpu / max(lv.accepted, 1):>7.2f}",
        flush=True,
    )


TARGET_ASSESSORS = 32
TARGET_JPS = 300
TARGET_P99_MS = 50
TARGET_RSS_MB = 300


def verdict(rows: list[Level], *, memory: bool = True) -> list[str]:
    """The targets on one backend's rows: the paced 32-assessor run (j/s, p99), every row's
    lost/doubled judgments and (``memory``: the one-process SQLite server) memory."""
    lines = []
    paced = [r for r in rows if r.rate and r.assessors == TARGET_ASSESSORS]
    for r in paced:
        served = r.accepted / r.seconds if r.seconds else 0.0
        p99 = percentile([x * 1000 for x in r.latencies], 99)
        ok = served >= TARGET_JPS and p99 <= TARGET_P99_MS
        lines.append(
            f"{'met' if ok else 'NOT met':>8}: {r.assessors} assessors paced at {r.rate:g} j/s: "
            f"served {served:.0f} j/s (>= {TARGET_JPS}), p99 {p99:.1f} ms (<= {TARGET_P99_MS})"
        )
    saturated = [r for r in rows if not r.rate and r.assessors == TARGET_ASSESSORS]
    for r in saturated:
        lines.append(
            f"{'':>8}  capacity at {r.assessors} assessors (saturation): "
            f"{r.accepted / r.seconds:.0f} j/s"
        )
    lost = [r for r in rows if r.stored != r.accepted]
    lines.append(
        f"{'met' if not lost else 'NOT met':>8}: stored = accepted in every run "
        "(zero lost or doubled)"
    )
    if not memory:
        return lines
    peak = max((r.hwm_mb for r in rows), default=0.0)
    lines.append(
        f"{'met' if peak < TARGET_RSS_MB else 'NOT met':>8}: server peak RSS {peak:.0f} MB "
        f"(< {TARGET_RSS_MB})"
    )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--levels", default="1,8,32", help="concurrent assessors per level")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per level (bound)")
    parser.add_argument(
        "--max-judgments", type=int, default=20_000, help="judgments per level (bound)"
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="pace the levels: offered judgments/s in total, spread over the assessors (like "
        "people reading before answering); 0 = every assessor answers at once (saturation)",
    )
    parser.add_argument(
        "--target-rate",
        type=float,
        default=330.0,
        help=f"after the levels, {TARGET_ASSESSORS} assessors paced at this many judgments/s "
        f"in total (the run the >= {TARGET_JPS} j/s, p99 <= {TARGET_P99_MS} ms target is "
        "judged on); 0 = skip",
    )
    parser.add_argument("--postgres-url", default=os.environ.get("HEAPJUDGE_TEST_POSTGRES_URL"))
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    parser.add_argument(
        "--postgres-async-commit",
        action="store_true",
        help="serve Postgres with HEAPJUDGE_POSTGRES_ASYNC_COMMIT=1 (judgments committed without "
        "waiting for the WAL flush; off by default, as in the server)",
    )
    parser.add_argument("--machine", choices=["bm25"], help="a machine judge (module doc)")
    args = parser.parse_args()
    os.environ.update({"HEAPJUDGE_BENCH_MACHINE": args.machine} if args.machine else {})
    levels = [int(x) for x in args.levels.split(",")]
    runs = [(n, args.rate) for n in levels]
    if args.target_rate:
        runs.append((TARGET_ASSESSORS, args.target_rate))
    pacing = f"paced at {args.rate:g} judgments/s in total" if args.rate else "saturation"
    target = f", then {TARGET_ASSESSORS} paced at {args.target_rate:g}" if args.target_rate else ""
    print(
        f"heapjudge api_load: n={N_DOCS}, k={K}, levels={levels} ({pacing}){target}; "
        f"<= {args.duration:.0f} s and <= {args.max_judgments} judgments per run; "
        f"{os.cpu_count()} CPUs"
    )
    print(HEADER)
    failed = False
    sqlite_rows: list[Level] = []
    postgres_rows: list[Level] = []
    if args.backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{Path(tmp) / 'load.db'}"
            sqlite_rows = bench_backend(
                "sqlite", url, runs, args.duration, args.max_judgments, args.workers
            )
            failed |= any(r.stored != r.accepted for r in sqlite_rows)
    if args.backend in ("postgres", "both"):
        if not args.postgres_url:
            print("postgres  skipped: set HEAPJUDGE_TEST_POSTGRES_URL or --postgres-url")
        else:
            url, schema = postgres_url(args.postgres_url)
            try:
                settings = (
                    {"HEAPJUDGE_POSTGRES_ASYNC_COMMIT": "1"} if args.postgres_async_commit else {}
                )
                postgres_rows = bench_backend(
                    "postgres",
                    url,
                    runs,
                    args.duration,
                    args.max_judgments,
                    args.workers,
                    settings,
                )
                failed |= any(r.stored != r.accepted for r in postgres_rows)
            finally:
                drop_schema(args.postgres_url, schema)
    if sqlite_rows:
        print("targets (SQLite):")
        for line in verdict(sqlite_rows):
            print(line)
    if postgres_rows:
        # Memory is judged on the one-process SQLite server; with several workers the peak
        # is their sum (printed in the rows).
        print(f"targets (Postgres, {args.workers} worker{'s' if args.workers > 1 else ''}):")
        for line in verdict(postgres_rows, memory=False):
            print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
