"""Use cases: import collections from real formats, and attach grades/features to documents.

Every format is parsed by the pure parsers of :mod:`labeling.sources` (line-numbered errors,
whole-file reports) into the service's NDJSON rows, which then go through the one NDJSON import
(:func:`app.collections.service.import_ndjson`): same validation, same idempotency, same single
write transaction. So every import here is all or nothing, and an error report lists problems
as ``{"file", "line", "msg"}`` items (422).

Formats (``kind``):

* ``trec`` — files ``topics`` (TREC ``<top>``), ``documents`` (TREC ``<DOC>`` SGML or JSONL,
  told apart by the first non-blank byte), optional ``qrels``;
* ``smart`` — files ``documents`` (``.I/.T/.A/.B/.W``), ``queries``, optional ``qrels``
  (Cranfield's ``query doc code``, the ``.REL`` layout ``qid docid 0 0.000000`` of CACM, CISI,
  MED, ..., or TREC qrels);
* ``letor`` — file ``features``: a LETOR file alone becomes a collection (features, grades from
  the labels, query ids as query text).

``qrels_format``: ``"auto"`` (default) sniffs the layout from the file (TREC, three columns,
SMART ``.REL``; ``docs/data-formats.md#qrels``); a layout name forces it; ``"cranfield"`` is the
three-column layout with Cranfield's codes as grades (what ``auto`` picks for a three-column
file in a SMART import). The report says what was read (``qrels``).

``pairing`` decides which documents each query gets: ``"qrels"`` (the judged ones), ``"all"``
(every document under every query; refused above ``import_max_lines`` rows), ``"run"`` (the
top ``run_depth`` of a TREC run file ``run``, trec_eval order) or ``"bm25"`` (the top
``run_depth``, default 100, by BM25 over the documents of the files,
:mod:`labeling.retrieval.bm25`).
The report's ``notes`` say what a pairing left out (run documents that are not in the files,
documents of the files no query got) and suggest a pairing for binary qrels.

Attaching (:func:`attach_grades`, :func:`attach_features`) updates existing documents, matched by
(query id, doc id), in one write transaction; lines that match no document are counted in the
report (or are errors with ``strict``).

Uploads are read line by line from (spooled) files; each file is limited to ``max_bytes``
(default: the app's ``max_body_bytes``).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from sqlalchemy import select

from app.collections import service as collections
from app.kernel.db import Database
from app.kernel.errors import Invalid, NotFound, PayloadTooLarge, issue_items
from app.kernel.models import Collection, Document, Query
from labeling.retrieval.bm25 import Bm25Index
from labeling.retrieval.text import document_text
from labeling.sources import (
    SourceError,
    build_rows,
    join_features,
    join_grades,
    parse_jsonl_docs,
    parse_smart_docs,
    parse_smart_queries,
    parse_topics,
    parse_trec_docs,
    rows_from_letor,
)
from labeling.sources.letor import read_letor_features
from labeling.sources.rows import Join
from labeling.sources.smart import parse_smart_qrels
from labeling.sources.trec import QRELS_FORMATS, QrelsFile, parse_qrels_file
from labeling.study.pools import parse_trec_run

ImportKind = Literal["trec", "smart", "letor"]
IMPORT_KINDS: tuple[ImportKind, ...] = ("trec", "smart", "letor")
PAIRINGS = ("qrels", "all", "run", "bm25")
#: Documents per query with ``pairing="bm25"`` when ``run_depth`` is not given.
BM25_DEPTH = 100
#: The files each kind accepts (required first).
FILES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "trec": (("topics", "documents"), ("qrels", "run")),
    "smart": (("documents", "queries"), ("qrels", "run")),
    "letor": (("features",), ()),
}

Source = str | os.PathLike[str] | IO[bytes] | bytes


@dataclass(frozen=True, slots=True)
class UploadedFile:
    """One input file: a display ``name`` (for error reports) and its content."""

    name: str
    content: Source


@dataclass(frozen=True, slots=True)
class AdminImportReport:
    collection_id: int
    kind: str
    rows: int
    queries_created: int
    documents_created: int
    documents_unchanged: int
    files: list[str] = field(default_factory=list)
    qrels: str | None = None
    """How the qrels file was read: layout (detected or given, and why) and grades."""
    notes: list[str] = field(default_factory=list)
    """What the pairing left out, and suggestions (e.g. the pairing for binary qrels)."""


@dataclass(frozen=True, slots=True)
class AttachReport:
    collection_id: int
    what: str
    lines: int
    matched: int
    unmatched: int
    unmatched_lines: list[int] = field(default_factory=list)
    documents_without: int = 0


# --------------------------------------------------------------------------- file helpers


def _limit(max_bytes: int | None, db: Database) -> int | None:
    return db.settings.max_body_bytes if max_bytes is None else (max_bytes or None)


def _open(upload: UploadedFile) -> IO[bytes]:
    content = upload.content
    if isinstance(content, bytes):
        import io

        return io.BytesIO(content)
    if isinstance(content, str | os.PathLike):
        return Path(content).open("rb")  # closed by _lines
    content.seek(0)
    return content


def _size(upload: UploadedFile) -> int:
    content = upload.content
    if isinstance(content, bytes):
        return len(content)
    if isinstance(content, str | os.PathLike):
        return Path(content).stat().st_size
    pos = content.tell()
    content.seek(0, os.SEEK_END)
    size = content.tell()
    content.seek(pos)
    return size


def _check_sizes(files: Mapping[str, UploadedFile], limit: int | None) -> None:
    if limit is None:
        return
    for upload in files.values():
        size = _size(upload)
        if size > limit:
            raise PayloadTooLarge(f"{upload.name} is {size} bytes; the limit is {limit} bytes")


def _lines(upload: UploadedFile) -> Iterator[bytes]:
    """The file's lines, read lazily (a spooled upload is never loaded whole)."""
    fh = _open(upload)
    try:
        # Not ``yield from fh``: closing this generator early would close the file with it.
        for line in fh:  # noqa: UP028
            yield line
    finally:
        if isinstance(upload.content, str | os.PathLike):
            fh.close()


