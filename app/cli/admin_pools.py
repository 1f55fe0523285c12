"""CLI command ``heapjudge admin pool``: a pool from many runs (depth-k union, Move-to-Front,
MaxMean), stored on the collection for the planner (``admin plan --pool runs --pool-id ID``),
or with ``--simulate --qrels FILE`` a simulation over existing qrels that prints the relevant
documents found per budget (docs/campaigns.md#pools-in-the-service). The runs are files
(``--runs``) or runs stored on the collection (``--stored-runs A,B`` or ``--all-stored-runs``,
``heapjudge admin runs upload``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from app.cli.conventions import Command, fail, usage_error
from app.cli.database import DB_OPTION, collection_id, run_service

if TYPE_CHECKING:
    from app.kernel.db import Database

app = typer.Typer()


def _run_files(paths: list[Path]) -> tuple[dict[str, bytes], dict[str, str]]:
    """Run name (the file name without its last suffix) → bytes, in the order given, and
    run name → the file's path (errors name it)."""
    out: dict[str, bytes] = {}
    names: dict[str, str] = {}
    for path in paths:
        name = path.stem if path.suffix else path.name
        if name in out:
            usage_error(f"two runs are named {name!r} (the file name names a run): rename one")
        out[name] = path.read_bytes()
        names[name] = str(path)
    return out, names


@app.command("pool", cls=Command)
def pool_cmd(
    collection: str = typer.Argument(..., help="Collection name or id."),
    runs: list[Path] | None = typer.Option(
        None,
        "--runs",
        exists=True,
        dir_okay=False,
        metavar="FILE",
        help="A TREC run file (repeat it).",
    ),
    stored_runs: list[str] | None = typer.Option(
        None,
        "--stored-runs",
        metavar="NAMES",
        help="Runs stored on the collection, by name, comma-separated (or repeated); run order "
        "is the order given (heapjudge admin runs list shows them).",
    ),
    all_stored: bool = typer.Option(
        False,
        "--all-stored-runs/--no-all-stored-runs",
        help="Every run stored on the collection, by upload order.",
    ),
    method: str = typer.Option(
        "depth",
        help="depth | mtf | maxmean | hedge | cal (cal: every document needs a feature vector)",
    ),
    depth: int = typer.Option(100, help="Each run's top depth documents per query."),
    budget: int | None = typer.Option(
        None,
        help="Judgments per query (default: the whole depth pool); with --allocation campaign "
        "the documents of all the queries together.",
    ),
    name: str | None = typer.Option(
        None, "--pool-name", help="Pool name (default METHOD-DEPTH[-bBUDGET])."
    ),
    feedback: bool = typer.Option(
        True,
        "--feedback/--no-feedback",
        help="mtf/maxmean/hedge/cal: take finished tasks' labels as relevance feedback.",
    ),
    show: int = typer.Option(3, help="Print the pooled documents of the first N queries."),
    simulate: bool = typer.Option(
        False, "--simulate/--no-simulate", help="Simulate against --qrels instead (stores nothing)."
    ),
    qrels: Path | None = typer.Option(
        None, exists=True, dir_okay=False, help="--simulate: the qrels that play the assessor."
    ),
    budgets: str | None = typer.Option(
        None, help="--simulate: judgments per query, e.g. 10,20,50 (default: shares of the pool)."
    ),
    allocation: str = typer.Option(
        "query",
        help="A budget per 'query', or one over the 'campaign': a pool by cal with --budget "
        "(the model chooses the queries too); --simulate: mtf/maxmean/hedge choose the query "
        "too, --budgets are totals.",
    ),
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print JSON."),
    database_url: str | None = DB_OPTION,
) -> None:
    """Build a pool from many runs; each pooled document keeps which runs retrieved it and at
    which rank. The runs: files (--runs), or runs stored on the collection (--stored-runs,
    --all-stored-runs). --simulate --qrels FILE prints the relevant documents each method finds
    per budget instead (the database is opened only to read stored runs)."""
    stored = _stored_choice(runs, stored_runs, all_stored)
    files, file_names = _run_files(runs or [])
    if simulate:
        if qrels is None:
            usage_error("--simulate needs --qrels FILE (the qrels that play the assessor)")
        load = _loader(collection, stored, (files, file_names), database_url)
        _simulate(load, qrels, (method, allocation), depth, budgets, as_json)
        return
    if qrels is not None or budgets is not None:
        usage_error("--qrels and --budgets go with --simulate")
    settings = dict(method=method, depth=depth, budget=budget, name=name, allocation=allocation)
    settings |= {"feedback": feedback, "stored": stored, "runs": files, "file_names": file_names}
    view, rows = _build(database_url, collection, settings)
    if as_json:
        typer.echo(json.dumps(_pool_json(view, rows), indent=1))
        return
    _print_pool(view, rows, show)


def _build(
    database_url: str | None, collection: str, settings: dict[str, Any]
) -> tuple[Any, list[Any]]:
    """Build and store the pool (``settings``: the fields of ``BuildSpec`` but the collection),
    then read it back with its documents."""
    from app.campaign_pools import service as pools

    def go(db: Database) -> Any:
        spec = pools.BuildSpec(collection_id=collection_id(db, collection), **settings)
        built = pools.build_pool(db=db, spec=spec)
        return pools.get_pool(db=db, pool_id=built.id)

    return run_service(database_url, go)  # type: ignore[no-any-return]


def _loader(
    collection: str,
    stored: list[str] | str | None,
    files: tuple[dict[str, bytes], dict[str, str]],
    database_url: str | None,
) -> Callable[[], dict[str, dict[str, list[str]]]]:
    """What ``--simulate`` pools: the run files parsed, or the stored runs read."""

    def load() -> dict[str, dict[str, list[str]]]:
        if stored is None:
            from app.campaign_pools import run_input

            return run_input.read_runs(*files)
        return _stored_for_simulation(collection, stored, database_url)

    return load


