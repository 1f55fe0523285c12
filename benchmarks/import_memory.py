"""Peak memory of collection imports: NDJSON, SMART, TREC and LETOR files of about 30 MB.

Writes one seeded collection of each format to a temporary directory (short NDJSON lines of
about 160 bytes, so that what an import keeps per line shows; SMART and TREC documents of about
70 words; LETOR rows of 46 features), then imports each in its own subprocess through the
service (``app.collections.service.import_ndjson`` for NDJSON,
``app.collections.imports.import_files`` for the others) into a fresh SQLite database, and the
NDJSON file once more over REST (``POST /api/v1/collections/{id}/import`` to a real uvicorn
server on 127.0.0.1). For each it prints the files' size, the process's resident memory
before the import (interpreter, imports, database set up), its peak during the import
(``VmHWM``), the growth (peak - before) and both as a multiple of the files' size, and the
import's seconds. The target (docs/performance.md#imports): what the import adds to the
process (the growth) at most 5x the files; the process before it (about 90 MB for the
service, 115 MB for the server) is printed beside it.

    python benchmarks/import_memory.py [--mb 30] [--only ndjson,smart,trec,letor,rest]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET = 5.0
WORDS = [
    *("boundary", "layer", "flow", "heat", "transfer", "pressure", "wing", "supersonic"),
    *("shock", "wave", "model", "theory", "experiment", "velocity", "viscous", "laminar"),
    *("turbulent", "plate", "cylinder", "cone", "jet", "nozzle"),
]


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def write_ndjson(directory: Path, size: int, rng: random.Random) -> dict[str, Path]:
    path = directory / "docs.ndjson"
    with path.open("w") as fh:
        i = 0
        while fh.tell() < size:
            q = i // 50
            row = {
                "query_id": f"q{q}",
                "query": f"query {q} {WORDS[q % len(WORDS)]}",
                "doc_id": f"d{i}",
                "title": _text(rng, 2),
                "text": _text(rng, 8),
                "grade": i % 5,
            }
            fh.write(json.dumps(row) + "\n")
            i += 1
    return {"ndjson": path}


def write_smart(directory: Path, size: int, rng: random.Random) -> dict[str, Path]:
    docs, queries, qrels = directory / "docs.all", directory / "query.text", directory / "qrels"
    with docs.open("w") as fh, qrels.open("w") as rel:
        i = 0
        while fh.tell() < size:
            i += 1
            fh.write(f".I {i}\n.T\n{_text(rng, 6)}\n.A\nauthor {i}\n.B\nj. {i}\n")
            fh.write(f".W\n{_text(rng, 70)}\n")
            rel.write(f"{i % 500 + 1} {i} 0 0.000000\n")
    with queries.open("w") as fh:
        for q in range(1, 501):
            fh.write(f".I {q}\n.W\n{_text(rng, 12)}\n")
    return {"documents": docs, "queries": queries, "qrels": qrels}


def write_trec(directory: Path, size: int, rng: random.Random) -> dict[str, Path]:
    docs, topics, qrels = directory / "docs.sgml", directory / "topics", directory / "qrels"
    with docs.open("w") as fh, qrels.open("w") as rel:
        i = 0
        while fh.tell() < size:
            i += 1
            fh.write(f"<DOC>\n<DOCNO> D{i} </DOCNO>\n<TITLE>{_text(rng, 6)}</TITLE>\n")
            fh.write(f"<TEXT>\n{_text(rng, 70)}\n</TEXT>\n</DOC>\n")
            rel.write(f"{i % 500 + 1} 0 D{i} {i % 3}\n")
    with topics.open("w") as fh:
        for q in range(1, 501):
            fh.write(f"<top>\n<num> Number: {q}\n<title> {_text(rng, 4)}\n")
            fh.write(f"<desc> Description:\n{_text(rng, 12)}\n</top>\n")
    return {"topics": topics, "documents": docs, "qrels": qrels}


def write_letor(directory: Path, size: int, rng: random.Random) -> dict[str, Path]:
    path = directory / "S1.txt"
    with path.open("w") as fh:
        i = 0
        while fh.tell() < size:
            feats = " ".join(f"{j}:{rng.random():.6f}" for j in range(1, 47))
            fh.write(f"{i % 3} qid:{i // 40} {feats} #docid = GX{i:08d} inc = 1 prob = 0.5\n")
            i += 1
    return {"features": path}


WRITERS = {"ndjson": write_ndjson, "smart": write_smart, "trec": write_trec, "letor": write_letor}

_CHILD = r"""
import json, sys
from pathlib import Path

