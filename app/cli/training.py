"""CLI commands: training experiments (the paper's protocol) and the β sweep.

    heapjudge cv --data ../shared/data/letor4-mq2008 --truth topk --k 10 \\
        --models focusednet,focusedsvm,focusedboost,topk-listmle,ranknet,listnet \\
        --tune beta,C,iterations
    heapjudge sweep-beta --data ../shared/data/letor4-mq2008 --models focusednet \\
        --output beta_sweep.svg

``cv`` prints a Table-4-style table (mean over the 5 test folds; ▲/▼ = paired t-test against
the best baseline); ``--baseline lightgbm`` adds LightGBM lambdarank on the same folds and
truth; ``--output`` writes the full result (fold means, chosen hyperparameters) as strict JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import typer

from app.cli.conventions import Command, fail, usage_error
from app.cli.database import DB_OPTION

app = typer.Typer()

ALL_MODELS = (
    "focusednet,focusedsvm,focusedboost,topk-listmle,listmle,plistmle,ranknet,"
    "listnet,ranksvm,svmmap,rankboost,adarank"
)


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


#: ``--truth``: the same choices and default in ``cv`` and ``sweep-beta``. ``both`` is the
#: paper's Table 4 and Figures 1-2 (graded and top-k columns side by side).
TRUTH_OPTION = typer.Option(
    "both", "--truth", help="graded | topk | both (the paper's Table 4 shows both)."
)
TRUTHS = ("graded", "topk", "both")
DATA_HELP = (
    "Folder with S1..S5.txt (LETOR 4.0) or Fold1_test.txt..Fold5_test.txt (LETOR 3.0 OHSUMED)."
)


class _LineProgress:
    """Stand-in for rich's live bar when stderr is not a terminal (logs, CI): one line per
    10 % of the work instead of a bar that would only be drawn at the end."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label, self.done, self.step = total, label, 0, max(total // 10, 1)

    def __enter__(self) -> _LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def advance(self, last: str) -> None:
        self.done += 1
        if self.done % self.step == 0 or self.done == self.total:
            typer.echo(f"{self.label}: {self.done}/{self.total} ({last})", err=True)


