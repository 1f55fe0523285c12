"""CLI commands of the admin console: ``heapjudge admin ...``.

The same services as the REST API and the admin pages: imports from TREC / SMART (Cranfield) /
LETOR files, attaching grades and features, study plans, progress, training exports, and user
management. Heavy imports happen inside the commands.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from app.commands.conventions import (
    FAILURE,
    Command,
    Group,
    aliased,
    report_error,
    usage_error,
)
from app.commands.database import database
from app.commands.service import (
    ASSESSOR_OPTION,
    DB_OPTION,
    FORMAT_OPTION_HELP,
    LABELS_OPTION,
    MISSING_OPTION,
    OUTPUT_OPTION,
    PLAN_OPTION,
    SOURCE_OPTION,
    ExportCommand,
    run_export,
)

admin_app = typer.Typer(
    cls=Group, help="Admin console: imports, study plans, progress, exports, users."
)


def _report_error(exc: Any) -> None:
    """A service error: the problems of a file one per line (``file:line: what``), then the
    one ``error:`` line; exit 1."""
    detail = exc.detail
    if isinstance(detail, list):
        for item in detail:
            if not isinstance(item, dict):
                typer.echo(str(item), err=True)
            elif "line" in item and not item["line"] and not item.get("file"):
                typer.echo(str(item.get("msg", "")), err=True)  # a summary, not a place
            elif "line" in item:
                where = f"{item.get('file', '')}:{item['line']}"
                typer.echo(f"{where}: {item.get('msg', '')}", err=True)
            else:
                typer.echo(
                    f"[{item.get('severity', 'error')}] {item.get('message', item)}", err=True
                )
        report_error(str(exc.extra.get("message", f"{len(detail)} error(s)")))
    else:
        report_error(str(detail))
    raise typer.Exit(FAILURE)


def _collection(db: Any, ref: str, *, create: bool = False) -> int:
    from app.collections import service as collections
    from app.kernel.errors import NotFound

    try:
        return collections.find_collection(db=db, ref=ref).id
    except NotFound:
        if not create:
            raise
        return collections.create_collection(db=db, name=ref).id


def _run(database_url: str | None, fn: Any, *, create: bool = False) -> Any:
    """``fn(db)`` on the command's database (docs/cli.md#database: only the imports, ``create``,
    may create a missing SQLite file); a service error is reported and exits 1."""
    from app.kernel.errors import DomainError

    with database(database_url, create=create) as db:
        try:
            return fn(db)
        except DomainError as exc:
            _report_error(exc)


# Options that import-smart and import-trec share: how query-document pairs are chosen.
PAIRING_OPTION = typer.Option(
    "qrels", help="qrels (judged documents) | all | run (top n of --run) | bm25 (top n by BM25)"
)
RUN_OPTION = typer.Option(None, exists=True, dir_okay=False, help="TREC run.")
RUN_DEPTH_OPTION = typer.Option(None, help="Top n of the run (or of BM25: default 100).")
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


QRELS_FORMAT_HELP = (
    "auto (sniffed: TREC 'qid iter doc rel', 3 columns 'qid doc rel', SMART .REL "
    "'qid doc 0 0.0') | trec | 3col | smart-rel | cranfield"
)


def _import(
    collection: str,
    kind: str,
    files: dict[str, Path | None],
    database_url: str | None,
    **options: Any,
) -> None:
    from app.collections.imports import import_files
    from app.collections.uploads import UploadedFile

    uploads = {k: UploadedFile(p.name, p) for k, p in files.items() if p is not None}

    def go(db: Any) -> Any:
        from app.kernel.errors import DomainError, NotFound
        from app.kernel.models import Collection

        try:
            cid, created = _collection(db, collection), False
        except NotFound:
            cid, created = _collection(db, collection, create=True), True
        try:
            return import_files(
                db=db, collection_id=cid, kind=kind, files=uploads, max_bytes=0, **options
            )
        except DomainError:
            if created:  # a failed import leaves nothing behind, not even the new collection
                with db.write() as s:
                    s.delete(s.get(Collection, cid))
            raise

    report = _run(database_url, go, create=True)
    typer.echo(
        f"{collection}: {report.rows} rows, {report.queries_created} new queries, "
        f"{report.documents_created} new documents, {report.documents_unchanged} unchanged"
    )
    if report.qrels:
        typer.echo(f"qrels: {report.qrels}")
    for note in report.notes:
        typer.echo(f"note: {note}")


@admin_app.command("import-smart", cls=Command)
def import_smart(
    collection: str = typer.Argument(..., help="Collection name (created if missing) or id."),
    documents: Path = typer.Option(..., exists=True, dir_okay=False, help="e.g. cran.all.1400"),
    queries: Path = typer.Option(..., exists=True, dir_okay=False, help="e.g. cran.qry"),
    qrels: Path | None = typer.Option(None, exists=True, dir_okay=False, help="e.g. cranqrel"),
    qrels_format: str = typer.Option(
        "auto", help=QRELS_FORMAT_HELP + " (auto reads 3 columns as Cranfield codes)"
    ),
    pairing: str = PAIRING_OPTION,
    run: Path | None = RUN_OPTION,
    run_depth: int | None = RUN_DEPTH_OPTION,
    unjudged_grade: int | None = typer.Option(None, help="Grade of unjudged pairs (e.g. 0)."),
    database_url: str | None = DB_OPTION,
) -> None:
    """Import a SMART collection (.I/.T/.A/.B/.W) such as Cranfield 1400, all or nothing."""
    _import(
        collection,
        "smart",
        {"documents": documents, "queries": queries, "qrels": qrels, "run": run},
        database_url,
        pairing=pairing,
        qrels_format=qrels_format,
        run_depth=run_depth,
        unjudged_grade=unjudged_grade,
    )


@admin_app.command("import-cranfield", cls=Command)
def import_cranfield(
    collection: str = typer.Argument(..., help="Collection name (created if missing)."),
    directory: Path = typer.Argument(..., exists=True, file_okay=False, help="cranfield dir"),
    database_url: str | None = DB_OPTION,
) -> None:
    """Cranfield 1400 from its directory: judged pairs, grades = 5 - code, -1 -> 0."""
    _import(
        collection,
        "smart",
        {
            "documents": directory / "cran.all.1400",
            "queries": directory / "cran.qry",
            "qrels": directory / "cranqrel",
        },
        database_url,
        qrels_format="cranfield",
    )


@admin_app.command("import-trec", cls=Command)
def import_trec(
    collection: str = typer.Argument(..., help="Collection name (created if missing) or id."),
    topics: Path = typer.Option(..., exists=True, dir_okay=False, help="<top> topics file."),
    documents: Path = typer.Option(..., exists=True, dir_okay=False, help="<DOC> SGML or JSONL"),
    qrels: Path | None = typer.Option(None, exists=True, dir_okay=False),
    pairing: str = PAIRING_OPTION,
    run: Path | None = RUN_OPTION,
    run_depth: int | None = RUN_DEPTH_OPTION,
    narrative: bool = typer.Option(
        False, "--narrative/--no-narrative", help="Append the narrative to the description."
    ),
    qrels_format: str = typer.Option("auto", help=QRELS_FORMAT_HELP),
    unjudged_grade: int | None = typer.Option(None, help="Grade of unjudged pairs (e.g. 0)."),
    database_url: str | None = DB_OPTION,
) -> None:
    """Import TREC topics + documents (+ qrels / run), all or nothing."""
    _import(
        collection,
        "trec",
        {"topics": topics, "documents": documents, "qrels": qrels, "run": run},
        database_url,
        pairing=pairing,
        run_depth=run_depth,
        include_narrative=narrative,
        qrels_format=qrels_format,
        unjudged_grade=unjudged_grade,
    )


@admin_app.command("import-letor", cls=Command)
def import_letor(
    collection: str = typer.Argument(..., help="Collection name (created if missing) or id."),
    features: Path = typer.Argument(..., exists=True, dir_okay=False, help="LETOR file."),
    database_url: str | None = DB_OPTION,
) -> None:
    """A collection made of a LETOR file alone (features; grades from the labels)."""
    _import(collection, "letor", {"features": features}, database_url)


@admin_app.command("attach-grades", cls=Command)
def attach_grades_cmd(
    collection: str = typer.Argument(...),
    qrels: Path = typer.Argument(..., exists=True, dir_okay=False),
    qrels_format: str = typer.Option("auto", help=QRELS_FORMAT_HELP),
    strict: bool = typer.Option(
        False, "--strict/--no-strict", help="Lines matching no document are errors."
    ),
    database_url: str | None = DB_OPTION,
) -> None:
    """Attach grades from a qrels file to the collection's documents."""
    from app.collections.attach import attach_grades
    from app.collections.uploads import UploadedFile

    report = _run(
        database_url,
        lambda db: attach_grades(
            db=db,
            collection_id=_collection(db, collection),
            qrels=UploadedFile(qrels.name, qrels),
            qrels_format=qrels_format,
            strict=strict,
            max_bytes=0,
        ),
    )
    typer.echo(f"{report.matched} grades attached; {report.unmatched} qrels lines unmatched")


