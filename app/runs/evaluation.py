"""Use cases: a collection's stored runs scored against one of its label sets — the
leaderboard (mean and 95% interval per run) with the pairwise significance matrix, the
per-query values of two runs, and the agreement of two label sets on the system ordering
(docs/campaigns.md#leaderboards-on-a-collection).

All figures come from the cores, as ``heapjudge evaluate`` and ``heapjudge compare`` compute
them: each run is scored with :func:`ranking.evaluate.evaluate_columns` (qrels) or
:func:`ranking.evaluate.evaluate` (a top-k truth) on **every query of the label set** (a
query the run lacks scores 0: trec_eval's ``-c``, ``--missing zero``), the intervals are
:func:`ranking.compare.leaderboard.leaderboard`'s (Student t), the matrix is
:func:`ranking.compare.significance.compare_systems` over the queries no run's metric skipped,
and the agreement is :func:`ranking.compare.correlation.ordering_agreement`. The conventions
fit the input as ``evaluate`` chooses them (a TREC run with qrels: ``trec_eval``; with a
top-k truth: ``paper``) unless a preset is named; ir-measures names carry their own. Seeds
are fixed (0), so a page shows the same p-values at every load.

Bounded work (docs/performance.md#bounded-requests): one request compares at most
``compare_max_runs`` runs (the stored ones, or the ``runs`` chosen; more is refused with the
count: S runs make S(S−1)/2 tested pairs, and the resamples grow with them), and computes
within a :class:`app.kernel.budget.WorkBudget` (``compare_budget_seconds``, and cancelled when
the client leaves), checked between runs scored and between chunks of a resampling test. A
leaderboard whose test runs out of time comes without its matrix, and says why; an agreement,
which is made of its tests, is refused.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from app.kernel.budget import WorkBudget, WorkStopped
from app.kernel.db import Database
from app.kernel.errors import Invalid
from app.runs import labelsets
from app.runs import service as runs
from ranking import metrics as M
from ranking.compare.correlation import ordering_agreement
from ranking.compare.leaderboard import Truth, leaderboard
from ranking.compare.significance import (
    CORRECTIONS,
    TESTS,
    Comparison,
    Correction,
    Test,
    compare_systems,
)
from ranking.evaluate import EvaluationReport, evaluate, evaluate_columns
from ranking.io.trec_fast import TrecColumns

F64 = NDArray[np.float64]
SEED = 0


@dataclass(frozen=True, slots=True)
class Scoring:
    """How runs are scored and compared: one metric, conventions, the test and correction."""

    label_set: str = "qrels"
    metric: str = "ndcg@10"
    preset: str | None = None
    test: str = "t"
    correction: str = "holm"
    alpha: float = 0.05

    def checked(self) -> Scoring:
        """Itself, once every choice is known (422 naming the one that is not)."""
        if self.test not in TESTS:
            raise Invalid(f"unknown test {self.test!r}; expected one of {', '.join(TESTS)}")
        if self.correction not in CORRECTIONS:
            raise Invalid(
                f"unknown correction {self.correction!r}; expected one of {', '.join(CORRECTIONS)}"
            )
        if not 0 < self.alpha < 1:
            raise Invalid(f"alpha must be in (0, 1), got {self.alpha}")
        try:
            M.parse_metric(self.metric)
            if self.preset:
                M.preset(self.preset)
        except ValueError as exc:
            raise Invalid(str(exc)) from None
        return self


def conventions_for(truth: Truth, preset: str | None) -> tuple[str, str | None]:
    """The preset named, or the one ``heapjudge evaluate`` chooses for a TREC run and this
    label set, and why."""
    if preset:
        return preset, None
    return M.default_preset("trec", truth.kind)


def _report(
    mapping: dict[str, dict[str, float]], truth: Truth, metric: str, preset: str
) -> EvaluationReport:
    if truth.qrels is not None:
        return evaluate_columns(
            TrecColumns.from_mapping(mapping),
            truth.qrels,
            metrics=[metric],
            conventions=preset,
            missing="zero",
            trec_eval_check=True,
            release_truth_index=False,
        )
    return evaluate(mapping, topk=truth.topk, metrics=[metric], conventions=preset, missing="zero")


def score_stored_runs(
    db: Database,
    collection_id: int,
    truth: Truth,
    metric: str,
    preset: str,
    names: Sequence[str],
    budget: WorkBudget | None = None,
) -> Iterator[tuple[str, EvaluationReport]]:
    """Each named run's report, one run read from the database at a time (``budget`` checked
    before each)."""
    if truth.kind == "qrels" and M.parse_metric(metric)[0].startswith("kappa"):
        raise Invalid(
            f"{metric} is a κ-measure: it needs a top-k label set (such as 'topk'), not "
            f"graded qrels ({truth.path})"
        )
    for name in names:
        if budget is not None:
            budget.check()
        mapping = runs.run_mapping(db=db, collection_id=collection_id, name=name)
        try:
            yield name, _report(mapping, truth, metric, preset)
        except ValueError as exc:  # e.g. a κ-measure against qrels
            raise Invalid(str(exc)) from None


def _aligned(values: dict[str, F64]) -> tuple[dict[str, F64], int]:
    """The per-query values without the queries some run's metric skipped (NaN), and how many
    those are (as ``heapjudge compare``)."""
    matrix = np.asarray(list(values.values()), dtype=np.float64)
    keep = ~np.isnan(matrix).any(axis=0)
    return dict(zip(values, matrix[:, keep], strict=True)), int((~keep).sum())


def _out_of_time(exc: WorkStopped, scoring: Scoring, n_runs: int) -> str:
    pairs = n_runs * (n_runs - 1) // 2
    return (
        f"the {scoring.test} test over {pairs:,} pairs of {n_runs} runs did not finish within "
        f"{exc.seconds:g} s (HEAPJUDGE_COMPARE_BUDGET_SECONDS): compare fewer runs, or use "
        "test=t"
    )


def _matrix(
    values: dict[str, F64], scoring: Scoring, budget: WorkBudget
) -> tuple[dict[str, Any] | None, str | None]:
    """Every pair's difference, p-value, adjusted p and significance; or None and why not
    (one run, too few queries for the test, or the budget's time ran out; a budget cancelled
    because its client left raises :class:`WorkStopped`)."""
    if len(values) < 2:
        return None, "one run: nothing to compare"
    aligned, left_out = _aligned(values)
    test, correction = cast(Test, scoring.test), cast(Correction, scoring.correction)
    try:
        comp: Comparison = compare_systems(
            aligned, test, correction, scoring.alpha, seed=SEED, checkpoint=budget.check
        )
    except ValueError as exc:  # fewer queries than the test needs
        return None, f"no significance test: {exc} ({left_out} left out: skipped by the metric)"
    except WorkStopped as exc:
        if exc.reason != "time":
            raise
        return None, "no significance test: " + _out_of_time(exc, scoring, len(values))
    return {
        "test": comp.test,
        "correction": comp.correction,
        "alpha": comp.alpha,
        "n_queries": comp.n_queries,
        "queries_left_out": left_out,
        "n_resamples": comp.n_resamples,
        "exact": comp.exact,
        "seed": SEED,
        "systems": list(comp.systems),
        "pairs": [p.__dict__ for p in comp.pairs],
    }, None


def _clean(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _label_set_info(db: Database, collection_id: int, key: str) -> dict[str, Any]:
    listed = {ls.key: ls for ls in labelsets.label_sets(db=db, collection_id=collection_id)}
    found = listed[key]
    return {"key": key, "kind": found.kind, "title": found.title, "queries": found.queries}


def compared_names(
    db: Database, collection_id: int, chosen: Sequence[str] | None = None
) -> list[str]:
    """The runs one request compares: ``chosen`` (each a stored run's name; 422 naming those
    the collection lacks), else every stored run; 422 when that is more than
    ``compare_max_runs`` (the cap and the count in the message) or none."""
    names = runs.run_names(db=db, collection_id=collection_id)
    if not names:
        raise Invalid("the collection has no run yet; upload one first")
    if chosen:
        lacking = sorted(set(chosen) - set(names))
        if lacking:
            raise Invalid(f"the collection has no run named {', '.join(map(repr, lacking[:5]))}")
        names = list(dict.fromkeys(chosen))
    cap = db.settings.compare_max_runs
    if len(names) > cap:
        what = f"{len(names)} runs chosen" if chosen else f"the collection has {len(names)} runs"
        raise Invalid(
            f"{what}; one comparison takes at most {cap} runs (HEAPJUDGE_COMPARE_MAX_RUNS): "
            f"{len(names)} runs make {len(names) * (len(names) - 1) // 2:,} tested pairs. "
            f"Choose at most {cap} (the run parameter, once per run)"
        )
    return names


def request_budget(db: Database) -> WorkBudget:
    """A budget of ``compare_budget_seconds`` for one comparison."""
    return WorkBudget(db.settings.compare_budget_seconds)


def run_leaderboard(
    *,
    db: Database,
    collection_id: int,
    scoring: Scoring,
    per_query: bool = False,
    names: Sequence[str] | None = None,
    budget: WorkBudget | None = None,
) -> dict[str, Any]:
    """Every stored run's (or the ``names``') mean and 95% interval under ``scoring`` (best
    first) and the matrix of pairwise tests; ``per_query``: each run's value per query too.
    422 for an unknown label set, metric, preset, test or correction, an empty label set, no
    run, or more runs than the cap (:func:`compared_names`). ``budget`` (default
    :func:`request_budget`) bounds the work (module docstring)."""
    scoring = scoring.checked()
    budget = budget or request_budget(db)
    names = compared_names(db, collection_id, names)  # the cap first: before any reading
    truth = labelsets.load_label_set(db=db, collection_id=collection_id, key=scoring.label_set)
    preset, reason = conventions_for(truth, scoring.preset)
    scored = score_stored_runs(db, collection_id, truth, scoring.metric, preset, names, budget)
    try:
        board = leaderboard(scored, seed=SEED)
    except WorkStopped as exc:
        if exc.reason != "time":
            raise
        raise Invalid(
            f"scoring {len(names)} runs did not finish within {exc.seconds:g} s "
            "(HEAPJUDGE_COMPARE_BUDGET_SECONDS): choose fewer runs"
        ) from None
    metric = scoring.metric
    order = sorted(
        board.runs,
        key=lambda r: (math.isnan(r.means[metric]), -np.nan_to_num(r.means[metric], nan=0.0)),
    )
    out: dict[str, Any] = {
        "collection_id": collection_id,
        "label_set": _label_set_info(db, collection_id, scoring.label_set),
        "metric": metric,
        "preset": preset,
        "preset_reason": reason,
        "conventions": board.conventions,
        "metric_conventions": board.metric_conventions,
        "interval": board.interval_text(),
        "n_queries": len(truth.queries),
        "runs": [
            {
                "run": r.name,
                "rank": i + 1,
                "mean": _clean(r.means[metric]),
                "low": _clean(r.low[metric]),
                "high": _clean(r.high[metric]),
                "queries_counted": r.counted[metric],
                "queries_missing": len(r.missing_queries),
                "trec_eval_differs": r.trec_eval_differs.get(metric),
            }
            for i, r in enumerate(order)
        ],
        "per_query": None,
    }
    values = {r.name: r.values[metric] for r in order}
    out["matrix"], out["matrix_note"] = _matrix(values, scoring, budget)
    if per_query:
        out["per_query"] = {
            "queries": list(order[0].queries),
            "values": {r.name: [_clean(v) for v in r.values[metric].tolist()] for r in order},
        }
    return out


def pair_values(
    *, db: Database, collection_id: int, scoring: Scoring, run_a: str, run_b: str
) -> dict[str, Any]:
    """Two runs' values per query of the label set (queries either run's metric skips left
    out): ``queries``, ``a``, ``b``, with the metric, preset and label set."""
    scoring = scoring.checked()
    truth = labelsets.load_label_set(db=db, collection_id=collection_id, key=scoring.label_set)
    preset, _ = conventions_for(truth, scoring.preset)
    reports = dict(
        score_stored_runs(db, collection_id, truth, scoring.metric, preset, [run_a, run_b])
    )
    queries = list(reports[run_a].queries)
    a = np.fromiter(reports[run_a].per_query[scoring.metric].values(), dtype=np.float64)
    b = np.fromiter(reports[run_b].per_query[scoring.metric].values(), dtype=np.float64)
    keep = ~(np.isnan(a) | np.isnan(b))
    return {
        "label_set": scoring.label_set,
        "metric": scoring.metric,
        "preset": preset,
        "run_a": run_a,
        "run_b": run_b,
        "queries": [q for q, k in zip(queries, keep.tolist(), strict=True) if k],
        "a": a[keep].tolist(),
        "b": b[keep].tolist(),
    }


def _values(
    db: Database,
    collection_id: int,
    truth: Truth,
    metric: str,
    preset: str,
    names: list[str],
    budget: WorkBudget,
) -> dict[str, F64]:
    reports = score_stored_runs(db, collection_id, truth, metric, preset, names, budget)
    values = {
        name: np.fromiter(r.per_query[metric].values(), dtype=np.float64) for name, r in reports
    }
    aligned = _aligned(values)[0]
    if next(iter(aligned.values())).size == 0:
        raise Invalid(f"{metric} skips every query of {truth.path} for some run")
    return aligned


def label_set_agreement(
    *,
    db: Database,
    collection_id: int,
    scoring: Scoring,
    against: str,
    names: Sequence[str] | None = None,
    budget: WorkBudget | None = None,
) -> dict[str, Any]:
    """How label set ``against`` orders the stored runs compared with ``scoring.label_set``
    (the reference): both orderings by mean, Kendall's τ-b, τ_AP and the significant swaps
    (docs/campaigns.md#agreement-of-system-orderings); the figures ``heapjudge compare
    --against`` prints for the same files. 422 with fewer than 2 runs, more than the cap
    (:func:`compared_names`), or when the tests run out of ``budget``'s time."""
    scoring = scoring.checked()
    budget = budget or request_budget(db)
    names = compared_names(db, collection_id, names)
    truth_a = labelsets.load_label_set(db=db, collection_id=collection_id, key=scoring.label_set)
    truth_b = labelsets.load_label_set(db=db, collection_id=collection_id, key=against)
    if len(names) < 2:
        raise Invalid("comparing system orderings needs at least 2 runs")
    preset_a, _ = conventions_for(truth_a, scoring.preset)
    preset_b, _ = conventions_for(truth_b, scoring.preset)
    try:
        values_a = _values(db, collection_id, truth_a, scoring.metric, preset_a, names, budget)
        values_b = _values(db, collection_id, truth_b, scoring.metric, preset_b, names, budget)
        agree = ordering_agreement(
            values_a,
            values_b,
            test=cast(Test, scoring.test),
            correction=cast(Correction, scoring.correction),
            alpha=scoring.alpha,
            seed=SEED,
            checkpoint=budget.check,
        )
    except ValueError as exc:  # e.g. no query left that every run's metric scores
        raise Invalid(str(exc)) from None
    except WorkStopped as exc:
        if exc.reason != "time":
            raise
        raise Invalid(_out_of_time(exc, scoring, len(names))) from None
    return {
        "collection_id": collection_id,
        "metric": scoring.metric,
        "label_set": _label_set_info(db, collection_id, scoring.label_set),
        "against": _label_set_info(db, collection_id, against),
        "preset": preset_a,
        "preset_against": preset_b,
        "test": scoring.test,
        "correction": scoring.correction,
        "alpha": scoring.alpha,
        "seed": SEED,
        **{k: _clean(v) if isinstance(v, float) else v for k, v in agree.summary().items()},
    }
