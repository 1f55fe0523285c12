"""CLI command: compare (every pair of runs with a paired significance test; two label sets'
system orderings).

    heapjudge compare --qrels qrels.txt --runs a.txt --runs b.txt --runs c.txt
    heapjudge compare --qrels qrels.txt --runs runs/ --metric AP --test randomization --json
    heapjudge compare --qrels qrels.txt --runs runs/ --against truth.jsonl --metric ndcg@10

Every run is scored on every query of the truth (a query a run lacks scores 0, trec_eval's
``-c``), so the per-query values are aligned; queries a metric skips for some run are left
out of the tests. Tests, corrections and the agreement figures: docs/campaigns.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from app.cli.conventions import Command, UsageProblem, fail, usage_error
from app.cli.evaluate import (
    GRADE_MAP_OPTION,
    QRELS_FORMAT_OPTION,
    QRELS_OPTION,
    TOPK_OPTION,
    default_preset,
    metric_names,
    one_heap,
    read_truth,
)
from app.cli.ppi import (
    AUDIT_QRELS_OPTION,
    MACHINE_QRELS_OPTION,
    PPI_LAMBDA_OPTION,
    check_pair,
    print_ppi,
)

app = typer.Typer()


def _values(
    truth: Any, runs: list[Path], metric: str, preset: str | None
) -> tuple[dict[str, Any], str, str | None]:
    """Per-query values of ``metric`` for every run (aligned on the truth's queries), the
    preset used and why."""
    import numpy as np

    from ranking.compare.leaderboard import score_runs

    chosen, reason = default_preset(preset, True, truth.kind == "topk")
    reports = score_runs(runs, truth, metrics=[metric], conventions=chosen, missing="zero")
    values = {
        name: np.fromiter(r.per_query[metric].values(), dtype=np.float64) for name, r in reports
    }
    return values, chosen, reason


def _aligned(values: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The values without the queries some run's metric skipped (NaN), and how many those are."""
    import numpy as np

    matrix = np.asarray(list(values.values()), dtype=np.float64)
    keep = ~np.isnan(matrix).any(axis=0)
    return dict(zip(values, matrix[:, keep], strict=True)), int((~keep).sum())


def _sniff_kind(path: Path) -> str:
    """``topk`` for a JSON-lines file (first non-blank character ``{``), else ``qrels``."""
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                return "topk" if raw.lstrip().startswith(b"{") else "qrels"
    return "qrels"


def _check_options(
    qrels: Path | None, topk: Path | None, metric: str, preset: str | None, alpha: float
) -> list[str]:
    """The one metric name, once the options are checked (a :class:`UsageProblem` if not)."""
    from ranking import metrics as M

    if (qrels is None) == (topk is None):
        raise UsageProblem("give exactly one truth: --qrels FILE or --topk FILE.jsonl")
    if not 0 < alpha < 1:
        raise UsageProblem(f"--alpha must be in (0, 1), got {alpha}")
    names = metric_names(metric)
    if len(names) != 1:
        raise UsageProblem("--metric takes one metric")
    try:
        M.parse_metric(names[0])
        if preset is not None:
            M.preset(preset)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    return names


def run_compare(
    *,
    qrels: Path | None,
    topk: Path | None,
    runs: list[Path],
    metric: str,
    preset: str | None,
    test: str,
    correction: str,
    alpha: float,
    resamples: int | None,
    seed: int,
    against: Path | None,
    qrels_format: str = "auto",
    grade_map: str | None = None,
) -> dict[str, Any]:
    """Load, score and compare; the result as a JSON-ready dict (text: :func:`format_text`)."""
    from ranking.compare.correlation import ordering_agreement
    from ranking.compare.leaderboard import run_files
    from ranking.compare.significance import CORRECTIONS, TESTS, compare_systems

    if test not in TESTS:
        raise UsageProblem(f"--test must be one of {', '.join(TESTS)}, got {test!r}")
    if correction not in CORRECTIONS:
        raise UsageProblem(f"--correction must be one of {', '.join(CORRECTIONS)}")
    names = _check_options(qrels, topk, metric, preset, alpha)
    files = run_files(runs)
    if len(files) < 2:
        raise UsageProblem("comparing needs at least 2 runs (--runs FILE repeated, or a folder)")
    truth, _ = read_truth(qrels, topk, qrels_format, grade_map)
    raw, chosen, reason = _values(truth, files, names[0], preset)
    values, skipped = _aligned(raw)
    comp = compare_systems(values, test, correction, alpha, n_resamples=resamples, seed=seed)
    out: dict[str, Any] = {
        "metric": names[0],
        "truth": str(truth.path),
        "preset": chosen,
        "preset_reason": reason,
        "test": comp.test,
        "correction": comp.correction,
        "alpha": comp.alpha,
        "n_queries": comp.n_queries,
        "queries_left_out": skipped,
        "n_resamples": comp.n_resamples,
        "exact": comp.exact,
        "runs": [{"run": s, "mean": m} for s, m in zip(comp.systems, comp.means, strict=True)],
        "pairs": [p.__dict__ for p in comp.pairs],
    }
    if against is not None:
        topk_b = _sniff_kind(against) == "topk"
        other, _ = read_truth(
            None if topk_b else against, against if topk_b else None, qrels_format, grade_map
        )
        raw_b, chosen_b, _ = _values(other, files, names[0], preset)
        values_b, _ = _aligned(raw_b)
        agree = ordering_agreement(
            values,
            values_b,
            test=test,
            correction=correction,
            alpha=alpha,
            n_resamples=resamples,
            seed=seed,
        )
        out["against"] = {"truth": str(other.path), "preset": chosen_b, **agree.summary()}
    return out


def _test_name(result: dict[str, Any]) -> str:
    test = {"t": "paired t-test", "randomization": "randomization (sign-flip) test"}.get(
        result["test"], "paired bootstrap test"
    )
    if result["test"] == "randomization" and result["exact"]:
        return test + ", exact (all sign vectors)"
    if result["n_resamples"]:
        return test + f", {result['n_resamples']} resamples, seed fixed"
    return test


def format_text(result: dict[str, Any]) -> str:
    """The pairs as a table (``*`` marks a significant pair), then the agreement, if any."""
    width = max(len(r["run"]) for r in result["runs"])
    lines = [f"{result['metric']} over {result['n_queries']} queries of {result['truth']}"]
    lines += [f"  {r['run'].ljust(width)}  {r['mean']:.4f}" for r in result["runs"]]
    pair_w = 2 * width + 4
    lines.append(f"{'pair'.ljust(pair_w)}  difference  p-value   adjusted  ")
    for p in result["pairs"]:
        pair = f"{p['system_a']} − {p['system_b']}".ljust(pair_w)
        mark = " *" if p["significant"] else ""
        diff, pv, adj = p["difference"], p["p_value"], p["p_adjusted"]
        lines.append(f"{pair}  {diff:+.4f}     {pv:.4f}    {adj:.4f}{mark}")
    lines.append(
        f"{_test_name(result)}, two-sided; correction {result['correction']}; "
        f"* = adjusted p ≤ α = {result['alpha']}"
    )
    if result["queries_left_out"]:
        lines.append(f"note: {result['queries_left_out']} queries left out (skipped by the metric)")
    lines.append(f"conventions: preset {result['preset']}")
    if result["preset_reason"]:
        lines.append(f"preset chosen because: {result['preset_reason']}")
    other = result.get("against")
    if other:
        lines.append(f"ordering by {result['truth']}: {' > '.join(other['ordering'])}")
        lines.append(f"ordering by {other['truth']}: {' > '.join(other['ordering_against'])}")
        lines.append(f"conventions for {other['truth']}: preset {other['preset']}")
        lines.append(
            f"Kendall's τ = {other['kendall_tau']:.4f}, τ_AP = {other['tau_ap']:.4f}, "
            f"significant swaps: {other['significant_swaps']} of the "
            f"{other['significant_in_truth']} pairs {result['truth']} separates"
        )
        lines.append(
            f"pairs significant under one label set only: {other['significant_in_one_only']} "
            f"({other['truth']} separates {other['significant_in_against']})"
        )
    return "\n".join(lines)


@app.command("compare", cls=Command)
def compare_cmd(
    qrels: Path | None = QRELS_OPTION,
    topk: Path | None = TOPK_OPTION,
    runs: list[Path] = typer.Option(
        ..., "--runs", exists=True, metavar="FILE", help="A run file (repeat it) or a folder."
    ),
    metric: str = typer.Option("ndcg@10", "--metric", help="One metric (as evaluate)."),
    preset: str | None = typer.Option(
        None, "--preset", help="Conventions (default: trec_eval with qrels, paper with top-k)."
    ),
    test: str = typer.Option("t", "--test", help="t | randomization | bootstrap."),
    correction: str = typer.Option("holm", "--correction", help="holm | bonferroni | none."),
    alpha: float = typer.Option(0.05, "--alpha", help="Significance level."),
    resamples: int | None = typer.Option(
        None, "--resamples", help="Resamples of randomization/bootstrap (default: enough)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the resampling tests."),
    against: Path | None = typer.Option(
        None,
        "--against",
        exists=True,
        dir_okay=False,
        help="A second label set (qrels or top-k JSONL): the two system orderings.",
    ),
    qrels_format: str = QRELS_FORMAT_OPTION,
    grade_map: str | None = GRADE_MAP_OPTION,
    machine_qrels: Path | None = MACHINE_QRELS_OPTION,
    audit_qrels: Path | None = AUDIT_QRELS_OPTION,
    ppi_lambda: str = PPI_LAMBDA_OPTION,
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print one JSON object."),
) -> None:
    """Compare runs pairwise with a significance test; --against: two label sets' orderings;
    --machine-qrels with --audit-qrels: prediction-powered intervals of every difference."""
    one_heap()
    try:
        if check_pair(machine_qrels, audit_qrels, qrels, topk):
            level = 1.0 - alpha
            if not 0 < alpha < 1:
                raise UsageProblem(f"--alpha must be in (0, 1), got {alpha}")
            print_ppi(
                machine_qrels,
                audit_qrels,
                runs,
                metric_names(metric),
                preset,
                ppi_lambda,
                as_json,
                level=level,
                min_runs=2,
            )
            return
        result = run_compare(
            qrels=qrels,
            topk=topk,
            runs=runs,
            metric=metric,
            preset=preset,
            test=test,
            correction=correction,
            alpha=alpha,
            resamples=resamples,
            seed=seed,
            against=against,
            qrels_format=qrels_format,
            grade_map=grade_map,
        )
    except UsageProblem as exc:
        usage_error(str(exc))
    except (ValueError, OSError) as exc:  # an input file that cannot be read or parsed
        fail(str(exc))
    typer.echo(json.dumps(result, ensure_ascii=False) if as_json else format_text(result))
