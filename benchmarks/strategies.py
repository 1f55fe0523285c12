"""Judging strategies compared under noise: the ``heapjudge simulate --compare`` table.

Prints, for (n, k) in (50, 10), (100, 10), (200, 20), every strategy the task option ``strategy``
accepts × the scenarios random, prior0.7, flip0.1 and thurstone (docs/noise.md): mean and p95
judgments, exact top-k rate and mean κ-NDCG@k against the latent truth, with Kislitsyn's lower bound
beside it, then the check of the robust modifier's progress model (each strategy's
``confirmation_share``, :class:`labeling.strategies.base.PairStrategy`) and the seconds each size
took.

    python benchmarks/strategies.py                          # 5,000 trials per cell (long)
    python benchmarks/strategies.py --trials 300             # a quick look
    python benchmarks/strategies.py --sizes 50x10 --trials 1000
    python benchmarks/strategies.py --jobs 1                 # one process (default: every core)

Then the real-data table of ``benchmarks/strategies_real.py`` (Cranfield and MQ2008 through
the service layer; ``--no-real`` skips it, ``--real-queries`` bounds it).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from app.cli.simulate import compare, compare_lines

SIZES = ((50, 10), (100, 10), (200, 20))


def confirmation_shares(table: dict[str, Any]) -> list[str]:
    """Per base, the re-asks per base question that ``<base>+robust`` gave a consistent
    assessor on a random order (from the table's ``random`` rows: robust mean / base mean − 1),
    beside the share the progress model uses."""
    from labeling.strategies.registry import STRATEGIES

    mean = {
        row["strategy"]: row["judgments"]["mean"]
        for row in table["rows"]
        if row["scenario"] == "random"
    }
    lines = []
    for name, cls in STRATEGIES.items():
        if name in mean and f"{name}+robust" in mean:
            measured = mean[f"{name}+robust"] / mean[name] - 1.0
            model = cls.confirmation_share
            lines.append(
                f"{name}+robust re-asks per {name} question (consistent, random order): "
                f"{measured:.3f} measured, {model:.3f} in the progress model"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=5000, help="trials per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="processes (same table for any)"
    )
    parser.add_argument(
        "--sizes", default=",".join(f"{n}x{k}" for n, k in SIZES), help="e.g. 50x10,100x10"
    )
    parser.add_argument("--real", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--real-queries", type=int, default=20, help="per real collection")
    args = parser.parse_args()
    for size in args.sizes.split(","):
        n, k = (int(x) for x in size.split("x"))
        start = time.perf_counter()
        table = compare(n, k, args.trials, seed=args.seed, jobs=args.jobs)
        print("\n".join(compare_lines(table)))
        print("\n".join(confirmation_shares(table)))
        print(f"({time.perf_counter() - start:.0f} s)\n", flush=True)
    if args.real:
        try:
            from benchmarks import strategies_real
        except ImportError:  # run as a script: this directory is on sys.path
            import strategies_real  # type: ignore[no-redef]

        strategies_real.main(["--queries", str(args.real_queries), "--seed", str(args.seed)])


if __name__ == "__main__":
    main()
