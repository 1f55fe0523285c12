"""Machine-assisted judging at (n, k) = (50, 10): the machine rows of ``heapjudge simulate
--compare`` and the targets of docs/machine-judges.md#measured.

For every strategy name (the ``+assist`` ones and, for reference, the others on the same
machine order) × the scenarios machine0.8 and machine0.8+flip0.1
(:mod:`labeling.study.assisted`): mean and p95 human judgments, mean machine answers, exact
top-k rate and κ-NDCG@10 against the latent truth (for the consistent person also the
person-only result of every strategy). Then the targets: the fewest human judgments of a
``+assist`` strategy at κ-NDCG@10 ≥ 0.98 (machine0.8) and ≥ 0.95 (machine0.8+flip0.1), and
how the study's learned calibration shows in the human judgments of its first queries.

    python benchmarks/assist.py                    # 1,000 queries per cell
    python benchmarks/assist.py --trials 200       # a quick look
    python benchmarks/assist.py --only insertion+assist,tournament+assist+robust
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from labeling.strategies.registry import strategy_names
from labeling.study.assisted import MACHINE_SCENARIOS, compare_assisted
from ranking.metrics import kappa_ndcg

N, K = 50, 10
#: The targets: (scenario, least κ-NDCG@10, most human judgments per query).
TARGETS = (("machine0.8", 0.98, 50.0), ("machine0.8+flip0.1", 0.95, 110.0))


def cell(args: tuple[str, str, int, int]) -> dict[str, Any]:
    """One row: strategy × scenario."""
    name, scenario, trials, seed = args
    start = time.perf_counter()
    runs = compare_assisted(name, scenario, N, K, trials, seed=seed)
    humans = np.array([r.judgments for r in runs], dtype=float)
    labels = np.array([r.truth_labels for r in runs], dtype=float)
    scores = N - np.array([r.produced_rank for r in runs], dtype=float)
    return {
        "strategy": name,
        "scenario": scenario,
        "human": float(humans.mean()),
        "p95": float(np.percentile(humans, 95)),
        "first20": float(humans[:20].mean()),
        "machine": float(np.mean([r.machine_answers for r in runs])),
        "exact": float(np.mean([r.exact for r in runs])),
        "kndcg": float(kappa_ndcg(labels, scores, at=K).mean()),
        "kmin": float(kappa_ndcg(labels, scores, at=K).min()),
        "seconds": time.perf_counter() - start,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=1000, help="queries per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default="", help="comma-separated strategy names")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    names = [s for s in args.only.split(",") if s] or strategy_names()
    cells = [(name, sc, args.trials, args.seed) for name in names for sc in MACHINE_SCENARIOS]
    if args.jobs > 1:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            rows = list(pool.map(cell, cells))
    else:
        rows = [cell(c) for c in cells]
    print(f"top-{K} of {N}, {args.trials} queries per cell (one study each), seed {args.seed}")
    print(
        "| strategy | scenario | human mean | p95 | first 20 | machine | exact | κ-NDCG@10 "
        "| min | time |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['strategy']} | {r['scenario']} | {r['human']:.1f} | {r['p95']:.0f} | "
            f"{r['first20']:.1f} | {r['machine']:.1f} | {r['exact']:.3f} | {r['kndcg']:.4f} | "
            f"{r['kmin']:.3f} | {r['seconds']:.0f} s |"
        )
    for scenario, floor, most in TARGETS:
        fit = [
            r
            for r in rows
            if r["scenario"] == scenario and "assist" in r["strategy"] and r["kndcg"] >= floor
        ]
        if not fit:
            print(f"{scenario}: no +assist strategy reaches κ-NDCG@10 ≥ {floor}")
            continue
        best = min(fit, key=lambda r: r["human"])
        verdict = "met" if best["human"] <= most else "NOT met"
        print(
            f"{scenario}: best +assist at κ-NDCG@10 ≥ {floor}: {best['strategy']} with "
            f"{best['human']:.1f} human judgments per query (target ≤ {most:g}: {verdict})"
        )
    print(f"cells took {sum(r['seconds'] for r in rows):.0f} s of compute")


if __name__ == "__main__":
    main()
