"""CLI commands of the service: serve, db upgrade/downgrade/current, create-user, import, export.

Heavy imports (FastAPI, SQLAlchemy, uvicorn) happen inside the command functions so that
``heapjudge --help`` and the pure commands stay fast.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import typer
from typer.core import TyperCommand

DEMO_DATABASE_URL = "sqlite:///./heapjudge-demo.db"

db_app = typer.Typer(help="Database schema migrations.", no_args_is_help=True)


def _settings(database_url: str | None = None, **overrides: object):  # -> Settings
    from app.settings import Settings

    if database_url:
        overrides["database_url"] = database_url
    return Settings(**overrides)  # type: ignore[arg-type]


def _fail(message: str, code: int = 1) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def serve(
    host: str = typer.Option("127.0.0.1", help="Interface to bind."),
    port: int = typer.Option(8000, help="TCP port."),
    demo: bool = typer.Option(
        False, "--demo", help="Create (once) and serve a demo database with demo logins."
    ),
    database_url: str | None = typer.Option(
        None, "--database-url", help="Overrides HEAPJUDGE_DATABASE_URL."
    ),
    workers: int = typer.Option(1, help="uvicorn worker processes."),
    log_level: str = typer.Option("warning", help="uvicorn log level."),
    training_worker: bool = typer.Option(
        True,
        "--training-worker/--no-training-worker",
        help="Start a `heapjudge worker` process for training runs beside the server.",
    ),
) -> None:
    """Apply migrations, then serve the web UI and REST API with uvicorn."""
    import uvicorn

    import migrations
    from app.settings import InsecureSettings

    if demo:
        os.environ["HEAPJUDGE_DEMO"] = "1"
        if not (database_url or os.environ.get("HEAPJUDGE_DATABASE_URL")):
            database_url = DEMO_DATABASE_URL
    if database_url:
        os.environ["HEAPJUDGE_DATABASE_URL"] = database_url
    if "HEAPJUDGE_PUBLIC_ORIGIN" not in os.environ:
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        os.environ["HEAPJUDGE_PUBLIC_ORIGIN"] = f"http://{shown}:{port}"
    settings = _settings()
    try:
        settings.check()
    except InsecureSettings as exc:
        _fail(str(exc))
    migrations.upgrade(settings.database_url)
    url = settings.public_origin
    if demo:
        from app.db import Database
        from app.demo import DEMO_LOGINS, ensure_demo

        db = Database(settings)
        try:
            created = ensure_demo(db=db)
        finally:
            db.dispose()
        typer.echo("Demo database " + ("created" if created else "already present") + ".")
        typer.echo(f"Open {url}/ and log in as one of:")
        for name, password, role in DEMO_LOGINS:
            typer.echo(f"  {name:<8} password {password:<12} ({role})")
    typer.echo(f"heapjudge serving on {url}  (API docs: {url}/docs)")
    # Training runs execute in their own process, so a long fit never competes with judging
    # for this one (docs/training.md#queue); it exits when this process ends.
    worker = None
    if training_worker:
        worker = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "worker", "--parent", str(os.getpid())]
        )
    try:
        uvicorn.run(
            "app.main:create_app",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level=log_level,
            proxy_headers=False,
        )
    finally:
        if worker is not None:
            worker.terminate()
            try:
                worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                worker.kill()


@db_app.command("upgrade")
def db_upgrade(
    revision: str = typer.Argument("head"),
    database_url: str | None = typer.Option(None, "--database-url"),
) -> None:
    """Apply migrations up to REVISION (default: head)."""
    import migrations

    settings = _settings(database_url)
    migrations.upgrade(settings.database_url, revision)
    typer.echo(f"database at {migrations.current(settings.database_url)}")


@db_app.command("downgrade")
def db_downgrade(
    revision: str = typer.Argument(..., help="Target revision ('base' drops everything)."),
    database_url: str | None = typer.Option(None, "--database-url"),
) -> None:
    """Revert migrations down to REVISION."""
    import migrations

    settings = _settings(database_url)
    migrations.downgrade(settings.database_url, revision)
    typer.echo(f"database at {migrations.current(settings.database_url) or 'base'}")


@db_app.command("current")
def db_current(database_url: str | None = typer.Option(None, "--database-url")) -> None:
    """Print the database's migration revision."""
    import migrations

    typer.echo(migrations.current(_settings(database_url).database_url) or "base")


def _open_db(database_url: str | None):  # -> Database
    import migrations
    from app.db import Database

    settings = _settings(database_url, dev=True)
    migrations.upgrade(settings.database_url)
    return Database(settings)


def create_user(
    name: str = typer.Argument(..., help="Username."),
    role: str = typer.Option("assessor", help="assessor | admin"),
    password_stdin: bool = typer.Option(
        False, "--password-stdin", help="Read the password from stdin instead of a prompt."
    ),
    database_url: str | None = typer.Option(None, "--database-url"),
) -> None:
    """Create a user; the password comes from a prompt (or stdin, for scripts)."""
    from app.errors import DomainError
    from app.services import users

    if password_stdin or not sys.stdin.isatty():
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    db = _open_db(database_url)
    try:
        user = users.create_user(db=db, username=name, password=password, role=role)
    except DomainError as exc:
        _fail(str(exc.detail))
    finally:
        db.dispose()
    typer.echo(f"created {user.role} {user.username!r} (id {user.id})")


