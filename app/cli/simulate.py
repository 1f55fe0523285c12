"""CLI commands: simulate (budget a top-k labeling study before it starts)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import typer

from app.cli.conventions import Command

if TYPE_CHECKING:  # labeling.study.simulation is imported when a command runs (fast CLI start)
    from labeling.study.simulation import NoiseModel

app = typer.Typer()

#: ``--pair-cache/--no-pair-cache``: the same declaration in ``simulate`` and
#: ``simulate-study``; on by default, as the task option ``pair_cache`` (docs/protocols.md).
PAIR_CACHE_OPTION = typer.Option(
    True,
    "--pair-cache/--no-pair-cache",
    help="Answer a pair asked again from the log; --no-pair-cache asks it again (the paper's "
    "protocol and judgment counts).",
)


def summarize(
    n: int,
    k: int,
    trials: int,
    *,
    noise: float = 0.0,
    ties: float = 0.0,
    cache: bool = True,
    seed: int = 0,
    model: NoiseModel = "none",
    scale: float = 1.0,
    strategy: str = "heap",
    prior_corr: float | None = None,
) -> dict[str, Any]:
    """Run :func:`labeling.study.simulation.simulate_tasks` and summarise it (the ``--json``
    object).

    κ-NDCG@k of each produced ranking against the true top-k uses
    :func:`ranking.metrics.kappa_ndcg` (gain 2^y − 1, docs/noise.md#scenarios), vectorised.
    """
    import numpy as np

    from labeling.strategies.heap import worst_case_total
    from labeling.strategies.registry import resolve_strategy
    from labeling.study.simulation import GRADE_SECONDS, simulate_tasks

    runs = simulate_tasks(
        n,
        k,
        trials,
        noise=noise,
        ties=ties,
        cache=cache,
        seed=seed,
        model=model,
        scale=scale,
        strategy=strategy,
        prior_corr=prior_corr,
    )
    judgments = np.array([r.judgments for r in runs], dtype=float)
    seconds = np.array([r.seconds for r in runs], dtype=float)
    kndcg = kappa_ndcg_of_runs(runs, n, k)
    if strategy == "heap":
        worst_case = worst_case_total(n, k)
    else:  # the strategy's own bound before the first answer (for a consistent assessor)
        worst_case = resolve_strategy(strategy)([f"d{i}" for i in range(n)], k).max_remaining()
    return {
        "n": n,
        "k": k,
        "trials": trials,
        "strategy": strategy,
        "prior_corr": prior_corr,
        "noise": noise,
        "ties": ties,
        "cache": cache,
        "seed": seed,
        "model": model,
        "scale": scale,
        "judgments": {
            "mean": float(judgments.mean()),
            "min": int(judgments.min()),
            "max": int(judgments.max()),
            "std": float(judgments.std()),
            "p95": float(np.percentile(judgments, 95)),
        },
        "oracle_calls": {"mean": float(np.mean([r.calls for r in runs]))},
        "worst_case_bound": worst_case,
        "exact_rate": float(np.mean([r.exact for r in runs])),
        "kappa_ndcg": {"mean": float(kndcg.mean()), "min": float(kndcg.min())},
        "active_seconds": {"mean": float(seconds.mean()), "p95": float(np.percentile(seconds, 95))},
        "graded_seconds_equivalent": n * GRADE_SECONDS,
    }


def kappa_ndcg_of_runs(runs: list[Any], n: int, k: int) -> Any:
    """κ-NDCG@k of each run's ranking against the true top-k (:func:`ranking.metrics.kappa_ndcg`,
    gain 2^y − 1, docs/noise.md#scenarios), vectorised over runs."""
    import numpy as np

    from ranking.metrics import kappa_ndcg

    labels = np.array([r.truth_labels for r in runs], dtype=float)
    # Score = n - position, so the produced ranking is the descending-score order.
    scores = n - np.array([r.produced_rank for r in runs], dtype=float)
    return kappa_ndcg(labels, scores, at=k)


def compare(
    n: int,
    k: int,
    trials: int,
    *,
    seed: int = 0,
    strategies: list[str] | None = None,
    jobs: int = 1,
) -> dict[str, Any]:
    """The ``--compare`` table: every strategy name × every scenario of
    :data:`labeling.study.simulation.SCENARIOS` -> mean and p95 judgments, exact rate and mean
    κ-NDCG@k against the latent truth (the ``--json`` object), plus the lower bound.

    ``jobs`` > 1 computes the cells in that many processes. Every cell draws its trials from
    its own seeds (:func:`labeling.study.simulation.compare_strategies`), so the table is the same
    whatever the number of processes.
    """
    from labeling.strategies.registry import lower_bound, parse_strategy, strategy_names
    from labeling.study.assisted import MACHINE_SCENARIOS
    from labeling.study.simulation import SCENARIOS

    # A +assist strategy without a machine asks what its inner strategy asks: its rows are in
    # the machine scenarios only.
    cells = [
        (name, scenario, n, k, trials, seed)
        for name in strategies or strategy_names()
        for scenario in (*SCENARIOS, *MACHINE_SCENARIOS)
        if scenario in MACHINE_SCENARIOS or not parse_strategy(name).assisted
    ]
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs) as pool:
            rows = list(pool.map(_compare_cell, cells))
    else:
        rows = [_compare_cell(cell) for cell in cells]
    return {"n": n, "k": k, "trials": trials, "lower_bound": lower_bound(n, k), "rows": rows}


