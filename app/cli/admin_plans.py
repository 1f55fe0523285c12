"""CLI commands ``heapjudge admin plan`` (a study plan: preview, check, create its tasks),
``heapjudge admin bm25`` (a BM25 run over a collection, e.g. for a pool) and ``heapjudge admin
llm-grades`` (the LLM grades the ``llm`` prior orders by)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from app.cli.conventions import Command, given, usage_error
from app.cli.database import DB_OPTION, collection_id, run_service
from app.cli.exports import OUTPUT_OPTION

if TYPE_CHECKING:
    from app.kernel.db import Database

app = typer.Typer()

QUERY_IDS_OPTION = typer.Option(
    None, "--query-ids", help="Comma-separated query ids (default: all)."
)


def _int_list(value: str | None) -> str | None:
    """Check a comma list of integers (``--shifts``): a bad one is a usage error."""
    if value is not None:
        bad = [x for x in value.split(",") if x.strip() and not x.strip().lstrip("-").isdigit()]
        if bad:
            raise typer.BadParameter(f"not an integer: {', '.join(bad)}")
    return value


def _json_object(value: str | None) -> str | None:
    """Check that ``--options`` is a JSON object: a bad one is a usage error."""
    if value is not None:
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            raise typer.BadParameter(f"not JSON: {exc}") from None
        if not isinstance(parsed, dict):
            raise typer.BadParameter('must be a JSON object, e.g. {"topk": {"allow_ties": true}}')
    return value


@app.command("plan", cls=Command)
def plan_cmd(
    ctx: typer.Context,
    collection: str = typer.Argument(...),
    assessors: str = typer.Option(..., help="Comma-separated usernames, in order (U1, U2, ...)."),
    scheme: str = typer.Option("rotation", help="rotation | balanced | csv"),
    csv_file: Path | None = typer.Option(None, "--csv", exists=True, dir_okay=False),
    queries: str | None = QUERY_IDS_OPTION,
    shifts: str = typer.Option(
        "0,2", help="rotation: one shift per assignment.", callback=_int_list
    ),
    topk: int = typer.Option(2, "--topk-per-query", help="balanced: topk assessors per query."),
    graded: int = typer.Option(
        2, "--graded-per-query", help="balanced: graded assessors per query."
    ),
    k: int = typer.Option(10, help="Top-k size of the topk tasks."),
    options: str | None = typer.Option(
        None, help='JSON per method, e.g. {"topk": {...}}.', callback=_json_object
    ),
    pool: str = typer.Option(
        "all", help="all | sample | run | bm25 (top n by BM25) | runs (--pool-id: admin pool)"
    ),
    pool_id: int | None = typer.Option(
        None, help="--pool runs: the id of a pool from many runs (heapjudge admin pool)."
    ),
    pool_n: int | None = typer.Option(None, help="Pool size for sample/run/bm25."),
    pool_seed: int = typer.Option(0, help="Seed of the sampled pool."),
    dedupe: bool = typer.Option(
        False, "--dedupe/--no-dedupe", help="Judge identical documents once."
    ),
    run: Path | None = typer.Option(None, exists=True, dir_okay=False, help="TREC run (pool)."),
    stored_run: str | None = typer.Option(
        None,
        "--stored-run",
        help="Instead of --run: a run stored on the collection (heapjudge admin runs upload), "
        "by name; the pool's with --pool run, else the prior's with --prior run.",
    ),
    ranked_order: bool = typer.Option(
        False,
        "--ranked-order/--no-ranked-order",
        help="run/bm25 pools: top-k tasks start from the ranking (runs: the fused order).",
    ),
    strategy: str = typer.Option(
        "heap",
        help="Judging strategy of the topk tasks (heap, tournament, insertion, prior, +robust); "
        "when not given, --options' topk.strategy applies if it names one.",
    ),
    prior: str = typer.Option(
        "none",
        help="Initial order of the topk tasks: none | bm25 | feature:<number> (LETOR) | run "
        "(the --run file or --stored-run) | model:<training run id> (its scores) | llm (its "
        "grades: run llm-grades first).",
    ),
    machine: str | None = typer.Option(
        None,
        help="Machine judge of the topk tasks (a +assist strategy): bm25 | embedding | "
        "model:<training run id> | llm; it answers the comparisons it is sure of, people the rest.",
    ),
    max_loss: float | None = typer.Option(
        None,
        "--max-loss",
        min=0.0,
        max=0.5,
        help="The expected κ-NDCG@k loss per query the machine may cost the result (default 0.01).",
    ),
    machine_accuracy: float | None = typer.Option(
        None,
        "--machine-accuracy",
        min=0.5,
        max=1.0,
        help="The machine's pairwise accuracy on random pairs the preview's figures with the "
        "machine assume (default: measured on the collection from 50 people's answers on its "
        "pairs, else a cold start's range from 0.8 to a machine that earns nothing).",
    ),
    seed: int = typer.Option(0, help="Plan seed (balanced plan and task seeds)."),
    name: str = typer.Option("plan", help="Plan name (task labels name:A1, ...)."),
    create: bool = typer.Option(
        False, "--create/--no-create", help="Create the tasks (default: preview)."
    ),
    database_url: str | None = DB_OPTION,
) -> None:
    """Preview a study plan as a grid with its constraint check; --create makes the tasks."""
    # Long because typer declares each of the command's two dozen options in its signature.
    from app.planning import service as planning
    from app.planning.spec import PlanSpec

    if stored_run is not None and run is not None:
        usage_error("give --run FILE or --stored-run NAME, not both")
    if stored_run is not None and "run" not in (pool, prior):
        usage_error("--stored-run names the run of --pool run or --prior run")
    pool_stored = stored_run if pool == "run" else None

    def go(db: Database) -> Any:
        spec = PlanSpec(
            collection_id=collection_id(db, collection),
            assessors=[a.strip() for a in assessors.split(",") if a.strip()],
            query_ids=[q.strip() for q in queries.split(",")] if queries else None,
            scheme=scheme,
            shifts=tuple(int(x) for x in shifts.split(",") if x.strip()),
            per_query={"topk": topk, "graded": graded},
            seed=seed,
            csv=csv_file.read_text(encoding="utf-8") if csv_file else None,
            name=name,
            k=k,
            options=json.loads(options) if options else {},
            pool=_pool_spec(
                pool, pool_n, pool_seed, dedupe, run, ranked_order, pool_id, pool_stored
            ),
            # Not given on the command line: --options may name the strategy instead.
            strategy=strategy if given(ctx, "strategy") else None,
            prior=prior,
            prior_stored_run=stored_run if pool_stored is None else None,
            machine=machine,
            machine_max_loss=max_loss,
            machine_accuracy=machine_accuracy,
        )
        _print_grid(planning.preview_plan(db=db, spec=spec))
        return planning.create_plan(db=db, spec=spec) if create else None

    created = run_service(database_url, go)
    if created is not None:
        typer.echo(f"created {len(created.task_ids)} tasks (plan {created.name!r})")


def _pool_spec(
    mode: str,
    n: int | None,
    seed: int,
    dedupe: bool,
    run: Path | None,
    ranked_order: bool,
    pool_id: int | None,
    stored_run: str | None = None,
) -> Any:
    """``admin plan``'s pool options as a :class:`app.planning.spec.PoolSpec`."""
    from app.planning.spec import PoolSpec

    text = run.read_text(encoding="utf-8") if run else None
    return PoolSpec(
        mode=mode,
        n=n,
        seed=seed,
        dedupe=dedupe,
        run=text,
        stored_run=stored_run,
        run_order=ranked_order,
        pool_id=pool_id,
    )


