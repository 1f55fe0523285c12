"""CLI commands: ``heapjudge analyze`` (Tables 1–3 and the χ² tests of a collection) and
``heapjudge simulate-study`` (the paper's user study, simulated end to end through the service).

The report itself is built by :mod:`app.analysis.service`; this module only renders it in
the paper's wording (Niu et al., SIGIR 2012, §4.1).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from app.cli.conventions import Command, fail, usage_error
from app.cli.database import DB_OPTION, database
from app.cli.simulate import PAIR_CACHE_OPTION

if TYPE_CHECKING:
    from app.analysis.study import StudyConfig
    from labeling.analysis.agreement import Mode

app = typer.Typer()

ROW_NAMES = ("A ≻ B", "A ≺ B", "A ∼ B")


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3g}"


def _chi2_phrase(test: dict[str, Any] | None) -> str:
    if test is None:
        return "χ² undefined (a row or column of the 2×2 table is empty)"
    return f"χ² = {test['statistic']:.1f}, df = {test['df']}, {_p(test['p_value'])}"


def _minutes(seconds: float | None) -> float | None:
    return None if seconds is None else seconds / 60


def format_table1(report: dict[str, Any]) -> list[str]:
    """Table 1 (time efficiency) with spreads, one row per method; re-asks on their own line."""
    names = report["methods"]
    lines = [
        "Table 1: Time efficiency of top-k labeling and five-grade judgment",
        f"{'Method':<22}{'Time/judgment (s)':>19}{'Time/query (min)':>18}"
        f"{'Complexity':>13}{'Judgments/query':>17}",
    ]
    rows = [(names[m], report["time"][m]) for m in ("topk", "graded") if m in report["time"]]
    for method in ("topk", "graded"):
        if method not in report["time"]:
            lines.append(f"{names[method]:<22}{'no judgments':>19}")
            continue
        row = report["time"][method]
        tpj, tpq, jpq = row["time_per_judgment"], row["time_per_query"], row["judgments_per_query"]
        lines.append(
            f"{names[method]:<22}{_num(tpj['mean']):>19}{_num(_minutes(tpq['mean'])):>18}"
            f"{row['complexity']:>13}{_num(jpq['mean'], 1):>17}"
        )
    lines.append("  spread: median [IQR]")
    for name, row in rows:
        tpj, tpq, jpq = row["time_per_judgment"], row["time_per_query"], row["judgments_per_query"]
        lines.append(
            f"  {name:<20} {_num(tpj['median'])} s [{_num(tpj['iqr'])}], "
            f"{_num(_minutes(tpq['median']))} min [{_num(_minutes(tpq['iqr']))}], "
            f"{_num(jpq['median'], 1)} judgments [{_num(jpq['iqr'], 1)}]; "
            f"{row['tasks']} finished sessions, {row['judgments']} judgments"
        )
    for name, row in rows:
        if row.get("reasks"):
            lines.append(
                f"  {name:<20} plus {row['reasks']} re-asks (not in the figures above): "
                f"{_num(row['reasks_per_query']['mean'], 1)} per query, "
                f"{_num(_minutes(row['reask_time_per_query']['mean']))} min per query"
            )
    return lines


def format_agreement(table: dict[str, Any], title: str) -> list[str]:
    """A Table 2/3 style matrix: P(another assessor says X2 | one assessor said X1)."""
    lines = [title, f"{'':<10}" + "".join(f"{name:>10}" for name in ROW_NAMES)]
    for name, row, counts in zip(ROW_NAMES, table["conditional"], table["symmetric"], strict=True):
        cells = "".join(f"{'—' if x is None else f'{x:.3f}':>10}" for x in row)
        lines.append(f"{name:<10}{cells}   (n = {sum(counts)})")
    lines.append(
        f"  {table['instances']} co-judged pair instances; agreement {_pct(table['agreement'])}"
        f", ignoring ties {_pct(table['agreement_no_tie'])} of {table['instances_no_tie']}"
        f", Cohen's κ {_num(table['kappa'], 3)}"
    )
    return lines


def format_report(report: dict[str, Any]) -> str:
    """The whole analysis as text: Tables 1–3, the χ² sentences and the extra checks."""
    topk = report["agreement"]["topk"]["pooled"]
    graded = report["agreement"]["graded"]["pooled"]
    chi = report["chi2"]["pearson"]
    yates = report["chi2"]["yates"]
    title = report.get("collection", {}).get("name")
    lines: list[str] = []
    if title is not None:
        lines += [f"Collection {title!r}: agreement mode {report['mode']!r}", ""]
    lines += [*format_table1(report), ""]
    source = report["agreement"]["topk"]["relations_from"]
    lines += format_agreement(
        topk, f"Table 2: Assessor agreement for preference judgments in top-k labeling ({source})"
    )
    lines.append("")
    lines += format_agreement(
        graded, "Table 3: Assessor agreement for inferred preferences from five-grade judgments"
    )
    lines += [
        "",
        f"The overall agreement is {_pct(topk['agreement'])} for top-k labeling versus "
        f"{_pct(graded['agreement'])} for five-grade judgment ({_chi2_phrase(chi['overall'])}).",
        f"Ignoring ties, the agreement is {_pct(topk['agreement_no_tie'])} versus "
        f"{_pct(graded['agreement_no_tie'])} ({_chi2_phrase(chi['no_tie'])}).",
        f"  with Yates' correction: {_chi2_phrase(yates['overall'])}; "
        f"ignoring ties {_chi2_phrase(yates['no_tie'])}",
    ]
    # (report key, heading, one assessor's row as text)
    sections: tuple[tuple[str, str, Callable[[dict[str, Any]], str]], ...] = (
        (
            "position_bias",
            "Position bias (share of 'left' wins; two-sided binomial test vs 1/2):",
            lambda b: (
                f"{_pct(b['share_left']):>7} of {b['left'] + b['right']:>5}  {_p(b['p_value'])}"
            ),
        ),
        (
            "self_consistency",
            "Self-consistency (same pair judged twice by the same assessor):",
            lambda c: (
                f"{c['consistent']}/{c['repeats']} consistent"
                f" (undone and re-judged {c['undo_consistent']}/{c['undo_repeats']},"
                f" sides swapped {c['swapped_consistent']}/{c['swapped_repeats']},"
                f" re-asks {c['reask_consistent']}/{c['reask_repeats']})"
            ),
        ),
        (
            "transitivity",
            "Transitivity (triples whose three pairs were compared directly):",
            lambda t: f"{t['intransitive']}/{t['triples']} intransitive ({_pct(t['rate'])})",
        ),
    )
    for key, heading, describe in sections:
        if report[key]:
            lines += ["", heading]
            lines += [f"  {row['assessor']:<16} {describe(row)}" for row in report[key]]
    lines += format_machine(report.get("machine_agreement") or [])
    for warning in report.get("warnings", []):
        lines.append(f"warning: {warning}")
    return "\n".join(lines)


def format_machine(rows: list[dict[str, Any]]) -> list[str]:
    """People against the machine judges (docs/machine-judges.md#the-service)."""
    if not rows:
        return []
    lines = ["", "People against the machine (beside people against people above):"]
    for row in rows:
        lines.append(f"  {row['judge']}: {row['tasks']} tasks, {row['machine_answers']} answers")
        for key, what in (
            ("opinion_vs_people", "its opinion on the pairs people answered"),
            ("answers_vs_people", "its answers against other tasks' people"),
        ):
            b = row[key]
            kappa = "n/a" if b["kappa"] is None else f"{b['kappa']:.3f}"
            agreement = "n/a" if b["agreement"] is None else _pct(b["agreement"])
            lines.append(f"    {what}: {b['agree']}/{b['pairs']} ({agreement}), κ {kappa}")
    return lines


def _json_default(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    raise TypeError(f"not JSON serialisable: {value!r}")


@app.command("analyze", cls=Command)
def analyze(
    collection: str = typer.Argument(..., help="Collection name (or numeric id)."),
    mode: str = typer.Option(
        "direct",
        "--mode",
        help="Top-k relations: 'direct' (pairs both assessors compared) or 'inferred' "
        "(implied by each assessor's top-k ground truth).",
    ),
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print the whole report as JSON."),
    database_url: str | None = DB_OPTION,
) -> None:
    """Print Tables 1–3 of the paper and the χ² tests for a collection's judgments."""
    from app.analysis.service import collection_analysis, find_collection_id
    from app.kernel.errors import DomainError
    from labeling.analysis.agreement import MODES

    if mode not in MODES:
        usage_error(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")
    with database(database_url) as db:
        try:
            cid = find_collection_id(collection, db=db)
            report = collection_analysis(cid, db=db, mode=mode)
        except DomainError as err:
            fail(str(err.detail))
    _print_report(report, as_json=as_json)


def _print_report(report: dict[str, Any], *, as_json: bool, preface: str | None = None) -> None:
    """The report as JSON, or as text (:func:`format_report`) after ``preface``."""
    if as_json:
        typer.echo(json.dumps(report, indent=2, ensure_ascii=False, default=_json_default))
        return
    if preface is not None:
        typer.echo(preface)
    typer.echo(format_report(report))


# Two of ``simulate-study``'s options: the re-ask share of its top-k tasks and a real corpus.
REASK_FRACTION_OPTION = typer.Option(
    0.0,
    "--reask-fraction",
    min=0.0,
    max=0.5,
    help="Top-k task option: re-ask this share of the pairs later with the sides swapped "
    "(self-consistency; reported apart from the protocol's judgments).",
)
CORPUS_OPTION = typer.Option(
    None,
    "--corpus",
    help="A Cranfield directory (e.g. ../shared/data/cranfield): real queries and documents"
    " whose graded qrels drive the simulated assessors, instead of synthetic ones.",
)


@app.command("simulate-study", cls=Command)
def simulate_study(
    assessors: int = typer.Option(
        5, "--n-assessors", min=4, help="Number of simulated assessors (two disjoint assignments)."
    ),
    queries: int = typer.Option(
        50, "--n-queries", min=1, help="Number of queries (one fold per assessor; >= assessors)."
    ),
    docs: int = typer.Option(50, "--n", min=2, help="Documents per query (as in simulate)."),
    k: int = typer.Option(10, help="k of the top-k tasks."),
    seed: int = typer.Option(0, help="Seed of the whole simulation."),
    pair_noise: float = typer.Option(
        0.35,
        "--pair-sd",
        help="σ of the Thurstone noise of one pairwise judgment (latent score units).",
    ),
    grade_flip: float = typer.Option(
        0.35, help="Probability that a grade is moved one step (grading noise)."
    ),
    assessor_sd: float = typer.Option(
        0.35, help="Spread of each assessor's personal view of a document's relevance."
    ),
    undo_rate: float = typer.Option(0.01, help="Share of judgments first slipped, then undone."),
    pair_cache: bool = PAIR_CACHE_OPTION,
    reask_fraction: float = REASK_FRACTION_OPTION,
    strategy: str = typer.Option(
        "heap",
        "--strategy",
        help="Judging strategy of the top-k tasks (heapjudge simulate --compare lists them).",
    ),
    mode: str = typer.Option("direct", "--mode", help="Top-k relations: direct or inferred."),
    corpus: str | None = CORPUS_OPTION,
    database: str | None = typer.Option(
        None,
        "--database",
        help="Write the study to this new SQLite file and keep it (default: a temporary one).",
    ),
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print the report as JSON."),
) -> None:
    """Simulate the paper's user study end to end through the service layer, then analyse it.

    5 assessors, 50 queries x 50 documents, the fold rotation with the shift-by-2 second
    assignment, top-k (k=10) and five-grade tasks, simulated assessors whose pairwise noise is
    lower than their grading noise and whose times follow the paper's.
    """
    from app.analysis.study import StudyConfig
    from labeling.analysis.agreement import MODES

    if mode not in MODES:
        usage_error(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")
    config = StudyConfig(
        assessors=assessors,
        queries=queries,
        docs=docs,
        k=k,
        seed=seed,
        pair_noise=pair_noise,
        grade_flip=grade_flip,
        assessor_sd=assessor_sd,
        undo_rate=undo_rate,
        pair_cache=pair_cache,
        reask_fraction=reask_fraction,
        strategy=strategy,
        corpus=corpus,
    )
    report = _run_study(config, database, mode)
    run = report["simulation"]
    preface = (
        f"{run['tasks']} tasks, {run['judgments']} judgments "
        f"({run['undone']} slips undone) through the service layer.\n"
    )
    _print_report(report, as_json=as_json, preface=preface)


def _run_study(config: StudyConfig, database: str | None, mode: Mode) -> dict[str, Any]:
    """Run the simulated study in a new SQLite database (the file ``database``, else a temporary
    one) and analyse it: the report, with the study's configuration and counts under
    ``"simulation"``."""
    import tempfile

    import migrations
    from app.analysis.service import collection_analysis
    from app.analysis.study import run_simulated_study
    from app.kernel.db import Database
    from app.kernel.errors import DomainError
    from labeling.errors import LabelingError

    with tempfile.TemporaryDirectory(prefix="heapjudge-study-") as tmp:
        path = Path(database) if database else Path(tmp) / "study.db"
        if path.exists():
            usage_error(f"--database {path} already exists; give a new file")
        url = f"sqlite:///{path}"
        migrations.upgrade(url)
        db = Database.from_url(url)

        def progress(done: int, total: int) -> None:
            if done == total or done % max(1, total // 10) == 0:
                typer.echo(f"  {done}/{total} tasks judged", err=True)

        try:
            typer.echo(
                f"Simulating {config.assessors} assessors x {config.queries} queries x "
                f"{config.docs} documents (k = {config.k}) in {path} ...",
                err=True,
            )
            summary = run_simulated_study(db=db, config=config, progress=progress)
            report = collection_analysis(summary.collection_id, db=db, mode=mode)
        except (DomainError, LabelingError) as err:
            fail(str(getattr(err, "detail", err)))
        finally:
            db.dispose()
    report["simulation"] = {
        **{key: getattr(config, key) for key in config.__dataclass_fields__},
        "tasks": summary.tasks,
        "judgments": summary.judgments,
        "undone": summary.undone,
        "database": str(path) if database else None,
    }
    return report
