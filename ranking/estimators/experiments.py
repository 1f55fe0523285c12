"""The paper's experimental protocol (Niu et al. 2012 §6; docs/ranking.md#protocol).

- 5-fold cross-validation; in each fold 3 parts train, 1 validates, 1 tests (LETOR 4.0 rotation
  for MQ2008, the LETOR 3.0 scheme for OHSUMED; :mod:`ranking.data.folds`);
- hyperparameters tuned on the validation part: β for FocusedRank, C for the SVMs, the number
  of iterations/rounds for everything (early stopping on the validation metric);
- **graded truth**: the data's grades; top-k models train on the top k of a seeded random total
  order consistent with the grades; measures NDCG@5, NDCG@10, ERR;
- **top-k truth**: every part is converted to top-k ground truth (graded -> seeded random
  total order -> top k -> κ-labels); traditional models train on the κ-labels; measures
  κ-NDCG@5, κ-NDCG@10, κ-ERR;
- the table reports the mean over folds and a paired t-test (per test query, all folds pooled)
  of every model against the best baseline of each column.

Beyond the paper: ``"lightgbm"`` (LightGBM lambdarank, the optional ``bench`` extra) runs as a
baseline on the same folds and truth (:class:`ranking.estimators.lightgbm.LightGBMRanker`);
:func:`kfold_parts` and
:func:`folds_from_parts` build folds for any data set (seeded k-fold by query, or named parts
such as LETOR's S1..S5); :func:`evaluate_folds` fits one model with fixed hyperparameters on
every fold and reports validation and test measures (what a training job runs);
:func:`score_folds` measures a fixed scorer (e.g. BM25) on the same folds' test parts;
:func:`refit` fits the kept model on every query with the iterations the folds chose;
:func:`paired_test` is the paired t-test of :func:`significance`; and
:func:`strict_json` turns results into JSON without ``NaN`` (``null`` instead).

:func:`sweep_beta` varies β over a grid (the paper: 0 to 1 in steps of 0.05);
:func:`ranking.estimators.figures.beta_sweep_svg` draws the curves like the paper's Figures 1–2.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ranking.data.dataset import QueryDataset
from ranking.estimators.base import Ranker, metric_values
from ranking.estimators.fold_data import (
    FoldData,
    folds_from_parts,
    kfold_parts,
    load_folds,
    part_truths,
)
from ranking.estimators.lightgbm import LightGBMRanker
from ranking.estimators.registry import ESTIMATORS

__all__ = [
    "BASELINES",
    "FOCUSED",
    "LIGHTGBM",
    "CVResult",
    "FoldOutcome",
    "SweepResult",
    "cross_validate",
    "default_grid",
    "evaluate_folds",
    "folds_from_parts",
    "format_table",
    "iteration_param",
    "kfold_parts",
    "lightgbm_missing",
    "load_folds",
    "paired_test",
    "refit",
    "score_folds",
    "significance",
    "strict_json",
    "sweep_beta",
]

FOCUSED = ("focusednet", "focusedsvm", "focusedboost")
TOPK_MODELS = (*FOCUSED, "topk-listmle")
BASELINES = (
    "ranksvm",
    "svmmap",
    "rankboost",
    "adarank",
    "ranknet",
    "listnet",
    "listmle",
    "plistmle",
    "wlistmle",
    "lightgbm",
)
BETA_GRID = tuple(round(0.1 * i, 2) for i in range(11))
C_GRID = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)  # docs/ranking.md#structural
MEASURES = {
    "graded": ("ndcg@5", "ndcg@10", "err"),
    "topk": ("kappa_ndcg@5", "kappa_ndcg@10", "kappa_err"),
}
COLUMN_NAMES = {
    "ndcg@5": "NDCG@5",
    "ndcg@10": "NDCG@10",
    "err": "ERR",
    "kappa_ndcg@5": "κ-NDCG@5",
    "kappa_ndcg@10": "κ-NDCG@10",
    "kappa_err": "κ-ERR",
}

Progress = Callable[[str], None]
LIGHTGBM = "lightgbm"


def lightgbm_missing() -> str | None:
    """Why the LightGBM baseline cannot run here (None when it can)."""
    try:
        import lightgbm  # noqa: F401
    except ImportError:
        return "LightGBM is not installed (pip install -e '.[bench]')"
    return None


def _known(model: str) -> bool:
    return model in ESTIMATORS or model == LIGHTGBM


def _new(name: str, /, **params: Any) -> Any:
    """An unfitted estimator ``name`` (one of ESTIMATORS, or ``"lightgbm"``); positional-only,
    since ``model`` is also a hyperparameter of the gradient rankers ("linear" or "mlp")."""
    return LightGBMRanker(**params) if name == LIGHTGBM else ESTIMATORS[name](**params)


@dataclass
class FoldOutcome:
    """One fold of :func:`evaluate_folds`: sizes, measures on validation and test, the model."""

    name: str
    train_queries: int
    valid_queries: int
    test_queries: int
    best_iteration: int
    valid: dict[str, float]
    test: dict[str, float]
    model: Any
    #: Per measure, the value of every test query (the fold's test order): what the paired
    #: test against a baseline pools over folds.
    test_values: dict[str, np.ndarray] = field(default_factory=dict)


FoldProgress = Callable[[int, int, int, int], None]  # (fold, folds, iteration, iterations)


def evaluate_folds(
    folds: Sequence[FoldData],
    model: str,
    params: Mapping[str, Any] | None = None,
    *,
    truth: str,
    seed: int = 0,
    progress: FoldProgress | None = None,
) -> list[FoldOutcome]:
    """Fit ``model`` with fixed ``params`` on every fold (iterations early-stopped on the
    fold's validation part) and measure validation and test with the measures of ``truth``
    (NDCG@5, NDCG@10, ERR for graded; κ-NDCG@5, κ-NDCG@10, κ-ERR for top-k).

    ``progress(fold, folds, i, total)`` is called after every iteration of every fit (fold is
    1-based); an exception it raises aborts the whole evaluation.
    """
    measures = MEASURES[truth]
    out = []
    for n, fold in enumerate(folds, start=1):

        def step(i: int, total: int, n: int = n) -> None:
            if progress is not None:
                progress(n, len(folds), i, total)

        est, _ = _fit(model, dict(params or {}), fold, True, seed, step)
        valid_s, test_s = est.predict(fold.valid), est.predict(fold.test)
        values = {m: metric_values(m, fold.test, test_s) for m in measures}
        out.append(
            FoldOutcome(
                name=fold.name,
                train_queries=fold.train.n_queries,
                valid_queries=fold.valid.n_queries,
                test_queries=fold.test.n_queries,
                best_iteration=int(est.best_iteration_),
                valid={m: float(metric_values(m, fold.valid, valid_s).mean()) for m in measures},
                test={m: float(v.mean()) for m, v in values.items()},
                model=est,
                test_values=values,
            )
        )
    return out


Scorer = Callable[[QueryDataset], np.ndarray]  # one score per row of the data set, higher first


def score_folds(
    folds: Sequence[FoldData], scorer: Scorer, *, truth: str
) -> list[dict[str, np.ndarray]]:
    """A fixed scorer (nothing learned, e.g. BM25) measured on every fold's test part: per
    fold, per measure of ``truth``, the value of every test query (the fold's test order, as
    :attr:`FoldOutcome.test_values`), so the scorer and a model pair query by query."""
    measures = MEASURES[truth]
    out = []
    for fold in folds:
        scores = np.asarray(scorer(fold.test), dtype=np.float64)
        if scores.shape != (fold.test.n_docs,):
            raise ValueError(f"{fold.name}: expected {fold.test.n_docs} scores, got {scores.shape}")
        out.append({m: metric_values(m, fold.test, scores) for m in measures})
    return out


#: The hyperparameter that counts an estimator's iterations (epochs, solver iterations,
#: boosting rounds, trees), the one early stopping chooses.
ITERATION_PARAMS = ("epochs", "iterations", "n_rounds", "n_estimators")


def iteration_param(model: str) -> str:
    """The name of ``model``'s iteration count among :data:`ITERATION_PARAMS`."""
    params = _new(model).get_params()
    for name in ITERATION_PARAMS:
        if name in params:
            return name
    raise ValueError(f"{model} has no iteration count among {ITERATION_PARAMS}")


def refit(
    parts: Mapping[str, QueryDataset],
    model: str,
    params: Mapping[str, Any] | None,
    *,
    truth: str,
    iterations: int,
    k: int = 10,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> Any:
    """``model`` fitted on every query of ``parts`` (all of them, in name order) with
    ``params`` and exactly ``iterations`` iterations (:func:`iteration_param`; no validation
    part is left, so nothing early-stops): the model to keep after cross-validation. The
    truth is the folds' own (:func:`folds_from_parts`: the same per-part top-k sampling), so
    the refit learns from exactly what the folds learned from, all at once."""
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    source, topk = part_truths(parts, truth=truth, k=k, seed=seed)
    names = sorted(parts)
    train_topk = QueryDataset.concat([topk[n] for n in names])
    base: dict[str, Any] = {"seed": seed}
    if "k" in _new(model).get_params():
        base["k"] = train_topk.topk
    est = _new(model, **{**base, **dict(params or {}), iteration_param(model): int(iterations)})
    train = train_topk if model in TOPK_MODELS else QueryDataset.concat([source[n] for n in names])
    est.fit(train, valid=None, progress=progress)
    return est


def paired_test(x: np.ndarray, ref: np.ndarray, alpha: float = 0.05) -> tuple[float, str]:
    """Two-sided paired t-test of per-query values ``x`` against ``ref`` (the same queries in
    the same order; Student, "The probable error of a mean", 1908, on the differences
    ``d = x − ref``: ``t = mean(d) / (sd(d) / sqrt(n))`` with n − 1 degrees of freedom,
    :func:`scipy.stats.ttest_rel`). Returns ``(p, mark)``: mark ``"▲"`` when ``x`` is
    significantly better at ``alpha``, ``"▼"`` significantly worse, ``""`` otherwise;
    identical values give ``(1.0, "")``; fewer than two queries ``(nan, "")``."""
    from scipy.stats import ttest_rel

    x, ref = np.asarray(x, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if x.shape != ref.shape:
        raise ValueError(f"paired values differ in shape: {x.shape} and {ref.shape}")
    if np.allclose(x, ref):
        return 1.0, ""
    if x.size < 2:
        return math.nan, ""
    p = float(ttest_rel(x, ref).pvalue)
    mark = ""
    if p < alpha:
        mark = "▲" if x.mean() > ref.mean() else "▼"
    return p, mark


def strict_json(value: Any) -> Any:
    """``value`` with NaN and ±inf as None and numpy scalars and arrays as Python values, so
    that ``json.dumps(..., allow_nan=False)`` writes standard JSON (``null``, never ``NaN``)."""
    if isinstance(value, dict):
        return {str(k): strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(v) for v in value]
    if isinstance(value, np.ndarray):
        return strict_json(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def default_grid(model: str, tune: Iterable[str]) -> list[dict[str, Any]]:
    """Hyperparameter grid of ``model`` for the names in ``tune`` (beta, C, iterations).

    Without ``iterations`` in ``tune`` nothing is early-stopped: gradient models run their
    full ``epochs`` and boosters all ``n_rounds``.
    """
    tune = set(tune)
    unknown = tune - {"beta", "C", "iterations"}
    if unknown:
        raise ValueError(f"cannot tune {sorted(unknown)}; choose from beta, C, iterations")
    params = _new(model).get_params()
    grid: list[dict[str, Any]] = [{}]
    if "beta" in tune and "beta" in params:
        grid = [{**g, "beta": b} for g in grid for b in BETA_GRID]
    if "C" in tune and "C" in params:
        grid = [{**g, "C": c} for g in grid for c in C_GRID]
    return grid


def _fit(
    model: str,
    params: dict[str, Any],
    fold: FoldData,
    early_stop: bool,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Ranker, float]:
    base: dict[str, Any] = {"seed": seed}
    if "k" in _new(model).get_params():
        base["k"] = fold.train_topk.topk  # the k of this experiment's top-k truth
    est = _new(model, **{**base, **params})
    train = fold.train_topk if model in TOPK_MODELS else fold.train
    est.fit(train, valid=fold.valid if early_stop else None, progress=progress)
    score = est.best_valid_score_ if early_stop else est.score(fold.valid)
    return est, float(score)


@dataclass
class CVResult:
    """Outcome of :func:`cross_validate`."""

    truth: str
    k: int
    measures: tuple[str, ...]
    models: list[str]
    fold_means: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    per_query: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    chosen: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def mean(self, model: str, measure: str) -> float:
        return float(np.mean(self.fold_means[model][measure]))


def cross_validate(
    folds: Sequence[FoldData],
    models: Sequence[str],
    *,
    truth: str,
    k: int = 10,
    tune: Iterable[str] = ("beta", "C", "iterations"),
    overrides: dict[str, dict[str, Any]] | None = None,
    seed: int = 0,
    progress: Progress | None = None,
) -> CVResult:
    """Run the protocol for ``models`` on ``folds`` (see the module docstring).

    ``overrides[model]`` fixes hyperparameters (e.g. ``{"focusednet": {"lr": 0.1}}``). For
    models with both β and C the grid is searched coordinate-wise (C at β = 0.5, then β at
    the best C) to keep the number of fits linear.
    """
    tune = tuple(tune)
    unknown = [m for m in models if not _known(m)]
    if unknown:
        raise ValueError(
            f"unknown model(s) {unknown}; choose from {[*sorted(ESTIMATORS), LIGHTGBM]}"
        )
    early_stop = "iterations" in tune
    measures = MEASURES[truth]
    result = CVResult(truth=truth, k=k, measures=measures, models=list(models))
    for model in models:
        fixed = (overrides or {}).get(model, {})
        result.fold_means[model] = {m: [] for m in measures}
        result.chosen[model] = []
        pooled: dict[str, list[np.ndarray]] = {m: [] for m in measures}
        start = time.perf_counter()
        for fold in folds:
            best, best_score, best_params = None, -math.inf, {}
            for params in _search(model, tune, fixed, fold, early_stop, seed, progress):
                est, score = params
                if score > best_score + 1e-12:
                    best, best_score, best_params = est, score, est.get_params()
            assert best is not None
            scores = best.predict(fold.test)
            for m in measures:
                values = metric_values(m, fold.test, scores)
                pooled[m].append(values)
                result.fold_means[model][m].append(float(values.mean()))
            result.chosen[model].append(
                {key: best_params[key] for key in ("beta", "C") if key in best_params}
                | {"iterations": best.best_iteration_, "valid": best_score}
            )
        result.seconds[model] = time.perf_counter() - start
        result.per_query[model] = {m: np.concatenate(v) for m, v in pooled.items()}
    return result


def _search(
    model: str,
    tune: tuple[str, ...],
    fixed: dict[str, Any],
    fold: FoldData,
    early_stop: bool,
    seed: int,
    progress: Progress | None,
) -> Iterable[tuple[Ranker, float]]:
    params = _new(model).get_params()
    has_beta = "beta" in tune and "beta" in params and "beta" not in fixed
    has_c = "C" in tune and "C" in params and "C" not in fixed

    def run(p: dict[str, Any]) -> tuple[Ranker, float]:
        out = _fit(model, {**fixed, **p}, fold, early_stop, seed)
        if progress is not None:
            progress(f"{model} {fold.name} {p}")
        return out

    if has_beta and has_c:  # coordinate-wise: C at β = 0.5, then β at the best C
        c_runs = [run({"beta": 0.5, "C": c}) for c in C_GRID]
        yield from c_runs
        best_c = max(c_runs, key=lambda r: r[1])[0].get_params()["C"]
        for b in BETA_GRID:
            if b != 0.5:
                yield run({"beta": b, "C": best_c})
        return
    keys = [name for name, on in (("beta", has_beta), ("C", has_c)) if on]
    for p in default_grid(model, keys):
        yield run(p)


def n_fits(models: Sequence[str], tune: Iterable[str], n_folds: int = 5) -> int:
    """How many fits :func:`cross_validate` will run (for progress bars)."""
    tune = tuple(tune)
    total = 0
    for m in models:
        params = _new(m).get_params()
        b = "beta" in tune and "beta" in params
        c = "C" in tune and "C" in params
        total += (
            (len(C_GRID) + len(BETA_GRID) - 1)
            if b and c
            else (len(BETA_GRID) if b else 1) * (len(C_GRID) if c else 1)
        )
    return total * n_folds


def significance(result: CVResult, alpha: float = 0.05) -> dict[str, dict[str, tuple[float, str]]]:
    """Paired two-sided t-test per column against the best baseline (per-query, pooled).

    Returns ``{model: {measure: (p_value, mark)}}`` with mark ``"▲"`` (significantly better),
    ``"▼"`` (significantly worse) or ``""``. The best baseline itself gets ``(nan, "")``.
    """
    out: dict[str, dict[str, tuple[float, str]]] = {m: {} for m in result.models}
    for measure in result.measures:
        bases = [m for m in result.models if m in BASELINES]
        if not bases:
            continue
        best = max(bases, key=lambda m: result.mean(m, measure))
        ref = result.per_query[best][measure]
        for model in result.models:
            if model == best:
                out[model][measure] = (math.nan, "")
                continue
            out[model][measure] = paired_test(result.per_query[model][measure], ref, alpha)
    return out


def format_table(result: CVResult, *, markdown: bool = True) -> str:
    """Table-4-style text: mean over folds, best in column in bold, ▲/▼ vs the best baseline."""
    sig = significance(result)
    cols = [COLUMN_NAMES[m] for m in result.measures]

    def best_model(measure: str) -> str:
        return max(result.models, key=lambda model: result.mean(model, measure))

    best = {m: best_model(m) for m in result.measures}
    lines = [
        f"| model ({result.truth} truth, k={result.k}) | " + " | ".join(cols) + " | time s |",
        "|---|" + "---|" * (len(cols) + 1),
    ]
    for model in result.models:
        cells = []
        for m in result.measures:
            v = f"{result.mean(model, m):.4f}"
            if model == best[m] and markdown:
                v = f"**{v}**"
            mark = sig[model].get(m, (math.nan, ""))[1]
            cells.append(v + (f" {mark}" if mark else ""))
        lines.append(f"| {model} | " + " | ".join(cells) + f" | {result.seconds[model]:.1f} |")
    lines.append("")
    lines.append(
        "▲/▼: paired t-test p < 0.05 (per test query, 5 folds pooled) against the best "
        "baseline of the column (baselines: "
        + ", ".join(m for m in result.models if m in BASELINES)
        + ")."
    )
    return "\n".join(lines)


# ====================================================================================== sweep
PAPER_BETAS: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(21))  # 0, 0.05, …, 1


@dataclass
class SweepResult:
    """Test measures (mean over folds) per model, truth and β."""

    betas: tuple[float, ...]
    curves: dict[tuple[str, str], dict[str, list[float]]] = field(default_factory=dict)
    # (model, truth) -> measure -> values over betas


def sweep_beta(
    folds_by_truth: Mapping[str, Sequence[FoldData]],
    models: Sequence[str] = FOCUSED,
    *,
    betas: Sequence[float] = PAPER_BETAS,
    overrides: dict[str, dict[str, Any]] | None = None,
    seed: int = 0,
    progress: Progress | None = None,
) -> SweepResult:
    """For each β: train on every fold (iterations early-stopped on validation), test mean."""
    bad = [m for m in models if m not in FOCUSED]
    if bad:
        raise ValueError(f"sweep-beta is for the FocusedRank models {FOCUSED}, got {bad}")
    res = SweepResult(betas=tuple(betas))
    for truth, folds in folds_by_truth.items():
        for model in models:
            curve: dict[str, list[float]] = {m: [] for m in MEASURES[truth]}
            for beta in betas:
                sums: dict[str, list[float]] = {m: [] for m in MEASURES[truth]}
                for fold in folds:
                    est, _ = _fit(
                        model, {**(overrides or {}).get(model, {}), "beta": beta}, fold, True, seed
                    )
                    scores = est.predict(fold.test)
                    for m in sums:
                        sums[m].append(float(metric_values(m, fold.test, scores).mean()))
                    if progress is not None:
                        progress(f"{model} {truth} β={beta} {fold.name}")
                for m in curve:
                    curve[m].append(float(np.mean(sums[m])))
            res.curves[(model, truth)] = curve
    return res