def _print_grid(preview: Any) -> None:
    marks = {"topk": "T1", "graded": "T2"}
    width = max((len(a) for a in preview.assessors), default=4)
    head = " ".join(q[-4:].rjust(4) for q in preview.query_ids)
    typer.echo(f"{'':{width}} {head}")
    for a in preview.assessors:
        row = preview.grid.get(a, {})
        cells = " ".join(
            ("!!" if "+" in row.get(q, "") else marks.get(row.get(q, ""), " .")).rjust(4)
            for q in preview.query_ids
        )
        load = preview.loads.get(a, {})
        typer.echo(f"{a:{width}} {cells}   T1={load.get('topk', 0)} T2={load.get('graded', 0)}")
    for v in preview.violations:
        typer.echo(f"[{v['severity']}] {v['message']}")
    _print_cost(preview)
    typer.echo(f"{len(preview.tasks)} tasks; plan is {'valid' if preview.ok else 'NOT valid'}")


def _print_cost(preview: Any) -> None:
    """Expected judgments and minutes per query (one task of each method), in total (all
    tasks), and every T1 strategy side by side for this plan."""
    from app.planning.cost import COST_MODEL

    typer.echo(
        f"expected cost per task (strategy {preview.strategy}, prior {preview.prior}; "
        f"{COST_MODEL['seconds_per_pair']:.2f} s per pair, "
        f"{COST_MODEL['seconds_per_grade']:.2f} s per grade):"
    )
    typer.echo(f"{'query':>10} {'T1 judg.':>9} {'T1 min':>7} {'T2 judg.':>9} {'T2 min':>7}")
    for q in preview.query_ids:
        c = preview.cost.get(q, {})
        cells = [
            f"{c[key]:.1f}" if key in c else "-"
            for key in ("topk_judgments", "topk_minutes", "graded_judgments", "graded_minutes")
        ]
        typer.echo(f"{q[-10:]:>10} {cells[0]:>9} {cells[1]:>7} {cells[2]:>9} {cells[3]:>7}")
    t = preview.totals
    typer.echo(
        f"{'all tasks':>10} {t.get('topk_judgments', 0):>9.1f} {t.get('topk_minutes', 0):>7.1f} "
        f"{t.get('graded_judgments', 0):>9.1f} {t.get('graded_minutes', 0):>7.1f}"
    )
    machine = (preview.options.get("topk") or {}).get("machine")
    if machine:
        typer.echo(
            f"T1 machine judge {machine['source']}: max loss {machine['max_loss']:g} "
            "expected κ-NDCG@k per query (--max-loss)"
        )
    typer.echo("T1 strategies side by side (per T1 task; all tasks of the plan):")
    for row in preview.strategies:
        mark = "*" if row["chosen"] else " "
        p95 = "-" if row["p95_per_task"] is None else f"{row['p95_per_task']:.1f}"
        typer.echo(
            f"{mark} {row['strategy']:<22} {row['judgments_per_task']:>7.1f} judg. "
            f"(p95 {p95:>6}) {row['minutes_per_task']:>6.1f} min; all tasks "
            f"{row['judgments']:>8.1f} judg. {row['minutes']:>7.1f} min"
        )
        m = row.get("with_machine")
        if m:
            typer.echo(_machine_line(m, preview.machine_accuracy or {}))


