"""CLI commands: evaluate (score a run against graded qrels or a top-k ground truth).

    heapjudge evaluate --qrels qrels.txt --run run.txt --metrics ndcg@10,err,map
    heapjudge evaluate --topk truth.jsonl --run run.txt --metrics kappa-ndcg@10,kappa-err
    heapjudge evaluate --letor S5.txt --scores pred.txt --metrics ndcg@10 --preset letor4 --json
    heapjudge evaluate --qrels qrels.txt --run runs/ --metrics nDCG@10,AP   # one table

The report always states every convention used, the preset and why it was chosen (a TREC run
with TREC qrels: trec_eval's; a LETOR file or a top-k truth: the paper's), and in one line each
figure that trec_eval would print differently. ``--json`` prints one object whose
``"metrics"`` maps each requested name, exactly as given, to its mean over queries. Several
runs (``--run`` repeated, or a folder) give one table of means with 95% confidence intervals
(:mod:`ranking.compare.leaderboard`), the truth read once and the runs one at a time.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from app.cli.conventions import Command, UsageProblem, fail, usage_error
from app.cli.ppi import (
    AUDIT_QRELS_OPTION,
    MACHINE_QRELS_OPTION,
    PPI_LAMBDA_OPTION,
    check_pair,
    print_ppi,
)

if TYPE_CHECKING:  # ranking is imported when the command runs (fast CLI start)
    from ranking.compare.leaderboard import Leaderboard
    from ranking.evaluate import Missing
    from ranking.metrics import Conventions

app = typer.Typer()

_CONVENTION_HELP = "Overrides the preset."


def one_heap() -> None:
    """Have every thread of this process allocate from glibc's main heap (``M_ARENA_MAX`` 1;
    nothing elsewhere). The metrics run blocks of queries on threads, and glibc gives each
    thread its own heap, whose freed pages the other threads never reuse: 20-30 MB more peak
    memory on the 113 MiB evaluation of docs/performance.md#evaluating-large-files."""
    import ctypes

    try:
        ctypes.CDLL(None).mallopt(-8, 1)  # M_ARENA_MAX (malloc.h); the process's own symbols
    except (OSError, AttributeError):  # not glibc: its allocator decides
        return


def _parse_empty(value: str) -> Any:
    if value in ("0", "1"):
        return int(value)
    if value == "skip":
        return "skip"
    raise UsageProblem(f"--empty must be 0, 1 or skip, got {value!r}")


def _parse_r_max(value: str) -> Any:
    if value == "query":
        return "query"
    try:
        number = float(value)
    except ValueError:
        raise UsageProblem(f"--r-max must be 'query' or a number, got {value!r}") from None
    return int(number) if number.is_integer() else number


def _read_scores(path: Path, n_rows: int) -> list[float]:
    """One score per line (RankLib/LightGBM prediction files); RankLib's 'qid idx score'
    three-column form is accepted too (last column)."""
    scores: list[float] = []
    try:
        content = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    for lineno, raw in enumerate(content.split("\n"), start=1):
        text = raw.strip()
        if not text:
            continue
        try:
            value = float(text.split()[-1])
        except ValueError:
            raise ValueError(f"{path}:{lineno}: score {text!r} is not a number") from None
        if math.isnan(value):
            raise ValueError(f"{path}:{lineno}: score is NaN")
        scores.append(value)
    if len(scores) != n_rows:
        raise ValueError(f"{path}: {len(scores)} scores for {n_rows} rows of the LETOR file")
    return scores


