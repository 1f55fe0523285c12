"""Many runs scored against one truth (docs/campaigns.md#leaderboard): a leaderboard of means
with 95% confidence intervals, and the per-query values the significance tests read.

The truth (qrels or a top-k truth) is read once (:class:`Truth`); runs are read and scored one
at a time (:func:`score_runs`), so memory holds one run plus every run's per-query values.

Intervals of a run's mean over its ``n`` evaluated queries (queries a metric skips left out):

* ``"t"``  Student's t: ``mean ± t_{n−1, 1−α/2} · s/√n`` (``s`` the sample standard deviation,
  n − 1), the interval of the paired t-test's model;
* ``"bootstrap"``  the percentile bootstrap of :func:`ranking.compare.significance.mean_intervals`
  (B seeded resamples of the queries).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ranking.compare.significance import DEFAULT_RESAMPLES, mean_intervals
from ranking.evaluate import EvaluationReport, Missing, evaluate, evaluate_columns
from ranking.io.topk import TopKTruth, read_topk_jsonl
from ranking.io.trec import GradeMap
from ranking.io.trec_fast import TrecColumns, read_qrels_columns, read_run_columns
from ranking.metrics import Conventions

__all__ = [
    "INTERVALS",
    "Interval",
    "Leaderboard",
    "RunScores",
    "Truth",
    "leaderboard",
    "mean_interval",
    "run_files",
    "score_runs",
]

F64 = NDArray[np.float64]
Interval = Literal["t", "bootstrap"]
INTERVALS: tuple[Interval, ...] = ("t", "bootstrap")


@dataclass
class Truth:
    """One label set, read once: TREC qrels as columns, or a top-k truth."""

    kind: Literal["qrels", "topk"]
    path: str
    qrels: TrecColumns | None = None
    topk: list[TopKTruth] | None = None

    @classmethod
    def read(
        cls,
        path: str | Path,
        kind: Literal["qrels", "topk"],
        *,
        layout: str = "auto",
        grade_map: GradeMap | None = None,
    ) -> Truth:
        """Read ``path`` as qrels (``layout``, ``grade_map`` as :func:`read_qrels_columns`) or
        as a top-k JSONL truth."""
        if kind == "topk":
            return cls("topk", str(path), topk=read_topk_jsonl(path))
        columns = read_qrels_columns(path, layout=layout, grade_map=grade_map)
        return cls("qrels", str(path), qrels=columns)

    @property
    def queries(self) -> list[str]:
        """The truth's queries, in file order."""
        if self.qrels is not None:
            return list(self.qrels.qids)
        return [t.query_id for t in self.topk or []]


def run_files(paths: Sequence[str | Path]) -> list[Path]:
    """The run files: each path, or every regular file of a folder (by name, hidden ones
    left out). Raises ValueError for an empty folder or a run named twice."""
    files: list[Path] = []
    for given in map(Path, paths):
        if given.is_dir():
            inside = sorted(p for p in given.iterdir() if p.is_file() and p.name[0] != ".")
            if not inside:
                raise ValueError(f"{given}: no run file in this folder")
            files.extend(inside)
        else:
            files.append(given)
    names = [p.name for p in files]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"two runs are named {repeated[0]!r}: give files with distinct names")
    return files


def score_runs(
    runs: Iterable[Path],
    truth: Truth,
    *,
    metrics: Sequence[str],
    conventions: Conventions | str | None,
    missing: Missing = "ignore",
    trec_eval_check: bool = False,
) -> Iterator[tuple[str, EvaluationReport]]:
    """Each run file's name and report, one run read at a time."""
    for path in runs:
        if truth.qrels is not None:
            report = evaluate_columns(
                read_run_columns(path),
                truth.qrels,
                metrics=metrics,
                conventions=conventions,
                missing=missing,
                trec_eval_check=trec_eval_check,
                release_truth_index=False,
            )
        else:
            report = evaluate(
                read_run_columns(path).to_mapping(),
                topk=truth.topk,
                metrics=metrics,
                conventions=conventions,
                missing=missing,
            )
        yield path.name, report