def _compare_cell(cell: tuple[str, str, int, int, int, int]) -> dict[str, Any]:
    """One row of the ``--compare`` table (a module-level function: process pools pickle it)."""
    import numpy as np

    from labeling.study.assisted import compare_assisted
    from labeling.study.assisted import summary as machine_summary
    from labeling.study.simulation import compare_strategies

    name, scenario, n, k, trials, seed = cell
    if scenario.startswith("machine"):  # labeling.study.assisted's scenarios
        runs = compare_assisted(name, scenario, n, k, trials, seed=seed)
    else:
        runs = compare_strategies(name, scenario, n, k, trials, seed=seed)
    judgments = np.array([r.judgments for r in runs], dtype=float)
    return {
        "strategy": name,
        "scenario": scenario,
        # The count of human answers (machine answers are counted apart).
        "judgments": {
            "mean": float(judgments.mean()),
            "p95": float(np.percentile(judgments, 95)),
        },
        **machine_summary(runs),
        "exact_rate": float(np.mean([r.exact for r in runs])),
        "kappa_ndcg": {"mean": float(kappa_ndcg_of_runs(runs, n, k).mean())},
    }


def summarize_machine(
    n: int, k: int, trials: int, *, strategy: str, accuracy: float, noise: float, seed: int
) -> dict[str, Any]:
    """One cell with a simulated machine of pairwise ``accuracy`` and a person flipping
    ``noise`` of the answers (:func:`labeling.study.assisted.compare_assisted`): the
    ``--compare`` row's keys plus the scenario's parameters (the ``--json`` object)."""
    if not 0.5 < accuracy <= 1.0:
        raise typer.BadParameter(
            f"must be in (0.5, 1], got {accuracy}", param_hint="--machine-accuracy"
        )
    scenario = f"machine{accuracy:g}" + (f"+flip{noise:g}" if noise else "")
    row = _compare_cell((strategy, scenario, n, k, trials, seed))
    return {
        "n": n,
        "k": k,
        "trials": trials,
        "seed": seed,
        "machine_accuracy": accuracy,
        "noise": noise,
        **row,
    }


