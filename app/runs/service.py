"""Use cases: upload TREC runs to a collection (all or nothing), list and delete them, and read
a stored run back as the run mapping of :mod:`ranking.io.trec`
(docs/campaigns.md#runs-on-a-collection).

An upload reads each file line by line (a spooled web upload is never loaded whole) with
:func:`labeling.study.pools.parse_trec_run` (six columns, integer rank, numeric score, a
document once per query, ids in Unicode NFC), then checks what the store needs: every query id
is one of the collection's (an unknown query is refused with the line it first appears on,
or with ``ignore_unknown_queries`` left out and reported), scores are finite, document ids are
identifiers. Documents a query does not have in the collection are kept (they are unjudged:
the metrics count them as not relevant) and counted. Every file is checked before anything is
written; then one write transaction stores every run, so a refused upload stores nothing.

Bounds (docs/performance.md#bounded-requests): a file is read through :func:`bounded_lines`,
which refuses it at line ``run_max_lines + 1``, and the parser hands each entry as it reads it
to :func:`unknown_counter`, which refuses the upload as soon as more than
``run_max_unknown_documents`` entries (over the whole upload) name a document their query does
not have, with the count and the line; reading stops there, so neither the parse nor the
write transaction grows with a file that would be refused anyway.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from app.collections.uploads import (
    UploadedFile,
    check_sizes,
    source_invalid,
    upload_limit,
    upload_lines,
)
from app.kernel.db import Database
from app.kernel.errors import Conflict, Invalid, NotFound
from app.kernel.models import Run, User
from app.runs import repository
from labeling.identifiers import label_problem, normal_identifier
from labeling.sources import SourceError
from labeling.sources.base import IssueCollector, merge_errors
from labeling.study.pools import RunEntry, parse_trec_run

MAX_NAME_CHARS = 200


@dataclass(frozen=True, slots=True)
class RunInfo:
    """A stored run, as the lists show it."""

    id: int
    name: str
    tag: str
    file_name: str
    uploaded_by: str | None
    uploaded_at: str
    queries: int
    entries: int


@dataclass(frozen=True, slots=True)
class UploadedRun:
    """One stored run of an upload and what was left out or noted."""

    run: RunInfo
    unknown_queries: list[str] = field(default_factory=list)
    """Query ids the collection lacks, left out (``ignore_unknown_queries``)."""
    documents_outside: int = 0
    """Entries naming a document the query does not have in the collection (kept; unjudged)."""


@dataclass(frozen=True, slots=True)
class UploadReport:
    collection_id: int
    runs: list[UploadedRun]


@dataclass(slots=True)
class _Parsed:
    """A checked run file, ready to store."""

    name: str
    file_name: str
    tag: str
    entries: list[dict[str, Any]]
    n_entries: int
    unknown: list[str]
    outside: int


def _info(run: Run, username: str | None) -> RunInfo:
    return RunInfo(
        id=run.id,
        name=run.name,
        tag=run.tag,
        file_name=run.file_name,
        uploaded_by=username,
        uploaded_at=run.uploaded_at.isoformat(),
        queries=run.n_queries,
        entries=run.n_entries,
    )


def _check_name(name: str, what: str) -> str:
    name = normal_identifier(name.strip())
    problem = label_problem(name) if name else "is empty"
    if problem is None and len(name) > MAX_NAME_CHARS:
        problem = f"is longer than {MAX_NAME_CHARS} characters"
    if problem is not None:
        raise Invalid(f"the run name {what} {problem}")
    return name


def _names(files: Sequence[UploadedFile], name: str | None) -> list[str]:
    """Each file's run name: ``name`` for a single file, else the file's name."""
    if not files:
        raise Invalid("upload at least one run file")
    if name and name.strip():
        if len(files) > 1:
            raise Invalid(
                "a name can be given for one run file only; several take their file names"
            )
        return [_check_name(name, "given")]
    names = [_check_name(f.name, f"(the file name {f.name!r})") for f in files]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise Invalid(f"two run files are named {twice[0]!r}: give files with distinct names")
    return names


def _entry_issues(
    issues: IssueCollector, entries: list[RunEntry], query_row: int | None, ignore: bool
) -> None:
    """Add the problems of one query's entries (file order) to ``issues``: an unknown query.
    The lines themselves (finite scores, the identifier rule) are the parser's
    (:func:`labeling.study.pools.parse_trec_run`), the same for every run upload."""
    first = entries[0]
    if query_row is None and not ignore:
        issues.add(
            first.line,
            f"query {first.query_id!r} is not in the collection "
            "(upload with ignore_unknown_queries to leave such queries out)",
        )
        return


@dataclass(slots=True)
class Limits:
    """An upload's bounds, and the unknown documents counted so far over its files."""

    max_lines: int
    max_unknown: int
    unknown: int = 0