def run_evaluate(
    *,
    qrels: Path | None,
    topk: Path | None,
    run: Path | None,
    letor: Path | None,
    scores: Path | None,
    metrics: str,
    preset: str | None,
    overrides: dict[str, Any],
    missing: str,
    qrels_format: str = "auto",
    grade_map: str | None = None,
    human_decided: bool = False,
) -> Any:
    """Load the inputs and return a :class:`ranking.evaluate.EvaluationReport`;
    ``human_decided``: against the human-decided part of a top-k truth
    (:func:`ranking.compare.circular.human_decided_truth`).

    Raises :class:`~app.cli.conventions.UsageProblem` for options that are wrong or do
    not go together, ValueError (with file and line where it applies) on bad input files.
    """
    from ranking.evaluate import evaluate, evaluate_columns

    names = metric_names(metrics)
    chosen, reason = default_preset(preset, letor is None, topk is not None)
    conv, modified = _conventions(names, chosen, overrides)
    missing_mode = _check_inputs(names, missing, qrels, topk, run, letor, scores)
    the_run, truth_qrels, qrels_read = _read_run_and_qrels(
        qrels, topk is not None, run, letor, scores, qrels_format, grade_map
    )
    if run is not None and qrels is not None:
        report = evaluate_columns(
            the_run,
            truth_qrels,
            metrics=names,
            conventions=conv,
            missing=missing_mode,
            trec_eval_check=True,
        )
    else:
        from ranking.compare.circular import human_decided_truth
        from ranking.io.topk import read_topk_jsonl

        truths = read_topk_jsonl(topk) if topk is not None else None
        if truths is not None and human_decided:
            truths = [human_decided_truth(t) for t in truths]
        report = evaluate(
            the_run,
            qrels=truth_qrels,
            topk=truths,
            metrics=names,
            conventions=conv,
            missing=missing_mode,
            trec_eval_check=truth_qrels is not None,
        )
    report.preset = f"{chosen} (modified)" if modified else chosen
    report.preset_reason = reason
    report.qrels_read = qrels_read
    return report


def metric_names(metrics: str) -> list[str]:
    """The comma list of ``--metrics``, split where a comma is not inside parentheses
    (ir-measures names take parameters: ``P(rel=2)@10``)."""
    names, depth, start = [], 0, 0
    for i, char in enumerate(metrics + ","):
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            names.append(metrics[start:i].strip())
            start = i + 1
    return [n for n in names if n]


def default_preset(preset: str | None, trec_run: bool, topk: bool) -> tuple[str, str | None]:
    """The preset given, or the one that fits the inputs and why
    (:func:`ranking.metrics.default_preset`)."""
    from ranking import metrics as M

    if preset is not None:
        return preset, None
    return M.default_preset("trec" if trec_run else "letor", "topk" if topk else "qrels")


def run_leaderboard(
    *,
    qrels: Path | None,
    topk: Path | None,
    runs: list[Path],
    metrics: str,
    preset: str | None,
    overrides: dict[str, Any],
    missing: str,
    qrels_format: str = "auto",
    grade_map: str | None = None,
    interval: str = "t",
) -> Leaderboard:
    """Score several runs (files, or folders of them) against one truth read once."""
    from ranking.compare.leaderboard import INTERVALS, leaderboard, run_files, score_runs

    names = metric_names(metrics)
    chosen, reason = default_preset(preset, True, topk is not None)
    conv, modified = _conventions(names, chosen, overrides)
    missing_mode = _check_inputs(names, missing, qrels, topk, runs[0], None, None)
    if interval not in INTERVALS:
        raise UsageProblem(f"--interval must be one of {', '.join(INTERVALS)}, got {interval!r}")
    truth, qrels_read = read_truth(qrels, topk, qrels_format, grade_map)
    reports = score_runs(
        run_files(runs),
        truth,
        metrics=names,
        conventions=conv,
        missing=missing_mode,
        trec_eval_check=truth.kind == "qrels",
    )
    board = leaderboard(reports, interval=interval)
    board.preset = f"{chosen} (modified)" if modified else chosen
    board.preset_reason = reason
    board.qrels_read = qrels_read
    return board


def read_truth(
    qrels: Path | None, topk: Path | None, qrels_format: str, grade_map: str | None
) -> tuple[Any, str | None]:
    """The truth (:class:`ranking.compare.leaderboard.Truth`), read once, and how the qrels
    file was read."""
    from ranking.compare.leaderboard import Truth
    from ranking.io.trec import parse_grade_map

    try:
        mapping = parse_grade_map(grade_map) if grade_map else None
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    if topk is not None:
        return Truth.read(topk, "topk"), None
    assert qrels is not None
    truth = Truth.read(qrels, "qrels", layout=qrels_format, grade_map=mapping)
    assert truth.qrels is not None and truth.qrels.layout is not None
    read = truth.qrels.layout.describe() + (f"; grade map {mapping.name}" if mapping else "")
    return truth, read


def _conventions(
    names: list[str], preset: str, overrides: dict[str, Any]
) -> tuple[Conventions, bool]:
    """The metric conventions: the preset with the given overrides, and whether any was
    given. Unknown metric names fail here, before any file is read."""
    from ranking import metrics as M

    if not names:
        raise UsageProblem("--metrics is empty")
    try:
        for name in names:
            M.parse_metric(name)
        conv = M.preset(preset)
        changes = {k: v for k, v in overrides.items() if v is not None}
        if changes:
            conv = conv.replace(**changes)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    return conv, bool(changes)