def _first_byte(upload: UploadedFile) -> bytes:
    for line in _lines(upload):
        stripped = line.strip()
        if stripped:
            return stripped[:1]
    return b""


def _source_invalid(error: SourceError, what: str = "nothing was imported") -> Invalid:
    items = issue_items(error.issues)
    if error.more:
        items.append({"file": "", "line": 0, "msg": f"... and {error.more} more error(s)"})
    count = len(error.issues) + error.more
    return Invalid(items, extra={"message": f"{count} error(s); {what}"})


def _local_path(upload: UploadedFile) -> tuple[Path, bool]:
    """A filesystem path for readers that need one (LETOR); True if it is a temp copy."""
    if isinstance(upload.content, str | os.PathLike):
        return Path(upload.content), False
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as tmp:
        for line in _lines(upload):
            tmp.write(line)
    return Path(tmp.name), True


def _features(upload: UploadedFile) -> list[Any]:
    path, temporary = _local_path(upload)
    try:
        return read_letor_features(path, file=upload.name)
    finally:
        if temporary:
            path.unlink(missing_ok=True)


def _qrels(upload: UploadedFile, qrels_format: str, kind: str = "trec") -> QrelsFile:
    if kind == "smart" or qrels_format == "cranfield":
        return parse_smart_qrels(_lines(upload), file=upload.name, qrels_format=qrels_format)
    return parse_qrels_file(_lines(upload), file=upload.name, layout=qrels_format)


def _check_qrels_format(qrels_format: str) -> None:
    if qrels_format not in QRELS_FORMATS:
        raise Invalid(
            f"unknown qrels format {qrels_format!r}; expected one of {', '.join(QRELS_FORMATS)}"
        )


# --------------------------------------------------------------------------- import


