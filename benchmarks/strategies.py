"""Judging strategies compared under noise: the ``heapjudge simulate --compare`` table.

Prints, for (n, k) in (50, 10), (100, 10), (200, 20), every strategy the task option
``strategy`` accepts × the scenarios random, prior0.7, flip0.1 and thurstone (docs/noise.md):
mean and p95 judgments, exact top-k rate and mean κ-NDCG@k against the latent truth, with
Kislitsyn's lower bound beside it, then the check of the robust strategy's progress model
(:data:`labeling.robust.DEPENDENCY_SHARE`).

    python benchmarks/strategies.py                 # 5,000 trials per cell (long)
    python benchmarks/strategies.py --trials 300    # a quick look

Then the real-data table of ``benchmarks/strategies_real.py`` (Cranfield and MQ2008 through
the service layer; ``--no-real`` skips it, ``--real-queries`` bounds it).
"""

from __future__ import annotations

import argparse
import time

from app.commands.simulate import compare, compare_lines

SIZES = ((50, 10), (100, 10), (200, 20))


def dependency_share(n: int, k: int, trials: int) -> tuple[float, float]:
    """(measured, model) share of the heap's questions that heap+robust confirms once with a
    consistent assessor on a random order."""
    from statistics import fmean

    from labeling.robust import DEPENDENCY_SHARE
    from labeling.simulation import compare_strategies

    base = fmean(t.judgments for t in compare_strategies("heap", "random", n, k, trials))
    robust = fmean(t.judgments for t in compare_strategies("heap+robust", "random", n, k, trials))
    return (robust - base) / base, DEPENDENCY_SHARE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=5000, help="trials per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--sizes", default=",".join(f"{n}x{k}" for n, k in SIZES), help="e.g. 50x10,100x10"
    )
    parser.add_argument("--real", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--real-queries", type=int, default=20, help="per real collection")
    args = parser.parse_args()
    for size in args.sizes.split(","):
        n, k = (int(x) for x in size.split("x"))
        start = time.perf_counter()
        table = compare(n, k, args.trials, seed=args.seed)
        print("\n".join(compare_lines(table)))
        measured, model = dependency_share(n, k, min(args.trials, 500))
        print(
            f"heap+robust confirmations per heap question (consistent, random order): "
            f"{measured:.3f} measured, {model:.3f} in the progress model"
        )
        print(f"({time.perf_counter() - start:.0f} s)\n", flush=True)
    if args.real:
        try:
            from benchmarks import strategies_real
        except ImportError:  # run as a script: this directory is on sys.path
            import strategies_real  # type: ignore[no-redef]

        strategies_real.main(["--queries", str(args.real_queries), "--seed", str(args.seed)])


if __name__ == "__main__":
    main()