def _progress_bar(
    total: int, label: str
) -> tuple[AbstractContextManager[object], Callable[[str], None]]:
    """A rich progress bar on stderr (plain lines when stderr is not a terminal): the context
    that shows it, and the callback that advances it by one step showing the last message."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    if not console.is_terminal:
        lines = _LineProgress(total, label)
        return lines, lines.advance
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[last]}"),
        transient=False,
        console=console,
    )
    task = progress.add_task(label, total=total, last="")

    def advance(last: str) -> None:
        progress.update(task, advance=1, last=last)

    return progress, advance


@app.command("worker", cls=Command)
def worker_cmd(
    database_url: str | None = DB_OPTION,
    queue_url: str | None = typer.Option(
        None,
        "--queue-url",
        help="Overrides HEAPJUDGE_QUEUE_URL (redis://... or sqlite:///...; default: a "
        "SQLite queue file beside a SQLite database).",
    ),
    queues: str = typer.Option(
        "opinions,grades,features,training",
        "--queues",
        help="The queues this worker consumes, each with its own thread(s): any of "
        "opinions, grades, features, training.",
    ),
    threads: int = typer.Option(1, "--threads", min=1, help="Jobs run at once per queue."),
    parent: int | None = typer.Option(
        None, "--parent", hidden=True, help="Exit when this process (serve) is gone."
    ),
) -> None:
    """Execute queued jobs: machine opinions, LLM grades, text features, training runs
    (serve starts one and restarts it if it dies; run more for a team)."""
    import logging

    from app.cli.worker import consume
    from app.kernel.settings import load_settings

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    overrides = {"database_url": database_url, "queue_url": queue_url}
    settings = load_settings(**{k: v for k, v in overrides.items() if v})
    try:
        consume(_split(queues), settings, threads=threads, parent=parent)
    except ValueError as exc:  # an unknown queue, or a queue URL of an unknown scheme
        usage_error(str(exc))


@app.command("cv", cls=Command)
def cv_cmd(
    data: Path = typer.Option(..., "--data", exists=True, file_okay=False, help=DATA_HELP),
    truth: str = TRUTH_OPTION,
    k: int = typer.Option(10, "--k", help="Size of the top-k ground truth."),
    models: str = typer.Option(ALL_MODELS, "--models", help="Comma list of models."),
    tune: str = typer.Option(
        "beta,C,iterations", "--tune", help="Tuned on validation: any of beta, C, iterations."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of truth sampling and training."),
    baseline: str = typer.Option(
        "",
        "--baseline",
        help="Extra baselines on the same folds and truth: lightgbm (LightGBM lambdarank, "
        "the bench extra; skipped with a reason when it is not installed).",
    ),
    output: Path | None = typer.Option(
        None,
        "-o",
        "--output",
        help="Also write the results here as JSON (strict JSON: null, never NaN).",
    ),
) -> None:
    """Five-fold cross-validation with tuning on validation; a Table-4-style table."""
    from ranking.estimators import experiments as E

    names, skipped = _cv_models(models, baseline)
    if truth not in TRUTHS:
        usage_error(f"--truth must be graded, topk or both, got {truth!r}")
    if k < 1:
        usage_error(f"--k must be >= 1, got {k}")
    tune_names = _split(tune)
    try:
        E.default_grid(names[0], tune_names)
    except ValueError as exc:
        usage_error(str(exc))
    truths = ["graded", "topk"] if truth == "both" else [truth]
    out: dict[str, Any] = {}
    for t in truths:
        try:
            folds = E.load_folds(data, t, k=k, seed=seed)
        except (ValueError, OSError) as exc:
            fail(str(exc))
        progress, advance = _progress_bar(E.n_fits(names, tune_names, len(folds)), f"cv {t}")
        with progress:
            result = E.cross_validate(
                folds, names, truth=t, k=k, tune=tune_names, seed=seed, progress=advance
            )
        typer.echo(E.format_table(result))
        typer.echo("")
        out[t] = {"skipped": skipped, **_cv_summary(result, names)}
    if output is not None:
        output.write_text(
            json.dumps(E.strict_json(out), indent=2, allow_nan=False), encoding="utf-8"
        )


def _cv_models(models: str, baseline: str) -> tuple[list[str], dict[str, str]]:
    """``cv``'s models (``--models``, then the ``--baseline`` ones that are installed) and the
    skipped baselines with the reason; an unknown name is a usage error."""
    from ranking.estimators import ESTIMATORS
    from ranking.estimators import experiments as E

    names = _split(models)
    bad = [m for m in names if m not in ESTIMATORS]
    if bad:
        usage_error(f"unknown model(s) {', '.join(bad)}; choose from {', '.join(ESTIMATORS)}")
    extra = _split(baseline)
    if any(b != E.LIGHTGBM for b in extra):
        usage_error(f"--baseline takes {E.LIGHTGBM}, got {baseline!r}")
    skipped: dict[str, str] = {}
    if extra:
        reason = E.lightgbm_missing()
        if reason:
            skipped[E.LIGHTGBM] = reason
            typer.echo(f"baseline {E.LIGHTGBM} skipped: {reason}", err=True)
        else:
            names = [*names, *extra]
    return names, skipped


def _cv_summary(result: Any, names: list[str]) -> dict[str, Any]:
    """One truth's cross-validation as the ``--output`` JSON: means, fold means, chosen
    hyperparameters, seconds and the significance marks."""
    from ranking.estimators import experiments as E

    return {
        "measures": list(result.measures),
        "mean": {m: {x: result.mean(m, x) for x in result.measures} for m in names},
        "fold_means": result.fold_means,
        "chosen": result.chosen,
        "seconds": result.seconds,
        "significance": {
            m: {x: {"p": p, "mark": mark} for x, (p, mark) in v.items()}
            for m, v in E.significance(result).items()
        },
    }


@app.command("sweep-beta", cls=Command)
def sweep_cmd(
    data: Path = typer.Option(..., "--data", exists=True, file_okay=False, help=DATA_HELP),
    models: str = typer.Option(
        "focusednet,focusedsvm,focusedboost", "--models", help="FocusedRank models to sweep."
    ),
    truth: str = TRUTH_OPTION,
    k: int = typer.Option(10, "--k", help="Size of the top-k ground truth."),
    step: float = typer.Option(0.05, "--step", help="β step (the paper: 0.05)."),
    measure: int = typer.Option(1, "--measure", help="0 = @5, 1 = @10, 2 = ERR."),
    output: Path = typer.Option(
        Path("beta_sweep.svg"), "-o", "--output", help="SVG plot to write."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of truth sampling and training."),
) -> None:
    """Vary β from 0 to 1, report the test mean over folds, plot like Figures 1-2."""
    from ranking.estimators import experiments as E
    from ranking.estimators.figures import beta_sweep_svg

    names = _split(models)
    bad = [m for m in names if m not in E.FOCUSED]
    if bad:
        usage_error(f"sweep-beta takes {', '.join(E.FOCUSED)}, got {', '.join(bad)}")
    if not 0 < step <= 1:
        usage_error(f"--step must be in (0, 1], got {step}")
    if measure not in (0, 1, 2):
        usage_error("--measure must be 0, 1 or 2")
    if truth not in TRUTHS:
        usage_error(f"--truth must be graded, topk or both, got {truth!r}")
    truths = ["graded", "topk"] if truth == "both" else [truth]
    n = round(1 / step)
    betas = tuple(round(min(1.0, i * step), 4) for i in range(n + 1))
    try:
        folds = {t: E.load_folds(data, t, k=k, seed=seed) for t in truths}
    except (ValueError, OSError) as exc:
        fail(str(exc))
    total = len(betas) * len(names) * sum(len(f) for f in folds.values())
    progress, advance = _progress_bar(total, "sweep-beta")
    with progress:
        res = E.sweep_beta(
            folds,
            names,
            betas=betas,
            seed=seed,
            progress=advance,
        )
    for (model, t), curve in res.curves.items():
        typer.echo(f"{model} ({t} truth)")
        header = "beta   " + "  ".join(f"{E.COLUMN_NAMES[m]:>10}" for m in curve)
        typer.echo(header)
        for i, b in enumerate(res.betas):
            typer.echo(f"{b:<6.2f} " + "  ".join(f"{curve[m][i]:>10.4f}" for m in curve))
    output.write_text(
        beta_sweep_svg(res, measure, title=f"β sweep on {data.name}"), encoding="utf-8"
    )
    typer.echo(f"wrote {output}", err=True)
