"""``evaluate`` and ``compare`` on labels a machine helped make: prediction-powered intervals
from machine labels on every query and people's labels on a random sample of them
(:mod:`ranking.compare.ppi`, docs/metrics.md#prediction-powered-intervals).

    heapjudge evaluate --machine-qrels machine.jsonl --audit-qrels audit.jsonl --run runs/ \\
        --metrics kappa-ndcg@10
    heapjudge compare --machine-qrels machine.txt --audit-qrels audit.txt --runs runs/

Each file is TREC qrels or a top-k JSONL truth (told apart by its first character). Every run
is scored on every query of each file (a query a run lacks scores 0, trec_eval's ``-c``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from app.cli.conventions import UsageProblem

MACHINE_QRELS_OPTION = typer.Option(
    None,
    "--machine-qrels",
    exists=True,
    dir_okay=False,
    help="Labels a machine helped make, every query (qrels or top-k JSONL); with --audit-qrels.",
)
AUDIT_QRELS_OPTION = typer.Option(
    None,
    "--audit-qrels",
    exists=True,
    dir_okay=False,
    help="People's labels on a uniform random sample of those queries (qrels or top-k JSONL).",
)
PPI_LAMBDA_OPTION = typer.Option(
    "1",
    "--ppi-lambda",
    help="PPI weight in [0, 1] (1: classic PPI) or 'tuned' (PPI++).",
)


def _kind(path: Path) -> str:
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                return "topk" if raw.lstrip().startswith(b"{") else "qrels"
    return "qrels"


def parse_lambda(value: str) -> float | str:
    """``--ppi-lambda``: ``tuned`` or a number in [0, 1]."""
    if value.strip().lower() == "tuned":
        return "tuned"
    try:
        lam = float(value)
    except ValueError:
        lam = -1.0
    if not 0.0 <= lam <= 1.0:
        raise UsageProblem(f"--ppi-lambda must be a number in [0, 1] or 'tuned', got {value!r}")
    return lam


def check_pair(machine: Path | None, audit: Path | None, *truths: Path | None) -> bool:
    """Whether the prediction-powered path is asked for: both files, and no other truth."""
    if machine is None and audit is None:
        return False
    if machine is None or audit is None:
        raise UsageProblem("--machine-qrels and --audit-qrels go together")
    if any(t is not None for t in truths):
        raise UsageProblem("--machine-qrels/--audit-qrels replace --qrels/--topk; give one truth")
    return True


def _per_query(
    truth_path: Path, files: list[Path], metrics: list[str], preset: str | None
) -> tuple[dict[str, dict[str, dict[str, float]]], str]:
    """metric -> run -> query -> value under one label set, and the preset used."""
    from ranking import metrics as M
    from ranking.compare.leaderboard import Truth, score_runs

    kind = _kind(truth_path)
    truth = Truth.read(truth_path, "topk" if kind == "topk" else "qrels")
    chosen = preset if preset is not None else M.default_preset("trec", kind)[0]
    out: dict[str, dict[str, dict[str, float]]] = {m: {} for m in metrics}
    for name, report in score_runs(
        files, truth, metrics=metrics, conventions=chosen, missing="zero"
    ):
        for m in metrics:
            out[m][name] = dict(report.per_query[m])
    return out, chosen


def run_ppi(
    *,
    machine: Path,
    audit: Path,
    runs: list[Path],
    metrics: list[str],
    preset: str | None,
    level: float = 0.95,
    lam: float | str = 1.0,
) -> dict[str, Any]:
    """Score the runs under both label sets and give each metric's :class:`PpiBoard` (as a
    JSON-ready dict, per metric)."""
    from ranking import metrics as M
    from ranking.compare.leaderboard import run_files
    from ranking.compare.ppi import ppi_board

    if not 0.0 < level < 1.0:
        raise UsageProblem(f"the confidence level must be in (0, 1), got {level}")
    if not metrics:
        raise UsageProblem("no metric given")
    try:
        for name in metrics:
            M.parse_metric(name)
        if preset is not None:
            M.preset(preset)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    files = run_files(runs)
    by_machine, chosen = _per_query(machine, files, metrics, preset)
    by_audit, chosen_audit = _per_query(audit, files, metrics, preset)
    if chosen != chosen_audit:
        raise UsageProblem(
            f"the two label sets need the same conventions (presets {chosen} and "
            f"{chosen_audit}): give --preset, or both files in one format"
        )
    boards = {
        m: ppi_board(by_machine[m], by_audit[m], level=level, lam=lam).to_dict()  # type: ignore[arg-type]
        for m in metrics
    }
    return {
        "machine_truth": str(machine),
        "audit_truth": str(audit),
        "preset": chosen,
        "level": level,
        "lambda": lam,
        "metrics": boards,
    }


def format_ppi(result: dict[str, Any]) -> str:
    """The intervals as text: per metric, each run's estimate and interval beside its
    machine-only mean, then the pairs whose order the labels' uncertainty could reverse."""
    pct = round(100 * result["level"])
    lines = [
        f"prediction-powered {pct}% intervals: machine labels {result['machine_truth']}, "
        f"audit {result['audit_truth']} (PPI, λ = {result['lambda']}; preset {result['preset']})"
    ]
    for metric, board in result["metrics"].items():
        runs = board["runs"]
        width = max(len(r) for r in runs)
        first = next(iter(runs.values()))
        lines.append(f"{metric}: {first['audited']} audited of {first['queries']} queries")
        lines.append(f"  {'run'.ljust(width)}  estimate  {pct}% interval        machine only")
        for name, iv in runs.items():
            low, high = iv["interval"]
            lines.append(
                f"  {name.ljust(width)}  {iv['estimate']:.4f}    [{low:.4f}, {high:.4f}]"
                f"    {iv['machine_only']:.4f}"
            )
        swaps = [p for p in board["pairs"] if p["could_swap"]]
        for p in board["pairs"]:
            low, high = p["difference"]["interval"]
            note = "  could swap" if p["could_swap"] else ""
            lines.append(
                f"  {p['a']} − {p['b']}: {p['difference']['estimate']:+.4f} "
                f"[{low:+.4f}, {high:+.4f}]{note}"
            )
        if board["pairs"]:
            verdict = (
                f"yes: {len(swaps)} of {len(board['pairs'])} pairs' difference intervals hold 0"
                if swaps
                else "no: every pair's difference interval excludes 0"
            )
            lines.append(f"  the system ranking could change within the intervals: {verdict}")
    return "\n".join(lines)


def print_ppi(
    machine: Path | None,
    audit: Path | None,
    run: list[Path] | None,
    metrics: list[str],
    preset: str | None,
    lam: str,
    as_json: bool,
    *,
    level: float = 0.95,
    min_runs: int = 1,
) -> None:
    """Print :func:`run_ppi` (text, or one JSON object); ``min_runs``: how many runs the
    command needs (compare: 2)."""
    from ranking.compare.leaderboard import run_files

    if not run:
        raise UsageProblem("--machine-qrels/--audit-qrels score TREC runs: give the runs")
    if len(run_files(run)) < min_runs:
        raise UsageProblem(f"comparing needs at least {min_runs} runs")
    if len(metrics) != 1 and min_runs > 1:
        raise UsageProblem("--metric takes one metric")
    assert machine is not None and audit is not None
    result = run_ppi(
        machine=machine,
        audit=audit,
        runs=run,
        metrics=metrics,
        preset=preset,
        level=level,
        lam=parse_lambda(lam),
    )
    typer.echo(json.dumps(result, ensure_ascii=False) if as_json else format_ppi(result))
