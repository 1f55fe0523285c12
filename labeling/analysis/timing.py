"""Time efficiency of the two judging methods (Niu et al., SIGIR 2012, §4.1, Table 1).

Per method (docs/analysis.md#time):

- time per judgment = mean active time of one live judgment (seconds);
- judgments per query = mean number of live judgments per (assessor, query) session = task;
- time per query = mean total active time of a task (seconds; the paper prints minutes);
- complexity: O(n log k) for top-k labeling, O(n) for five-grade judging.

Beyond the paper's means, each figure carries its spread (median, quartiles, IQR, min, max),
because judgment times are heavily right-skewed. Undone judgments are not counted (they are
reported separately): the protocol's cost is the live log. Configured re-asks (task option
``reask_fraction``, named by their ``(task_id, seq)``) are not part of the protocol either:
the Table 1 figures leave them out, and their count and time are reported in their own keys
(``reasks``, ``reasks_per_query``, ``reask_time_per_query``), so a study with re-asks stays
comparable with the paper's row.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from labeling.analysis.records import JudgmentRecord, ReaskKeys, TaskRecord, is_reask

#: The "judgment complexity" row of Table 1.
COMPLEXITY: dict[str, str] = {"topk": "O(n log k)", "graded": "O(n)"}


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values, linear interpolation between closest ranks.

    h = (N − 1)·q; value = x[⌊h⌋] + (h − ⌊h⌋)(x[⌊h⌋+1] − x[⌊h⌋]) (Hyndman & Fan type 7, the
    default of numpy.percentile and R).
    """
    if not sorted_values:
        raise ValueError("quantile of an empty list")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q!r}")
    h = (len(sorted_values) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (h - lo) * (sorted_values[hi] - sorted_values[lo])


@dataclass(frozen=True, slots=True)
class Spread:
    """Summary of a sample: size, mean, median, quartiles, IQR, min and max (None if empty)."""

    n: int
    mean: float | None
    median: float | None
    q1: float | None
    q3: float | None
    iqr: float | None
    min: float | None
    max: float | None

    @classmethod
    def of(cls, values: Iterable[float]) -> Spread:
        xs = sorted(float(v) for v in values)
        if not xs:
            return cls(0, None, None, None, None, None, None, None)
        q1, q3 = quantile(xs, 0.25), quantile(xs, 0.75)
        return cls(
            n=len(xs),
            mean=math.fsum(xs) / len(xs),
            median=quantile(xs, 0.5),
            q1=q1,
            q3=q3,
            iqr=q3 - q1,
            min=xs[0],
            max=xs[-1],
        )


@dataclass(frozen=True, slots=True)
class MethodTiming:
    """One row of Table 1 with spreads. Times in seconds.

    ``judgments`` and the three Table 1 spreads cover the live protocol judgments only;
    ``reasks`` counts the live re-ask answers, ``reasks_per_query`` and
    ``reask_time_per_query`` are their number and active time per task (the extra cost of the
    option), over the same tasks as ``judgments_per_query``.
    """

    method: str
    complexity: str
    tasks: int
    judgments: int
    undone: int
    time_per_judgment: Spread
    judgments_per_query: Spread
    time_per_query: Spread
    reasks: int
    reasks_per_query: Spread
    reask_time_per_query: Spread

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def time_table(
    judgments: Iterable[JudgmentRecord],
    tasks: Sequence[TaskRecord] | None = None,
    *,
    finished_only: bool = True,
    reasks: ReaskKeys = (),
) -> dict[str, MethodTiming]:
    """Table 1: per method, time per judgment, judgments per query and time per query.

    Time per judgment is over every live protocol judgment (the answers at ``(task_id, seq)``
    in ``reasks`` are re-asks, counted apart). The per-query figures are over tasks: with
    ``tasks`` given, the tasks of each method (only the finished ones when ``finished_only``,
    since an unfinished session understates the cost; a finished task without judgments, e.g.
    n = 1, counts as 0); without ``tasks``, every task that has a live judgment.
    """
    per_judgment: dict[str, list[float]] = defaultdict(list)
    # (method, task) -> [protocol judgments, their ms, re-asks, their ms]
    per_task: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    undone: dict[str, int] = defaultdict(int)
    reask_count: dict[str, int] = defaultdict(int)
    for r in judgments:
        if r.active_ms < 0:
            raise ValueError(f"task {r.task_id} seq {r.seq}: negative active_ms {r.active_ms}")
        if r.undone:
            undone[r.method] += 1
            continue
        row = per_task[(r.method, str(r.task_id))]
        if is_reask(r, reasks):
            reask_count[r.method] += 1
            row[2] += 1
            row[3] += r.active_ms
            continue
        per_judgment[r.method].append(r.active_ms / 1000.0)
        row[0] += 1
        row[1] += r.active_ms

    task_keys: dict[str, list[str]] = defaultdict(list)
    if tasks is not None:
        for t in tasks:
            if t.finished or not finished_only:
                task_keys[t.method].append(str(t.task_id))
    else:
        for method, task_id in per_task:
            task_keys[method].append(task_id)

    methods = sorted(set(per_judgment) | set(task_keys) | set(undone), key=_method_order)
    empty = (0, 0, 0, 0)
    out: dict[str, MethodTiming] = {}
    for m in methods:
        rows = [per_task.get((m, t), empty) for t in task_keys.get(m, [])]
        out[m] = MethodTiming(
            method=m,
            complexity=COMPLEXITY.get(m, "?"),
            tasks=len(rows),
            judgments=len(per_judgment.get(m, [])),
            undone=undone.get(m, 0),
            time_per_judgment=Spread.of(per_judgment.get(m, [])),
            judgments_per_query=Spread.of(row[0] for row in rows),
            time_per_query=Spread.of(row[1] / 1000.0 for row in rows),
            reasks=reask_count.get(m, 0),
            reasks_per_query=Spread.of(row[2] for row in rows),
            reask_time_per_query=Spread.of(row[3] / 1000.0 for row in rows),
        )
    return out


def _method_order(method: str) -> tuple[int, str]:
    return ({"topk": 0, "graded": 1}.get(method, 2), method)


def histogram(values: Iterable[float], *, bin_width: float, upper: float) -> list[int]:
    """Counts in bins [0, w), [w, 2w), … up to ``upper``, plus a last bin for values ≥ upper.

    Returns ⌈upper / w⌉ + 1 counts. Negative values are an error.
    """
    if bin_width <= 0 or upper <= 0:
        raise ValueError(f"bin_width and upper must be > 0, got {bin_width!r}, {upper!r}")
    bins = math.ceil(upper / bin_width)
    counts = [0] * (bins + 1)
    for v in values:
        if v < 0:
            raise ValueError(f"negative value {v!r} in histogram")
        counts[bins if v >= upper else min(int(v // bin_width), bins - 1)] += 1
    return counts


def time_histograms(
    judgments: Iterable[JudgmentRecord],
    *,
    bin_seconds: float = 2.0,
    upper_seconds: float = 60.0,
    reasks: ReaskKeys = (),
) -> dict[str, list[int]]:
    """Histogram of the active time per live protocol judgment (seconds), per method: the
    judgments of Table 1's time per judgment (re-asks at ``(task_id, seq)`` in ``reasks`` left
    out)."""
    per: dict[str, list[float]] = defaultdict(list)
    for r in judgments:
        if not r.undone and not is_reask(r, reasks):
            per[r.method].append(r.active_ms / 1000.0)
    return {
        m: histogram(per[m], bin_width=bin_seconds, upper=upper_seconds)
        for m in sorted(per, key=_method_order)
    }
