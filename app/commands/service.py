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


def export(
    collection: str = typer.Argument(..., help="Collection name or id."),
    format: str = typer.Option(
        "qrels", "--format", "-f", help="qrels | topk-jsonl | pairs-jsonl | grades-qrels"
    ),
    output: Path | None = typer.Option(None, "-o", "--output", help="File (default stdout)."),
    assessor: str | None = typer.Option(
        None, help="Take labels from this assessor (default: the first finished task)."
    ),
    database_url: str | None = typer.Option(None, "--database-url"),
) -> None:
    """Export labels of COLLECTION (same formats as the REST export)."""
    from app.errors import DomainError
    from app.services import collections, exports

    db = _open_db(database_url)
    try:
        coll = collections.find_collection(db=db, ref=collection)
        lines = exports.export_lines(db=db, collection_id=coll.id, format=format, assessor=assessor)
        if output is None:
            for line in lines:
                sys.stdout.write(line)
        else:
            with output.open("w", encoding="utf-8") as fh:
                for line in lines:
                    fh.write(line)
    except DomainError as exc:
        _fail(str(exc.detail))
    finally:
        db.dispose()


def register(app: typer.Typer) -> None:
    """Add the service commands to the CLI."""
    app.command("serve")(serve)
    app.command("create-user")(create_user)
    app.command("import")(import_)
    app.command("export")(export)
    app.add_typer(db_app, name="db")
