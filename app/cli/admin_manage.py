"""CLI commands ``heapjudge admin progress`` (with any machine alarm), ``machine-resume``,
``machine-gold`` (the machine's gold pairs),
``reset-password``, ``disable``,
``collection`` and ``features``: a collection's progress, the users' accounts, renaming and
archiving, text features as the documents' feature vectors."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path
from typing import Any

import typer

from app.cli.conventions import Command
from app.cli.database import DB_OPTION, collection_id, run_service

app = typer.Typer()


@app.command("progress", cls=Command)
def progress_cmd(
    collection: str = typer.Argument(...),
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print the report as JSON."),
    database_url: str | None = DB_OPTION,
) -> None:
    """Tasks by status, judgments, active time and estimated remaining, per assessor; whether
    the job queues have a live worker ("worker down" when a heartbeat is stale); and any
    machine alarm (the audits showed a machine worse than it claimed, or its calls failed)."""
    from dataclasses import asdict

    from app.kernel import queue
    from app.machine.alarms import collection_alarms
    from app.tasks.progress import collection_progress

    def report_of(db: Any) -> dict[str, Any]:
        cid = collection_id(db, collection)
        out = collection_progress(db=db, collection_id=cid)
        return {
            **out,
            "workers": [asdict(s) for s in queue.worker_status(db.settings)],
            "audit_alarms": collection_alarms(db=db, collection_id=cid)["alarms"],
        }

    report = run_service(database_url, report_of)
    if as_json:
        typer.echo(json.dumps(report, default=str, indent=2))
        return
    for alarm in report["audit_alarms"]:
        if alarm["active"]:
            typer.echo(f"MACHINE ALARM {alarm['id']}: {alarm_line(alarm)}")
    t = report["totals"]
    typer.echo(
        f"{report['collection']['name']}: tasks {t['tasks']}, {t['judgments']} judgments, "
        f"{t['active_ms'] / 60000:.1f} active min, about {t['expected_remaining']:.0f} left"
    )
    m = t["machine"]
    if m["machine_answers"]:
        low, high = m["interval"]
        typer.echo(
            f"  machine: {m['machine_answers']} answers in {m['tasks']} tasks, estimated "
            f"κ-NDCG loss {m['estimated_loss']:.3f} (90%: {low:.3f}-{high:.3f}, summed)"
        )
    for a in report["by_assessor"]:
        typer.echo(
            f"  {a['assessor']:<16} done {a['tasks']['done']}/{sum(a['tasks'].values())}  "
            f"{a['judgments']:>6} judgments  ~{a['expected_remaining']:.0f} left  "
            f"last {a['last_activity'] or '-'}"
        )
    workers = [queue.QueueStatus(**w) for w in report["workers"]]
    down = [w for w in workers if w.down]
    typer.echo("workers: " + ("up on every queue" if not down else "DOWN on some queues"))
    for w in workers:
        typer.echo(f"  {w.text()}")
    for alarm in report.get("machine_alarms", []):
        typer.echo(f"  ALARM {alarm['kind']}: {alarm['evidence']}")


def alarm_line(alarm: dict[str, Any]) -> str:
    """One alarm's evidence on a line."""
    return (
        f"judge {alarm['judge']} stopped on this collection since {alarm['raised_at']}: "
        f"people agreed with it on {alarm['agree']} of {alarm['audits']} audited answers "
        f"(it claimed P(wrong) {alarm['claimed_wrong']:.3f} on average; log likelihood ratio "
        f"{alarm['log_ratio']:.2f} >= ln 20). People answer everything; resume with "
        f"`heapjudge admin machine-resume COLLECTION {alarm['id']}` after recalibrating."
    )


@app.command("machine-resume", cls=Command)
def machine_resume_cmd(
    collection: str = typer.Argument(...),
    alarm: int = typer.Argument(..., help="The alarm's id (heapjudge admin progress)."),
    by: str = typer.Option("cli", help="Who resumes it (recorded)."),
    database_url: str | None = DB_OPTION,
) -> None:
    """Let a machine stopped by an audit alarm answer again (after recalibrating it)."""
    from app.machine.alarms import resume_alarm

    out = run_service(
        database_url,
        lambda db: resume_alarm(
            db=db, collection_id=collection_id(db, collection), alarm_id=alarm, by=by
        ),
    )
    typer.echo(f"machine alarm {out['id']} resumed: judge {out['judge']} answers again")