def import_files(
    *,
    db: Database,
    collection_id: int,
    kind: str,
    files: Mapping[str, UploadedFile],
    pairing: str = "qrels",
    qrels_format: str = "auto",
    run_depth: int | None = None,
    unjudged_grade: int | None = None,
    include_narrative: bool = False,
    ignore_unknown_qrels: bool = False,
    max_bytes: int | None = None,
) -> AdminImportReport:
    """Parse the files of ``kind``, build rows and import them all or nothing (module doc).

    ``ignore_unknown_qrels``: skip qrels lines whose query or document is not imported (a
    subset of the topics), instead of reporting them as errors. ``max_bytes``: per-file
    limit (``None`` = the app's ``max_body_bytes``; ``0`` = no limit, for the CLI reading
    local files).
    """
    if kind not in FILES:
        raise Invalid(f"unknown import kind {kind!r}; expected one of {', '.join(IMPORT_KINDS)}")
    required, optional = FILES[kind]
    missing = [f for f in required if f not in files]
    unknown = sorted(set(files) - set(required) - set(optional))
    if missing or unknown:
        raise Invalid(
            f"{kind} import needs files {', '.join(required)}"
            + (f" (optional: {', '.join(optional)})" if optional else "")
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unexpected {', '.join(unknown)}" if unknown else "")
        )
    if pairing not in PAIRINGS:
        raise Invalid(f"unknown pairing {pairing!r}; expected one of {', '.join(PAIRINGS)}")
    _check_qrels_format(qrels_format)
    if run_depth is not None and run_depth < 1:
        raise Invalid("run_depth must be at least 1")
    if unjudged_grade is not None and not 0 <= unjudged_grade <= 4:
        raise Invalid("unjudged_grade must be in 0..4")
    if kind != "letor":
        if pairing == "qrels" and "qrels" not in files:
            raise Invalid("pairing 'qrels' needs a qrels file (or use pairing 'all' or 'run')")
        if pairing == "run" and "run" not in files:
            raise Invalid("pairing 'run' needs a run file")
    _check_sizes(files, _limit(max_bytes, db))
    with db.read() as s:
        _require_collection(s, collection_id)

    notes: list[str] = []
    qrels_read: list[str] = []
    try:
        rows = list(
            _rows(
                kind,
                files,
                pairing=pairing,
                qrels_format=qrels_format,
                run_depth=run_depth,
                unjudged_grade=unjudged_grade,
                include_narrative=include_narrative,
                ignore_unknown_qrels=ignore_unknown_qrels,
                max_rows=db.settings.import_max_lines,
                notes=notes,
                qrels_read=qrels_read,
            )
        )
    except SourceError as err:
        raise _source_invalid(err) from None
    if not rows:
        raise Invalid("the files produce no (query, document) rows to import")
    # One NDJSON line per row, handed over lazily (the import reads line by line).
    payload = ((json.dumps(r, ensure_ascii=False) + "\n").encode("utf-8") for r in rows)
    try:
        report = collections.import_ndjson(db=db, collection_id=collection_id, data=payload)
    except Invalid as err:
        raise _explain_rows(err, rows) from None
    return AdminImportReport(
        collection_id=collection_id,
        kind=kind,
        rows=len(rows),
        queries_created=report.queries_created,
        documents_created=report.documents_created,
        documents_unchanged=report.documents_unchanged,
        files=[f.name for f in files.values()],
        qrels=qrels_read[0] if qrels_read else None,
        notes=notes,
    )


