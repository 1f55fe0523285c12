"""Every judging strategy on real data, through the service layer.

Builds a temporary SQLite database with the real importers and runs each strategy of
``labeling.strategies.registry.strategy_names()`` against a consistent and a flip-0.1 simulated
assessor
through the service use cases (create task → next/submit loop → result), on

* **Cranfield** (SMART import, pairing ``bm25``: the top 30 documents of each query by the
  collection's BM25, unjudged ones graded 0; Cranfield codes as grades, ``5 - code``); prior
  ``bm25`` (the same ranking);
* **MQ2008** (LETOR 4.0, the Fold1 test partition ``S5.txt``, grades 0/1/2 from the labels);
  prior ``feature:25`` (BM25 of the whole document).

Truth (docs/strategies-in-practice.md#real-data): the consistent assessor's total order,
grade descending with equal grades in a seeded random order
(``labeling.study.simulation.Assessor.from_grades``); its first k are the true top-k. The noisy
assessor is the same order with each answer flipped with probability 0.1. Queries count only if
their pool has more than k documents and at least one graded document; the first
``--queries`` of them (default 20 per collection) are used, so the default run is bounded.

Printed per collection, strategy, prior and assessor: judgments per query (mean) and
κ-NDCG@10 of the produced ranking against the true top-k (``ranking.metrics.kappa_ndcg``,
gain 2^y − 1), the mean over queries.

    python benchmarks/strategies_real.py                 # 20 queries per collection
    python benchmarks/strategies_real.py --queries 5     # a quick look
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

#: The shared data directory next to the repository (tests reach it via ``shared_data``).
DEFAULT_DATA = ROOT.parent / "shared" / "data"
K = 10
POOL_DEPTH = 30
FLIP = 0.1
MQ2008_PRIOR = "feature:25"
ASSESSORS = ("consistent", f"flip{FLIP}")


@dataclass(frozen=True, slots=True)
class Row:
    """One table row: a strategy on a collection with one assessor, over ``queries``."""

    collection: str
    strategy: str
    prior: str
    assessor: str
    queries: int
    judgments: float
    kappa_ndcg: float


def _open(path: Path) -> Any:
    from app.collections.uploads import UploadedFile

    return UploadedFile(path.name, path.open("rb"))


def import_cranfield(db: Any, data: Path) -> int:
    """Cranfield through the SMART importer, BM25 pools of :data:`POOL_DEPTH`."""
    from app.collections import imports as admin_imports
    from app.collections import service as collections

    coll = collections.create_collection(db=db, name="cranfield", description="benchmark")
    base = data / "cranfield"
    files = {
        "documents": _open(base / "cran.all.1400"),
        "queries": _open(base / "cran.qry"),
        "qrels": _open(base / "cranqrel"),
    }
    try:
        admin_imports.import_files(
            db=db,
            collection_id=coll.id,
            kind="smart",
            files=files,
            pairing="bm25",
            run_depth=POOL_DEPTH,
            unjudged_grade=0,
            ignore_unknown_qrels=True,
            max_bytes=0,
        )
    finally:
        for f in files.values():
            f.content.close()
    return coll.id


def import_mq2008(db: Any, data: Path) -> int:
    """MQ2008's Fold1 test partition through the LETOR importer (grades from the labels)."""
    from app.collections import imports as admin_imports
    from app.collections import service as collections

    coll = collections.create_collection(db=db, name="mq2008", description="benchmark")
    files = {"features": _open(data / "letor4-mq2008" / "S5.txt")}
    try:
        admin_imports.import_files(
            db=db, collection_id=coll.id, kind="letor", files=files, max_bytes=0
        )
    finally:
        files["features"].content.close()
    return coll.id


def eligible_queries(db: Any, collection_id: int, limit: int) -> dict[str, dict[str, int]]:
    """The first ``limit`` queries (import order) with more than K documents and a graded
    one: query id → {document id: grade}."""
    from sqlalchemy import select

    from app.kernel.models import Document, Query

    out: dict[str, dict[str, int]] = {}
    with db.read() as s:
        queries = s.execute(
            select(Query.id, Query.external_id)
            .where(Query.collection_id == collection_id)
            .order_by(Query.id)
        ).all()
        for row_id, qid in queries:
            grades = {
                doc: int(grade or 0)
                for doc, grade in s.execute(
                    select(Document.external_id, Document.grade).where(Document.query_id == row_id)
                )
            }
            if len(grades) > K and any(grades.values()):
                out[qid] = grades
                if len(out) == limit:
                    break
    return out