def bounded_lines(lines: Iterable[bytes], file: str, limits: Limits) -> Iterator[bytes]:
    """``lines`` as they are read, refused (:class:`Invalid`, nothing stored) at the first line
    past ``limits.max_lines``."""
    for number, line in enumerate(lines, start=1):
        if number > limits.max_lines:
            raise Invalid(
                f"{file}: more than {limits.max_lines:,} lines; a run file has at most "
                f"{limits.max_lines:,} (HEAPJUDGE_RUN_MAX_LINES); no run was stored"
            )
        yield line


def unknown_counter(
    file: str, limits: Limits, queries: dict[str, int], documents: dict[int, set[str]]
) -> Callable[[RunEntry], None]:
    """What :func:`labeling.study.pools.parse_trec_run` calls on each entry as it reads it:
    refused (:class:`Invalid`, nothing stored) at the first entry that takes the upload's count
    of documents unknown to their (known) query past ``limits.max_unknown``."""

    def count(entry: RunEntry) -> None:
        row = queries.get(entry.query_id)
        if row is not None and entry.doc_id not in documents.get(row, ()):
            limits.unknown += 1
            if limits.unknown > limits.max_unknown:
                raise Invalid(
                    f"{file}:{entry.line}: {limits.unknown:,} entries so far name a document "
                    "their query does not have in the collection, more than the "
                    f"{limits.max_unknown:,} an upload may hold "
                    "(HEAPJUDGE_RUN_MAX_UNKNOWN_DOCUMENTS); import the documents first "
                    "or cut the runs to the collection's documents; no run was stored"
                )

    return count


def _parse_one(
    upload: UploadedFile,
    name: str,
    queries: dict[str, int],
    documents: dict[int, set[str]],
    ignore_unknown: bool,
    limits: Limits,
) -> _Parsed:
    """Read and check one run file; SourceError listing its problems with line numbers."""
    per_query = parse_trec_run(
        bounded_lines(upload_lines(upload), upload.name, limits),
        file=upload.name,
        on_entry=unknown_counter(upload.name, limits, queries, documents),
    )
    issues = IssueCollector(upload.name)
    rows: list[dict[str, Any]] = []
    unknown: list[str] = []
    outside = n_entries = 0
    tag_line, tag = math.inf, ""
    for qid, entries in per_query.items():
        # The parser orders entries as trec_eval ranks them; the store keeps file order (the
        # input order that ``ties="stable"`` reads, so the stored run scores as the file does).
        entries.sort(key=lambda e: e.line)
        row = queries.get(qid)
        _entry_issues(issues, entries, row, ignore_unknown)
        if entries[0].line < tag_line:
            tag_line, tag = entries[0].line, entries[0].tag
        if row is None:
            unknown.append(qid)
            continue
        known = documents.get(row, set())
        outside += sum(e.doc_id not in known for e in entries)
        n_entries += len(entries)
        rows.append(
            {
                "query_id": row,
                "position": len(rows),
                "doc_ids": [e.doc_id for e in entries],
                "ranks": [e.rank for e in entries],
                "scores": [e.score for e in entries],
            }
        )
    if not per_query:
        issues.add(1, "no run line in the file (expected 'qid Q0 docno rank score tag' lines)")
    elif not rows and not issues:
        issues.add(1, "none of the file's queries is in the collection")
    issues.raise_if_any()
    return _Parsed(name, upload.name, tag[:MAX_NAME_CHARS], rows, n_entries, unknown, outside)


def upload_runs(
    *,
    db: Database,
    collection_id: int,
    files: Sequence[UploadedFile],
    name: str | None = None,
    uploaded_by: int | None = None,
    ignore_unknown_queries: bool = False,
    max_bytes: int | None = None,
) -> UploadReport:
    """Store each TREC run file as a run of the collection, all or nothing (module doc).

    ``name`` names a single run (default: the file's name). Errors: 404 no collection, 413 a
    file over the limit, 422 a malformed file (every problem with its file and line) or one
    past the line or unknown-document bounds (:func:`bounded_lines`,
    :func:`unknown_counter`), 409 a run of that name
    exists already.
    """
    names = _names(files, name)
    check_sizes({f.name: f for f in files}, upload_limit(max_bytes, db))
    with db.read() as s:
        if not repository.collection_exists(s, collection_id):
            raise NotFound(f"no collection with id {collection_id}")
        queries = repository.query_ids(s, collection_id)
        documents = repository.documents_by_query(s, collection_id)
    parsed: list[_Parsed] = []
    errors: list[SourceError] = []
    limits = Limits(db.settings.run_max_lines, db.settings.run_max_unknown_documents)
    for upload, run_name in zip(files, names, strict=True):
        try:
            parsed.append(
                _parse_one(upload, run_name, queries, documents, ignore_unknown_queries, limits)
            )
        except SourceError as exc:
            errors.append(exc)
    merged = merge_errors(errors)
    if merged is not None:
        raise source_invalid(merged, "no run was stored")
    return _store(db, collection_id, parsed, uploaded_by)