def _machine_line(m: dict[str, Any], accuracy: dict[str, Any]) -> str:
    """The chosen strategy's figures with the machine (docs/admin-guide.md#plan-preview): a
    measured or given accuracy's figures, or a cold start's range, and the expected loss
    against max_loss."""
    from app.planning.machine import MIN_MEASURED_PAIRS

    loss = (
        f"expected loss {m['expected_loss_per_task']:.4f} κ-NDCG@k per query "
        f"(max loss {m['max_loss']:g})"
    )
    span = m.get("cold_start_range")
    if span:
        h, mins, tot = span["human_judgments_per_task"], span["minutes_per_task"], span["minutes"]
        return (
            f"  {'with the machine':<22} {h[0]:.1f}-{h[1]:.1f} people's judg. "
            f"{mins[0]:.1f}-{mins[1]:.1f} min; all tasks {tot[0]:.1f}-{tot[1]:.1f} min "
            f"(no measured calibration on this collection yet, {accuracy.get('pairs', 0)} of "
            f"{MIN_MEASURED_PAIRS} answers: from a machine of accuracy "
            f"{m['machine_accuracy']:g} to one that earns nothing); {loss}"
        )
    where = accuracy.get("source", "given")
    if where == "measured":
        where = f"measured on {accuracy.get('pairs', 0)} people's answers"
    return (
        f"  {'with the machine':<22} {m['human_judgments_per_task']:>7.1f} people's "
        f"judg. + {m['machine_answers_per_task']:.1f} machine answers "
        f"{m['minutes_per_task']:>6.1f} min; all tasks {m['judgments']:>8.1f} judg. "
        f"{m['minutes']:>7.1f} min (machine accuracy {m['machine_accuracy']:g}, {where}); "
        f"{loss}"
    )