def compare_lines(table: dict[str, Any]) -> list[str]:
    """The ``--compare`` table as text, one row per (strategy, scenario)."""
    from labeling.study.simulation import SCENARIO_SIGMA

    n, k = table["n"], table["k"]
    lines = [
        f"top-{k} of {n} documents, {table['trials']} trials per cell; lower bound "
        f"{table['lower_bound']} comparisons (Kislitsyn); thurstone σ = {SCENARIO_SIGMA:g} ranks",
        f"{'strategy':<26} {'scenario':<18} {'mean':>7} {'p95':>6} {'machine':>8} "
        f"{'exact':>7} {'κ-NDCG@' + str(k):>10}",
    ]
    for row in table["rows"]:
        j = row["judgments"]
        lines.append(
            f"{row['strategy']:<26} {row['scenario']:<18} {j['mean']:>7.1f} {j['p95']:>6.0f} "
            f"{row['machine_answers']['mean']:>8.1f} "
            f"{row['exact_rate']:>7.3f} {row['kappa_ndcg']['mean']:>10.4f}"
        )
    return lines


COMPARE_OPTION = typer.Option(
    False,
    "--compare/--no-compare",
    help="Compare every strategy in the scenarios random, prior0.7, flip0.1, "
    "thurstone, machine0.8 and machine0.8+flip0.1 (+assist strategies in the machine "
    "scenarios only; uses --n, --k, --trials, --seed, --json only).",
)
MACHINE_ACCURACY_OPTION = typer.Option(
    None,
    "--machine-accuracy",
    min=0.5,
    max=1.0,
    help="Simulate a machine judge of this pairwise accuracy on random pairs (0.5 < A <= "
    "1; a Thurstone judge, docs/machine-judges.md) for one +assist strategy: the "
    "machine-scenario row (uses --n, --k, --trials, --seed, --noise, --strategy).",
)


@app.command("simulate", cls=Command)
def simulate(
    n: int = typer.Option(50, "--n", min=1, help="Documents per query."),
    k: int = typer.Option(10, "--k", min=1, help="Size of the top list (heap size)."),
    trials: int = typer.Option(2000, "--trials", min=1, help="Simulated sessions."),
    noise: float = typer.Option(
        0.0, "--noise", min=0.0, max=1.0, help="Probability that an answer is flipped."
    ),
    tie_rate: float = typer.Option(
        0.0,
        "--tie-rate",
        min=0.0,
        max=1.0,
        help="Probability of a tie answer (enables ties).",
    ),
    pair_cache: bool = PAIR_CACHE_OPTION,
    seed: int = typer.Option(0, "--seed", help="Seed of the whole simulation."),
    model: str = typer.Option(
        "none",
        "--model",
        help="Extra comparison noise on latent ranks: none, thurstone or bradley_terry.",
    ),
    scale: float = typer.Option(
        1.0, "--scale", min=0.0, help="σ (Thurstone) or τ (Bradley–Terry), in rank units."
    ),
    strategy: str = typer.Option(
        "heap", "--strategy", help="Judging strategy (the task option 'strategy')."
    ),
    prior_corr: float | None = typer.Option(
        None,
        "--prior-corr",
        help="Feed documents in the order of a prior with this correlation to the truth "
        "(0 < R <= 1) instead of a random order.",
    ),
    compare_all: bool = COMPARE_OPTION,
    machine_accuracy: float | None = MACHINE_ACCURACY_OPTION,
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print one JSON object."),
    jobs: int = typer.Option(
        1,
        "--jobs",
        min=1,
        help="Processes for --compare (the table is the same for any number).",
    ),
) -> None:
    """Simulate top-k labeling to budget a study: judgments per query, how often the top-k
    is exact, and the κ-NDCG@k of the produced ranking against the truth."""
    if compare_all:
        table = compare(n, k, trials, seed=seed, jobs=jobs)
        typer.echo(json.dumps(table) if as_json else "\n".join(compare_lines(table)))
        return
    noise_model = _check_scenario(strategy, prior_corr, model, scale)
    if machine_accuracy is not None:
        row = summarize_machine(
            n, k, trials, strategy=strategy, accuracy=machine_accuracy, noise=noise, seed=seed
        )
        typer.echo(json.dumps(row) if as_json else "\n".join(machine_lines(row)))
        return
    s = summarize(
        n,
        k,
        trials,
        noise=noise,
        ties=tie_rate,
        cache=pair_cache,
        seed=seed,
        model=noise_model,
        scale=scale,
        strategy=strategy,
        prior_corr=prior_corr,
    )
    typer.echo(json.dumps(s) if as_json else "\n".join(summary_lines(s)))


