"""CLI commands: simulate (budget a top-k labeling study before it starts)."""

from __future__ import annotations

import json
from typing import Any

import typer


def summarize(
    n: int,
    k: int,
    trials: int,
    *,
    noise: float = 0.0,
    ties: float = 0.0,
    cache: bool = True,
    seed: int = 0,
    model: str = "none",
    scale: float = 1.0,
) -> dict[str, Any]:
    """Run :func:`labeling.simulation.simulate_study` and summarise it (the ``--json`` object).

    κ-NDCG@k of each produced ranking against the true top-k uses
    :func:`ranking.metrics.kappa_ndcg` (gain 2^y − 1, seed-digest §5.3), vectorised over trials.
    """
    import numpy as np

    from labeling.heap import worst_case_total
    from labeling.simulation import GRADE_SECONDS, simulate_study
    from ranking.metrics import kappa_ndcg

    runs = simulate_study(
        n,
        k,
        trials,
        noise=noise,
        ties=ties,
        cache=cache,
        seed=seed,
        model=model,  # type: ignore[arg-type]
        scale=scale,
    )
    judgments = np.array([r.judgments for r in runs], dtype=float)
    seconds = np.array([r.seconds for r in runs], dtype=float)
    labels = np.array([r.truth_labels for r in runs], dtype=float)
    # Score = n - position, so the produced ranking is the descending-score order.
    scores = n - np.array([r.produced_rank for r in runs], dtype=float)
    kndcg = kappa_ndcg(labels, scores, at=k)
    return {
        "n": n,
        "k": k,
        "trials": trials,
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
        "worst_case_bound": worst_case_total(n, k),
        "exact_rate": float(np.mean([r.exact for r in runs])),
        "kappa_ndcg": {"mean": float(kndcg.mean()), "min": float(kndcg.min())},
        "active_seconds": {"mean": float(seconds.mean()), "p95": float(np.percentile(seconds, 95))},
        "graded_seconds_equivalent": n * GRADE_SECONDS,
    }


def register(app: typer.Typer) -> None:
    """Add this area's commands to the CLI."""

    @app.command("simulate")
    def simulate(
        n: int = typer.Option(50, "--n", min=1, help="Documents per query."),
        k: int = typer.Option(10, "--k", min=1, help="Size of the top list (heap size)."),
        trials: int = typer.Option(2000, "--trials", min=1, help="Simulated sessions."),
        noise: float = typer.Option(
            0.0, "--noise", min=0.0, max=1.0, help="Probability that an answer is flipped."
        ),
        ties: float = typer.Option(
            0.0, "--ties", min=0.0, max=1.0, help="Probability of a tie answer (enables ties)."
        ),
        no_cache: bool = typer.Option(
            False, "--no-cache", help="Disable the pair cache (the paper's judgment counts)."
        ),
        seed: int = typer.Option(0, "--seed", help="Seed of the whole simulation."),
        model: str = typer.Option(
            "none",
            "--model",
            help="Extra comparison noise on latent ranks: none, thurstone or bradley_terry.",
        ),
        scale: float = typer.Option(
            1.0, "--scale", min=0.0, help="σ (Thurstone) or τ (Bradley–Terry), in rank units."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    ) -> None:
        """Simulate top-k HeapSort labeling to budget a study: judgments per query, how often
        the top-k is exact, and the κ-NDCG@k of the produced ranking against the truth."""
        if model not in ("none", "thurstone", "bradley_terry"):
            raise typer.BadParameter(
                f"{model!r} is not one of none, thurstone, bradley_terry", param_hint="--model"
            )
        if model != "none" and scale <= 0:
            raise typer.BadParameter("must be > 0", param_hint="--scale")
        s = summarize(
            n,
            k,
            trials,
            noise=noise,
            ties=ties,
            cache=not no_cache,
            seed=seed,
            model=model,
            scale=scale,
        )
        if as_json:
            typer.echo(json.dumps(s))
            return
        j = s["judgments"]
        mode = "pair cache on" if s["cache"] else "no pair cache (paper's protocol)"
        typer.echo(f"top-{k} of {n} documents, {trials} simulated sessions, {mode}")
        extra = f", {model} scale {scale}" if model != "none" else ""
        typer.echo(f"  assessor noise: flip p={noise}, tie p={ties}{extra}")
        typer.echo(
            f"  judgments per query: mean {j['mean']:.1f}  min {j['min']}  max {j['max']}"
            f"  p95 {j['p95']:.0f}  (worst case {s['worst_case_bound']})"
        )
        typer.echo(f"  exact top-{k}: {100 * s['exact_rate']:.1f}% of sessions")
        typer.echo(f"  mean κ-NDCG@{k} vs truth: {s['kappa_ndcg']['mean']:.4f}")
        minutes = s["active_seconds"]["mean"] / 60
        graded = s["graded_seconds_equivalent"] / 60
        typer.echo(
            f"  active time per query: ~{minutes:.1f} min (five-grade equivalent ~{graded:.1f} min)"
        )
