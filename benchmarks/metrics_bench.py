"""Evaluator benchmark: NDCG@10 and κ-NDCG@10 over 100,000 queries x 100 documents, and the
LETOR reader on all of MQ2008.

    python benchmarks/metrics_bench.py [--queries 100000] [--docs 100] [--repeat 3] [--no-ranx]

Prints queries/second (best of ``--repeat``) and the peak memory traced while computing (numpy
allocations are visible to tracemalloc), for heapjudge and, in the same run, for ranx if it is
installed (after a warm-up call that triggers its numba compilation). ranx is timed on its
own array kernel (descending sort of each run + ndcg), i.e. without building its Qrels/Run
objects, which is the fairest like-for-like comparison. Values are cross-checked between the
two before timing.
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ranking import metrics
from ranking.letor import concat, read_letor

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA = REPO_ROOT.parent / "shared" / "data"


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def traced_peak(fn: Callable[[], Any]) -> float:
    """Peak bytes allocated (beyond the start) while running ``fn``, in MiB."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - base) / 2**20


def make_data(n_q: int, n_d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    graded = rng.integers(0, 5, size=(n_q, n_d)).astype(np.float64)
    scores = rng.random((n_q, n_d))
    # κ-labels: a random true top-10 per query labelled 10..1, everything else 0
    kappa = np.zeros((n_q, n_d))
    top = np.argsort(rng.random((n_q, n_d)), axis=1)[:, :10]
    np.put_along_axis(kappa, top, np.arange(10, 0, -1, dtype=np.float64)[None, :], axis=1)
    return graded, kappa, scores


def bench_heapjudge(graded: np.ndarray, kappa: np.ndarray, scores: np.ndarray, repeat: int) -> dict:
    n_q = graded.shape[0]
    out: dict[str, Any] = {}
    for name, fn in (
        ("ndcg@10 (exp gain)", lambda: metrics.ndcg(graded, scores, at=10)),
        ("ndcg@10 (linear gain)", lambda: metrics.ndcg(graded, scores, at=10, gain="linear")),
        ("kappa-ndcg@10", lambda: metrics.kappa_ndcg(kappa, scores, at=10)),
        ("kappa-err", lambda: metrics.kappa_err(kappa, scores, k=10)),
    ):
        secs, values = best_of(fn, repeat)
        out[name] = (secs, n_q / secs, traced_peak(fn), values)
    return out


def bench_ranx(graded: np.ndarray, kappa: np.ndarray, scores: np.ndarray, repeat: int) -> dict:
    from numba.typed import List as TypedList
    from ranx.metrics import ndcg, ndcg_burges
    from ranx.utils import descending_sort_parallel

    n_q, n_d = graded.shape
    ids = np.arange(n_d, dtype=np.float64)

    def qrels_list(labels: np.ndarray) -> Any:
        lst = TypedList()
        for q in range(n_q):
            rel = labels[q] > 0
            arr = np.stack([ids[rel], labels[q][rel]], axis=1)
            lst.append(arr[np.argsort(-arr[:, 1], kind="stable")])
        return lst

    def run_list() -> Any:
        lst = TypedList()
        for q in range(n_q):
            lst.append(np.stack([ids, scores[q]], axis=1))
        return lst

    t0 = time.perf_counter()
    q_graded, q_kappa = qrels_list(graded), qrels_list(kappa)
    runs = run_list()
    build = time.perf_counter() - t0
    # warm-up (numba compile / cache load) on a small slice
    small = TypedList(list(runs)[:10])
    ndcg(TypedList(list(q_graded)[:10]), descending_sort_parallel(small), k=10)
    ndcg_burges(TypedList(list(q_kappa)[:10]), small, k=10)

    out: dict[str, Any] = {"build_seconds": build}
    for name, metric, qrels in (
        ("ndcg@10 (linear gain)", ndcg, q_graded),
        ("ndcg_burges@10 = exp gain", ndcg_burges, q_graded),
        ("kappa-ndcg@10 (ndcg_burges on κ-labels)", ndcg_burges, q_kappa),
    ):

        def fn(metric: Any = metric, qrels: Any = qrels) -> Any:
            return metric(qrels, descending_sort_parallel(run_list_copy()), k=10)

        def run_list_copy() -> Any:
            return runs  # descending_sort_parallel sorts in place; sorting sorted input is
            # still a full argsort per query, so repeated timings stay comparable

        secs, values = best_of(fn, repeat)
        out[name] = (secs, n_q / secs, None, values)
    return out


def bench_letor(repeat: int) -> None:
    d = DATA / "letor4-mq2008"
    if not d.is_dir():
        print("MQ2008 not found beside the repository; skipping the reader benchmark")
        return
    files = [d / f"S{i}.txt" for i in range(1, 6)]
    secs, parts = best_of(lambda: [read_letor(f) for f in files], repeat)
    cpu = float("inf")
    for _ in range(repeat):
        c0 = time.process_time()
        [read_letor(f) for f in files]
        cpu = min(cpu, time.process_time() - c0)
    data = concat(parts)
    print(
        f"read_letor MQ2008 S1-S5: {data.n_rows} rows, {data.n_queries} queries, "
        f"{data.n_features} features: {secs:.3f} s wall, {cpu:.3f} s CPU (best of {repeat}), "
        f"{data.n_rows / secs:,.0f} rows/s"
    )
    oh = DATA / "letor3-ohsumed"
    if oh.is_dir():
        ofiles = [oh / f"Fold{i}_test.txt" for i in range(1, 6)]
        osecs, _oparts = best_of(lambda: [read_letor(f) for f in ofiles], repeat)
        print(f"read_letor OHSUMED (16,140 rows): {osecs:.3f} s (best of {repeat})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--docs", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-ranx", action="store_true")
    args = ap.parse_args()

    bench_letor(args.repeat)
    graded, kappa, scores = make_data(args.queries, args.docs)
    print(
        f"\nmetrics over {args.queries:,} queries x {args.docs} documents (numpy {np.__version__}, "
        f"{metrics._threads()} threads; HEAPJUDGE_THREADS overrides)"
    )
    ours = bench_heapjudge(graded, kappa, scores, args.repeat)
    for name, (secs, qps, peak, _) in ours.items():
        print(f"  heapjudge {name:38s} {secs:7.3f} s  {qps:12,.0f} queries/s  peak {peak:7.1f} MiB")

    if not args.no_ranx:
        try:
            import ranx  # noqa: F401
        except ImportError:
            print("  ranx not installed: pip install ranx (or .[bench]) to compare")
        else:
            theirs = bench_ranx(graded, kappa, scores, args.repeat)
            print(
                f"  (ranx typed-list build, not timed below: {theirs.pop('build_seconds'):.1f} s)"
            )
            for name, (secs, qps, _, _values) in theirs.items():
                print(f"  ranx      {name:38s} {secs:7.3f} s  {qps:12,.0f} queries/s")
            # cross-check values (distinct random scores: tie order does not matter)
            diff_lin = np.abs(theirs["ndcg@10 (linear gain)"][3] - ours["ndcg@10 (linear gain)"][3])
            diff_exp = np.abs(
                theirs["ndcg_burges@10 = exp gain"][3] - ours["ndcg@10 (exp gain)"][3]
            )
            diff_k = np.abs(
                theirs["kappa-ndcg@10 (ndcg_burges on κ-labels)"][3] - ours["kappa-ndcg@10"][3]
            )
            print(
                f"  max |heapjudge - ranx|: linear {diff_lin.max():.2e}, exp {diff_exp.max():.2e}, "
                f"kappa {diff_k.max():.2e}"
            )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process peak RSS: {rss:,.0f} MiB")


if __name__ == "__main__":
    main()
