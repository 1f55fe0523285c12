"""``heapjudge trec-eval -m all_trec`` against the trec_eval 10.0 binary and ranx.

    python benchmarks/trec_eval_bench.py [--queries 20000] [--docs 100] [--judged 0.3] [--repeat 3]

Writes a run of ``--queries`` × ``--docs`` documents (scores with three decimals, so ties
occur) and qrels grading ``--judged`` of its documents 0-3, then times whole processes, each
``--repeat`` times, alternating (the machine is shared; the best wall time of each is kept):

- ``python -m ranking.trec_eval -m all_trec qrels run`` (heapjudge's drop-in),
- the trec_eval binary named by ``HEAPJUDGE_TREC_EVAL_BIN`` (built from usnistgov/trec_eval),
  same arguments; the two outputs are compared byte for byte,
- ranx (if installed): ``Qrels.from_file``, ``Run.from_file`` and ``evaluate`` on the
  measures it shares with all_trec (map, P, recall, ndcg_cut, map_cut at trec_eval's cutoffs,
  mrr, r-precision, bpref, hit_rate = success), after a warm-up run for numba's compilation.

Prints wall time and CPU time (user + system, which the other jobs of a shared machine
disturb less than the wall clock) of each tool, best of the repeats, peak resident memory
against the input files' size, the machine's load average, and the ratios against the
targets of docs/trec-eval.md#speed: heapjudge ≥ 5× faster than trec_eval and ≥ 15× faster
than ranx (wall), peak memory ≤ 2× the input files.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
RANX_SCRIPT = """
import sys
from ranx import Qrels, Run, evaluate
cuts = {cuts}
metrics = ["map", "mrr", "r-precision", "bpref"]
metrics += [f"{{m}}@{{k}}" for m in ("precision", "recall", "ndcg", "map") for k in cuts]
metrics += [f"hit_rate@{{k}}" for k in (1, 5, 10)]
qrels = Qrels.from_file(sys.argv[1], kind="trec")
run = Run.from_file(sys.argv[2], kind="trec")
evaluate(qrels, run, metrics)
"""


def write_files(
    folder: Path, queries: int, docs: int, judged: float, seed: int = 0
) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    qrels, run = folder / "qrels.txt", folder / "run.txt"
    with run.open("w") as r, qrels.open("w") as q:
        for i in range(queries):
            scores = np.round(rng.random(docs) * 10, 3)
            grades = rng.integers(0, 4, docs)
            keep = rng.random(docs) < judged
            r.write("".join(f"{i} Q0 D{i}-{j} {j + 1} {s} bench\n" for j, s in enumerate(scores)))
            q.write("".join(f"{i} 0 D{i}-{j} {g}\n" for j, g in enumerate(grades) if keep[j]))
    return qrels, run


TARGETS = {"trec_eval": 5.0, "ranx": 15.0}
MEMORY_TARGET = 2.0


def timed(command: list[str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system) of the child, its standard output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def peak_of(command: list[str]) -> int:
    """Peak RSS of one run of ``command`` (bytes), measured with /usr/bin/time when present."""
    if not Path("/usr/bin/time").exists():
        return 0
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *command], capture_output=True, text=True, check=True
    )
    return int(done.stderr.strip().splitlines()[-1]) * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=20000)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--judged", type=float, default=0.3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-ranx", action="store_true")
    args = parser.parse_args()
    binary = os.environ.get("HEAPJUDGE_TREC_EVAL_BIN")
    with tempfile.TemporaryDirectory() as tmp:
        qrels, run = write_files(Path(tmp), args.queries, args.docs, args.judged)
        size = qrels.stat().st_size + run.stat().st_size
        commands: dict[str, list[str]] = {
            "heapjudge": [
                sys.executable,
                "-m",
                "ranking.trec_eval",
                "-m",
                "all_trec",
                str(qrels),
                str(run),
            ]
        }
        if binary:
            commands["trec_eval"] = [binary, "-m", "all_trec", str(qrels), str(run)]
        if not args.no_ranx:
            try:
                import ranx  # noqa: F401
            except ImportError:
                print("ranx not installed: skipped")
            else:
                script = Path(tmp) / "ranx_eval.py"
                script.write_text(RANX_SCRIPT.format(cuts=CUTS))
                subprocess.run(
                    [sys.executable, str(script), str(qrels), str(run)], check=True
                )  # numba warm-up
                commands["ranx"] = [sys.executable, str(script), str(qrels), str(run)]
        best: dict[str, float] = {}
        best_cpu: dict[str, float] = {}
        outputs: dict[str, str] = {}
        load_before = os.getloadavg()[0]
        for _ in range(args.repeat):  # A B A B: the tools alternate
            for name, command in commands.items():
                wall, cpu, out = timed(command)
                best[name] = min(best.get(name, float("inf")), wall)
                best_cpu[name] = min(best_cpu.get(name, float("inf")), cpu)
                outputs[name] = out
        load_after = os.getloadavg()[0]
        print(
            f"{args.queries} queries x {args.docs} documents, {args.judged:.0%} judged; "
            f"inputs {size / 2**20:.1f} MiB; {os.cpu_count()} CPUs, load average "
            f"{load_before:.1f} before, {load_after:.1f} after"
        )
        print(f"{'tool':<12}{'wall s':>10}{'cpu s':>10}{'peak MiB':>10}{'peak/input':>12}")
        peaks: dict[str, int] = {}
        for name, command in commands.items():
            peaks[name] = peak = peak_of(command)
            print(
                f"{name:<12}{best[name]:>10.2f}{best_cpu[name]:>10.2f}"
                f"{peak / 2**20:>10.0f}{peak / size:>12.2f}"
            )
        ours = best["heapjudge"]
        for name in ("trec_eval", "ranx"):
            if name in best:
                ratio, cpu_ratio = best[name] / ours, best_cpu[name] / best_cpu["heapjudge"]
                verdict = "met" if ratio >= TARGETS[name] else "NOT met"
                print(
                    f"heapjudge is {ratio:.2f}x faster than {name} (wall, best of "
                    f"{args.repeat}; CPU time {cpu_ratio:.2f}x); target {TARGETS[name]:.0f}x: "
                    f"{verdict}"
                )
        if peaks["heapjudge"]:
            memory = peaks["heapjudge"] / size
            verdict = "met" if memory <= MEMORY_TARGET else "NOT met"
            print(
                f"heapjudge's peak memory is {memory:.2f}x the inputs; target "
                f"{MEMORY_TARGET:.0f}x: {verdict}"
            )
        if "trec_eval" in outputs:
            same = outputs["trec_eval"] == outputs["heapjudge"]
            print("output identical to trec_eval" if same else "OUTPUT DIFFERS FROM trec_eval")


if __name__ == "__main__":
    main()
