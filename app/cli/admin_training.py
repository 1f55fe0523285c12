"""CLI commands ``heapjudge admin train`` and ``heapjudge admin training-run``: start a training
run (the job ``POST /api/v1/training-runs`` queues; a worker executes it) and show one: status,
per-fold test measures, the kept model and why, and the table of the model beside BM25 and
LightGBM on the same folds with the paired test and its sentence (docs/training.md).

    heapjudge admin train mq2008 ranknet --options '{"truth": "imported"}' --wait
    heapjudge admin training-run 7
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import typer

from app.cli.conventions import Command, usage_error
from app.cli.database import DB_OPTION, collection_id, run_service

if TYPE_CHECKING:
    from app.kernel.db import Database

app = typer.Typer()

JSON_OPTION = typer.Option(False, "--json/--no-json", help="Print the run as JSON.")


def _object(text: str | None, flag: str) -> dict[str, Any]:
    """``text`` as a JSON object (a usage error naming ``flag`` otherwise)."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        usage_error(f"{flag} is not JSON: {exc}")
    if not isinstance(value, dict):
        usage_error(f'{flag} must be a JSON object, e.g. {{"epochs": 20}}')
    return value


@app.command("train", cls=Command)
def train_cmd(
    collection: str = typer.Argument(..., help="Collection name or id."),
    model: str = typer.Argument(..., help="The estimator: focusednet, ranknet, listnet, ..."),
    params: str | None = typer.Option(
        None, "--params", help='Hyperparameters as a JSON object, e.g. {"epochs": 50}.'
    ),
    options: str | None = typer.Option(
        None,
        "--options",
        help="Run options as a JSON object (truth, kind, folds, k, seed, features), e.g. "
        '{"truth": "imported", "folds": 5}; as the REST body (docs/training.md#runs).',
    ),
    time_limit: int | None = typer.Option(
        None, "--time-limit", min=1, help="Seconds (default HEAPJUDGE_TRAINING_TIME_LIMIT_SECONDS)."
    ),
    wait: bool = typer.Option(
        False, "--wait/--no-wait", help="Wait for a worker to finish the run, then show it."
    ),
    as_json: bool = JSON_OPTION,
    database_url: str | None = DB_OPTION,
) -> None:
    """Queue a training run for a worker (``heapjudge serve`` starts one, or ``heapjudge
    worker``); with --wait, show it once it ended."""
    from app.training import service as training
    from app.training.jobs import enqueue_training

    body_params, body_options = _object(params, "--params"), _object(options, "--options")

    def start(db: Database) -> dict[str, Any]:
        run = training.create_run(
            db=db,
            collection_id=collection_id(db, collection),
            model=model,
            params=body_params,
            options=body_options,
            time_limit_seconds=time_limit,
        )
        enqueue_training(db.settings, run["id"])
        if not wait:
            return run
        while run["status"] not in training.FINISHED:
            time.sleep(1.0)
            run = training.get_run(db=db, run_id=run["id"])
        return run

    run = run_service(database_url, start)
    if not wait and not as_json:
        typer.echo(f"training run {run['id']} queued (heapjudge admin training-run {run['id']})")
        return
    _show(run, as_json)


@app.command("training-run", cls=Command)
def training_run_cmd(
    run_id: int = typer.Argument(..., help="The training run's id."),
    as_json: bool = JSON_OPTION,
    database_url: str | None = DB_OPTION,
) -> None:
    """A training run: status, per-fold test measures, the kept model and why, and the model
    beside BM25 and LightGBM on the same folds with the paired test."""
    from app.training import service as training

    run = run_service(database_url, lambda db: training.get_run(db=db, run_id=run_id))
    _show(run, as_json)


def _show(run: dict[str, Any], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps({**run, "model_json": None}, ensure_ascii=False, allow_nan=False))
        return
    for line in describe_run(run):
        typer.echo(line)


def _cell(value: Any) -> str:
    return "—" if value is None else f"{value:.4f}"


def describe_run(run: dict[str, Any]) -> list[str]:
    """The run as text lines: what the page shows."""
    lines = [f"training run {run['id']}: {run['model']} on collection {run['collection_id']}"]
    lines.append(f"status {run['status']}, attempts {run['attempts']}")
    if run.get("error"):
        lines.append(f"error: {run['error']}")
    m = run.get("metrics")
    if not m:
        return lines
    measures = list(m["measures"])
    lines.append(
        f"truth {m['truth']}, measured {m['kind']} (k = {m['k']}), folds {m['folds_scheme']}"
    )
    lines.append("")
    lines.append(
        "| fold | train/valid/test queries | best iteration | " + " | ".join(measures) + " |"
    )
    lines.append("|---|---|---|" + "---|" * len(measures))
    for f in m["folds"]:
        sizes = f"{f['train_queries']}/{f['valid_queries']}/{f['test_queries']}"
        cells = " | ".join(_cell(f["test"][x]) for x in measures)
        lines.append(f"| {f['name']} | {sizes} | {f['best_iteration']} | {cells} |")
    mean = " | ".join(_cell(m["mean_test"][x]) for x in measures)
    lines.append(f"| mean | | | {mean} |")
    if m.get("kept"):
        lines.append("")
        lines.append(f"kept model: {m['kept']['why']}")
    c = m.get("comparison")
    if c:
        lines.append("")
        lines.append("| ranker | " + " | ".join(f"{x} | p" for x in measures) + " | source |")
        lines.append("|---|" + "---|---|" * len(measures) + "---|")
        for r in c["rows"]:
            if not r["available"]:
                blank = " | ".join("— | —" for _ in measures)
                lines.append(f"| {r['label']} | {blank} | {r['reason']} |")
                continue
            row_cells: list[str] = []
            for x in measures:
                t = (r.get("vs_model") or {}).get(x)
                p = "" if t is None else ("—" if t["p"] is None else f"{t['p']:.3g}")
                mark = f" {t['mark']}" if t and t["mark"] else ""
                row_cells.append(f"{_cell(r['mean_test'][x])} | {p}{mark}")
            source = r.get("source") or "cross-validation of this run"
            lines.append(f"| {r['label']} | " + " | ".join(row_cells) + f" | {source} |")
        lines.append("")
        lines.append(
            f"p: {c['test']}; ▲/▼ the model significantly better/worse (α = {c['alpha']})."
        )
        lines.append(f"note: {c['note']}.")
        lines.extend(r["verdict"] for r in c["rows"] if r.get("verdict"))
    return lines