def kappa_ndcg_at_k(truth: Sequence[str], ranking: Sequence[str]) -> float:
    """κ-NDCG@K of ``ranking`` (all pool documents, best first) against the true top-k."""
    import numpy as np

    from ranking.io.topk import kappa_labels as kappa_labels_from_topk
    from ranking.metrics import kappa_ndcg

    labels = kappa_labels_from_topk(truth, [d for d in ranking if d not in set(truth)], K)
    n = len(ranking)
    y = np.array([[labels[d] for d in ranking]], dtype=float)
    scores = np.array([[n - i for i in range(n)]], dtype=float)
    return float(kappa_ndcg(y, scores, at=K)[0])


def judge_query(
    db: Any,
    user: Any,
    collection_id: int,
    query_id: str,
    grades: dict[str, int],
    *,
    strategy: str,
    prior: str,
    flip: float,
    seed: int,
) -> tuple[int, float]:
    """One task through the service use cases; ``(judgments, κ-NDCG@K)``."""
    from app.judging import service as judging
    from app.tasks import results
    from app.tasks import service as tasks
    from app.tasks.priors import PriorSource
    from labeling.protocol.types import PairQuestion
    from labeling.study.simulation import Assessor

    view = tasks.create_task(
        db=db,
        collection_id=collection_id,
        query_id=query_id,
        assessor=user.username,
        method="topk",
        k=K,
        seed=seed,
        options={"strategy": strategy},
        prior=PriorSource(prior),
    )
    truth = Assessor.from_grades(grades, seed=seed).true_topk(K)
    sim = Assessor.from_grades(grades, seed=seed, flip=flip)
    body = judging.next_question(db=db, user=user, task_id=view.id)
    judgments = 0
    while not body["done"]:
        left, right = body["pair"]["left"]["doc_id"], body["pair"]["right"]["doc_id"]
        answer = sim.answer_pair(PairQuestion(body["seq"], left, right))
        data = {"seq": body["seq"], "left": left, "right": right, "outcome": answer.outcome}
        body = judging.submit_judgment(db=db, user=user, task_id=view.id, data=data)
        judgments += 1
    result = results.task_result(db=db, user=user, task_id=view.id)
    return judgments, kappa_ndcg_at_k(truth, [*result["top"], *result["rest"]])


def run(
    data: Path = DEFAULT_DATA,
    *,
    queries: int = 20,
    strategies: Sequence[str] | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> list[Row]:
    """The whole benchmark on a temporary database; one :class:`Row` per (collection,
    strategy, assessor)."""
    import migrations
    from app.kernel.db import Database
    from app.users import service as users
    from labeling.strategies.registry import strategy_names

    names = list(strategies) if strategies is not None else strategy_names()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="heapjudge-strategies-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        migrations.upgrade(url)
        db = Database.from_url(url)
        try:
            collections = (
                ("cranfield", import_cranfield(db, data), "bm25"),
                ("mq2008", import_mq2008(db, data), MQ2008_PRIOR),
            )
            for cname, cid, prior in collections:
                pools = eligible_queries(db, cid, queries)
                rng = random.Random(f"{seed}:{cname}")
                seeds = {q: rng.getrandbits(31) for q in pools}
                for strategy in names:
                    for assessor, flip in zip(ASSESSORS, (0.0, FLIP), strict=True):
                        # One assessor account per cell: a query is judged once per account.
                        user = users.create_user(
                            db=db,
                            username=f"{cname}-{strategy.replace('+', '-')}-{assessor}",
                            password="benchmark-password-1",
                        )
                        counts, quality = [], []
                        for qid, grades in pools.items():
                            n, q = judge_query(
                                db,
                                user,
                                cid,
                                qid,
                                grades,
                                strategy=strategy,
                                prior=prior,
                                flip=flip,
                                seed=seeds[qid],
                            )
                            counts.append(n)
                            quality.append(q)
                        row = Row(
                            cname,
                            strategy,
                            prior,
                            assessor,
                            len(pools),
                            fmean(counts),
                            fmean(quality),
                        )
                        rows.append(row)
                        if progress is not None:
                            progress(format_row(row))
        finally:
            db.dispose()
    return rows


HEADER = (
    f"{'collection':<10} {'strategy':<18} {'prior':<10} {'assessor':<10} {'queries':>7} "
    f"{'judg./query':>11} {'κ-NDCG@10':>9}"
)


def format_row(r: Row) -> str:
    return (
        f"{r.collection:<10} {r.strategy:<18} {r.prior:<10} {r.assessor:<10} {r.queries:>7} "
        f"{r.judgments:>11.1f} {r.kappa_ndcg:>9.3f}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data dir")
    parser.add_argument("--queries", type=int, default=20, help="queries per collection")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    print(
        f"Strategies on real data through the service (k = {K}; Cranfield BM25 pools of "
        f"{POOL_DEPTH}, prior bm25; MQ2008 S5, prior {MQ2008_PRIOR}; up to {args.queries} "
        "queries each):"
    )
    print(HEADER, flush=True)
    run(
        args.data,
        queries=args.queries,
        seed=args.seed,
        progress=lambda line: print(line, flush=True),
    )
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