def _stored_choice(
    runs: list[Path] | None, stored_runs: list[str] | None, all_stored: bool
) -> list[str] | str | None:
    """The stored runs chosen (names in order, or "all"), or None for run files; a usage error
    unless exactly one of --runs, --stored-runs and --all-stored-runs is given."""
    given = [bool(runs), bool(stored_runs), all_stored]
    if sum(given) != 1:
        usage_error("give one of --runs FILE..., --stored-runs NAME,... or --all-stored-runs")
    if all_stored:
        return "all"
    if stored_runs:
        names = [n.strip() for item in stored_runs for n in item.split(",") if n.strip()]
        if not names:
            usage_error("--stored-runs takes run names, e.g. --stored-runs bm25,ql")
        return names
    return None


def _pool_json(view: Any, rows: list[Any]) -> dict[str, Any]:
    keys = ("id", "name", "method", "depth", "budget", "allocation", "fusion")
    out = {k: getattr(view, k) for k in keys}
    out |= {"runs": view.runs, "summary": view.summary, "documents": view.documents}
    out["picked"] = view.picked
    out["pool"] = [
        {
            "query_id": r.query_id,
            "doc_id": r.doc_id,
            "position": r.position,
            "pick": r.pick,
            "fused": r.fused,
            "hits": [{"run": run, "rank": rank} for run, rank in r.hits],
        }
        for r in rows
    ]
    return out


def _print_pool(view: Any, rows: list[Any], show: int) -> None:
    s = view.summary
    budget = "the whole depth pool" if view.budget is None else f"{view.budget} per query"
    if view.allocation == "campaign":
        budget = f"{view.budget} over all the queries (allocation campaign)"
    typer.echo(
        f"pool {view.id} {view.name!r}: {view.method}, depth {view.depth}, budget {budget}, "
        f"{len(view.runs)} runs, {s['queries']} queries, {view.documents} pooled documents, "
        f"{view.picked} picked for judging; ordered by reciprocal rank fusion (k = 60)"
    )
    if s.get("feedback"):
        typer.echo(
            f"relevance feedback from finished tasks: {s['picked_judged']} picks judged already; "
            "the others count as not relevant until judged"
        )
    if s["unknown_queries"]:
        typer.echo(f"skipped {s['unknown_queries']} queries the collection lacks")
    if s["not_in_query"]:
        typer.echo(f"dropped {s['not_in_query']} pooled documents not among their query's")
    shown = list(dict.fromkeys(r.query_id for r in rows))[: max(show, 0)]
    if shown:
        typer.echo(f"{'query':>10} {'doc':>14} {'pick':>5} {'fused':>8}  runs@rank")
    for r in rows:
        if r.query_id in shown:
            pick = "-" if r.pick is None else str(r.pick + 1)
            hits = " ".join(f"{run}@{rank}" for run, rank in r.hits)
            typer.echo(
                f"{r.query_id[-10:]:>10} {r.doc_id[-14:]:>14} {pick:>5} {r.fused:8.5f}  {hits}"
            )
    typer.echo(f"plan with: heapjudge admin plan ... --pool runs --pool-id {view.id}")


def _simulate(
    load: Callable[[], dict[str, dict[str, list[str]]]],
    qrels: Path,
    how: tuple[str, str],
    depth: int,
    budgets: str | None,
    as_json: bool,
) -> None:
    from app.campaign_pools import simulation as pool_simulation
    from app.kernel.errors import DomainError
    from ranking.io.trec import FileFormatError, read_qrels

    method, allocation = how
    try:
        truth = read_qrels(qrels)
    except FileFormatError as exc:
        fail(str(exc))
    try:
        sizes = [int(b) for b in budgets.split(",") if b.strip()] if budgets else []
    except ValueError:
        usage_error(f"--budgets takes whole numbers, e.g. 10,20,50; got {budgets!r}")
    try:
        runs = load()
        rows = pool_simulation.simulate(
            runs, truth, [method], depth=depth, budgets=sizes, allocation=allocation
        )
    except DomainError as exc:
        from app.cli.conventions import report_service_error

        report_service_error(exc)
    if as_json:
        typer.echo(json.dumps([_row_json(r) for r in rows], indent=1))
        return
    per = "per query" if allocation == "query" else "over the campaign"
    typer.echo(
        f"{method}, depth {depth}, {len(runs)} runs, budget {per}; the qrels play the assessor "
        "(grade ≥ 1 relevant; documents they lack count as not relevant)"
    )
    typer.echo(f"{'budget':>8} {'judged':>8} {'of pool':>8} {'relevant':>9} {'found':>7}")
    for r in rows:
        typer.echo(
            f"{r.budget:>8} {r.judged:>8} {pool_simulation.pool_share(r):>8.1%} "
            f"{r.relevant_found:>4}/{r.relevant_in_pool:<4} {r.share:>7.1%}"
        )


def _stored_for_simulation(
    collection: str, chosen: list[str] | str, database_url: str | None
) -> dict[str, dict[str, list[str]]]:
    """The stored runs chosen, read from the collection (the simulation's only database use)."""
    from app.campaign_pools import run_input

    def go(db: Database) -> dict[str, dict[str, list[str]]]:
        cid = collection_id(db, collection)
        return run_input.stored_rankings(db=db, collection_id=cid, chosen=chosen)

    return run_service(database_url, go)


def _row_json(r: Any) -> dict[str, Any]:
    return {
        "method": r.method,
        "budget": r.budget,
        "judged": r.judged,
        "pool_size": r.pool_size,
        "relevant_found": r.relevant_found,
        "relevant_in_pool": r.relevant_in_pool,
    }