@app.command("bm25", cls=Command)
def bm25_cmd(
    collection: str = typer.Argument(..., help="Collection name or id."),
    depth: int = typer.Option(100, help="Documents per query (those sharing a query term)."),
    k1: float | None = typer.Option(None, help="BM25 k1 (default 1.2)."),
    b: float | None = typer.Option(None, help="BM25 b (default 0.75)."),
    queries: str | None = QUERY_IDS_OPTION,
    tag: str = typer.Option("heapjudge-bm25", help="Run tag (last column)."),
    output: Path | None = OUTPUT_OPTION,
    database_url: str | None = DB_OPTION,
) -> None:
    """BM25 over the collection's documents as a TREC run (ids as imported), e.g. for
    `heapjudge evaluate --qrels ORIGINAL_QRELS --run run.txt`."""
    from app.retrieval.service import bm25_run

    result = run_service(
        database_url,
        lambda db: bm25_run(
            db=db,
            collection_id=collection_id(db, collection),
            depth=depth,
            query_ids=[q.strip() for q in queries.split(",") if q.strip()] if queries else None,
            k1=k1,
            b=b,
        ),
    )
    try:
        text = result.trec(tag)
    except ValueError as exc:
        usage_error(str(exc))  # the tag: bad characters for a TREC run
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        output.write_text(text, encoding="utf-8")
    info = result.summary()
    typer.echo(
        f"bm25 (k1={info['k1']}, b={info['b']}): {info['queries']} queries over "
        f"{info['documents']} documents, {info['lines']} lines, {info['seconds']:.2f} s"
        + (
            f"; no term of queries {', '.join(info['empty_queries'][:10])} occurs in any document"
            if info["empty_queries"]
            else ""
        ),
        err=True,
    )


@app.command("llm-grades", cls=Command)
def llm_grades_cmd(
    collection: str = typer.Argument(..., help="Collection name or id."),
    queries: str | None = QUERY_IDS_OPTION,
    status: bool = typer.Option(
        False, "--status/--no-status", help="Only count what is graded; ask nothing."
    ),
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print one JSON object."),
    database_url: str | None = DB_OPTION,
) -> None:
    """Ask the configured LLM (HEAPJUDGE_LLM_MODEL, HEAPJUDGE_LLM_BASE_URL) for the grade of
    every document of the queries, in this process (cached replies cost nothing), for the
    prior ``llm``; then print per query the documents graded, malformed and still missing."""
    from app.machine.grades import grade_documents, grade_status

    wanted = [q.strip() for q in queries.split(",") if q.strip()] if queries else None
    fn = grade_status if status else grade_documents
    view = run_service(database_url, lambda db: fn(db, collection_id(db, collection), wanted))
    if as_json:
        typer.echo(json.dumps(view, ensure_ascii=False))
        return
    for row in view["queries"]:
        typer.echo(
            f"{row['query_id']}\t{row['graded']} graded\t{row['malformed']} malformed\t"
            f"{row['missing']} missing"
        )
    typer.echo(
        f"{view['model']} ({view['template']}, prompt {view['prompt_hash']}): "
        f"{view['graded']} of {view['documents']} documents graded, {view['malformed']} "
        f"malformed, {view['missing']} missing",
        err=True,
    )
