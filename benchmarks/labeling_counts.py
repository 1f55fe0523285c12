"""Judgments per query of the top-k strategies.

1. The heap (Algorithm 1) against its reference means, for (n, k) in {(50,10), (100,10),
   (20,10), (50,5)}: uniformly random input orders and a perfect transitive oracle, without
   and with the pair cache. Also prints the progress estimate at the start of a session next
   to the measured mean.
2. Every registered strategy (``labeling.strategies``) at (50,10), (100,10), (200,20), pair
   cache on, on random orders and on ``prior0.7`` orders (latent truth u ~ U(0,1); documents
   fed in decreasing u + N(0, 1/12), correlation ≈ 0.707 with u), beside
   ``lower_bound(n, k)`` and each strategy's start-of-session estimate and bound.

Both drive the bare protocol (+ labeling.protocol.pair_cache's pair cache), which is exactly what a
session runs (the session only adds orientation and validation, which never change a count).

    python benchmarks/labeling_counts.py [--trials 20000] [--strategy-trials 2000]
                                         [--only heap|strategies] [--seed 2012]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from collections.abc import Sequence

from labeling.protocol.pair_cache import with_pair_cache
from labeling.protocol.session import open_session
from labeling.strategies.base import ComparisonGenerator
from labeling.strategies.heap import heap_topk, worst_case_total
from labeling.strategies.registry import STRATEGIES, lower_bound

#: Reference counts of Algorithm 1 (the paper's 150.8 / 135.8 at (50, 10) and simulations of
#: the same protocol): (n, k) -> ((mean, min, max) no cache, (mean, min, max) with cache).
REFERENCE = {
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


#: The sizes of the strategy table (the issue's reference sizes).
STRATEGY_SIZES = ((50, 10), (100, 10), (200, 20))


def asked_by(protocol: ComparisonGenerator, truth: dict[str, float]) -> int:
    """Questions a protocol poses to a consistent assessor with latent scores ``truth``."""
    asked = 0
    try:
        q = next(protocol)
        while True:
            asked += 1
            q = protocol.send(q.a if truth[q.a] > truth[q.b] else q.b)
    except StopIteration:
        return asked


def latent_case(n: int, rng: random.Random, prior: bool) -> tuple[dict[str, float], list[str]]:
    """Latent scores u_i ~ U(0, 1) and the feeding order: random, or decreasing
    ``p_i = u_i + N(0, σ²)`` with σ = 1/√12 (the SD of u), so corr(p, u) = 1/√2."""
    docs = [f"d{i:03d}" for i in range(n)]
    truth = {d: rng.random() for d in docs}
    if prior:
        sigma = 1 / math.sqrt(12)
        noisy = {d: u + rng.gauss(0.0, sigma) for d, u in truth.items()}
        return truth, sorted(docs, key=lambda d: -noisy[d])
    rng.shuffle(docs)
    return truth, docs


def strategy_table(trials: int, seed: int) -> None:
    """Mean (and max) judgments per strategy, random vs prior0.7, pair cache on."""
    print(f"\n{trials} trials per cell, consistent assessor, pair cache on, seed {seed}\n")
    print(
        "| strategy | n | k | random mean | random max | prior0.7 mean | prior0.7 max "
        "| lower_bound | mean / bound (random) | est. at start | bound at start |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, cls in STRATEGIES.items():
        for n, k in STRATEGY_SIZES:
            row: list[Sequence[int]] = []
            for prior in (False, True):
                rng = random.Random(seed)  # the same cases for every strategy
                counts = []
                for _ in range(trials):
                    truth, order = latent_case(n, rng, prior)
                    counts.append(asked_by(with_pair_cache(cls(order, k).run()), truth))
                row.append(counts)
            bound = lower_bound(n, k)
            docs = [f"d{i}" for i in range(n)]
            p = open_session("topk", docs, k=k, seed=0, options={"strategy": name}).progress()
            rand, prior_counts = row
            print(
                f"| {name} | {n} | {k} | {statistics.fmean(rand):.1f} | {max(rand)} | "
                f"{statistics.fmean(prior_counts):.1f} | {max(prior_counts)} | {bound} | "
                f"{statistics.fmean(rand) / bound:.3f} | {p.expected_remaining:.1f} | "
                f"{p.max_remaining} |"
            )


def heap_table(trials: int, seed: int) -> None:
    """The heap's means without and with the cache against the reference means."""
    rng = random.Random(seed)
    print(f"{trials} random orders per setting, perfect oracle, seed {seed}\n")
    header = (
        "| n | k | cache | mean | min | max | reference mean | Δ% | bound | est. at start |\n"
        "|---|---|---|---|---|---|---|---|---|---|"
    )
    print(header)
    worst = 0.0
    t0 = time.perf_counter()
    for (n, k), reference in REFERENCE.items():
        for cache, (d_mean, _, _) in zip((False, True), reference, strict=True):
            counts = []
            for _ in range(trials):
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
    print(f"\nlargest |Δ| vs reference: {worst:.2f}% (target ±2%: {verdict}); ", end="")
    print(f"{time.perf_counter() - t0:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20000)
    parser.add_argument("--strategy-trials", type=int, default=2000)
    parser.add_argument("--only", choices=("heap", "strategies"), default=None)
    parser.add_argument("--seed", type=int, default=2012)
    args = parser.parse_args()
    if args.only != "strategies":
        heap_table(args.trials, args.seed)
    if args.only != "heap":
        strategy_table(args.strategy_trials, args.seed)


if __name__ == "__main__":
    main()
