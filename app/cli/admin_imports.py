"""CLI commands ``heapjudge admin import-*`` and ``attach-*``: collections from TREC, SMART
(Cranfield) and LETOR files, all or nothing, and grades or features attached to one (the same
services as the REST API and the admin pages)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from app.cli.conventions import Command
from app.cli.database import DB_OPTION, collection_id, run_service

if TYPE_CHECKING:
    from app.kernel.db import Database

app = typer.Typer()

# Options that import-smart and import-trec share: how query-document pairs are chosen.
PAIRING_OPTION = typer.Option(
    "qrels", help="qrels (judged documents) | all | run (top n of --run) | bm25 (top n by BM25)"
)
RUN_OPTION = typer.Option(None, exists=True, dir_okay=False, help="TREC run.")
RUN_DEPTH_OPTION = typer.Option(None, help="Top n of the run (or of BM25: default 100).")

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
    """Import ``files`` of ``kind`` into ``collection`` (created if missing), all or nothing."""
    from app.collections.imports import import_files
    from app.collections.uploads import UploadedFile

    uploads = {k: UploadedFile(p.name, p) for k, p in files.items() if p is not None}

    def go(db: Database) -> Any:
        from app.kernel.errors import DomainError, NotFound
        from app.kernel.models import Collection

        try:
            cid, created = collection_id(db, collection), False
        except NotFound:
            cid, created = collection_id(db, collection, create=True), True
        try:
            return import_files(
                db=db, collection_id=cid, kind=kind, files=uploads, max_bytes=0, **options
            )
        except DomainError:
            if created:  # a failed import leaves nothing behind, not even the new collection
                with db.write() as s:
                    s.delete(s.get(Collection, cid))
            raise

    report = run_service(database_url, go, create=True)
    typer.echo(
        f"{collection}: {report.pooled} (query, document) pairs in the pool "
        f"({report.documents_created} new, {report.documents_unchanged} already there), "
        f"{report.queries_created} new queries"
    )
    if report.qrels:
        typer.echo(f"qrels: {report.qrels}")
        typer.echo(
            f"judged: {report.judged} (query, document) pairs, {report.judged_pooled} of them "
            f"in the pool, {report.judged_unpooled} outside it (kept as judgments for "
            "evaluation, shown to no assessor)"
        )
    for note in report.notes:
        typer.echo(f"note: {note}")


@app.command("import-smart", cls=Command)
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


@app.command("import-cranfield", cls=Command)
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


@app.command("import-trec", cls=Command)
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


@app.command("import-letor", cls=Command)
def import_letor(
    collection: str = typer.Argument(..., help="Collection name (created if missing) or id."),
    features: Path = typer.Argument(..., exists=True, dir_okay=False, help="LETOR file."),
    database_url: str | None = DB_OPTION,
) -> None:
    """A collection made of a LETOR file alone (features; grades from the labels)."""
    _import(collection, "letor", {"features": features}, database_url)


@app.command("attach-grades", cls=Command)
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

    report = run_service(
        database_url,
        lambda db: attach_grades(
            db=db,
            collection_id=collection_id(db, collection),
            qrels=UploadedFile(qrels.name, qrels),
            qrels_format=qrels_format,
            strict=strict,
            max_bytes=0,
        ),
    )
    typer.echo(f"{report.matched} grades attached; {report.unmatched} qrels lines unmatched")


@app.command("attach-features", cls=Command)
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

    report = run_service(
        database_url,
        lambda db: attach_features(
            db=db,
            collection_id=collection_id(db, collection),
            features=UploadedFile(features.name, features),
            strict=strict,
            max_bytes=0,
        ),
    )
    typer.echo(
        f"{report.matched} feature vectors attached; {report.unmatched} rows unmatched; "
        f"{report.documents_without} documents without features"
    )
