"""Use case: import collections from real formats (TREC, SMART, LETOR) through the NDJSON import.

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
The pairing decides the pool (what assessors are shown), never which judgments are kept: the
qrels' judged pairs the pairing does not pool are stored as judgments outside the pool
(:mod:`app.collections.unpooled`, docs/data-formats.md#judgments-outside-the-pool), and the
report counts ``pooled``, ``judged``, ``judged_pooled`` and ``judged_unpooled`` pairs.
The report's ``notes`` say what a pairing left out (run documents that are not in the files,
documents of the files no query got) and suggest a pairing for binary qrels (never the one
given).

Uploads are read line by line from (spooled) files (:mod:`app.collections.uploads`); each file
is limited to ``max_bytes`` (default: the app's ``max_body_bytes``). Attaching grades or
features to existing documents: :mod:`app.collections.attach`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from app.collections import repository
from app.collections import service as collections
from app.collections.unpooled import UnpooledRow
from app.collections.uploads import (
    UploadedFile,
    check_qrels_format,
    check_sizes,
    first_byte,
    read_features,
    read_qrels,
    source_invalid,
    upload_limit,
    upload_lines,
)
from app.kernel.db import Database
from app.kernel.errors import Invalid, NotFound
from labeling.retrieval.bm25 import Bm25Index
from labeling.retrieval.text import document_text
from labeling.sources import (
    SourceError,
    build_rows,
    parse_jsonl_docs,
    parse_smart_docs,
    parse_smart_queries,
    parse_topics,
    parse_trec_docs,
    rows_from_letor,
    unpooled_judgments,
)
from labeling.sources.base import merge_errors
from labeling.sources.rows import topic_fields
from labeling.sources.trec import QrelsFile
from labeling.study.pools import RunEntry, parse_trec_run

ImportKind = Literal["trec", "smart", "letor"]
IMPORT_KINDS: tuple[ImportKind, ...] = ("trec", "smart", "letor")
PAIRINGS = ("qrels", "all", "run", "bm25")
#: Documents per query with ``pairing="bm25"`` when ``run_depth`` is not given.
BM25_DEPTH = 100
#: The deepest ``run_depth`` (documents per query of a run or of BM25).
MAX_RUN_DEPTH = 100_000
#: The files each kind accepts (required first).
FILES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "trec": (("topics", "documents"), ("qrels", "run")),
    "smart": (("documents", "queries"), ("qrels", "run")),
    "letor": (("features",), ()),
}


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
    judged: int = 0
    """Judged (query, document) pairs of the qrels (distinct, of known queries and documents)."""
    judged_pooled: int = 0
    """Of them, the pairs in the pool (imported as documents with their grade)."""
    judged_unpooled: int = 0
    """Of them, the pairs outside the pool: kept as judgments evaluation uses, shown to no
    assessor (docs/data-formats.md#judgments-outside-the-pool)."""
    pooled: int = 0
    """(query, document) pairs in the pool: the rows imported (``rows``)."""


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
    _check_request(kind, files, pairing, qrels_format, run_depth, unjudged_grade)
    check_sizes(files, upload_limit(max_bytes, db))
    with db.read() as s:
        if repository.collection_by_id(s, collection_id) is None:
            raise NotFound(f"no collection with id {collection_id}")

    notes: list[str] = []
    qrels_read: list[str] = []
    judged = _Judged()
    # (query, document) of each row handed over, to name them in errors (the rows themselves
    # are made, encoded and imported one at a time: docs/performance.md#imports).
    keys: list[tuple[str, str]] = []
    try:
        rows = _rows(
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
            judged=judged,
        )
        payload = _ndjson_lines(rows, keys)
        first = next(payload, None)  # the parsers' errors come before the first row
        if first is None:
            raise Invalid("the files produce no (query, document) rows to import")
        report = collections.import_ndjson(
            db=db,
            collection_id=collection_id,
            data=itertools.chain([first], payload),
            unpooled=judged.unpooled,
        )
    except SourceError as err:
        raise source_invalid(err) from None
    except Invalid as err:
        raise _explain_rows(err, keys) from None
    return AdminImportReport(
        collection_id=collection_id,
        kind=kind,
        rows=len(keys),
        queries_created=report.queries_created,
        documents_created=report.documents_created,
        documents_unchanged=report.documents_unchanged,
        files=[f.name for f in files.values()],
        qrels=qrels_read[0] if qrels_read else None,
        notes=notes,
        pooled=len(keys),
        judged=judged.pairs,
        judged_pooled=judged.pairs - len(judged.unpooled),
        judged_unpooled=len(judged.unpooled),
    )


@dataclass(slots=True)
class _Judged:
    """What the qrels judged: distinct pairs, and the unpooled ones with their queries' text."""

    pairs: int = 0
    unpooled: list[UnpooledRow] = field(default_factory=list)


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
    judged: _Judged,
) -> Iterable[dict[str, Any]]:
    if kind == "letor":
        # The file's stem (S1..S5 of LETOR 4.0) is kept as the queries' partition: training
        # folds follow the benchmark's rotation (docs/training.md#folds).
        return rows_from_letor(
            read_features(files["features"]), part=Path(files["features"].name).stem
        )
    topics, docs, qrels_file, run = _parse_files(kind, files, qrels_format)
    qrels = qrels_file.entries if qrels_file is not None else None
    if qrels_file is not None:
        qrels_read.append(qrels_file.describe())
    if pairing == "all" and len(topics) * len(docs) > max_rows:
        raise Invalid(
            f"pairing 'all' would create {len(topics)} x {len(docs)} = "
            f"{len(topics) * len(docs)} rows (limit {max_rows}); use pairing 'qrels' or 'run'"
        )
    pairs = _pairs(pairing, topics, docs, run, run_depth, notes)
    if qrels is not None:
        _judge(judged, topics, docs, pairs, qrels, include_narrative)
    notes.extend(_pairing_notes(pairing, pairs, docs, qrels_file, kind, unjudged_grade))
    if judged.unpooled:
        notes.append(
            f"{len(judged.unpooled)} of the {judged.pairs} judged (query, document) pairs of "
            f"the qrels are outside the pool of pairing {pairing!r}: kept as judgments that "
            "evaluation uses (the qrels label set), shown to no assessor"
        )
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