def _check_scenario(
    strategy: str, prior_corr: float | None, model: str, scale: float
) -> NoiseModel:
    """Check ``simulate``'s scenario options (a bad one is a usage error); the noise model."""
    from labeling.errors import ConfigError
    from labeling.strategies.registry import parse_strategy, strategy_names

    try:
        parse_strategy(strategy)
    except ConfigError:
        raise typer.BadParameter(
            f"{strategy!r} is not one of {', '.join(strategy_names())}",
            param_hint="--strategy",
        ) from None
    if prior_corr is not None and not 0.0 < prior_corr <= 1.0:
        raise typer.BadParameter(f"must be in (0, 1], got {prior_corr}", param_hint="--prior-corr")
    noise_models: tuple[NoiseModel, ...] = ("none", "thurstone", "bradley_terry")
    if model not in noise_models:
        raise typer.BadParameter(
            f"{model!r} is not one of {', '.join(noise_models)}", param_hint="--model"
        )
    if model != "none" and scale <= 0:
        raise typer.BadParameter("must be > 0", param_hint="--scale")
    return model


def machine_lines(row: dict[str, Any]) -> list[str]:
    """The :func:`summarize_machine` object as ``simulate --machine-accuracy``'s report."""
    h, m = row["human_judgments"], row["machine_answers"]
    return [
        f"top-{row['k']} of {row['n']} documents, {row['trials']} simulated queries of one "
        f"study, scenario {row['scenario']}",
        f"  strategy: {row['strategy']}, the machine's order",
        f"  human judgments per query: mean {h['mean']:.1f}  p95 {h['p95']:.0f}",
        f"  machine answers per query: mean {m['mean']:.1f}",
        f"  exact top-{row['k']}: {100 * row['exact_rate']:.1f}% of queries",
        f"  mean κ-NDCG@{row['k']} vs truth: {row['kappa_ndcg']['mean']:.4f}",
    ]


def summary_lines(s: dict[str, Any]) -> list[str]:
    """The :func:`summarize` object as ``simulate``'s text report."""
    n, k, j = s["n"], s["k"], s["judgments"]
    mode = "pair cache on" if s["cache"] else "no pair cache (paper's protocol)"
    prior_corr, model = s["prior_corr"], s["model"]
    order = "random order" if prior_corr is None else f"prior order (corr {prior_corr:g})"
    extra = f", {model} scale {s['scale']}" if model != "none" else ""
    minutes = s["active_seconds"]["mean"] / 60
    graded = s["graded_seconds_equivalent"] / 60
    return [
        f"top-{k} of {n} documents, {s['trials']} simulated sessions, {mode}",
        f"  strategy: {s['strategy']}, {order}",
        f"  assessor noise: flip p={s['noise']}, tie p={s['ties']}{extra}",
        f"  judgments per query: mean {j['mean']:.1f}  min {j['min']}  max {j['max']}"
        f"  p95 {j['p95']:.0f}  (worst case {s['worst_case_bound']})",
        f"  exact top-{k}: {100 * s['exact_rate']:.1f}% of sessions",
        f"  mean κ-NDCG@{k} vs truth: {s['kappa_ndcg']['mean']:.4f}",
        f"  active time per query: ~{minutes:.1f} min (five-grade equivalent ~{graded:.1f} min)",
    ]
