"""Table 1 (time efficiency) on hand-built logs, and the quantile/histogram helpers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labeling.analysis.records import JudgmentRecord, TaskRecord
from labeling.analysis.timing import (
    COMPLEXITY,
    Spread,
    histogram,
    quantile,
    time_histograms,
    time_table,
)


def pair(task: int, seq: int, ms: int, *, undone: bool = False) -> JudgmentRecord:
    return JudgmentRecord(
        task, f"u{task}", f"q{task}", "topk", "a", "b", "left", active_ms=ms, seq=seq, undone=undone
    )


def grade(task: int, seq: int, ms: int) -> JudgmentRecord:
    return JudgmentRecord(
        task, f"u{task}", f"q{task}", "graded", doc_id=f"d{seq}", grade=2, active_ms=ms, seq=seq
    )


def test_table_one_hand_built() -> None:
    records = [
        pair(1, 0, 4000),
        pair(1, 1, 6000),
        pair(1, 2, 9000, undone=True),  # undone: not counted
        pair(1, 2, 5000),
        pair(2, 0, 2000),
        grade(3, 0, 14000),
        grade(3, 1, 12000),
        grade(4, 0, 10000),
    ]
    tasks = [
        TaskRecord(1, "u1", "q1", "topk", finished=True),
        TaskRecord(2, "u2", "q2", "topk", finished=True),
        TaskRecord(3, "u3", "q3", "graded", finished=True),
        TaskRecord(4, "u4", "q4", "graded", finished=False),  # unfinished: not a full session
    ]
    table = time_table(records, tasks)
    assert list(table) == ["topk", "graded"]
    topk, graded = table["topk"], table["graded"]
    assert topk.complexity == "O(n log k)" and graded.complexity == "O(n)"
    assert (topk.tasks, topk.judgments, topk.undone) == (2, 4, 1)
    assert topk.time_per_judgment.mean == pytest.approx((4 + 6 + 5 + 2) / 4)
    assert topk.time_per_judgment.median == pytest.approx(4.5)
    assert topk.judgments_per_query.mean == pytest.approx(2.0)  # 3 and 1
    assert topk.time_per_query.mean == pytest.approx((15 + 2) / 2)
    # Time per judgment uses every live judgment; per query only the finished task 3.
    assert graded.time_per_judgment.mean == pytest.approx(12.0)
    assert graded.tasks == 1
    assert graded.judgments_per_query.mean == 2
    assert graded.time_per_query.mean == pytest.approx(26.0)
    everything = time_table(records, tasks, finished_only=False)["graded"]
    assert everything.tasks == 2 and everything.judgments_per_query.mean == pytest.approx(1.5)
    # Without task records every task with a live judgment is a session.
    assert time_table(records)["graded"].tasks == 2
    assert set(COMPLEXITY) == {"topk", "graded"}


def test_finished_task_without_judgments_counts_as_zero() -> None:
    tasks = [TaskRecord(9, "u", "q", "topk", finished=True)]  # n = 1: nothing to compare
    row = time_table([], tasks)["topk"]
    assert row.judgments_per_query.mean == 0.0
    assert row.time_per_judgment.n == 0 and row.time_per_judgment.mean is None


def test_negative_time_is_an_error() -> None:
    with pytest.raises(ValueError, match="task 1 seq 0"):
        time_table([pair(1, 0, -5)])


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=50),
    st.floats(0, 1),
)
def test_quantile_equals_numpy(values: list[float], q: float) -> None:
    ours = quantile(sorted(values), q)
    assert ours == pytest.approx(float(np.percentile(values, 100 * q)), rel=1e-9, abs=1e-6)


def test_spread_summary() -> None:
    s = Spread.of([1, 2, 3, 4, 100])
    assert (s.n, s.mean, s.median, s.q1, s.q3, s.iqr, s.min, s.max) == (5, 22, 3, 2, 4, 2, 1, 100)
    assert Spread.of([]).mean is None


def test_histogram() -> None:
    assert histogram([0, 1.9, 2, 59.9, 60, 1000], bin_width=2, upper=6) == [2, 1, 0, 3]
    assert len(histogram([], bin_width=2, upper=60)) == 31
    with pytest.raises(ValueError):
        histogram([-1], bin_width=2, upper=6)
    with pytest.raises(ValueError):
        histogram([1], bin_width=0, upper=6)
    h = time_histograms([pair(1, 0, 1000), grade(3, 0, 13000)], bin_seconds=5, upper_seconds=20)
    assert h == {"topk": [1, 0, 0, 0, 0], "graded": [0, 0, 1, 0, 0]}
