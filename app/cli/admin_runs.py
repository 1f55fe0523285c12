"""CLI commands ``heapjudge admin runs ...``: TREC runs stored on a collection (upload, list,
delete), their leaderboard under a label set and the agreement of two label sets on the
system ordering (the same services as the REST API and the runs page;
docs/campaigns.md#runs-on-a-collection).

    heapjudge admin runs upload cranfield bm25.txt ql.txt
    heapjudge admin runs leaderboard cranfield qrels --metric AP --test randomization
    heapjudge admin runs label-sets cranfield
    heapjudge admin runs agreement cranfield qrels topk --metric ndcg@10
    heapjudge admin runs agreement cranfield topk topk-human --metric kappa-ndcg@10
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from app.cli.conventions import Command, Group
from app.cli.database import DB_OPTION, collection_id, run_service

if TYPE_CHECKING:
    from app.kernel.db import Database

app = typer.Typer(cls=Group, help="Runs stored on a collection: upload, list, delete, score.")

METRIC_OPTION = typer.Option("ndcg@10", "--metric", help="One metric (as evaluate).")
PRESET_OPTION = typer.Option(
    None, "--preset", help="Conventions (default: trec_eval with qrels, paper with top-k)."
)
TEST_OPTION = typer.Option("t", "--test", help="t | randomization | bootstrap.")
CORRECTION_OPTION = typer.Option("holm", "--correction", help="holm | bonferroni | none.")
ALPHA_OPTION = typer.Option(0.05, "--alpha", help="Significance level.")
JSON_OPTION = typer.Option(False, "--json/--no-json", help="Print one JSON object.")


@app.command("upload", cls=Command)
def upload_cmd(
    collection: str = typer.Argument(..., help="Collection name or id."),
    file: list[Path] = typer.Argument(
        ..., exists=True, dir_okay=False, help="TREC run files (each stored as one run)."
    ),
    name: str | None = typer.Option(
        None, "--name", help="The run's name (one file only; default: the file name)."
    ),
    ignore_unknown_queries: bool = typer.Option(
        False,
        "--ignore-unknown-queries/--no-ignore-unknown-queries",
        help="Leave out queries the collection lacks (default: refuse the file).",
    ),
    database_url: str | None = DB_OPTION,
) -> None:
    """Store TREC runs on a collection, all or nothing (a bad line: file:line and exit 1)."""
    from app.collections.uploads import UploadedFile
    from app.runs.service import upload_runs

    def go(db: Database) -> Any:
        return upload_runs(
            db=db,
            collection_id=collection_id(db, collection),
            files=[UploadedFile(p.name, p) for p in file],
            name=name,
            ignore_unknown_queries=ignore_unknown_queries,
            max_bytes=0,
        )

    report = run_service(database_url, go)
    for up in report.runs:
        run = up.run
        typer.echo(f"{run.name}: {run.queries} queries, {run.entries} entries (tag {run.tag})")
        if up.unknown_queries:
            typer.echo(f"  left out {len(up.unknown_queries)} unknown queries")
        if up.documents_outside:
            typer.echo(f"  {up.documents_outside} entries name documents outside the collection")


@app.command("list", cls=Command)
def list_cmd(
    collection: str = typer.Argument(..., help="Collection name or id."),
    as_json: bool = JSON_OPTION,
    database_url: str | None = DB_OPTION,
) -> None:
    """The collection's runs, by upload order."""
    from dataclasses import asdict

    from app.runs.service import list_runs

    found = run_service(
        database_url, lambda db: list_runs(db=db, collection_id=collection_id(db, collection))
    )
    if as_json:
        typer.echo(json.dumps([asdict(r) for r in found], ensure_ascii=False))
        return
    for r in found:
        by = r.uploaded_by or "cli"
        typer.echo(f"{r.id}\t{r.name}\t{r.queries} queries\t{r.entries} entries\t{by}")


@app.command("label-sets", cls=Command)
def label_sets_cmd(
    collection: str = typer.Argument(..., help="Collection name or id."),
    as_json: bool = JSON_OPTION,
    database_url: str | None = DB_OPTION,
) -> None:
    """The collection's label sets (the truths its runs are scored against): key, queries
    labelled (0: not available yet), title; ``topk`` is titled hybrid where a machine
    answered, ``topk-human`` keeps the human-decided labels only."""
    from dataclasses import asdict

    from app.runs.labelsets import label_sets

    found = run_service(
        database_url, lambda db: label_sets(db=db, collection_id=collection_id(db, collection))
    )
    if as_json:
        rows = [{**asdict(ls), "available": ls.available} for ls in found]
        typer.echo(json.dumps(rows, ensure_ascii=False))
        return
    for ls in found:
        typer.echo(f"{ls.key}\t{ls.queries} queries\t{ls.title}")