@admin_app.command("attach-features", cls=Command)
def attach_features_cmd(
    collection: str = typer.Argument(...),
    features: Path = typer.Argument(..., exists=True, dir_okay=False),
    strict: bool = typer.Option(
        False, "--strict/--no-strict", help="Rows matching no document are errors."
    ),
    database_url: str | None = DB_OPTION,
) -> None:
    """Attach LETOR feature vectors (matched by qid and docid) to the collection's documents."""
    from app.collections.attach import attach_features
    from app.collections.uploads import UploadedFile

    report = _run(
        database_url,
        lambda db: attach_features(
            db=db,
            collection_id=_collection(db, collection),
            features=UploadedFile(features.name, features),
            strict=strict,
            max_bytes=0,
        ),
    )
    typer.echo(
        f"{report.matched} feature vectors attached; {report.unmatched} rows unmatched; "
        f"{report.documents_without} documents without features"
    )


@admin_app.command("plan", cls=Command)
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
    pool: str = typer.Option("all", help="all | sample | run | bm25 (top n by BM25)"),
    pool_n: int | None = typer.Option(None, help="Pool size for sample/run/bm25."),
    pool_seed: int = typer.Option(0, help="Seed of the sampled pool."),
    dedupe: bool = typer.Option(
        False, "--dedupe/--no-dedupe", help="Judge identical documents once."
    ),
    run: Path | None = typer.Option(None, exists=True, dir_okay=False, help="TREC run (pool)."),
    ranked_order: bool = typer.Option(
        False,
        "--ranked-order/--no-ranked-order",
        help="run/bm25 pools: top-k tasks start from the ranking.",
    ),
    strategy: str = typer.Option(
        "heap",
        help="Judging strategy of the topk tasks (heap, tournament, insertion, prior, +robust); "
        "when not given, --options' topk.strategy applies if it names one.",
    ),
    prior: str = typer.Option(
        "none",
        help="Initial order of the topk tasks: none | bm25 | feature:<number> (LETOR) | run "
        "(the --run file).",
    ),
    seed: int = typer.Option(0, help="Plan seed (balanced plan and task seeds)."),
    name: str = typer.Option("plan", help="Plan name (task labels name:A1, ...)."),
    create: bool = typer.Option(
        False, "--create/--no-create", help="Create the tasks (default: preview)."
    ),
    database_url: str | None = DB_OPTION,
    old_queries: str | None = typer.Option(None, "--queries", hidden=True),
    old_topk: int | None = typer.Option(None, "--topk", hidden=True),
    old_graded: int | None = typer.Option(None, "--graded", hidden=True),
) -> None:
    """Preview a study plan as a grid with its constraint check; --create makes the tasks."""
    from app.planning import service as planning

    queries = aliased(queries, old_queries, "--queries", "--query-ids")
    topk = aliased(topk, old_topk, "--topk", "--topk-per-query")
    graded = aliased(graded, old_graded, "--graded", "--graded-per-query")

    def go(db: Any) -> Any:
        spec = planning.PlanSpec(
            collection_id=_collection(db, collection),
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
            pool=planning.PoolSpec(
                mode=pool,
                n=pool_n,
                seed=pool_seed,
                dedupe=dedupe,
                run=run.read_text(encoding="utf-8") if run else None,
                run_order=ranked_order,
            ),
            # Not given on the command line: --options may name the strategy instead.
            strategy=None if _defaulted(ctx, "strategy") else strategy,
            prior=prior,
        )
        preview = planning.preview_plan(db=db, spec=spec)
        _print_grid(preview)
        if create:
            return planning.create_plan(db=db, spec=spec)
        return None

    created = _run(database_url, go)
    if created is not None:
        typer.echo(f"created {len(created.task_ids)} tasks (plan {created.name!r})")


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


