"""How close the plan preview's people's judgments with a machine come to a real study's
(docs/admin-guide.md#plan-preview). Prints; asserts nothing.

Cranfield (the shared data), BM25 as the machine, each query's BM25 top 50 in BM25's order
(the plan's prior ``bm25``), k = 10, a consistent person answering from the graded qrels
(``benchmarks/machine_real.py``'s study: the service path's pure equivalent, queries in
collection order from an empty calibration). Once the study holds at least 50 people's
answers on pairs the machine had an opinion on (the evidence the service freezes for a task
and the preview measures from, :func:`app.machine.service.people_agreement`), the preview's
figure is computed as the service computes it: the machine's measured agreement on that
evidence (:func:`app.planning.machine.preview_accuracy`'s rule: the share of answers whose
winner the raw opinion named, at least 0.51) into
:func:`app.planning.cost.machine_cost` for a pool of 50 with a prior, the default
``max_loss``. It is compared with the mean people's judgments per query the study then takes
on the following queries. The same at a later checkpoint (after ``--later`` queries), beside
the cold start's range the preview shows without a measurement (a machine of accuracy 0.8
to one that earns nothing: the figure without the machine).

    python benchmarks/preview_accuracy.py                 # 40 queries, about 10 s
    python benchmarks/preview_accuracy.py --queries 100 --later 30   # about 30 s
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from app.machine.judge_repository import EVIDENCE_WINDOW  # noqa: E402
from app.planning.cost import ASSUMED_MACHINE_ACCURACY, machine_cost, task_cost  # noqa: E402
from app.planning.machine import FLOOR, MIN_MEASURED_PAIRS  # noqa: E402
from benchmarks import machine_real as mr  # noqa: E402
from labeling.machine.judges import Bm25Judge  # noqa: E402

STRATEGIES = ("tournament+assist", "insertion+assist", "prior+assist")
#: Within this relative error the preview meets its target.
TARGET = 0.15


def measured_accuracy(study: mr.Study, judge: Bm25Judge) -> tuple[float, int]:
    """``(accuracy, pairs)`` as the preview measures it: the share of people's most recent
    answers on the machine's pairs (the study calibration's window) whose winner its raw
    opinion named (1/2: not counted), floored."""
    agree = pairs = 0
    for jq, a, b, won in study.evidence[-EVIDENCE_WINDOW:]:  # the service's window
        p = float(judge.prefer(jq, [(a, b)])[0])
        if p == 0.5:
            continue
        pairs += 1
        agree += (p > 0.5) == won
    return round(max(FLOOR, min(1.0, agree / max(pairs, 1))), 3), pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=40, help="queries of the study")
    parser.add_argument("--later", type=int, default=10, help="the later checkpoint")
    args = parser.parse_args()
    start = time.perf_counter()
    data = mr.load_cranfield_data()
    bm25 = Bm25Judge(data.index)
    qids = list(data.topics)[: args.queries]
    queries = [mr.cranfield_query(data, q, bm25) for q in qids]
    n = len(queries[0].truth)
    rows: list[tuple[str, ...]] = []
    for strategy in STRATEGIES:
        study = mr.Study(strategy)
        alone = mr.Study(strategy.replace("+assist", ""))
        checkpoints: list[tuple[int, float, int]] = []  # (queries done, accuracy, pairs)
        for i, q in enumerate(queries):
            study.run(q)
            alone.run(q)
            acc, pairs = measured_accuracy(study, bm25)
            first = not checkpoints and pairs >= MIN_MEASURED_PAIRS
            if first or (i + 1 == args.later and checkpoints and checkpoints[0][0] < args.later):
                checkpoints.append((i + 1, acc, pairs))
        humans = np.asarray(study.outcome.humans, dtype=float)
        without = np.asarray(alone.outcome.humans, dtype=float)
        plain = task_cost(
            "topk", [f"d{j}" for j in range(n)], k=mr.K,
            options={"strategy": strategy, "initial_order": [f"d{j}" for j in range(n)]},
        ).judgments  # fmt: skip
        cold = machine_cost(strategy, n, k=mr.K, accuracy=ASSUMED_MACHINE_ACCURACY, prior=True)
        assert cold is not None
        for done, acc, pairs in checkpoints:
            if done >= len(queries):
                continue
            est = machine_cost(strategy, n, k=mr.K, accuracy=acc, prior=True)
            assert est is not None
            actual = float(humans[done:].mean())
            machines = float(np.mean(study.outcome.machines[done:]))
            error = est.human_judgments / actual - 1.0
            rows.append(
                (
                    strategy,
                    str(done),
                    str(pairs),
                    f"{acc:.3f}",
                    f"{est.human_judgments:.1f}",
                    f"{actual:.1f}",
                    f"{100 * error:+.1f}%",
                    "yes" if abs(error) <= TARGET else "NO",
                    f"{cold.human_judgments:.1f}–{plain:.1f}",
                    f"{float(without[done:].mean()):.1f}",
                    f"{est.machine_answers:.1f} / {machines:.1f}",
                )
            )
    mr.print_table(
        f"Preview against the study (Cranfield, BM25 top {n}, k = {mr.K}, "
        f"{len(queries)} queries, cold start)",
        rows,
        (
            "strategy",
            "after queries",
            "evidence",
            "measured acc.",
            "predicted people",
            "actual people",
            "error",
            f"within ±{100 * TARGET:.0f}%",
            "cold range",
            "actual without",
            "machine pred./actual",
        ),
    )
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
