"""Evaluator benchmark: ``heapjudge evaluate`` from TREC files (20,000 queries x 100 documents)
against ranx's public API, NDCG@10 and κ-NDCG@10 over 100,000 queries x 100 documents, and the
LETOR reader on all of MQ2008.

    python benchmarks/metrics_bench.py [--queries 100000] [--docs 100] [--repeat 3] [--no-ranx]
        [--file-queries 20000] [--file-docs 100] [--no-files] [--no-kernels]
        [--runs 50] [--runs-queries 2000] [--no-runs]

Files -> numbers: a seeded run (``qid Q0 doc rank score tag``, 100 documents per query, scores
distinct within a query so that no tie order matters) and qrels (100 judged documents per
query, half of them retrieved, grades 0-4) are written to a temporary directory. Each tool
then runs in its own subprocess, timed from start to exit (interpreter start and imports
included), with its CPU time and peak resident memory (``wait4`` rusage): ``heapjudge
evaluate --preset ranx --metrics ndcg@10 --json``, and ranx's ``Qrels.from_file``,
``Run.from_file`` and ``evaluate(qrels, run, "ndcg@10")`` (after one small warm-up run, so
that numba's compiled-code cache is filled and not timed). The two NDCG@10 must agree to 6
digits. An in-process breakdown of heapjudge's phases follows.

Many runs: ``--runs`` runs (default 50) of ``--runs-queries`` queries (default 2,000: ranx's
``compare`` on 50 runs of 20,000 queries would take tens of minutes and gigabytes here) against
one qrels, scored by ``heapjudge evaluate`` and ``heapjudge compare`` on the folder and by
ranx's ``compare`` (paired t-test) on the same files; wall and CPU time, peak memory against
the qrels plus one run, and the ratios to ranx.

Kernels: prints queries/second (best of ``--repeat``) and the peak memory traced while
computing (numpy allocations are visible to tracemalloc), for heapjudge and, in the same run,
for ranx if it is installed (after a warm-up call that triggers its numba compilation). ranx
is timed on its own array kernel (descending sort of each run + ndcg), i.e. without building
its Qrels/Run objects, the like-for-like comparison of kernels. Values are cross-checked
between the two before timing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ranking import metrics
from ranking.io.letor import concat, read_letor
from ranking.metrics import chunking

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


# --------------------------------------------------------------------------------------------
# files -> numbers
# --------------------------------------------------------------------------------------------


def write_trec_pair(directory: Path, n_q: int, n_d: int, seed: int = 0) -> tuple[Path, Path]:
    """A run and qrels of ``n_q`` queries: ``n_d`` retrieved documents per query with scores
    distinct within the query, ``n_d`` judged documents (half retrieved) with grades 0-4."""
    rng = np.random.default_rng(seed)
    run_path, qrels_path = directory / "run.txt", directory / "qrels.txt"
    half = n_d // 2
    with run_path.open("w") as run_fh, qrels_path.open("w") as qrels_fh:
        for start in range(0, n_q, 1000):
            run_lines: list[str] = []
            qrels_lines: list[str] = []
            for q in range(start, min(n_q, start + 1000)):
                docs = rng.choice(5_000_000, size=n_d + half, replace=False)
                scores = rng.choice(1_000_000, size=n_d, replace=False) / 1e6
                order = np.argsort(-scores)
                grades = rng.integers(0, 5, size=n_d)
                qid = f"q{q + 1}"
                run_lines.extend(
                    f"{qid} Q0 doc{docs[i]} {r} {scores[i]:.6f} bench\n"
                    for r, i in enumerate(order.tolist(), start=1)
                )
                qrels_lines.extend(
                    f"{qid} 0 doc{d} {g}\n"
                    for d, g in zip(docs[half:].tolist(), grades.tolist(), strict=True)
                )
            run_fh.write("".join(run_lines))
            qrels_fh.write("".join(qrels_lines))
    return run_path, qrels_path


_RANX_SCRIPT = """
import json, sys
from ranx import Qrels, Run, evaluate
qrels = Qrels.from_file(sys.argv[1], kind="trec")
run = Run.from_file(sys.argv[2], kind="trec")
print(json.dumps({"ndcg@10": float(evaluate(qrels, run, "ndcg@10"))}))
"""


def timed_subprocess(cmd: list[str]) -> tuple[float, float, float, str]:
    """Run ``cmd``: (wall s, CPU s (user + system), peak RSS MiB, stdout). Raises on failure."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env={**os.environ})
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"{cmd[:3]} failed: {err.read().decode(errors='replace')}")
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.read().decode()