def mean_interval(
    values: F64,
    method: Interval = "t",
    *,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """The ``confidence`` interval of the mean of ``values`` (NaN left out; module docstring).
    NaN bounds with fewer than 2 values."""
    v = values[~np.isnan(values)]
    if v.size < 2:
        return math.nan, math.nan
    if method == "t":
        # the t quantile as scipy.stats.t.ppf computes it (scipy.special loads faster),
        # imported on use: scipy costs the service ~20 MB at start (docs/performance.md#imports)
        from scipy import special

        t = special.stdtrit(v.size - 1, 0.5 + confidence / 2)
        half = t * v.std(ddof=1) / math.sqrt(v.size)
        return float(v.mean() - half), float(v.mean() + half)
    if method == "bootstrap":
        low, high = mean_intervals(
            v[None, :], confidence=confidence, n_resamples=n_resamples, seed=seed
        )
        return float(low[0]), float(high[0])
    raise ValueError(f"unknown interval {method!r}; choose one of {', '.join(INTERVALS)}")


@dataclass
class RunScores:
    """One run's row of the leaderboard: per metric the mean, interval and queries counted,
    and the per-query values (aligned with :attr:`queries`)."""

    name: str
    queries: list[str]
    means: dict[str, float]
    low: dict[str, float]
    high: dict[str, float]
    counted: dict[str, int]
    values: dict[str, F64]
    unknown_queries: list[str] = field(default_factory=list)
    missing_queries: list[str] = field(default_factory=list)
    trec_eval_differs: dict[str, str] = field(default_factory=dict)


@dataclass
class Leaderboard:
    """Runs × metrics: means and intervals, with the conventions that produced them."""

    metrics: list[str]
    runs: list[RunScores]
    interval: Interval
    confidence: float
    conventions: dict[str, Any]
    preset: str | None
    truth: str
    missing: str
    metric_conventions: dict[str, str] = field(default_factory=dict)
    preset_reason: str | None = None
    qrels_read: str | None = None

    def interval_text(self) -> str:
        """What the intervals are, in one line."""
        level = f"{self.confidence:.0%}"
        if self.interval == "t":
            return f"{level} confidence intervals: Student t over queries, mean ± t·s/√n"
        return f"{level} confidence intervals: percentile bootstrap over queries"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN as None); per-query values under ``per_query`` of each run."""

        def clean(x: float) -> float | None:
            return None if math.isnan(x) else x

        def per_query(r: RunScores) -> dict[str, dict[str, float | None]]:
            # one list per metric, then one small dict per query (no numpy scalar per value)
            columns = [(m, r.values[m].tolist()) for m in self.metrics]
            return {
                q: {m: None if v[i] != v[i] else v[i] for m, v in columns}
                for i, q in enumerate(r.queries)
            }

        return {
            "metrics": list(self.metrics),
            "runs": [
                {
                    "run": r.name,
                    "metrics": {
                        m: {
                            "mean": clean(r.means[m]),
                            "low": clean(r.low[m]),
                            "high": clean(r.high[m]),
                            "queries_counted": r.counted[m],
                        }
                        for m in self.metrics
                    },
                    "per_query": per_query(r),
                    "unknown_queries": list(r.unknown_queries),
                    "missing_queries": list(r.missing_queries),
                    "trec_eval_differs": dict(r.trec_eval_differs),
                }
                for r in self.runs
            ],
            "interval": {"method": self.interval, "confidence": self.confidence},
            "interval_text": self.interval_text(),
            "conventions": dict(self.conventions),
            "preset": self.preset,
            "truth": self.truth,
            "missing_policy": self.missing,
            "metric_conventions": dict(self.metric_conventions),
            "preset_reason": self.preset_reason,
            "qrels_read": self.qrels_read,
        }

    def format_text(self) -> str:
        """One table (run × metric: mean [low, high]), then the conventions."""
        width = max([len(r.name) for r in self.runs] + [3])
        cells = [[_cell(r, m) for m in self.metrics] for r in self.runs]
        cols = [max(len(m), *(len(row[j]) for row in cells)) for j, m in enumerate(self.metrics)]

        def line(first: str, row: Sequence[str]) -> str:
            padded = (f"  {x.ljust(c)}" for x, c in zip(row, cols, strict=True))
            return (first.ljust(width) + "".join(padded)).rstrip()

        lines = [line("run", self.metrics)]
        lines.extend(line(r.name, row) for r, row in zip(self.runs, cells, strict=True))
        lines.append(self.interval_text())
        conv = ", ".join(f"{k}={v}" for k, v in self.conventions.items())
        lines.append(f"conventions: preset {self.preset}: {conv}")
        if self.preset_reason:
            lines.append(f"preset chosen because: {self.preset_reason} (--preset to change)")
        lines.extend(f"{m}: {how}" for m, how in self.metric_conventions.items())
        lines.append(f"truth: {self.truth}; missing queries: {self.missing}")
        if self.qrels_read:
            lines.append(f"qrels: {self.qrels_read}")
        for r in self.runs:
            lines.extend(f"note: {r.name}: {line}" for line in r.trec_eval_differs.values())
            if r.unknown_queries:
                lines.append(
                    f"WARNING: {r.name}: {len(r.unknown_queries)} run queries have no truth "
                    "and were ignored"
                )
        return "\n".join(lines)


def _cell(r: RunScores, metric: str) -> str:
    mean, low, high = r.means[metric], r.low[metric], r.high[metric]
    if math.isnan(mean):
        return "skipped"
    if math.isnan(low):
        return f"{mean:.4f}"
    return f"{mean:.4f} [{low:.4f}, {high:.4f}]"


def leaderboard(
    reports: Iterable[tuple[str, EvaluationReport]],
    *,
    interval: Interval = "t",
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Leaderboard:
    """The leaderboard of ``(run name, report)`` pairs (e.g. from :func:`score_runs`); each
    report's per-query dicts are turned into arrays as it arrives."""
    if interval not in INTERVALS:
        raise ValueError(f"unknown interval {interval!r}; choose one of {', '.join(INTERVALS)}")
    rows: list[RunScores] = []
    first: EvaluationReport | None = None
    for name, report in reports:
        first = first or report
        values = {
            m: np.fromiter(report.per_query[m].values(), dtype=np.float64) for m in report.metrics
        }
        bounds = {
            m: mean_interval(v, interval, confidence=confidence, n_resamples=n_resamples, seed=seed)
            for m, v in values.items()
        }
        rows.append(
            RunScores(
                name=name,
                queries=list(report.queries),
                means=dict(report.metrics),
                low={m: b[0] for m, b in bounds.items()},
                high={m: b[1] for m, b in bounds.items()},
                counted=dict(report.counted),
                values=values,
                unknown_queries=list(report.unknown_queries),
                missing_queries=list(report.missing_queries),
                trec_eval_differs=dict(report.trec_eval_differs),
            )
        )
    if first is None:
        raise ValueError("no run to score")
    return Leaderboard(
        metrics=list(first.metrics),
        runs=rows,
        interval=interval,
        confidence=confidence,
        conventions=dict(first.conventions),
        preset=first.preset,
        truth=first.truth,
        missing=first.missing,
        metric_conventions=dict(first.metric_conventions),
    )