def _rows(
    kind: str,
    files: Mapping[str, UploadedFile],
    *,
    pairing: str,
    qrels_format: str,
    run_depth: int | None,
    unjudged_grade: int | None,
    include_narrative: bool,
    ignore_unknown_qrels: bool,
    max_rows: int,
    notes: list[str],
    qrels_read: list[str],
) -> Iterable[dict[str, Any]]:
    if kind == "letor":
        # The file's stem (S1..S5 of LETOR 4.0) is kept as the queries' partition: training
        # folds follow the benchmark's rotation (docs/training.md#folds).
        return rows_from_letor(_features(files["features"]), part=Path(files["features"].name).stem)
    errors: list[SourceError] = []

    def attempt(fn: Any) -> Any:
        try:
            return fn()
        except SourceError as err:
            errors.append(err)
            return None

    if kind == "trec":
        topics = attempt(lambda: parse_topics(_lines(files["topics"]), file=files["topics"].name))
        docs_file = files["documents"]
        if _first_byte(docs_file) == b"{":
            docs = attempt(lambda: list(parse_jsonl_docs(_lines(docs_file), file=docs_file.name)))
        else:
            docs = attempt(lambda: list(parse_trec_docs(_lines(docs_file), file=docs_file.name)))
    else:
        docs = attempt(
            lambda: parse_smart_docs(_lines(files["documents"]), file=files["documents"].name)
        )
        topics = attempt(
            lambda: parse_smart_queries(_lines(files["queries"]), file=files["queries"].name)
        )
    qrels_file = (
        attempt(lambda: _qrels(files["qrels"], qrels_format, kind)) if "qrels" in files else None
    )
    run = None
    if "run" in files:
        run = attempt(lambda: parse_trec_run(_lines(files["run"]), file=files["run"].name))
    if errors:
        from labeling.sources.base import merge_errors

        merged = merge_errors(errors)
        assert merged is not None
        raise merged
    assert topics is not None and docs is not None
    qrels = qrels_file.entries if qrels_file is not None else None
    if qrels_file is not None:
        qrels_read.append(qrels_file.describe())
    if pairing == "all" and len(topics) * len(docs) > max_rows:
        raise Invalid(
            f"pairing 'all' would create {len(topics)} x {len(docs)} = "
            f"{len(topics) * len(docs)} rows (limit {max_rows}); use pairing 'qrels' or 'run'"
        )
    pairs: Any = pairing
    known = {d.doc_id for d in docs}
    topic_ids = {t.query_id for t in topics}
    if pairing == "run":
        pairs = {}
        outside: dict[str, int] = {}
        for qid, entries in (run or {}).items():
            if qid not in topic_ids:
                continue
            ranked = [e.doc_id for e in entries][:run_depth]
            pairs[qid] = [d for d in ranked if d in known]
            if len(pairs[qid]) < len(ranked):
                outside[qid] = len(ranked) - len(pairs[qid])
        if outside:
            notes.append(
                f"{sum(outside.values())} run documents are not in the documents file and were "
                f"left out ({len(outside)} queries, e.g. query {next(iter(outside))}: "
                f"{next(iter(outside.values()))})"
            )
    elif pairing == "bm25":
        index = Bm25Index((d.doc_id, document_text(d.title, d.text, d.html)) for d in docs)
        depth = run_depth or BM25_DEPTH
        pairs = {t.query_id: [h.doc_id for h in index.search(t.title, depth)] for t in topics}
        notes.append(f"pairing bm25: the top {depth} documents of each query by BM25")
    notes.extend(_pairing_notes(pairing, pairs, docs, qrels_file, kind, unjudged_grade))
    return build_rows(
        topics,
        docs,
        pairing=pairs,
        qrels=qrels,
        qrels_file=files["qrels"].name if "qrels" in files else "qrels",
        unjudged_grade=unjudged_grade,
        include_narrative=include_narrative,
        ignore_unknown_qrels=ignore_unknown_qrels,
    )


def _pairing_notes(
    pairing: str,
    pairs: Any,
    docs: list[Any],
    qrels_file: QrelsFile | None,
    kind: str,
    unjudged_grade: int | None,
) -> list[str]:
    """What a pairing leaves out of the collection, and the pairing binary qrels need."""
    notes: list[str] = []
    if pairing == "all":
        return notes
    if pairing == "qrels":
        used = {e.doc_id for e in (qrels_file.entries if qrels_file else [])}
    else:
        used = {d for ids in pairs.values() for d in ids}
    left = sum(1 for d in docs if d.doc_id not in used)
    if left:
        notes.append(
            f"{left} of the {len(docs)} documents in the files are under no query and were not "
            "imported: a pool from a run or BM25 cannot include them (pairing 'bm25' or 'all' "
            "imports them)"
        )
    if qrels_file is None:
        return notes
    grades = {e.grade for e in qrels_file.entries}
    binary = qrels_file.layout.layout == "smart-rel" or grades <= {0, 1}
    if binary and pairing == "qrels":
        notes.append(
            "the qrels are binary and list (almost) only relevant documents, so every query's "
            "documents are all relevant; to judge, give each query non-relevant candidates too: "
            "--pairing bm25 --unjudged-grade 0 (top 100 by BM25) or --pairing all "
            "--unjudged-grade 0"
            + (" (what the CACM/CISI/MED .REL files need)" if kind == "smart" else "")
        )
    elif binary and unjudged_grade is None:
        notes.append(
            "the qrels are binary: unlisted documents are not relevant, so --unjudged-grade 0 "
            "grades them 0 instead of leaving them without a grade"
        )
    return notes