def _check_inputs(
    names: list[str],
    missing: str,
    qrels: Path | None,
    topk: Path | None,
    run: Path | None,
    letor: Path | None,
    scores: Path | None,
) -> Missing:
    """Check that the input files given go together (a :class:`UsageProblem` otherwise)."""
    from ranking import metrics as M

    missing_modes: tuple[Missing, ...] = ("ignore", "zero")
    if missing not in missing_modes:
        raise UsageProblem(f"--missing must be ignore or zero, got {missing!r}")
    kappa = [n for n in names if M.parse_metric(n)[0].startswith("kappa")]
    if kappa and topk is None:  # before reading the files; ranking.evaluate checks it too
        raise UsageProblem(f"{', '.join(kappa)} need a top-k ground truth (--topk), not qrels")
    if (run is None) == (letor is None):
        raise UsageProblem("give exactly one of --run FILE or --letor FILE (with --scores FILE)")
    if qrels is not None and topk is not None:
        raise UsageProblem("give at most one truth: --qrels or --topk")
    if letor is not None and scores is None:
        raise UsageProblem("--letor needs --scores FILE (one score per row)")
    if run is not None and scores is not None:
        raise UsageProblem("--scores goes with --letor, not with --run")
    if run is not None and qrels is None and topk is None:
        raise UsageProblem("give the truth: --qrels FILE or --topk FILE.jsonl")
    return missing


def _read_run_and_qrels(
    qrels: Path | None,
    with_topk: bool,
    run: Path | None,
    letor: Path | None,
    scores: Path | None,
    qrels_format: str,
    grade_map: str | None,
) -> tuple[Any, Any, str | None]:
    """The run (a TREC run, or a LETOR file scored by ``scores``), the graded truth (the qrels
    file, else the LETOR file's labels unless a top-k truth is given) and how the qrels file
    was read."""
    from ranking.evaluate import qrels_from_letor, run_from_letor
    from ranking.io.letor import read_letor
    from ranking.io.trec import parse_grade_map, read_qrels_detailed, read_run
    from ranking.io.trec_fast import read_qrels_columns, read_run_columns

    truth_qrels: Any = None
    if letor is not None:
        assert scores is not None
        data = read_letor(letor)
        the_run: Any = run_from_letor(data, _read_scores(scores, data.n_rows))
        if qrels is None and not with_topk:
            truth_qrels = qrels_from_letor(data)
    else:
        assert run is not None
        # TREC run + qrels: the columnar path (docs/metrics.md#large-files)
        the_run = read_run_columns(run) if qrels is not None else read_run(run)
    try:
        mapping = parse_grade_map(grade_map) if grade_map else None
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    if qrels is None:
        return the_run, truth_qrels, None
    if run is not None:
        truth_qrels = read_qrels_columns(qrels, layout=qrels_format, grade_map=mapping)
        layout = truth_qrels.layout
    else:  # with --letor
        truth_qrels, layout = read_qrels_detailed(qrels, layout=qrels_format, grade_map=mapping)
    return (
        the_run,
        truth_qrels,
        layout.describe() + (f"; grade map {mapping.name}" if mapping else ""),
    )


# The inputs: a run (a TREC run, or a LETOR file and its scores) and a truth (qrels or top-k).
QRELS_OPTION = typer.Option(
    None, "--qrels", exists=True, dir_okay=False, help="TREC qrels (graded truth)."
)
TOPK_OPTION = typer.Option(
    None,
    "--topk",
    exists=True,
    dir_okay=False,
    help="Top-k ground truth JSONL (query_id, k, top, rest).",
)
RUN_OPTION = typer.Option(
    None,
    "--run",
    exists=True,
    metavar="FILE",
    help="TREC run file (rank ignored); repeat it, or give a folder, for one table of runs.",
)
LETOR_OPTION = typer.Option(
    None,
    "--letor",
    exists=True,
    dir_okay=False,
    help="LETOR file whose rows --scores scores (labels = truth).",
)
SCORES_OPTION = typer.Option(
    None, "--scores", exists=True, dir_okay=False, help="One score per LETOR row."
)