def _defaulted(ctx: typer.Context, name: str) -> bool:
    """True when option ``name`` took its default (the user did not give it)."""
    # typer's Context is the vendored click's: its ParameterSource, not the click package's.
    from typer._click.core import ParameterSource

    return ctx.get_parameter_source(name) is ParameterSource.DEFAULT


def _print_cost(preview: Any) -> None:
    """Expected judgments and minutes per query (one task of each method) and in total."""
    from app.planning.cost import COST_MODEL

    typer.echo(
        f"expected cost (strategy {preview.strategy}, prior {preview.prior}; "
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


@admin_app.command("bm25", cls=Command)
def bm25_cmd(
    collection: str = typer.Argument(..., help="Collection name or id."),
    depth: int = typer.Option(100, help="Documents per query (those sharing a query term)."),
    k1: float | None = typer.Option(None, help="BM25 k1 (default 1.2)."),
    b: float | None = typer.Option(None, help="BM25 b (default 0.75)."),
    queries: str | None = QUERY_IDS_OPTION,
    tag: str = typer.Option("heapjudge-bm25", help="Run tag (last column)."),
    output: Path | None = OUTPUT_OPTION,
    database_url: str | None = DB_OPTION,
    old_queries: str | None = typer.Option(None, "--queries", hidden=True),
) -> None:
    """BM25 over the collection's documents as a TREC run (ids as imported), e.g. for
    `heapjudge evaluate --qrels ORIGINAL_QRELS --run run.txt`."""
    from app.retrieval.service import bm25_run

    queries = aliased(queries, old_queries, "--queries", "--query-ids")

    result = _run(
        database_url,
        lambda db: bm25_run(
            db=db,
            collection_id=_collection(db, collection),
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


@admin_app.command("progress", cls=Command)
def progress_cmd(
    collection: str = typer.Argument(...),
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print the report as JSON."),
    database_url: str | None = DB_OPTION,
) -> None:
    """Tasks by status, judgments, active time and estimated remaining, per assessor."""
    from app.tasks.progress import collection_progress

    report = _run(
        database_url,
        lambda db: collection_progress(db=db, collection_id=_collection(db, collection)),
    )
    if as_json:
        typer.echo(json.dumps(report, default=str, indent=2))
        return
    t = report["totals"]
    typer.echo(
        f"{report['collection']['name']}: tasks {t['tasks']}, {t['judgments']} judgments, "
        f"{t['active_ms'] / 60000:.1f} active min, about {t['expected_remaining']:.0f} left"
    )
    for a in report["by_assessor"]:
        typer.echo(
            f"  {a['assessor']:<16} done {a['tasks']['done']}/{sum(a['tasks'].values())}  "
            f"{a['judgments']:>6} judgments  ~{a['expected_remaining']:.0f} left  "
            f"last {a['last_activity'] or '-'}"
        )


@admin_app.command("export", deprecated=True, cls=ExportCommand)
def export_cmd(
    collection: str = typer.Argument(...),
    format: str = typer.Option("letor", "--format", "-f", help=FORMAT_OPTION_HELP),
    labels: str | None = LABELS_OPTION,
    source: str = SOURCE_OPTION,
    assessor: str | None = ASSESSOR_OPTION,
    missing_features: str = MISSING_OPTION,
    plan: str | None = PLAN_OPTION,
    output: Path | None = OUTPUT_OPTION,
    database_url: str | None = DB_OPTION,
) -> None:
    """Deprecated: use `heapjudge export` (same options and formats; the default format here
    is letor)."""
    run_export(
        collection=collection,
        format=format,
        labels=labels,
        source=source,
        assessor=assessor,
        missing_features=missing_features,
        plan=plan,
        output=output,
        database_url=database_url,
    )


@admin_app.command("reset-password", cls=Command)
def reset_password_cmd(
    name: str = typer.Argument(...),
    password_stdin: bool = typer.Option(
        False,
        "--password-stdin/--no-password-stdin",
        help="Read the password from stdin instead of a prompt.",
    ),
    database_url: str | None = DB_OPTION,
) -> None:
    """Set a user's password (prompt or stdin); their sessions and tokens end at once."""
    from app.users.manage import reset_password

    if password_stdin or not sys.stdin.isatty():
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = typer.prompt("New password", hide_input=True, confirmation_prompt=True)
    _run(database_url, lambda db: reset_password(db=db, username=name, password=password))
    typer.echo(f"password of {name!r} reset; sessions and tokens revoked")


@admin_app.command("disable", cls=Command)
def disable_cmd(
    name: str = typer.Argument(...),
    enable: bool = typer.Option(False, "--enable/--no-enable", help="Re-enable instead."),
    force: bool = typer.Option(
        False,
        "--force/--no-force",
        help="Disable even the last active admin (nobody can then log in "
        "as an admin until one is re-enabled here).",
    ),
    database_url: str | None = DB_OPTION,
) -> None:
    """Disable a user (sessions and tokens stop at once), or --enable them again. The last
    active admin is refused unless --force."""
    from app.users.service import set_disabled

    _run(
        database_url,
        lambda db: set_disabled(db=db, username=name, disabled=not enable, force=force),
    )
    typer.echo(f"{name!r} {'enabled' if enable else 'disabled'}")


@admin_app.command("collection", cls=Command)
def collection_cmd(
    collection: str = typer.Argument(...),
    rename: str | None = typer.Option(None, help="New name."),
    archive: bool | None = typer.Option(
        None, "--archive/--no-archive", help="Archive, or un-archive (default: unchanged)."
    ),
    database_url: str | None = DB_OPTION,
    old_unarchive: bool | None = typer.Option(None, "--unarchive", hidden=True),
) -> None:
    """Rename and/or archive a collection."""
    from app.collections.manage import update_collection

    archive = aliased(archive, False if old_unarchive else None, "--unarchive", "--no-archive")

    coll = _run(
        database_url,
        lambda db: update_collection(
            db=db, collection_id=_collection(db, collection), name=rename, archived=archive
        ),
    )
    typer.echo(f"collection {coll.id}: {coll.name!r}{' (archived)' if coll.archived else ''}")


def register(app: typer.Typer) -> None:
    """Add ``heapjudge admin ...``."""
    app.add_typer(admin_app, name="admin")