def _explain_rows(err: Invalid, rows: list[dict[str, Any]]) -> Invalid:
    """Translate the NDJSON import's line numbers (of our generated rows) into query/doc ids."""
    if not isinstance(err.detail, list):
        return err
    items = []
    for item in err.detail:
        line = item.get("line", 0) if isinstance(item, dict) else 0
        if isinstance(item, dict) and 1 <= line <= len(rows):
            row = rows[line - 1]
            items.append(
                {
                    "file": "(generated row)",
                    "line": line,
                    "query_id": row["query_id"],
                    "doc_id": row["doc_id"],
                    "msg": item.get("msg", ""),
                }
            )
        else:
            items.append(item)
    return Invalid(items, extra=err.extra)


# --------------------------------------------------------------------------- attach


def _document_hash(doc: Document) -> str:
    """The service's content hash for a document row (kept consistent after an update so
    re-imports stay idempotent): the NDJSON import's own definition."""
    return collections.document_content_hash(
        title=doc.title,
        text=doc.text,
        html=doc.html,
        features=doc.features,
        grade=doc.grade,
    )


def _require_collection(s: Any, collection_id: int) -> None:
    """NotFound unless the collection exists."""
    if s.get(Collection, collection_id) is None:
        raise NotFound(f"no collection with id {collection_id}")


def _collection_documents(s: Any, collection_id: int) -> dict[tuple[str, str], Document]:
    """The documents of an existing collection by (query id, document id); NotFound if none."""
    _require_collection(s, collection_id)
    stmt = (
        select(Document, Query.external_id)
        .join(Query, Query.id == Document.query_id)
        .where(Document.collection_id == collection_id)
    )
    return {(qid, d.external_id): d for d, qid in s.execute(stmt)}


def _attach_report(
    collection_id: int, what: str, lines: int, joined: Join, docs: dict[tuple[str, str], Document]
) -> AttachReport:
    """What an attach did: ``lines`` records read, of which ``joined`` matched a document."""
    return AttachReport(
        collection_id=collection_id,
        what=what,
        lines=lines,
        matched=len(joined.matched),
        unmatched=len(joined.unmatched),
        unmatched_lines=joined.unmatched[:20],
        documents_without=sum(1 for k in docs if k not in joined.matched),
    )


def attach_grades(
    *,
    db: Database,
    collection_id: int,
    qrels: UploadedFile,
    qrels_format: str = "auto",
    strict: bool = False,
    max_bytes: int | None = None,
) -> AttachReport:
    """Set ``document.grade`` from a qrels file (all or nothing; any layout, module doc)."""
    _check_qrels_format(qrels_format)
    _check_sizes({"qrels": qrels}, _limit(max_bytes, db))
    try:
        entries = _qrels(qrels, qrels_format).entries
    except SourceError as err:
        raise _source_invalid(err, "no grade was attached") from None
    with db.write() as s:
        docs = _collection_documents(s, collection_id)
        try:
            joined = join_grades(docs.keys(), entries, file=qrels.name, strict=strict)
        except SourceError as err:
            raise _source_invalid(err, "no grade was attached") from None
        for key, grade in joined.matched.items():
            doc = docs[key]
            doc.grade = int(grade)
            doc.content_hash = _document_hash(doc)
    return _attach_report(collection_id, "grades", len(entries), joined, docs)


def attach_features(
    *,
    db: Database,
    collection_id: int,
    features: UploadedFile,
    strict: bool = False,
    max_bytes: int | None = None,
) -> AttachReport:
    """Set ``document.features`` from a LETOR file, matched by ``qid`` and the ``docid`` in the
    row comment (all or nothing; every vector must have the same length, also as the vectors
    already stored in the collection)."""
    _check_sizes({"features": features}, _limit(max_bytes, db))
    try:
        rows = _features(features)
    except SourceError as err:
        raise _source_invalid(err, "no feature vector was attached") from None
    with db.write() as s:
        docs = _collection_documents(s, collection_id)
        try:
            joined = join_features(docs.keys(), rows, file=features.name, strict=strict)
        except SourceError as err:
            raise _source_invalid(err, "no feature vector was attached") from None
        widths = {len(v) for v in joined.matched.values()}
        others = {
            len(d.features)
            for key, d in docs.items()
            if d.features is not None and key not in joined.matched
        }
        if len(widths | others) > 1:
            raise Invalid(
                f"feature vectors would have different lengths in one collection: "
                f"{sorted(widths | others)}"
            )
        for key, vector in joined.matched.items():
            doc = docs[key]
            doc.features = [float(x) for x in vector]
            doc.content_hash = _document_hash(doc)
    return _attach_report(collection_id, "features", len(rows), joined, docs)
