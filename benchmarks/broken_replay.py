"""Replay cost of a top-k log with broken documents (docs/protocols.md#broken-documents).

Each broken answer makes the session run its strategy again from the start over the remaining
documents, answering from the log; so a log with b broken answers replays about b + 1 runs of
the strategy (all but the last answered from the memo, without posing). This prints the median
replay time of a finished log with 0, 1, 3 and 10 broken answers, for every base strategy.

    python benchmarks/broken_replay.py [--n 200] [--k 10] [--repeat 20]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from labeling.protocol.session import open_session
from labeling.protocol.types import BrokenAnswer, PairQuestion
from labeling.strategies.registry import STRATEGIES
from labeling.study.simulation import Assessor


def finished_log(strategy: str, n: int, k: int, broken: int) -> list[object]:
    """A consistent assessor's finished log with ``broken`` broken answers at random
    questions (left or right document, seeded)."""
    docs = [f"d{i}" for i in range(n)]
    # The same truth for every count (its own stream: a truth drawn from the task seed's
    # stream would be the initial order itself, the heap's worst case).
    truth = random.Random(12345)
    oracle = Assessor({d: truth.random() for d in docs}, seed=0)
    rng = random.Random(broken)
    options = {"strategy": strategy}
    s = open_session("topk", docs, k=k, seed=1, options=options)
    marks = set(rng.sample(range(n), broken))
    while not s.done:
        q = s.pending
        assert isinstance(q, PairQuestion)
        if q.seq in marks:
            s.submit(BrokenAnswer(rng.choice((q.left, q.right)), "x", q.left, q.right))
        else:
            s.submit(oracle.answer(s))
    return list(s.answers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    docs = [f"d{i}" for i in range(args.n)]
    print(f"n={args.n} k={args.k}: median replay of a finished log (ms), answers in the log")
    for strategy in STRATEGIES:
        cells = []
        for broken in (0, 1, 3, 10):
            log = finished_log(strategy, args.n, args.k, broken)
            times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                open_session(
                    "topk", docs, k=args.k, seed=1, options={"strategy": strategy}, answers=log
                )
                times.append(time.perf_counter() - start)
            cells.append(f"{broken} broken: {statistics.median(times) * 1e3:6.2f} ({len(log)})")
        print(f"{strategy:10s} " + " | ".join(cells))


if __name__ == "__main__":
    main()
