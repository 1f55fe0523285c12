"""CLI commands of the service: serve, db upgrade/downgrade/current, create-user, import, export.

Heavy imports (FastAPI, SQLAlchemy, uvicorn) happen inside the command functions so that
``heapjudge --help`` and the pure commands stay fast.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import typer
from typer._click import Context, HelpFormatter

from app.commands.conventions import Command, Group, fail, usage_error
from app.commands.database import database, require_existing, settings_for

DEMO_DATABASE_URL = "sqlite:///./heapjudge-demo.db"

db_app = typer.Typer(cls=Group, help="Database schema migrations.", no_args_is_help=True)

#: ``--database-url``, the same declaration in every command that opens the database.
DB_OPTION = typer.Option(
    None, "--database-url", help="Overrides HEAPJUDGE_DATABASE_URL (docs/cli.md#database)."
)


def serve(
    host: str = typer.Option("127.0.0.1", help="Interface to bind."),
    port: int = typer.Option(8000, help="TCP port."),
    demo: bool = typer.Option(
        False, "--demo/--no-demo", help="Create (once) and serve a demo database with demo logins."
    ),
    database_url: str | None = DB_OPTION,
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
    from app.kernel.settings import InsecureSettings, Settings

    if demo:
        os.environ["HEAPJUDGE_DEMO"] = "1"
        if not (database_url or os.environ.get("HEAPJUDGE_DATABASE_URL")):
            database_url = DEMO_DATABASE_URL
    if database_url:
        os.environ["HEAPJUDGE_DATABASE_URL"] = database_url
    if "HEAPJUDGE_PUBLIC_ORIGIN" not in os.environ:
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        os.environ["HEAPJUDGE_PUBLIC_ORIGIN"] = f"http://{shown}:{port}"
    settings = Settings()  # the server's own settings: a real secret unless dev or demo
    try:
        settings.check()
    except InsecureSettings as exc:
        fail(str(exc))
    migrations.upgrade(settings.database_url)
    url = settings.public_origin
    if demo:
        from app.demo import DEMO_LOGINS, ensure_demo
        from app.kernel.db import Database

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


def _migrate(database_url: str | None, step: str, revision: str) -> None:
    """``db upgrade`` (which creates a missing SQLite file) or ``db downgrade`` (which refuses
    one); an unknown revision or an unreachable database is exit 1."""
    from alembic.util import CommandError
    from sqlalchemy.exc import SQLAlchemyError

    import migrations

    url = settings_for(database_url).database_url
    if step == "downgrade":
        require_existing(url)
    try:
        getattr(migrations, step)(url, revision)
        now = migrations.current(url)
    except (CommandError, SQLAlchemyError) as exc:
        fail(f"cannot {step} {url!r} to {revision!r}: {exc}")
    typer.echo(f"database at {now or 'base'}")


@db_app.command("upgrade", cls=Command)
def db_upgrade(
    revision: str = typer.Argument("head", help="Target revision."),
    database_url: str | None = DB_OPTION,
) -> None:
    """Apply migrations up to REVISION (default: head); creates a missing SQLite file."""
    _migrate(database_url, "upgrade", revision)


@db_app.command("downgrade", cls=Command)
def db_downgrade(
    revision: str = typer.Argument(..., help="Target revision ('base' drops everything)."),
    database_url: str | None = DB_OPTION,
) -> None:
    """Revert migrations down to REVISION."""
    _migrate(database_url, "downgrade", revision)


@db_app.command("current", cls=Command)
def db_current(database_url: str | None = DB_OPTION) -> None:
    """Print the database's migration revision."""
    from sqlalchemy.exc import SQLAlchemyError

    import migrations

    url = settings_for(database_url).database_url
    require_existing(url)
    try:
        typer.echo(migrations.current(url) or "base")
    except SQLAlchemyError as exc:
        fail(f"cannot read the revision of {url!r}: {exc}")


def create_user(
    name: str = typer.Argument(..., help="Username."),
    role: str = typer.Option("assessor", help="assessor | admin"),
    password_stdin: bool = typer.Option(
        False,
        "--password-stdin/--no-password-stdin",
        help="Read the password from stdin instead of a prompt.",
    ),
    database_url: str | None = DB_OPTION,
) -> None:
    """Create a user; the password comes from a prompt (or stdin, for scripts). Creates a
    missing SQLite database."""
    from app.kernel.errors import DomainError
    from app.users import service as users

    if password_stdin or not sys.stdin.isatty():
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    with database(database_url, create=True) as db:
        try:
            user = users.create_user(db=db, username=name, password=password, role=role)
        except DomainError as exc:
            fail(str(exc.detail))
    typer.echo(f"created {user.role} {user.username!r} (id {user.id})")


def import_(
    collection: str = typer.Argument(..., help="Collection name (created if missing)."),
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="NDJSON file."),
    database_url: str | None = DB_OPTION,
) -> None:
    """Import an NDJSON file (one object per query-document) into COLLECTION, all or nothing.
    Creates a missing SQLite database."""
    from app.collections import service as collections
    from app.kernel.errors import DomainError

    try:
        data = file.read_bytes()
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror or exc}")
    with database(database_url, create=True) as db:
        try:
            coll = collections.get_or_create_collection(db=db, name=collection)
            report = collections.import_ndjson(db=db, collection_id=coll.id, data=data)
        except DomainError as exc:
            detail = exc.detail
            if isinstance(detail, list):
                for item in detail:
                    typer.echo(f"{file}:{item.get('line')}: {item.get('msg')}", err=True)
                fail(f"nothing imported ({len(detail)} error(s))")
            fail(str(detail))
    typer.echo(
        f"{collection}: {report.lines} lines, {report.queries_created} new queries, "
        f"{report.documents_created} new documents, {report.documents_unchanged} unchanged"
    )


class ExportCommand(Command):
    """The export commands' help ends with the registered formats, read from the registry only
    when the help is shown (importing the exports service at start would slow every command)."""

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        from app.exports.service import FORMATS

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
    exit with status 1 and leave ``output`` untouched; a missing database is refused."""
    from app.collections import service as collections
    from app.exports import service as exports
    from app.kernel.errors import DomainError

    with database(database_url) as db:
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
            fail(str(exc.detail))
        except OSError as exc:
            fail(f"cannot write {output}: {exc.strerror or exc}")


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
        "--all-tasks/--no-all-tasks",
        help="Every finished task instead of one per query (same as --source all; each "
        "topk-jsonl line names its assessor).",
    ),
    assessor: str | None = ASSESSOR_OPTION,
    missing_features: str = MISSING_OPTION,
    plan: str | None = PLAN_OPTION,
    output: Path | None = OUTPUT_OPTION,
    database_url: str | None = DB_OPTION,
) -> None:
    """Export labels or judgments of COLLECTION (the formats of the REST export).

    One labeling per query unless --all-tasks: `heapjudge evaluate` reads the export as is.
    """
    if all_tasks and source not in ("first", "all"):
        usage_error(f"--all-tasks is --source all; it cannot go with --source {source}")
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
    app.command("serve", cls=Command)(serve)
    app.command("create-user", cls=Command)(create_user)
    app.command("import", cls=Command)(import_)
    app.command("export", cls=ExportCommand)(export)
    app.add_typer(db_app, name="db")
