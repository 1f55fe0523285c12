"""CLI command ``heapjudge export``: the formats of the REST export (docs/exports.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from app.cli.conventions import Command, fail, usage_error
from app.cli.database import DB_OPTION, database

app = typer.Typer()

#: ``-o/--output``: where a command writes what it would print (the same in ``admin bm25``).
OUTPUT_OPTION = typer.Option(None, "-o", "--output", help="File (default stdout).")


class ExportCommand(Command):
    """The export command's help ends with the registered formats, read from the registry only
    when the help is shown (importing the exports service at start would slow every command)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from app.exports.service import FORMATS

        lines = [f"{f.name}: {f.summary}" for f in FORMATS.values()]
        self.epilog = "Formats (docs/exports.md):\n\n" + "\n\n".join(lines)
        super().format_help(ctx, formatter)


def _write(chunks: Any, output: Path | None) -> None:
    """The export's bytes to ``output`` (default stdout)."""
    if output is None:
        for chunk in chunks:
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
    else:
        with output.open("wb") as fh:
            for chunk in chunks:
                fh.write(chunk)


@app.command("export", cls=ExportCommand)
def export(
    collection: str = typer.Argument(..., help="Collection name or id."),
    format: str = typer.Option("qrels", "--format", "-f", help="Export format (listed below)."),
    labels: str | None = typer.Option(
        None,
        "--labels",
        help="kappa | grades (default: the format's own: grades for grades-qrels); qrels and "
        "topk-jsonl also take hybrid (every answer, a machine's too: the default) | human "
        "(only documents no machine answer touched keep a label); trec-prefs takes hybrid | "
        "human (people's answers only), qrels-jg grades | kappa.",
    ),
    source: str = typer.Option(
        "first",
        "--source",
        help="Whose labels when a query has several finished tasks: first | assessor | all | "
        "borda | bt | mean.",
    ),
    all_tasks: bool = typer.Option(
        False,
        "--all-tasks/--no-all-tasks",
        help="Every finished task instead of one per query (same as --source all; each "
        "topk-jsonl line names its assessor).",
    ),
    assessor: str | None = typer.Option(
        None, "--assessor", help="Only this assessor's tasks (required by --source assessor)."
    ),
    missing_features: str = typer.Option(
        "error",
        "--missing-features",
        help="LETOR formats, documents without features: error | skip | zero.",
    ),
    plan: str | None = typer.Option(
        None, "--plan", help="Only tasks of this plan label, e.g. study:A1."
    ),
    output: Path | None = OUTPUT_OPTION,
    database_url: str | None = DB_OPTION,
) -> None:
    """Export labels or judgments of COLLECTION (the formats of the REST export).

    One labeling per query unless --all-tasks: `heapjudge evaluate` reads the export as is.
    """
    from app.collections import service as collections
    from app.exports import service as exports
    from app.kernel.errors import DomainError

    if all_tasks and source not in ("first", "all"):
        usage_error(f"--all-tasks is --source all; it cannot go with --source {source}")
    # Errors exit with status 1 and leave ``output`` untouched; a missing database is refused.
    with database(database_url) as db:
        try:
            coll = collections.find_collection(db=db, ref=collection)
            req = exports.ExportRequest(
                collection_id=coll.id,
                format=format,
                labels=labels,
                source="all" if all_tasks else source,
                assessor=assessor,
                missing_features=missing_features,
                plan=plan,
            )
            _write(exports.export_stream(db=db, req=req), output)
        except DomainError as exc:
            fail(str(exc.detail))
        except OSError as exc:
            fail(f"cannot write {output}: {exc.strerror or exc}")