@app.command("delete", cls=Command)
def delete_cmd(
    collection: str = typer.Argument(..., help="Collection name or id."),
    run: str = typer.Argument(..., help="The run's name."),
    database_url: str | None = DB_OPTION,
) -> None:
    """Delete a run and its entries."""
    from app.runs.service import delete_run

    gone = run_service(
        database_url,
        lambda db: delete_run(db=db, collection_id=collection_id(db, collection), run=run),
    )
    typer.echo(f"deleted run {gone.name} ({gone.queries} queries)")


def _num(x: float | None) -> str:
    return "undefined" if x is None else f"{x:.4f}"


def _scoring(
    label_set: str, metric: str, preset: str | None, test: str, correction: str, alpha: float
) -> Any:
    from app.runs.evaluation import Scoring

    return Scoring(label_set, metric, preset, test, correction, alpha)


def leaderboard_text(board: dict[str, Any]) -> str:
    """The leaderboard, then the matrix's significant pairs, then the conventions."""
    width = max([len(r["run"]) for r in board["runs"]] + [3])
    lines = [f"{board['metric']} on {board['label_set']['title']} ({board['n_queries']} queries)"]
    for r in board["runs"]:
        cell = "skipped" if r["mean"] is None else f"{r['mean']:.4f}"
        if r["low"] is not None:
            cell += f" [{r['low']:.4f}, {r['high']:.4f}]"
        lines.append(f"{r['rank']:>3}. {r['run'].ljust(width)}  {cell}")
    lines.append(board["interval"])
    matrix = board["matrix"]
    if matrix:
        for p in matrix["pairs"]:
            mark = " *" if p["significant"] else ""
            lines.append(
                f"{p['system_a']} − {p['system_b']}: {p['difference']:+.4f}, p = "
                f"{p['p_value']:.4f}, adjusted {p['p_adjusted']:.4f}{mark}"
            )
        lines.append(
            f"test {matrix['test']}, correction {matrix['correction']}, * = adjusted p ≤ "
            f"{matrix['alpha']}"
        )
    elif board.get("matrix_note"):
        lines.append(f"significance: {board['matrix_note']}")
    lines.append(f"conventions: preset {board['preset']}")
    if board["preset_reason"]:
        lines.append(f"preset chosen because: {board['preset_reason']}")
    return "\n".join(lines)


@app.command("leaderboard", cls=Command)
def leaderboard_cmd(
    collection: str = typer.Argument(..., help="Collection name or id."),
    label_set: str = typer.Argument(
        "qrels", help="Label set key: qrels | topk | topk-human | grades."
    ),
    metric: str = METRIC_OPTION,
    preset: str | None = PRESET_OPTION,
    test: str = TEST_OPTION,
    correction: str = CORRECTION_OPTION,
    alpha: float = ALPHA_OPTION,
    as_json: bool = JSON_OPTION,
    database_url: str | None = DB_OPTION,
) -> None:
    """Every stored run's mean and 95% interval, and every pair's significance test."""
    from app.runs.evaluation import run_leaderboard

    scoring = _scoring(label_set, metric, preset, test, correction, alpha)
    board = run_service(
        database_url,
        lambda db: run_leaderboard(
            db=db, collection_id=collection_id(db, collection), scoring=scoring
        ),
    )
    typer.echo(json.dumps(board, ensure_ascii=False) if as_json else leaderboard_text(board))


@app.command("agreement", cls=Command)
def agreement_cmd(
    collection: str = typer.Argument(..., help="Collection name or id."),
    label_set: str = typer.Argument(..., help="The reference label set's key."),
    against: str = typer.Argument(..., help="The other label set's key."),
    metric: str = METRIC_OPTION,
    preset: str | None = PRESET_OPTION,
    test: str = TEST_OPTION,
    correction: str = CORRECTION_OPTION,
    alpha: float = ALPHA_OPTION,
    as_json: bool = JSON_OPTION,
    database_url: str | None = DB_OPTION,
) -> None:
    """Two label sets' orderings of the stored runs: Kendall's τ, τ_AP, significant swaps."""
    from app.runs.evaluation import label_set_agreement

    scoring = _scoring(label_set, metric, preset, test, correction, alpha)
    got = run_service(
        database_url,
        lambda db: label_set_agreement(
            db=db, collection_id=collection_id(db, collection), scoring=scoring, against=against
        ),
    )
    if as_json:
        typer.echo(json.dumps(got, ensure_ascii=False))
        return
    a, b = got["label_set"]["title"], got["against"]["title"]
    typer.echo(f"ordering by {a}: {' > '.join(got['ordering'])}")
    typer.echo(f"ordering by {b}: {' > '.join(got['ordering_against'])}")
    typer.echo(
        f"Kendall's τ = {_num(got['kendall_tau'])}, τ_AP = {_num(got['tau_ap'])}, significant "
        f"swaps: {got['significant_swaps']} of the {got['significant_in_truth']} pairs {a} "
        "separates"
    )
    typer.echo(
        f"pairs significant under one label set only: {got['significant_in_one_only']} "
        f"({b} separates {got['significant_in_against']})"
    )
