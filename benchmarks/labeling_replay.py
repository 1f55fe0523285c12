"""Replay cost of a judging session and the size of its protocol state.

The service keeps no protocol state (docs/architecture.md): every request rebuilds the session from
the task config and the judgment log. This prints

* the cost of ``open_session`` replaying a 200-answer log (target < 1 ms);
* the cost of one answer + next question on a live session (target < 1 ms);
* the in-memory size of the rebuilt session (target < 100 KB) and of the log as JSON.

    python benchmarks/labeling_replay.py [--n 100] [--k 10] [--answers 200] [--repeat 300]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import time
import types
from dataclasses import asdict

from labeling.protocol.session import open_session
from labeling.study.simulation import Assessor, run_session


def deep_size(root: object) -> int:
    """Bytes reachable from ``root`` (gc referents), excluding modules, classes and code."""
    skip = (type, types.ModuleType, types.FunctionType, types.CodeType, types.BuiltinFunctionType)
    seen: set[int] = set()
    stack = [root]
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, skip):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return total


def timed(fn, repeat: int) -> tuple[float, float, float]:
    """(min, median, p95) seconds of ``fn()`` over ``repeat`` runs (wall clock: on a shared
    machine the p95 mostly measures the scheduler, so the load average is printed too)."""
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    samples.sort()
    return samples[0], statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()
    docs = [f"clueweb09-en{i:04d}-00-{i:05d}" for i in range(args.n)]  # realistic id length
    values = list(range(args.n))
    random.Random(1).shuffle(values)
    assessor = Assessor(dict(zip(docs, map(float, values), strict=True)), seed=2)
    load = os.getloadavg()[0]
    print(f"n={args.n}, k={args.k}, log of {args.answers} answers, {args.repeat} repeats")
    print(f"load average {load:.1f} on {os.cpu_count()} CPUs (wall-clock timings)")
    print(
        "| pair cache | full log | replay min / median / p95 "
        "| answer + next min / median / p95 | session state | log as JSON |"
    )
    print("|---|---|---|---|---|---|")
    for cache in (True, False):
        opts = {"pair_cache": cache}
        full = run_session(open_session("topk", docs, k=args.k, seed=7, options=opts), assessor)
        log = full.answers[: args.answers]
        if len(log) < args.answers:
            print(f"(cache={cache}: the session ends after {len(log)} answers)")

        def replay(log=log, opts=opts):
            return open_session("topk", docs, k=args.k, seed=7, options=opts, answers=log)

        r_min, r_med, r_p95 = timed(replay, args.repeat)
        # One answer + next question on a live session positioned before the last answer.
        live = [
            open_session("topk", docs, k=args.k, seed=7, options=opts, answers=log[:-1])
            for _ in range(args.repeat)
        ]
        it = iter(live)

        def step(it=it, last=log[-1]):
            s = next(it)
            s.submit(last)
            return s.pending, s.progress()

        s_min, s_med, s_p95 = timed(step, args.repeat)
        state = deep_size(replay())
        log_json = len(json.dumps([asdict(a) for a in log]).encode())
        print(
            f"| {'on' if cache else 'off'} | {len(full.answers)} | {r_min * 1e3:.3f} / "
            f"{r_med * 1e3:.3f} / {r_p95 * 1e3:.3f} ms | {s_min * 1e6:.1f} / {s_med * 1e6:.1f} / "
            f"{s_p95 * 1e6:.1f} µs | "
            f"{state / 1024:.1f} KB | {log_json / 1024:.1f} KB |"
        )


if __name__ == "__main__":
    main()
