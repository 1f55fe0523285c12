"""The judging loop with and without a training job running beside it.

Reuses :mod:`benchmarks.api_load` (database seeding, the real ``heapjudge serve``, the
simulated assessors, the printed row). ``serve`` starts its training worker as a separate
process, so a fit should leave the judging loop unchanged within noise; this script prints
both rows to show it (no assertion: figures vary between runs on a shared machine):

1. the judging loop alone (``--assessors`` paced at ``--rate`` judgments/s, or saturation
   with ``--rate 0``);
2. the same load while a FocusedNet fit runs in the worker (started over REST on a simulated
   study's collection, cancelled afterwards over REST).

Usage::

    python benchmarks/judging_with_training.py [--duration 10] [--assessors 8] [--rate 200]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import api_load as L

PASSWORD = "bench-admin-password"


def _training_collection(url: str) -> int:
    """A simulated top-k study with random feature vectors, and an admin to train on it."""
    import numpy as np
    from sqlalchemy import select

    from app.analysis.study import StudyConfig, run_simulated_study
    from app.kernel.db import Database
    from app.kernel.models import Document
    from app.kernel.settings import Settings
    from app.users import service as users

    db = Database(Settings(database_url=url, dev=True))
    try:
        summary = run_simulated_study(
            db=db, config=StudyConfig(assessors=4, queries=8, docs=20, k=5, collection="bench")
        )
        rng = np.random.default_rng(0)
        with db.write() as s:
            for doc in s.scalars(
                select(Document).where(Document.collection_id == summary.collection_id)
            ):
                doc.features = rng.random(46).tolist()
        users.create_user(db=db, username="benchadmin", password=PASSWORD, role="admin")
        return summary.collection_id
    finally:
        db.dispose()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--assessors", type=int, default=8)
    ap.add_argument("--rate", type=float, default=200.0, help="total j/s; 0 = saturation")
    ap.add_argument("--max-judgments", type=int, default=200_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        runs = [(args.assessors, args.rate), (args.assessors, args.rate)]
        seeded = L.seed_database(url, runs, args.duration)
        collection = _training_collection(url)
        port = L.free_port()
        server = L.start_server(url, port)
        base = f"http://127.0.0.1:{port}/api/v1"
        try:
            token = httpx.post(
                f"{base}/auth/token", data={"username": "benchadmin", "password": PASSWORD}
            ).json()["access_token"]
            h = {"Authorization": f"Bearer {token}"}
            print(L.HEADER)
            alone = L.Level("alone", args.assessors, args.rate)
            L.run_level(port, seeded, 0, alone, args.duration, args.max_judgments)
            alone.stored = L.count_stored(url, alone.task_ids)
            L.print_row(alone)
            run = httpx.post(
                f"{base}/training-runs",
                headers=h,
                json={
                    "collection_id": collection,
                    "model": "focusednet",
                    "params": {"epochs": 10_000_000, "eval_every": 10_000_000, "model": "mlp"},
                },
            ).json()
            deadline = time.monotonic() + 60
            while (
                httpx.get(f"{base}/training-runs/{run['id']}", headers=h).json()["status"]
                != "running"
            ):
                if time.monotonic() > deadline:
                    raise RuntimeError("the training run did not start")
                time.sleep(0.2)
            beside = L.Level("with-fit", args.assessors, args.rate)
            L.run_level(port, seeded, 1, beside, args.duration, args.max_judgments)
            beside.stored = L.count_stored(url, beside.task_ids)
            L.print_row(beside)
            state = httpx.get(f"{base}/training-runs/{run['id']}", headers=h).json()
            httpx.post(f"{base}/training-runs/{run['id']}/cancel", headers=h)
            print(
                f"training run during the second row: status {state['status']}, "
                f"progress {state['progress']} {state['error'] or ''}"
            )
        finally:
            server.terminate()
            server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