@app.command("machine-gold", cls=Command)
def machine_gold_cmd(
    collection: str = typer.Argument(...),
    pairs: Path | None = typer.Option(
        None,
        "--add",
        help="A CSV of pairs to mark as gold, one per line: query_id,better,worse (a header "
        "line query_id,better,worse is allowed; - reads stdin). All or none.",
    ),
    by: str = typer.Option("cli", help="Who marks them (recorded)."),
    as_json: bool = typer.Option(False, "--json/--no-json", help="The gold pairs as JSON."),
    database_url: str | None = DB_OPTION,
) -> None:
    """List the collection's gold pairs, or first mark more (--add): pairs whose right answer
    you state, evidence for the machine beside people's answers
    (docs/machine-judges.md#the-gold-set)."""
    from app.machine.gold import add_gold, list_gold

    rows: list[dict[str, str]] = []
    if pairs is not None:
        text = sys.stdin.read() if str(pairs) == "-" else pairs.read_text(encoding="utf-8")
        for n, fields in enumerate(csv.reader(io.StringIO(text)), start=1):
            if not fields or fields == ["query_id", "better", "worse"]:
                continue
            if len(fields) != 3:
                typer.echo(f"error: {pairs}, line {n}: want query_id,better,worse", err=True)
                raise typer.Exit(2)
            rows.append(dict(zip(("query_id", "better", "worse"), fields, strict=True)))
        if not rows:
            typer.echo(f"error: {pairs}: no pairs", err=True)
            raise typer.Exit(2)

    def run(db: Any) -> dict[str, Any]:
        cid = collection_id(db, collection)
        if rows:
            add_gold(db=db, collection_id=cid, pairs=rows, by=by)
        return list_gold(db=db, collection_id=cid)

    out = run_service(database_url, run)
    if rows:
        typer.echo(f"{len(rows)} gold pairs marked", err=as_json)
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    typer.echo(f"{len(out['gold'])} gold pairs on collection {out['collection_id']}")
    for g in out["gold"]:
        typer.echo(f"{g['id']:>6}  query {g['query_id']}: {g['better']} > {g['worse']}")


@app.command("reset-password", cls=Command)
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
    run_service(database_url, lambda db: reset_password(db=db, username=name, password=password))
    typer.echo(f"password of {name!r} reset; sessions and tokens revoked")


@app.command("disable", cls=Command)
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

    run_service(
        database_url,
        lambda db: set_disabled(db=db, username=name, disabled=not enable, force=force),
    )
    typer.echo(f"{name!r} {'enabled' if enable else 'disabled'}")


@app.command("collection", cls=Command)
def collection_cmd(
    collection: str = typer.Argument(...),
    rename: str | None = typer.Option(None, help="New name."),
    archive: bool | None = typer.Option(
        None, "--archive/--no-archive", help="Archive, or un-archive (default: unchanged)."
    ),
    database_url: str | None = DB_OPTION,
) -> None:
    """Rename and/or archive a collection."""
    from app.collections.manage import update_collection

    coll = run_service(
        database_url,
        lambda db: update_collection(
            db=db, collection_id=collection_id(db, collection), name=rename, archived=archive
        ),
    )
    typer.echo(f"collection {coll.id}: {coll.name!r}{' (archived)' if coll.archived else ''}")


@app.command("features", cls=Command)
def features_cmd(
    collection: str = typer.Argument(..., help="Collection name or id."),
    replace: bool = typer.Option(
        False, "--replace/--no-replace", help="Replace imported (LETOR) feature vectors."
    ),
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print the report as JSON."),
    database_url: str | None = DB_OPTION,
) -> None:
    """Compute heapjudge's text features of every (query, document) of the collection and
    store them as its documents' feature vectors (in this process; docs/features.md)."""
    from app.training.features import compute_features

    report = run_service(
        database_url,
        lambda db: compute_features(
            db=db, collection_id=collection_id(db, collection), replace=replace
        ),
    )
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    fs = report["feature_set"]
    typer.echo(
        f"{fs['name']} v{fs['version']}: {len(fs['names'])} features for {report['rows']} "
        f"rows ({report['queries']} queries over {report['documents']} documents), "
        f"normalised per query; {report['seconds']['total']:.1f} s"
        + ("; imported vectors replaced" if report["replaced_imported"] else "")
    )
