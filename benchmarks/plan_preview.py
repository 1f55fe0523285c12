"""How long the plan preview takes (``app.planning.service.preview_plan``), the call behind the
preview page and ``POST /api/v1/admin/plans/preview``.

Cranfield through the SMART importer with BM25 pools of 30 (the shared data), two assessors,
the rotation scheme, strategy ``tournament``, k = 10: a plan of 10 queries and one of every
query with BM25 pools of 30 and prior ``bm25``, and one of every query on all its documents
(the import paired 30 per query) without a prior. Each preview is timed cold (the first call
in the process: BM25 index, simulations; also its CPU time, which other work on the machine
disturbs less) and warm (the median of the next calls); the preview
also shows every strategy side by side (``docs/admin-guide.md#plan-preview``).

    python benchmarks/plan_preview.py
    python benchmarks/plan_preview.py --repeat 5
    python benchmarks/plan_preview.py --machine bm25   # tournament+assist with a BM25 machine

With ``--machine`` the plans' strategy is ``tournament+assist`` and their top-k tasks have that
machine judge: the preview then also simulates every ``+assist`` row with the machine
(docs/admin-guide.md#plan-preview). Compare the two in separate processes (the caches are
per process), alternating: without, with, without, with.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

DEFAULT_DATA = ROOT.parent / "shared" / "data"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeat", type=int, default=3, help="warm previews per plan")
    parser.add_argument("--machine", default=None, help="the top-k tasks' machine judge (bm25)")
    args = parser.parse_args(argv)
    if not (args.data / "cranfield").is_dir():
        sys.exit(f"error: no Cranfield under {args.data}")

    import migrations
    from app.kernel.db import Database
    from app.planning import service as planning
    from app.planning.spec import PlanSpec, PoolSpec
    from app.users import service as users
    from benchmarks.strategies_real import import_cranfield

    with tempfile.TemporaryDirectory(prefix="heapjudge-plan-preview-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        migrations.upgrade(url)
        db = Database.from_url(url)
        try:
            cid = import_cranfield(db, args.data)
            for name in ("ann", "bob"):
                users.create_user(
                    db=db, username=name, password="preview-bench-pw-1", role="assessor"
                )
            # (queries, pool, prior): BM25 pools of 30 with the BM25 prior, then every
            # query's own documents (the 30 the import paired by BM25) without a prior.
            for queries, mode, prior in (
                (10, "bm25", "bm25"),
                (None, "bm25", "bm25"),
                (None, "all", "none"),
            ):
                ids = [str(q) for q in range(1, queries + 1)] if queries else None
                spec = PlanSpec(
                    collection_id=cid,
                    assessors=["ann", "bob"],
                    query_ids=ids,
                    shifts=(0,),
                    k=10,
                    strategy="tournament+assist" if args.machine else "tournament",
                    machine=args.machine,
                    prior=prior,
                    pool=PoolSpec(mode=mode, n=30 if mode == "bm25" else None),
                )
                times, cpu = [], []
                for _ in range(1 + args.repeat):
                    start, start_cpu = time.perf_counter(), time.process_time()
                    preview = planning.preview_plan(db=db, spec=spec)
                    times.append(time.perf_counter() - start)
                    cpu.append(time.process_time() - start_cpu)
                rows = getattr(preview, "strategies", [])
                warm = statistics.median(times[1:]) * 1000
                print(
                    f"pool {mode:>4}, prior {prior:>4}, "
                    f"{len(preview.query_ids):>4} queries, {len(preview.tasks):>4} tasks: "
                    f"cold {times[0] * 1000:7.0f} ms (CPU {cpu[0] * 1000:5.0f} ms), "
                    f"warm {warm:7.0f} ms"
                    f" (median of {args.repeat}); {len(rows)} strategies side by side; "
                    f"T1 total {preview.totals.get('topk_judgments')}"
                )
                if args.machine:
                    chosen = next(r for r in rows if r.get("chosen"))
                    print(f"    with the machine: {chosen.get('with_machine')}")
        finally:
            db.dispose()


if __name__ == "__main__":
    main()
