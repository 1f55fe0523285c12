"""CLI commands of the service: serve, create-user, import.

Heavy imports (FastAPI, SQLAlchemy, uvicorn) happen inside the command functions so that
``heapjudge --help`` and the pure commands stay fast.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from app.cli.conventions import Command, fail
from app.cli.database import DB_OPTION, database, migrate

DEMO_DATABASE_URL = "sqlite:///./heapjudge-demo.db"

app = typer.Typer()


@app.command("serve", cls=Command)
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
        help="Start a `heapjudge worker` process for the queued jobs beside the server "
        "(restarted if it dies).",
    ),
) -> None:
    """Apply migrations, then serve the web UI and REST API with uvicorn."""
    import uvicorn

    from app.kernel.settings import InsecureSettings, load_settings

    settings = load_settings()  # read once: a real secret unless dev or demo
    overrides: dict[str, object] = {}
    if demo:
        overrides["demo"] = True
        if not database_url and "database_url" not in settings.model_fields_set:
            database_url = DEMO_DATABASE_URL
    if database_url:
        overrides["database_url"] = database_url
    if "public_origin" not in settings.model_fields_set:
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        overrides["public_origin"] = f"http://{shown}:{port}"
    settings = settings.model_copy(update=overrides)
    # uvicorn's factory (in each of its worker processes) and the training worker read these
    # same settings from the environment (docs/cli.md#config).
    os.environ.update(settings.environment())
    try:
        settings.check()
    except InsecureSettings as exc:
        fail(str(exc))
    migrate(settings.database_url, writable=True)
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
    # Queued jobs execute in their own process, so a long fit never competes with judging
    # for this one (docs/training.md#queue); it exits when this process ends, and is started
    # again when it dies (docs/admin-guide.md#the-worker).
    worker = None
    if training_worker:
        from app.cli.supervise import Supervisor

        worker = Supervisor(
            [sys.executable, "-m", "app.cli", "worker", "--parent", str(os.getpid())]
        ).start()
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
            worker.stop()


@app.command("create-user", cls=Command)
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


@app.command("import", cls=Command)
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
        data = file.open("rb")  # read line by line by the import, never whole
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror or exc}")
    with data, database(database_url, create=True) as db:
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
        f"{report.documents_created} new (query, document) pairs, "
        f"{report.documents_unchanged} unchanged"
    )