def import_(
    collection: str = typer.Argument(..., help="Collection name (created if missing)."),
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="NDJSON file."),
    database_url: str | None = typer.Option(None, "--database-url"),
) -> None:
    """Import an NDJSON file (one object per query-document) into COLLECTION, all or nothing."""
    from app.errors import DomainError
    from app.services import collections

    db = _open_db(database_url)
    try:
        coll = collections.get_or_create_collection(db=db, name=collection)
        report = collections.import_ndjson(db=db, collection_id=coll.id, data=file.read_bytes())
    except DomainError as exc:
        detail = exc.detail
        if isinstance(detail, list):
            for item in detail:
                typer.echo(f"{file}:{item.get('line')}: {item.get('msg')}", err=True)
            _fail(f"nothing imported ({len(detail)} error(s))")
        _fail(str(detail))
    finally:
        db.dispose()
    typer.echo(
        f"{collection}: {report.lines} lines, {report.queries_created} new queries, "
        f"{report.documents_created} new documents, {report.documents_unchanged} unchanged"
    )


class ExportCommand(TyperCommand):
    """The export commands' help ends with the registered formats, read from the registry only
    when the help is shown (importing the exports service at start would slow every command)."""

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from app.services.exports import FORMATS

        lines = [f"{f.name}: {f.summary}" for f in FORMATS.values()]
        self.epilog = "Formats (docs/exports.md):\n\n" + "\n\n".join(lines)
        super().format_help(ctx, formatter)


def run_export(
    *,
    collection: str,
    format: str,
    labels: str | None,
    source: str,
    assessor: str | None,
    missing_features: str,
    plan: str | None,
    output: Path | None,
    database_url: str | None,
) -> None:
    """The export command's body (``heapjudge export`` and its deprecated alias ``heapjudge
    admin export``): validate, then write the bytes to ``output`` (default stdout). Errors
    exit with status 1 and leave ``output`` untouched."""
    from app.errors import DomainError
    from app.services import collections, exports

    db = _open_db(database_url)
    try:
        coll = collections.find_collection(db=db, ref=collection)
        req = exports.ExportRequest(
            collection_id=coll.id,
            format=format,
            labels=labels,
            source=source,
            assessor=assessor,
            missing_features=missing_features,
            plan=plan,
        )
        chunks = exports.export_stream(db=db, req=req)
        if output is None:
            for chunk in chunks:
                sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
        else:
            with output.open("wb") as fh:
                for chunk in chunks:
                    fh.write(chunk)
    except DomainError as exc:
        _fail(str(exc.detail))
    finally:
        db.dispose()


FORMAT_OPTION_HELP = "Export format (listed below)."
LABELS_OPTION = typer.Option(
    None, "--labels", help="kappa | grades (default: the format's own: grades for grades-qrels)."
)
SOURCE_OPTION = typer.Option(
    "first",
    "--source",
    help="Whose labels when a query has several finished tasks: first | assessor | all | "
    "borda | bt | mean.",
)
ASSESSOR_OPTION = typer.Option(
    None, "--assessor", help="Only this assessor's tasks (required by --source assessor)."
)
MISSING_OPTION = typer.Option(
    "error",
    "--missing-features",
    help="LETOR formats, documents without features: error | skip | zero.",
)
PLAN_OPTION = typer.Option(None, "--plan", help="Only tasks of this plan label, e.g. study:A1.")
OUTPUT_OPTION = typer.Option(None, "-o", "--output", help="File (default stdout).")


def export(
    collection: str = typer.Argument(..., help="Collection name or id."),
    format: str = typer.Option("qrels", "--format", "-f", help=FORMAT_OPTION_HELP),
    labels: str | None = LABELS_OPTION,
    source: str = SOURCE_OPTION,
    all_tasks: bool = typer.Option(
        False,
        "--all-tasks",
        help="Every finished task instead of one per query (same as --source all; each "
        "topk-jsonl line names its assessor).",
    ),
    assessor: str | None = ASSESSOR_OPTION,
    missing_features: str = MISSING_OPTION,
    plan: str | None = PLAN_OPTION,
    output: Path | None = OUTPUT_OPTION,
    database_url: str | None = typer.Option(None, "--database-url"),
) -> None:
    """Export labels or judgments of COLLECTION (the formats of the REST export).

    One labeling per query unless --all-tasks: `heapjudge evaluate` reads the export as is.
    """
    if all_tasks and source not in ("first", "all"):
        _fail(f"--all-tasks is --source all; it cannot go with --source {source}")
    run_export(
        collection=collection,
        format=format,
        labels=labels,
        source="all" if all_tasks else source,
        assessor=assessor,
        missing_features=missing_features,
        plan=plan,
        output=output,
        database_url=database_url,
    )


def register(app: typer.Typer) -> None:
    """Add the service commands to the CLI."""
    app.command("serve")(serve)
    app.command("create-user")(create_user)
    app.command("import")(import_)
    app.command("export", cls=ExportCommand)(export)
    app.add_typer(db_app, name="db")
