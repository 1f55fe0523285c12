"""Hostile request bodies against a real server: time, answer size, and ``/healthz`` meanwhile.

Starts ``uvicorn app.main:create_app --factory`` on 127.0.0.1 (a free port, a fresh SQLite
file, the default 32 MiB body limit) with an admin, an assessor and one top-k task, then sends
each body of :func:`bodies` (a few shapes at the full body limit: many keys, deep nesting,
long arrays, a long string, many strings, a long escaped string, a long TREC run under the
key that takes one) to the judging loop as the assessor and to four ordinary JSON endpoints
as the admin (``POST /collections``, and the three that take TREC runs inline: the plan
preview, plans, tasks), one request at a time. While each runs, a thread polls ``/healthz``
every 10 ms on its own connection. One row per request: the status, the seconds to the
answer, the answer's bytes, and the slowest ``/healthz`` answer during it (first, the slowest
over one second with no other request: what the machine alone adds). The target
(docs/security.md#request-bodies): every answer in <= 1 s and <= 64 KiB, every ``/healthz``
in <= 100 ms, the server still up at the end.

Loopback only; a bounded number of requests (shapes x endpoints, each once).

Usage::

    python benchmarks/hostile_bodies.py              # every shape at 32 MiB
    python benchmarks/hostile_bodies.py --mib 4      # smaller bodies
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 1.0
TARGET_BYTES = 64 * 1024
TARGET_HEALTHZ = 0.100


def bodies(size: int) -> Iterator[tuple[str, bytes]]:
    """``(shape, body)`` pairs of about ``size`` bytes each."""
    keys = size // 14
    yield "many unknown keys", b"{" + b",".join(b'"k%d":0' % i for i in range(keys)) + b"}"
    yield "deep nesting", b"[" * (size // 2) + b"]" * (size // 2)
    yield "long array", b'{"left":[' + b"1," * (size // 2 - 8) + b"1]}"
    yield "long string", b'{"left":"' + b"a" * (size - 12) + b'"}'
    yield "many strings", b"[" + b'"",' * (size // 3 - 1) + b'""]'
    yield "long escaped string", b'{"left":"' + b"\\u00e9" * ((size - 12) // 6) + b'"}'
    # The field that takes long strings: a plan's inline TREC run (a task's is prior.run).
    head = b'{"collection_id":1,"pool":{"mode":"run","run":"'
    yield "long run string", head + b"q Q0 d 1 1 t\\n" * ((size - len(head) - 4) // 14) + b'"}}'


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def seed(url: str) -> int:
    """Migrate ``url``: users ``admin`` and ``ava`` and one top-k task of ``ava``'s."""
    import migrations
    from app.collections import service as collections
    from app.kernel.db import Database
    from app.tasks import service as tasks
    from app.users import service as users

    migrations.upgrade(url)
    db = Database.from_url(url)
    try:
        users.create_user(db=db, username="admin", password="hostile admin pass", role="admin")
        users.create_user(db=db, username="ava", password="hostile assessor pass")
        coll = collections.create_collection(db=db, name="hostile")
        lines = [
            json.dumps({"query_id": "q", "query": "q", "doc_id": f"d{i}", "text": "t"})
            for i in range(8)
        ]
        collections.import_ndjson(db=db, collection_id=coll.id, data="\n".join(lines).encode())
        task = tasks.create_task(
            db=db, collection_id=coll.id, query_id="q", assessor="ava", method="topk", k=2
        )
        return task.id
    finally:
        db.dispose()


def start_server(db_url: str, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {
        **os.environ,
        "HEAPJUDGE_DATABASE_URL": db_url,
        "HEAPJUDGE_DEV": "1",
        "HEAPJUDGE_PUBLIC_ORIGIN": f"http://127.0.0.1:{port}",
        "PYTHONPATH": str(REPO),
    }
    command = [sys.executable, "-m", "uvicorn", "app.main:create_app", "--factory"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--no-access-log"]
    proc = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if request(port, "GET", "/healthz")[0] == 200:
                return proc, port
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"the server did not start; see {log}")


def request(
    port: int, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def token(port: int, username: str, password: str) -> str:
    form = f"username={username}&password={password.replace(' ', '+')}".encode()
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    status, answer = request(port, "POST", "/api/v1/auth/token", form, headers)
    assert status == 200, answer
    return str(json.loads(answer)["access_token"])


class HealthPoller(threading.Thread):
    """Polls ``/healthz`` every 10 ms on one keep-alive connection; ``slowest`` seconds."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.stop = threading.Event()
        self.slowest = 0.0
        self.failures = 0

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        while not self.stop.is_set():
            started = time.perf_counter()
            try:
                conn.request("GET", "/healthz")
                conn.getresponse().read()
            except OSError:
                self.failures += 1
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            self.slowest = max(self.slowest, time.perf_counter() - started)
            time.sleep(0.01)
        conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=32, help="body size in MiB (default 32)")
    args = parser.parse_args()
    size = args.mib * 1024 * 1024 - 64
    work = Path(tempfile.mkdtemp(prefix="hostile-"))
    db_url = f"sqlite:///{work / 'hostile.db'}"
    task_id = seed(db_url)
    proc, port = start_server(db_url, work / "server.log")
    failed = False
    try:
        admin = token(port, "admin", "hostile admin pass")
        ava = token(port, "ava", "hostile assessor pass")
        targets = [
            ("assessor", ava, f"/api/v1/tasks/{task_id}/judgments"),
            ("assessor", ava, f"/api/v1/tasks/{task_id}/undo"),
            ("admin", admin, "/api/v1/collections"),
            ("admin", admin, "/api/v1/admin/plans/preview"),
            ("admin", admin, "/api/v1/admin/plans"),
            ("admin", admin, "/api/v1/tasks"),
        ]
        idle = HealthPoller(port)
        idle.start()
        time.sleep(1.0)
        idle.stop.set()
        idle.join()
        print(
            f"/healthz slowest over 1 s with no other request (the machine's noise): "
            f"{idle.slowest * 1000:.1f} ms"
        )
        print(f"{'shape':<22} {'endpoint':<34} status  seconds  answer B  healthz max ms")
        for shape, body in bodies(size):
            for _who, bearer, path in targets:
                headers = {"Authorization": f"Bearer {bearer}", "Content-Type": "application/json"}
                poller = HealthPoller(port)
                poller.start()
                time.sleep(0.05)
                started = time.perf_counter()
                status, answer = request(port, "POST", path, body, headers)
                seconds = time.perf_counter() - started
                time.sleep(0.05)
                poller.stop.set()
                poller.join()
                ok = (
                    seconds <= TARGET_SECONDS
                    and len(answer) <= TARGET_BYTES
                    and poller.slowest <= TARGET_HEALTHZ
                    and poller.failures == 0
                    and status < 500
                )
                failed |= not ok
                print(
                    f"{shape:<22} {path:<34} {status:>6} {seconds:>8.3f} {len(answer):>9}"
                    f" {poller.slowest * 1000:>15.1f}{'' if ok else '  <- over the target'}"
                )
        alive = proc.poll() is None and request(port, "GET", "/healthz")[0] == 200
        print(f"server still up: {alive}")
        failed |= not alive
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(
        f"target: answers <= {TARGET_SECONDS:g} s and <= {TARGET_BYTES // 1024} KiB, "
        f"/healthz <= {TARGET_HEALTHZ * 1000:g} ms: {'FAILED' if failed else 'met'}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
