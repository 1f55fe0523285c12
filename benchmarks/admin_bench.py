"""Admin console figures (prints; no assertions): parsing and importing Cranfield and MQ2008,
planning studies, and the progress report of a busy collection.

    python benchmarks/admin_bench.py [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(label: str, fn, repeat: int = 1):
    best = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    print(f"{label:<58} {best * 1000:10.1f} ms")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    args = parser.parse_args()

    import migrations
    from app.collections import service as collections
    from app.collections.attach import attach_features
    from app.collections.imports import import_files
    from app.collections.uploads import UploadedFile
    from app.kernel.db import Database
    from app.planning.service import create_plan
    from app.planning.spec import PlanSpec
    from app.tasks.progress import collection_progress
    from app.users import service as users
    from labeling.protocol.session import open_session
    from labeling.sources import load_cranfield
    from labeling.sources.letor import read_letor_features
    from labeling.study.assignment import fold_rotation, plan_balanced, validate_plan

    cran = args.data / "cranfield"
    timed("parse Cranfield (1,400 docs, 225 queries, 1,837 qrels)", lambda: load_cranfield(cran), 3)
    timed(
        "read MQ2008 S1 features (2,933 rows)",
        lambda: read_letor_features(args.data / "letor4-mq2008" / "S1.txt"),
        3,
    )
    names = [f"u{i}" for i in range(20)]
    queries = [f"q{i}" for i in range(1000)]
    plan = timed(
        "plan_balanced 20 assessors x 1,000 queries (2+2 per query)",
        lambda: plan_balanced(names, queries, seed=1),
        3,
    )
    timed("validate that plan (4,000 entries)", lambda: validate_plan(plan), 3)
    timed("fold_rotation 5 x 50 (paper)", lambda: fold_rotation(names[:5], queries[:50]), 3)

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        migrations.upgrade(url)
        db = Database.from_url(url, max_body_bytes=64 * 1024 * 1024)
        cid = collections.create_collection(db=db, name="cran").id
        timed(
            "import Cranfield through the service (SQLite, 1,837 rows)",
            lambda: import_files(
                db=db,
                collection_id=cid,
                kind="smart",
                files={
                    "documents": UploadedFile("cran.all.1400", cran / "cran.all.1400"),
                    "queries": UploadedFile("cran.qry", cran / "cran.qry"),
                    "qrels": UploadedFile("cranqrel", cran / "cranqrel"),
                },
                qrels_format="cranfield",
                max_bytes=0,
            ),
        )
        mq = collections.create_collection(db=db, name="mq").id
        timed(
            "import MQ2008 S1 as a LETOR collection (2,933 rows)",
            lambda: import_files(
                db=db,
                collection_id=mq,
                kind="letor",
                files={"features": UploadedFile("S1.txt", args.data / "letor4-mq2008" / "S1.txt")},
                max_bytes=0,
            ),
        )
        timed(
            "re-attach MQ2008 S1 features (2,933 updates)",
            lambda: attach_features(
                db=db,
                collection_id=mq,
                features=UploadedFile("S1.txt", args.data / "letor4-mq2008" / "S1.txt"),
                max_bytes=0,
            ),
        )
        for name in names[:10]:
            users.create_user(db=db, username=name, password="bench admin passphrase")
        spec = PlanSpec(
            collection_id=cid,
            assessors=names[:10],
            query_ids=[str(i) for i in range(1, 101)],
            scheme="balanced",
            k=5,
        )
        created = timed(
            "create a 400-task plan (10 assessors, 100 queries)",
            lambda: create_plan(db=db, spec=spec),
        )
        # Half-finish every topk task with a random oracle so progress has logs to replay.
        from app.kernel.models import Judgment, Task
        from labeling.protocol.types import PairAnswer

        rng = random.Random(0)
        with db.write() as s:
            for task in s.query(Task).filter(Task.id.in_(created.task_ids), Task.method == "topk"):
                session = open_session(
                    "topk", task.doc_ids, k=task.k, seed=task.seed, options=task.options
                )
                for seq in range(rng.randint(0, 10)):
                    q = session.pending
                    if q is None:
                        break
                    outcome = rng.choice(("left", "right"))
                    session.submit(PairAnswer(q.left, q.right, outcome))
                    s.add(
                        Judgment(
                            task_id=task.id,
                            seq=seq,
                            left_doc=q.left,
                            right_doc=q.right,
                            outcome=outcome,
                            active_ms=1000,
                        )
                    )
        report = timed(
            "progress report (400 tasks, replaying every open log)",
            lambda: collection_progress(db=db, collection_id=cid),
            3,
        )
        print(
            f"  -> {report['totals']['judgments']} judgments, about "
            f"{report['totals']['expected_remaining']:.0f} left"
        )
        db.dispose()


if __name__ == "__main__":
    main()