def rss(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0

import migrations
from app.collections import service as collections
from app.collections.imports import import_files
from app.collections.uploads import UploadedFile
from app.kernel.db import Database

kind, url, files = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
migrations.upgrade(url)
db = Database.from_url(url)
coll = collections.create_collection(db=db, name="bench")
before = rss("VmRSS")
import time
started = time.perf_counter()
if kind == "ndjson":
    with open(files["ndjson"], "rb") as fh:
        report = collections.import_ndjson(db=db, collection_id=coll.id, data=fh)
    rows = report.lines
else:
    uploads = {k: UploadedFile(Path(v).name, v) for k, v in files.items()}
    report = import_files(db=db, collection_id=coll.id, kind=kind, files=uploads, max_bytes=0)
    rows = report.rows
seconds = time.perf_counter() - started
print(json.dumps({"before": before, "peak": rss("VmHWM"), "rows": rows, "seconds": seconds}))
"""


def _status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def via_service(kind: str, files: dict[str, Path], work: Path) -> dict[str, float]:
    url = f"sqlite:///{work / (kind + '.db')}"
    arg = json.dumps({k: str(v) for k, v in files.items()})
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, url, arg],
        cwd=REPO,
        env=env,
        capture_output=True,
        check=False,
    )
    if out.returncode:
        raise SystemExit(f"{kind} import failed:\n{out.stderr.decode()[-3000:]}")
    result: dict[str, float] = json.loads(out.stdout.decode().strip().splitlines()[-1])
    return result


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _request(
    port: int, method: str, path: str, body: object = b"", headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request(method, path, body=body, headers=headers or {})  # type: ignore[arg-type]
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def via_rest(path: Path, work: Path) -> dict[str, float]:
    """The NDJSON file posted to a real server: its RSS before and its peak (VmHWM)."""
    url = f"sqlite:///{work / 'rest.db'}"
    seed = (
        "import sys, migrations\n"
        "from app.kernel.db import Database\n"
        "from app.users import service as users\n"
        "from app.collections import service as collections\n"
        "migrations.upgrade(sys.argv[1]); db = Database.from_url(sys.argv[1])\n"
        "users.create_user(db=db, username='admin', password='import memory pass', role='admin')\n"
        "print(collections.create_collection(db=db, name='bench').id)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cid = subprocess.run(
        [sys.executable, "-c", seed, url], env=env, cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    port = _free_port()
    env |= {
        "HEAPJUDGE_DATABASE_URL": url,
        "HEAPJUDGE_DEV": "1",
        "HEAPJUDGE_PUBLIC_ORIGIN": f"http://127.0.0.1:{port}",
    }
    command = [sys.executable, "-m", "uvicorn", "app.main:create_app", "--factory"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--no-access-log"]
    log = (work / "server.log").open("wb")
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if _request(port, "GET", "/healthz")[0] == 200:
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the server did not start") from None
                time.sleep(0.2)
        form = b"username=admin&password=import+memory+pass"
        form_headers = {"Content-Type": "application/x-www-form-urlencoded"}
        status, answer = _request(port, "POST", "/api/v1/auth/token", form, form_headers)
        assert status == 200, answer
        bearer = json.loads(answer)["access_token"]
        before = _status(proc.pid, "VmRSS")
        headers = {
            "Authorization": f"Bearer {bearer}",
            "Content-Type": "application/x-ndjson",
            "Content-Length": str(path.stat().st_size),
        }
        started = time.perf_counter()
        with path.open("rb") as body:
            status, answer = _request(
                port, "POST", f"/api/v1/collections/{cid.strip()}/import", body, headers
            )
        if status != 200:
            raise SystemExit(f"REST import answered {status}: {answer[:500]!r}")
        return {
            "before": before,
            "peak": _status(proc.pid, "VmHWM"),
            "rows": json.loads(answer)["lines"],
            "seconds": time.perf_counter() - started,
        }
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=30.0, help="size of each collection in MB")
    parser.add_argument("--only", default="ndjson,smart,trec,letor,rest")
    args = parser.parse_args()
    chosen = args.only.split(",")
    size = int(args.mb * 1_000_000)
    failed = False
    with tempfile.TemporaryDirectory(prefix="import-memory-") as tmp:
        work = Path(tmp)
        print(
            f"{'import':<16} {'files MB':>8} {'rows':>7} {'before MB':>9} {'peak MB':>8} "
            f"{'growth MB':>9} {'peak/files':>10} {'growth/files':>12} {'seconds':>8}"
        )
        for kind, writer in WRITERS.items():
            if kind not in chosen and not (kind == "ndjson" and "rest" in chosen):
                continue
            folder = work / kind
            folder.mkdir()
            files = writer(folder, size, random.Random(0))
            total = sum(p.stat().st_size for p in files.values())
            runs = []
            if kind in chosen:
                runs.append((f"{kind} (service)", via_service(kind, files, work)))
            if kind == "ndjson" and "rest" in chosen:
                runs.append(("ndjson (REST)", via_rest(files["ndjson"], work)))
            for name, r in runs:
                ratio = r["peak"] / total
                failed |= (r["peak"] - r["before"]) / total > TARGET
                print(
                    f"{name:<16} {total / 1e6:8.1f} {int(r['rows']):7d} {r['before'] / 1e6:9.1f} "
                    f"{r['peak'] / 1e6:8.1f} {(r['peak'] - r['before']) / 1e6:9.1f} "
                    f"{ratio:9.1f}x {(r['peak'] - r['before']) / total:11.1f}x {r['seconds']:8.1f}"
                )
    print(
        f"target: what an import adds (peak - before) <= {TARGET:g}x the files: "
        f"{'FAILED' if failed else 'met'}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