# The guard against circular evaluation (app/cli/evaluate_guard.py).
JUDGE_SCORES_OPTION = typer.Option(
    None,
    "--judge-scores",
    exists=True,
    dir_okay=False,
    metavar="RUN",
    help="The machine judge's scores as a TREC run (e.g. from 'heapjudge admin bm25'): warn "
    "when the run's per-query order correlates with it (the run may be the judge).",
)
JUDGE_TAU_OPTION = typer.Option(
    0.9,
    "--judge-tau-threshold",
    help="Mean Kendall tau (over queries) between the run and --judge-scores above which "
    "evaluate warns.",
)
HUMAN_QRELS_OPTION = typer.Option(
    None,
    "--human-qrels",
    exists=True,
    dir_okay=False,
    help="Qrels from people's answers only: their figures beside those of --qrels.",
)

METRICS_OPTION = typer.Option(
    "ndcg@10",
    "--metrics",
    help="Comma list: ndcg@k, dcg@k, err[@k], kappa-ndcg@k, kappa-err, p@k, recall@k, "
    "map, mrr, compat[@p=P]; or ir-measures names (nDCG@10, AP, P(rel=2)@10, R@100, RR, "
    "ERR@20, Compat(p=0.95)) with their tools' conventions; or trec_eval's measures "
    "(Bpref, infAP, Rprec, Success@10, RBP(p=0.8), IPrec@0.5, SetF, success_5, "
    "iprec_at_recall_0.50, 11pt_avg, ...) computed by trec-eval itself.",
)
PRESET_OPTION = typer.Option(
    None,
    "--preset",
    help="paper, trec_eval, gdeval, lightgbm, letor4, ranx (default: trec_eval for a TREC "
    "run with qrels, else paper).",
)
QRELS_FORMAT_OPTION = typer.Option(
    "auto",
    "--qrels-format",
    help="auto (sniffed) | trec (qid iter doc rel) | 3col (qid doc rel) | "
    "smart-rel (qid doc 0 0.0: every listed pair relevant).",
)
GRADE_MAP_OPTION = typer.Option(
    None,
    "--grade-map",
    help="Qrels values -> grades: cranfield | threshold:T | FROM:TO,... "
    "(needed for non-integer values).",
)


@app.command("evaluate", cls=Command)
def evaluate_cmd(
    qrels: Path | None = QRELS_OPTION,
    topk: Path | None = TOPK_OPTION,
    run: list[Path] | None = RUN_OPTION,
    letor: Path | None = LETOR_OPTION,
    scores: Path | None = SCORES_OPTION,
    metrics: str = METRICS_OPTION,
    preset: str | None = PRESET_OPTION,
    gain: str | None = typer.Option(None, "--gain", help=f"exp | linear. {_CONVENTION_HELP}"),
    kappa_gain: str | None = typer.Option(None, "--kappa-gain", help="exp | linear."),
    discount: str | None = typer.Option(None, "--discount", help="log2 | letor."),
    ideal: str | None = typer.Option(None, "--ideal", help="list | qrels."),
    empty: str | None = typer.Option(None, "--empty", help="0 | 1 | skip."),
    ties: str | None = typer.Option(
        None, "--ties", help="stable | docid | pessimistic | optimistic | average."
    ),
    k_beyond: str | None = typer.Option(None, "--k-beyond", help="clip | zero."),
    r_max: str | None = typer.Option(None, "--r-max", help="query | <number> (ERR)."),
    score_precision: str | None = typer.Option(
        None, "--score-precision", help="double | single (trec_eval's C float scores)."
    ),
    missing: str = typer.Option(
        "ignore", "--missing", help="Truth queries absent from the run: ignore | zero."
    ),
    qrels_format: str = QRELS_FORMAT_OPTION,
    grade_map: str | None = GRADE_MAP_OPTION,
    per_query: bool = typer.Option(
        False, "--per-query/--no-per-query", help="Show per-query values."
    ),
    interval: str = typer.Option(
        "t", "--interval", help="Several runs: 95% intervals by t (Student) | bootstrap."
    ),
    judge_scores: Path | None = JUDGE_SCORES_OPTION,
    judge_tau_threshold: float = JUDGE_TAU_OPTION,
    human_qrels: Path | None = HUMAN_QRELS_OPTION,
    machine_qrels: Path | None = MACHINE_QRELS_OPTION,
    audit_qrels: Path | None = AUDIT_QRELS_OPTION,
    ppi_lambda: str = PPI_LAMBDA_OPTION,
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print one JSON object."),
) -> None:
    """Score runs (TREC runs, or LETOR file + scores) against qrels or top-k truth."""
    one_heap()
    try:
        if check_pair(machine_qrels, audit_qrels, qrels, topk):
            names = metric_names(metrics)
            print_ppi(machine_qrels, audit_qrels, run, names, preset, ppi_lambda, as_json)
            return
        overrides = _overrides(
            gain, kappa_gain, discount, ideal, empty, ties, k_beyond, r_max, score_precision
        )
        inputs: dict[str, Any] = {
            "qrels": qrels,
            "topk": topk,
            "metrics": metrics,
            "preset": preset,
            "overrides": overrides,
            "missing": missing,
            "qrels_format": qrels_format,
            "grade_map": grade_map,
        }
        guard_options = (judge_scores, human_qrels, judge_tau_threshold)
        if run and (len(run) > 1 or run[0].is_dir()):
            if letor is not None or scores is not None:
                raise UsageProblem("--letor scores one run; several --run files go alone")
            if judge_scores is not None or human_qrels is not None:
                raise UsageProblem("--judge-scores and --human-qrels take one run at a time")
            board = run_leaderboard(runs=run, interval=interval, **inputs)
            typer.echo(json.dumps(board.to_dict()) if as_json else board.format_text())
            _board_warnings(topk, as_json=as_json)
            return
        report, guard = _one_run(run[0] if run else None, letor, scores, inputs, guard_options)
    except UsageProblem as exc:
        usage_error(str(exc))
    except (ValueError, OSError) as exc:  # an input file that cannot be read or parsed
        fail(str(exc))
    _print_report(report, as_json=as_json, per_query=per_query, guard=guard)


