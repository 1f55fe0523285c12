"""Judgments per query of the top-k HeapSort protocol vs seed-digest §2.3.

For (n, k) in {(50,10), (100,10), (20,10), (50,5)}: uniformly random input orders and a
perfect transitive oracle, without and with the pair cache. Drives the bare protocol
(labeling.heap + labeling.middleware), which is exactly what a session runs (the session only
adds orientation and validation, which never change a count). Also prints the progress
estimate at the start of a session next to the measured mean.

    python benchmarks/labeling_counts.py [--trials 20000] [--seed 2012]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from labeling.heap import heap_topk, worst_case_total
from labeling.middleware import with_pair_cache
from labeling.session import open_session

#: seed-digest §2.3: (n, k) -> ((mean, min, max) no cache, (mean, min, max) with cache).
DIGEST = {
    (50, 10): ((150.8, 102, 204), (135.8, 89, 187)),
    (100, 10): ((232.5, 170, 312), (214.7, 154, 294)),
    (20, 10): ((79.3, 52, 107), (67.9, 40, 95)),
    (50, 5): ((91.3, 61, 127), (84.3, 55, 119)),
}


def count(order: list[int], k: int, cache: bool) -> int:
    """Questions posed for one input order (items are their own true relevance)."""
    protocol = heap_topk(order, k)  # type: ignore[arg-type]
    if cache:
        protocol = with_pair_cache(protocol)
    asked = 0
    try:
        q = next(protocol)
        while True:
            asked += 1
            q = protocol.send(q.a if q.a > q.b else q.b)
    except StopIteration:
        return asked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=2012)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"{args.trials} random orders per setting, perfect oracle, seed {args.seed}\n")
    header = (
        "| n | k | cache | mean | min | max | digest mean | Δ% | bound | est. at start |\n"
        "|---|---|---|---|---|---|---|---|---|---|"
    )
    print(header)
    worst = 0.0
    t0 = time.perf_counter()
    for (n, k), digest in DIGEST.items():
        for cache, (d_mean, _, _) in zip((False, True), digest, strict=True):
            counts = []
            for _ in range(args.trials):
                order = list(range(n))
                rng.shuffle(order)
                counts.append(count(order, k, cache))
            mean = statistics.fmean(counts)
            delta = 100 * (mean - d_mean) / d_mean
            worst = max(worst, abs(delta))
            docs = [f"d{i}" for i in range(n)]
            start = open_session("topk", docs, k=k, seed=0, options={"pair_cache": cache})
            p = start.progress()
            print(
                f"| {n} | {k} | {'on' if cache else 'off'} | {mean:.1f} | {min(counts)} | "
                f"{max(counts)} | {d_mean} | {delta:+.2f} | {worst_case_total(n, k)} "
                f"(exact {p.max_remaining}) | {p.expected_remaining:.1f} |"
            )
    verdict = "PASS" if worst <= 2.0 else "FAIL"
    print(f"\nlargest |Δ| vs digest: {worst:.2f}% (target ±2%: {verdict}); ", end="")
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
