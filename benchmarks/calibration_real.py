"""The calibration report of one real study (docs/machine-judges.md#the-calibration-report):
Cranfield judged through the service with a BM25 machine and a simulated person, then the
report the REST endpoint, the CLI and the analysis page give, printed. Asserts nothing.

The study, every step through the service's use cases as REST clients would (a temporary
SQLite database): the Cranfield queries that have relevance judgments, in order (``--queries``
of them, 40 by default); each query's pool is the corpus's BM25 top ``--pool`` (30), imported
as the collection's documents; one ``insertion+assist`` top-10 task per query with option
``machine: {"source": "bm25"}`` (the collection's BM25 over the imported documents); the
person answers from the graded qrels (unjudged documents grade 0), a seeded order inside a
grade (a person forced to choose between two equally relevant documents, consistent with
themself). Each task freezes the study calibration learned from the earlier tasks' answers
when it starts, so the later queries' machine is calibrated on the earlier ones'.

    python benchmarks/calibration_real.py [--data ../shared/data] [--queries 40] [--bins 10]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from app.analysis.calibration import calibration_report, judge_records  # noqa: E402
from app.analysis.machine import machine_evidence  # noqa: E402
from app.cli.calibration import format_collection  # noqa: E402
from app.collections import service as collections  # noqa: E402
from app.judging import service as judging  # noqa: E402
from app.kernel.db import Database  # noqa: E402
from app.kernel.settings import Settings  # noqa: E402
from app.tasks import service as tasks  # noqa: E402
from app.users import service as users  # noqa: E402
from labeling.machine.calibration_report import report_from_records  # noqa: E402
from labeling.retrieval.bm25 import Bm25Index  # noqa: E402
from labeling.retrieval.text import document_text  # noqa: E402
from labeling.sources.smart import load_cranfield  # noqa: E402

K = 10


def true_rank(grades: dict[str, int], seed: str) -> dict[str, int]:
    """Rank of each document (0 best): by grade, a seeded random order inside a grade."""
    rng = random.Random(seed)
    ids = sorted(grades)
    rng.shuffle(ids)
    tie = {d: i for i, d in enumerate(ids)}
    order = sorted(ids, key=lambda d: (-grades[d], tie[d]))
    return {d: i for i, d in enumerate(order)}


def build(
    db: Database, data: Path, n_queries: int, depth: int
) -> tuple[int, dict[str, Any], dict[str, dict[str, int]]]:
    """The collection of the first ``n_queries`` judged queries' BM25 pools; (id, true ranks,
    grades)."""
    corpus = load_cranfield(data / "cranfield")
    docs = {d.doc_id: d for d in corpus.documents}
    index = Bm25Index([(d.doc_id, document_text(d.title, d.text)) for d in corpus.documents])
    qrels: dict[str, dict[str, int]] = {}
    for e in corpus.qrels:
        qrels.setdefault(e.query_id, {})[e.doc_id] = e.grade
    topics = [t for t in corpus.topics if qrels.get(t.query_id)][:n_queries]
    rows, ranks, grades = [], {}, {}
    for t in topics:
        pool = [h.doc_id for h in index.search(t.title, depth)]
        grades[t.query_id] = {d: qrels[t.query_id].get(d, 0) for d in pool}
        ranks[t.query_id] = true_rank(grades[t.query_id], t.query_id)
        for d in pool:
            doc = docs[d]
            rows.append(
                {
                    "query_id": t.query_id,
                    "query": t.title,
                    "doc_id": d,
                    "title": doc.title or f"Document {d}",
                    "text": doc.text or "",
                }
            )
    coll = collections.create_collection(db=db, name="cranfield-calibration")
    payload = "\n".join(json.dumps(r) for r in rows).encode("utf-8")
    collections.import_ndjson(db=db, collection_id=coll.id, data=payload)
    return coll.id, ranks, grades


def graded_pairs(db: Database, cid: int, grades: dict[str, dict[str, int]], bins: int) -> str:
    """The report's figures on the records whose two documents differ in grade (where the
    person's answer is not an arbitrary order inside a grade): all, and the audits."""
    lines = []
    for group in judge_records(machine_evidence(cid, db=db)):
        kept = [
            (r, a)
            for r, a in zip(group.records, group.audit, strict=True)
            if r.query_id is not None
            and grades[r.query_id][r.left or ""] != grades[r.query_id][r.right or ""]
        ]
        for name, records in (
            ("all", [r for r, _ in kept]),
            ("audits", [r for r, a in kept if a]),
        ):
            c = report_from_records(records, n_bins=bins).calibrated
            lines.append(
                f"  pairs of different grades, {name}: {c.count} answers, accuracy "
                f"{c.accuracy:.3f}, ECE {c.ece:.3f}, Brier {c.brier:.3f}, kappa {c.kappa:.3f}"
            )
    return "\n".join(lines)


def judge(db: Database, user: Any, task_id: int, rank: dict[str, int]) -> int:
    """Answer every person's question of the task from the true order; how many."""
    body = judging.next_question(db=db, user=user, task_id=task_id)
    count = 0
    while not body["done"]:
        left, right = body["pair"]["left"]["doc_id"], body["pair"]["right"]["doc_id"]
        outcome = "left" if rank[left] < rank[right] else "right"
        data = {"seq": body["seq"], "left": left, "right": right, "outcome": outcome}
        body = judging.submit_judgment(db=db, user=user, task_id=task_id, data=data)
        count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--pool", type=int, default=30)
    parser.add_argument("--bins", type=int, default=10)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    if not (args.data / "cranfield").is_dir():
        print(f"no Cranfield under {args.data}; nothing to measure")
        return
    import migrations

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/calibration.db"
        migrations.upgrade(url)
        db = Database(Settings(database_url=url, dev=True))
        user = users.create_user(db=db, username="person", password="a long password here")
        cid, ranks, grades = build(db, args.data, args.queries, args.pool)
        people = 0
        for i, (qid, rank) in enumerate(ranks.items()):
            options = {"strategy": "insertion+assist", "machine": {"source": "bm25"}}
            view = tasks.create_task(
                db=db,
                collection_id=cid,
                query_id=qid,
                assessor="person",
                method="topk",
                k=K,
                seed=1000 + i,
                options=options,
            )
            people += judge(db, user, view.id, rank)
        views = tasks.list_tasks(db=db, user=user, collection_id=cid)
        machine = sum(v.machine_answers for v in views)
        judged = time.perf_counter()
        report = calibration_report(cid, db=db, bins=args.bins)
        reported = time.perf_counter() - judged
        # Again: every task's replay from the process's cache (its log has not changed).
        again = time.perf_counter()
        same = calibration_report(cid, db=db, bins=args.bins) == report
        cached = time.perf_counter() - again
        graded = graded_pairs(db, cid, grades, args.bins)
        db.dispose()
    n = len(ranks)
    print(
        f"Cranfield, {n} queries, pools of the BM25 top {args.pool}, insertion+assist top-{K}, "
        f"machine bm25: {people / n:.1f} person answers and {machine / n:.1f} machine answers "
        f"per query ({time.perf_counter() - started:.0f} s; the report took {reported:.1f} s, "
        f"{cached:.2f} s again with the replays cached: "
        f"{'the same report' if same else 'A DIFFERENT REPORT'})\n"
    )
    print(json.dumps(report, indent=2) if args.json else format_collection(report))
    if not args.json:
        print(graded)


if __name__ == "__main__":
    main()