def bench_files(n_q: int, n_d: int, repeat: int, with_ranx: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run_path, qrels_path = write_trec_pair(Path(tmp), n_q, n_d)
        size = (run_path.stat().st_size + qrels_path.stat().st_size) / 2**20
        print(
            f"files -> NDCG@10: {n_q:,} queries x {n_d} documents, run + qrels {size:.0f} MiB "
            f"(written in {time.perf_counter() - t0:.1f} s); best of {repeat}, each in its own "
            "subprocess, from start to exit"
        )
        ours_cmd = [
            sys.executable,
            "-m",
            "app.cli",
            "evaluate",
            "--qrels",
            str(qrels_path),
            "--run",
            str(run_path),
            "--metrics",
            "ndcg@10",
            "--preset",
            "ranx",
            "--json",
        ]
        rows: dict[str, tuple[float, float, float, float]] = {}
        best = min((timed_subprocess(ours_cmd) for _ in range(repeat)), key=lambda r: r[0])
        ours = json.loads(best[3])["metrics"]["ndcg@10"]
        rows["heapjudge evaluate --preset ranx"] = (*best[:3], ours)
        if with_ranx:
            try:
                import ranx  # noqa: F401
            except ImportError:
                print("  ranx not installed: pip install ranx (or .[bench]) to compare")
            else:
                small = Path(tmp) / "small"
                small.mkdir()
                small_run, small_qrels = write_trec_pair(small, 20, 10)
                timed_subprocess(
                    [sys.executable, "-c", _RANX_SCRIPT, str(small_qrels), str(small_run)]
                )
                ranx_cmd = [sys.executable, "-c", _RANX_SCRIPT, str(qrels_path), str(run_path)]
                best = min((timed_subprocess(ranx_cmd) for _ in range(repeat)), key=lambda r: r[0])
                rows["ranx Qrels/Run.from_file + evaluate"] = (
                    *best[:3],
                    json.loads(best[3])["ndcg@10"],
                )
        for name, (wall, cpu, rss, value) in rows.items():
            print(
                f"  {name:38s} {wall:7.2f} s wall {cpu:7.2f} s CPU  peak RSS {rss:6.0f} MiB "
                f"({rss / size:.1f}x input)  NDCG@10 {value:.6f}"
            )
        if len(rows) == 2:
            (ours_row, ranx_row) = rows.values()
            agree = f"{ours_row[3]:.6f}" == f"{ranx_row[3]:.6f}"
            wall_x, cpu_x = ranx_row[0] / ours_row[0], ranx_row[1] / ours_row[1]
            print(
                f"  speed-up {wall_x:.1f}x wall, {cpu_x:.1f}x CPU; "
                f"NDCG@10 agrees to 6 digits: {agree}"
            )
        phases(run_path, qrels_path)


def write_campaign(directory: Path, n_q: int, n_d: int, n_runs: int, seed: int = 1) -> Path:
    """Qrels (``qrels.txt``, as :func:`write_trec_pair`) and ``n_runs`` runs of the same
    documents in ``directory/runs``: run r scores each document by its grade plus noise
    whose spread grows with r (distinct scores within a query), so the runs differ in
    quality and the pairs' differences in significance. Returns the runs folder."""
    rng = np.random.default_rng(seed)
    half = n_d // 2
    docs = [rng.choice(5_000_000, size=n_d + half, replace=False) for _ in range(n_q)]
    grades = [rng.integers(0, 5, size=n_d) for _ in range(n_q)]
    with (directory / "qrels.txt").open("w") as fh:
        for q in range(n_q):
            fh.write(
                "".join(
                    f"q{q + 1} 0 doc{d} {g}\n"
                    for d, g in zip(docs[q][half:].tolist(), grades[q].tolist(), strict=True)
                )
            )
    folder = directory / "runs"
    folder.mkdir()
    for r in range(n_runs):
        with (folder / f"run{r:02d}.txt").open("w") as fh:
            for q in range(n_q):
                # the retrieved half that is judged carries its grade as signal
                signal = np.zeros(n_d)
                signal[half:] = grades[q][: n_d - half]
                noisy = signal + rng.normal(0, 1 + r / 10, size=n_d)
                ranks = np.argsort(-noisy, kind="stable")
                score = (np.arange(n_d, 0, -1) / n_d).tolist()
                ids = docs[q][ranks].tolist()
                fh.write(
                    "".join(
                        f"q{q + 1} Q0 doc{d} {i + 1} {score[i]:.6f} r{r}\n"
                        for i, d in enumerate(ids)
                    )
                )
    return folder


_RANX_COMPARE = """
import json, sys
from pathlib import Path
from ranx import Qrels, Run, compare
qrels = Qrels.from_file(sys.argv[1], kind="trec")
runs = []
for path in sorted(Path(sys.argv[2]).iterdir()):
    run = Run.from_file(str(path), kind="trec")
    run.name = path.name
    runs.append(run)
report = compare(qrels, runs, metrics=["ndcg@10"], stat_test="student", max_p=0.05)
means = {name: report.results[name]["ndcg@10"] for name in report.model_names}
print(json.dumps({"means": means}))
"""


def bench_campaign(n_q: int, n_d: int, n_runs: int, with_ranx: bool) -> None:
    """Many runs against one qrels: ``heapjudge evaluate`` and ``heapjudge compare`` on a
    folder (the qrels read once, one run in memory at a time) against ranx's ``compare``
    (paired t-test) on the same files, each in its own subprocess."""
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        folder = write_campaign(Path(tmp), n_q, n_d, n_runs)
        qrels = Path(tmp) / "qrels.txt"
        size = (qrels.stat().st_size + sum(p.stat().st_size for p in folder.iterdir())) / 2**20
        one = (qrels.stat().st_size + next(folder.iterdir()).stat().st_size) / 2**20
        print(
            f"\n{n_runs} runs against one qrels: {n_q:,} queries x {n_d} documents each, "
            f"{size:.0f} MiB in all, qrels + one run {one:.0f} MiB (written in "
            f"{time.perf_counter() - t0:.1f} s); NDCG@10, paired t-test"
        )
        cli = [sys.executable, "-m", "app.cli"]
        common = ["--qrels", str(qrels), "--preset", "ranx", "--json"]
        rows: dict[str, tuple[float, float, float, dict[str, float]]] = {}
        wall, cpu, rss, out = timed_subprocess(
            [*cli, "evaluate", *common, "--run", str(folder), "--metrics", "ndcg@10"]
        )
        board = json.loads(out)
        rows["heapjudge evaluate (folder)"] = (wall, cpu, rss, _board_means(board))
        wall, cpu, rss, out = timed_subprocess(
            [*cli, "compare", *common, "--runs", str(folder), "--metric", "ndcg@10", "--test", "t"]
        )
        result = json.loads(out)
        rows["heapjudge compare --test t"] = (
            wall,
            cpu,
            rss,
            {r["run"]: r["mean"] for r in result["runs"]},
        )
        if with_ranx:
            try:
                import ranx  # noqa: F401
            except ImportError:
                print("  ranx not installed: pip install ranx (or .[bench]) to compare")
            else:
                small = Path(tmp) / "small"
                small.mkdir()
                warm = write_campaign(small, 20, 10, 2)  # numba's compiled-code cache, untimed
                timed_subprocess(
                    [sys.executable, "-c", _RANX_COMPARE, str(small / "qrels.txt"), str(warm)]
                )
                wall, cpu, rss, out = timed_subprocess(
                    [sys.executable, "-c", _RANX_COMPARE, str(qrels), str(folder)]
                )
                rows["ranx compare (student)"] = (wall, cpu, rss, json.loads(out)["means"])
        for name, (wall, cpu, rss, _) in rows.items():
            print(
                f"  {name:30s} {wall:7.2f} s wall {cpu:7.2f} s CPU  peak RSS {rss:6.0f} MiB "
                f"({rss / one:.1f}x qrels + one run)"
            )
        if "ranx compare (student)" in rows:
            theirs = rows["ranx compare (student)"]
            for name in ("heapjudge evaluate (folder)", "heapjudge compare --test t"):
                ours = rows[name]
                agree = all(f"{ours[3][k]:.3f}" == f"{theirs[3][k]:.3f}" for k in theirs[3])
                print(
                    f"  {name}: {theirs[0] / ours[0]:.1f}x faster than ranx in wall time, "
                    f"{theirs[1] / ours[1]:.1f}x in CPU time; means agree to 3 digits: {agree}"
                )


def _board_means(board: Any) -> dict[str, float]:
    """The mean NDCG@10 of each run of ``heapjudge evaluate --json`` over several runs."""
    runs = board["runs"] if isinstance(board, dict) and "runs" in board else board
    return {r["run"]: r["metrics"]["ndcg@10"]["mean"] for r in runs}


def phases(run_path: Path, qrels_path: Path) -> None:
    """heapjudge's phases in this process (CPU seconds; the CSV reader uses threads)."""
    from ranking.evaluate import evaluate_columns
    from ranking.io.trec_fast import read_qrels_columns, read_run_columns
    from ranking.io.trec_scan import compiled_scanner

    marks = [time.process_time()]
    run = read_run_columns(run_path)
    marks.append(time.process_time())
    qrels = read_qrels_columns(qrels_path)
    marks.append(time.process_time())
    evaluate_columns(run, qrels, metrics=["ndcg@10"], conventions="ranx")
    marks.append(time.process_time())
    evaluate_columns(run, qrels, metrics=["ndcg@10"], conventions="trec_eval")
    marks.append(time.process_time())
    steps = np.diff(marks)
    compiled = "compiled scan" if compiled_scanner() is not None else "pyarrow reader"
    print(
        f"  in process (CPU s, {compiled}; HEAPJUDGE_TREC_PURE=1 for the pyarrow one): "
        f"read run {steps[0]:.2f} (fast path: {run.fast}), read qrels "
        f"{steps[1]:.2f} (fast path: {qrels.fast}), join + group + NDCG@10 {steps[2]:.2f} "
        f"(ranx conventions), {steps[3]:.2f} (trec_eval: ties by docid, single precision; "
        "includes rebuilding the join indexes the first call released)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--docs", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-ranx", action="store_true")
    ap.add_argument("--file-queries", type=int, default=20_000)
    ap.add_argument("--file-docs", type=int, default=100)
    ap.add_argument("--no-files", action="store_true", help="skip files -> numbers")
    ap.add_argument("--no-kernels", action="store_true", help="skip the kernel figures")
    ap.add_argument("--runs", type=int, default=50, help="runs of the many-runs case")
    ap.add_argument(
        "--runs-queries",
        type=int,
        default=2_000,
        help="queries of each run in the many-runs case (ranx's compare on 50 runs of 20,000 "
        "queries takes tens of minutes and gigabytes; the default scales it down)",
    )
    ap.add_argument("--no-runs", action="store_true", help="skip the many-runs case")
    args = ap.parse_args()

    # The many-runs case first: a child's peak RSS counts the pages it shares with this
    # process when it starts, and the in-process phases of the files case grow this one.
    if not args.no_runs:
        bench_campaign(args.runs_queries, args.file_docs, args.runs, not args.no_ranx)
    if not args.no_files:
        bench_files(args.file_queries, args.file_docs, args.repeat, not args.no_ranx)
    if args.no_kernels:
        return
    bench_letor(args.repeat)
    graded, kappa, scores = make_data(args.queries, args.docs)
    print(
        f"\nmetrics over {args.queries:,} queries x {args.docs} documents (numpy {np.__version__}, "
        f"{chunking.threads()} threads; HEAPJUDGE_THREADS overrides)"
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