def _store(
    db: Database, collection_id: int, parsed: list[_Parsed], uploaded_by: int | None
) -> UploadReport:
    """One write transaction for every run of the upload."""
    out: list[UploadedRun] = []
    try:
        with db.write() as s:
            taken = repository.run_names(s, collection_id) & {p.name for p in parsed}
            if taken:
                raise Conflict(
                    f"the collection has a run named {sorted(taken)[0]!r} already; delete it "
                    "first or give another name"
                )
            username = s.scalar(select(User.username).where(User.id == uploaded_by))
            for p in parsed:
                run = Run(
                    collection_id=collection_id,
                    name=p.name,
                    tag=p.tag,
                    file_name=p.file_name[:255],
                    uploaded_by=uploaded_by,
                    n_queries=len(p.entries),
                    n_entries=p.n_entries,
                )
                repository.insert_run(s, run, p.entries)
                out.append(UploadedRun(_info(run, username), p.unknown, p.outside))
    except IntegrityError:
        # A concurrent upload took the name, or a query was deleted meanwhile.
        raise Conflict(
            "the collection changed during the upload; nothing was stored, try again"
        ) from None
    return UploadReport(collection_id, out)


def list_runs(*, db: Database, collection_id: int) -> list[RunInfo]:
    """The collection's runs, by upload order (404 for no collection)."""
    with db.read() as s:
        if not repository.collection_exists(s, collection_id):
            raise NotFound(f"no collection with id {collection_id}")
        found = repository.runs(s, collection_id)
        users = {uid: name for uid, name in s.execute(select(User.id, User.username))}
    return [_info(r, users.get(r.uploaded_by) if r.uploaded_by else None) for r in found]


def delete_run(*, db: Database, collection_id: int, run: int | str) -> RunInfo:
    """Delete the run with this id (an int) or name (a str) and its entries; what it was."""
    with db.write() as s:
        found = (
            repository.run_by_id(s, collection_id, run)
            if isinstance(run, int)
            else repository.run_by_name(s, collection_id, run)
        )
        if found is None:
            raise NotFound(f"no run {run!r} in collection {collection_id}")
        info = _info(found, None)
        repository.delete_run(s, found.id)
    return info


def run_mapping(*, db: Database, collection_id: int, name: str) -> dict[str, dict[str, float]]:
    """A stored run as :data:`ranking.io.trec.Run`: ``{query id: {doc id: score}}``, queries and
    documents in file order (what :func:`ranking.io.trec.read_run` returns for the uploaded
    file, less the queries an upload left out). 404 for no such run. For a ranking best first,
    sort a query's documents by score, descending (trec_eval breaks ties by doc id, descending).
    """
    with db.read() as s:
        found = repository.run_by_name(s, collection_id, name)
        if found is None:
            raise NotFound(f"no run {name!r} in collection {collection_id}")
        return {
            qid: dict(zip(docs, map(float, scores), strict=True))
            for qid, docs, _ranks, scores in repository.run_entries(s, found.id)
        }


def run_rankings(
    *, db: Database, collection_id: int, names: Sequence[str] | None = None
) -> dict[str, dict[str, list[str]]]:
    """Stored runs as rankings, run name -> query id -> documents best first, the input of the
    pooling core (``labeling.study.campaign_pools.Runs``): each query's documents by score,
    descending, ties by doc id, descending (the order trec_eval scores and
    :func:`labeling.study.pools.parse_trec_run` gives). ``names``: those runs (404 for one the
    collection lacks), else every run by upload order."""
    chosen = list(names) if names is not None else run_names(db=db, collection_id=collection_id)
    out: dict[str, dict[str, list[str]]] = {}
    for name in chosen:
        mapping = run_mapping(db=db, collection_id=collection_id, name=name)
        out[name] = {}
        for qid, docs in mapping.items():
            ranked = sorted(docs, reverse=True)  # doc id descending, then a stable sort by score
            ranked.sort(key=lambda d: docs[d], reverse=True)
            out[name][qid] = ranked
    return out


def run_names(*, db: Database, collection_id: int) -> list[str]:
    """The names of the collection's runs, by upload order."""
    return [r.name for r in list_runs(db=db, collection_id=collection_id)]