def _judge(
    judged: _Judged,
    topics: list[Any],
    docs: list[Any],
    pairs: Any,
    qrels: Any,
    include_narrative: bool,
) -> None:
    """Count the qrels' judged pairs and keep those ``pairs`` leaves out of the pool."""
    topic_of = {t.query_id: t for t in topics}
    known = {d.doc_id for d in docs}
    judged.pairs = len(
        {(q.query_id, q.doc_id) for q in qrels if q.query_id in topic_of and q.doc_id in known}
    )
    for j in unpooled_judgments(topics, docs, pairing=pairs, qrels=qrels):
        head = topic_fields(topic_of[j.query_id], include_narrative=include_narrative)
        judged.unpooled.append(
            UnpooledRow(j.query_id, head["query"], head.get("description", ""), j.doc_id, j.grade)
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
            f"{left} of the {len(docs)} documents in the files are in no query's pool and "
            f"were not imported as documents: a pool from a run or BM25 cannot include them "
            f"({_wider(pairing)})"
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


def _wider(pairing: str) -> str:
    """How to pool more documents than ``pairing`` did, never naming ``pairing`` itself."""
    if pairing == "bm25":
        return "a larger --run-depth pools more of them; pairing 'all' pools every one"
    if pairing == "run":
        return "a larger --run-depth, pairing 'bm25' or pairing 'all' pools more of them"
    return "pairing 'bm25' or 'all' pools more of them"


def _ndjson_lines(rows: Iterable[dict[str, Any]], keys: list[tuple[str, str]]) -> Iterator[bytes]:
    """One NDJSON line per row, made as the import reads it; each row's key noted in ``keys``."""
    for r in rows:
        keys.append((r["query_id"], r["doc_id"]))
        yield (json.dumps(r, ensure_ascii=False) + "\n").encode("utf-8")


def _explain_rows(err: Invalid, keys: list[tuple[str, str]]) -> Invalid:
    """Translate the NDJSON import's line numbers (of our generated rows) into query/doc ids."""
    if not isinstance(err.detail, list):
        return err
    items = []
    for item in err.detail:
        line = item.get("line", 0) if isinstance(item, dict) else 0
        if isinstance(item, dict) and 1 <= line <= len(keys):
            query_id, doc_id = keys[line - 1]
            items.append(
                {
                    "file": "(generated row)",
                    "line": line,
                    "query_id": query_id,
                    "doc_id": doc_id,
                    "msg": item.get("msg", ""),
                }
            )
        else:
            items.append(item)
    return Invalid(items, extra=err.extra)


def _check_request(
    kind: str,
    files: Mapping[str, UploadedFile],
    pairing: str,
    qrels_format: str,
    run_depth: int | None,
    unjudged_grade: int | None,
) -> None:
    """Invalid naming what is wrong with an import's kind, files and options."""
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
    check_qrels_format(qrels_format)
    if run_depth is not None and not 1 <= run_depth <= MAX_RUN_DEPTH:
        raise Invalid(f"run_depth must be in 1..{MAX_RUN_DEPTH}")
    if unjudged_grade is not None and not 0 <= unjudged_grade <= 4:
        raise Invalid("unjudged_grade must be in 0..4")
    if kind != "letor":
        if pairing == "qrels" and "qrels" not in files:
            raise Invalid("pairing 'qrels' needs a qrels file (or use pairing 'all' or 'run')")
        if pairing == "run" and "run" not in files:
            raise Invalid("pairing 'run' needs a run file")


def _parse_files(
    kind: str, files: Mapping[str, UploadedFile], qrels_format: str
) -> tuple[Any, Any, QrelsFile | None, Any]:
    """``(topics, documents, qrels file or None, run or None)`` of a TREC or SMART import;
    every file is parsed and their errors raised together (one SourceError)."""
    errors: list[SourceError] = []

    def attempt(fn: Any) -> Any:
        try:
            return fn()
        except SourceError as err:
            errors.append(err)
            return None

    if kind == "trec":
        topics = attempt(
            lambda: parse_topics(upload_lines(files["topics"]), file=files["topics"].name)
        )
        docs_file = files["documents"]
        if first_byte(docs_file) == b"{":
            docs = attempt(
                lambda: list(parse_jsonl_docs(upload_lines(docs_file), file=docs_file.name))
            )
        else:
            docs = attempt(
                lambda: list(parse_trec_docs(upload_lines(docs_file), file=docs_file.name))
            )
    else:
        docs = attempt(
            lambda: parse_smart_docs(upload_lines(files["documents"]), file=files["documents"].name)
        )
        topics = attempt(
            lambda: parse_smart_queries(upload_lines(files["queries"]), file=files["queries"].name)
        )
    qrels_file = (
        attempt(lambda: read_qrels(files["qrels"], qrels_format, kind))
        if "qrels" in files
        else None
    )
    run = None
    if "run" in files:
        run = attempt(lambda: parse_trec_run(upload_lines(files["run"]), file=files["run"].name))
    if errors:
        merged = merge_errors(errors)
        assert merged is not None
        raise merged
    assert topics is not None and docs is not None
    return topics, docs, qrels_file, run


def _pairs(
    pairing: str,
    topics: list[Any],
    docs: list[Any],
    run: dict[str, list[RunEntry]] | None,
    run_depth: int | None,
    notes: list[str],
) -> Any:
    """The documents of each query for ``pairing`` ``run`` (the run's top ``run_depth`` that
    the files have) or ``bm25`` (the top ``run_depth`` by BM25 over the files' documents);
    the pairing's name for the others. Notes say what was left out."""
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
    return pairs