def _overrides(
    gain: str | None,
    kappa_gain: str | None,
    discount: str | None,
    ideal: str | None,
    empty: str | None,
    ties: str | None,
    k_beyond: str | None,
    r_max: str | None,
    score_precision: str | None,
) -> dict[str, Any]:
    """The convention options given on the command line (None: the preset's)."""
    return {
        "gain": gain,
        "kappa_gain": kappa_gain,
        "discount": discount,
        "ideal": ideal,
        "empty": None if empty is None else _parse_empty(empty),
        "ties": ties,
        "k_beyond": k_beyond,
        "r_max": None if r_max is None else _parse_r_max(r_max),
        "score_precision": score_precision,
    }


def _board_warnings(topk: Path | None, *, as_json: bool) -> None:
    """Several runs against a top-k truth a machine helped make: say so (text: after the
    table; ``--json``: on stderr); the human-decided part is scored one run at a time."""
    from app.cli.evaluate_guard import guard_warnings, topk_guard

    guard = topk_guard(topk) if topk is not None else {}
    for line in guard_warnings(guard):
        line += "; score one run at a time for the human-decided part"
        if as_json:
            print(f"warning: {line}", file=sys.stderr)
        else:
            typer.echo(f"WARNING: {line}")


def _one_run(
    run: Path | None,
    letor: Path | None,
    scores: Path | None,
    inputs: dict[str, Any],
    guard_options: tuple[Path | None, Path | None, float],
) -> tuple[Any, dict[str, Any] | None]:
    """The report of one run and the guard's section (:mod:`app.cli.evaluate_guard`)."""
    from app.cli.evaluate_guard import machine_guard

    report = run_evaluate(run=run, letor=letor, scores=scores, **inputs)
    judge_scores, human_qrels, threshold = guard_options
    guard = machine_guard(
        inputs=inputs,
        run=run,
        rerun=functools.partial(run_evaluate, run=run, letor=letor, scores=scores, **inputs),
        judge_scores=judge_scores,
        human_qrels=human_qrels,
        threshold=threshold,
    )
    return report, guard


def _print_report(
    report: Any, *, as_json: bool, per_query: bool, guard: dict[str, Any] | None = None
) -> None:
    """The report as text, or as one JSON object (per-query values always in it, key
    ``per_query``) with a warning on stderr for run queries without truth. The guard's
    section (labels a machine helped make) follows the text, or is the JSON's key
    ``machine_guard`` with its warnings on stderr."""
    from app.cli.evaluate_guard import format_guard, guard_warnings

    if not as_json:
        typer.echo(report.format_text(per_query=per_query))
        if guard:
            typer.echo(format_guard(guard))
        return
    typer.echo(json.dumps({**report.to_dict(), "machine_guard": guard}, ensure_ascii=False))
    for line in guard_warnings(guard or {}):
        print(f"warning: {line}", file=sys.stderr)
    if report.unknown_queries:
        print(
            f"warning: {len(report.unknown_queries)} run queries have no truth "
            f"(see unknown_queries)",
            file=sys.stderr,
        )
