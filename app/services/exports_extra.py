"""Use cases: exports for training pipelines, with a choice of whose labels.

Formats (``format=``), all streamed:

* ``letor`` — LETOR/SVMlight ``label qid:Q 1:v ... #docid = D`` with the documents' feature
  vectors, written by :func:`ranking.letor.write_letor` (so it reads back with
  :func:`ranking.letor.read_letor`); ``svmlight`` — the same rows without ``qid:`` (LightGBM),
  and ``group`` — the LightGBM group file (rows per query, one per line, same order);
* ``qrels`` — TREC qrels ``qid iter docno label``; with ``source="all"`` the ``iter`` column
  carries the task id (trec_eval ignores it), otherwise it is 0;
``plan`` restricts every format to the tasks of one plan label (``study:A1`` = the first
assignment of a rotation).

* ``pairs-csv`` — one CSV row per live pair judgment: query, assessor, task, seq, left, right,
  outcome, winner, whether the protocol's pair was shown swapped, active ms, time; every cell
  neutralised against spreadsheet formula injection (:mod:`labeling.csv_safety`).

``labels``: ``kappa`` (κ-labels ``k + 1 - position`` of the top-k ground truth, 0 for the rest
of the pool, Niu et al. 2012 §3.2.1) from topk tasks, or ``grades`` (0..4) from graded tasks.

``source`` — whose labels when a query has several finished tasks:
``first`` (first finished, as the service's own exports), ``assessor`` (the named
``assessor``'s), ``all`` (every task; qrels only), ``borda`` (Borda count over the top-k lists,
:func:`labeling.aggregate.borda`), ``bt`` (Bradley–Terry over the pooled pairwise judgments of
all the query's topk tasks, :func:`labeling.aggregate.bradley_terry`) and, for grades, ``mean``
(mean grade, rounded half up). Aggregates use k = the largest k of the query's tasks and label
the union of their pools.

Validation happens before the first byte (clean 404/422); the body is produced lazily. LETOR
files are written by the ranking writer into a temporary file that is streamed and deleted.
"""

from __future__ import annotations

import csv
import io
import math
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import select

from app.db import Database
from app.errors import Invalid, NotFound
from app.models import Collection, Document, Judgment, Query, Task, User
from app.services.exports import finished_tasks_select
from app.services.judging import live_judgments, replay_task
from labeling.aggregate import Preference, borda, bradley_terry
from labeling.csv_safety import neutralise_row
from labeling.groundtruth import kappa_labels
from labeling.session import shows_swapped

FORMATS = ("letor", "svmlight", "group", "qrels", "pairs-csv")
LABELS = ("kappa", "grades")
SOURCES = ("first", "assessor", "all", "borda", "bt", "mean")
MEDIA_TYPES = {
    "letor": "text/plain; charset=utf-8",
    "svmlight": "text/plain; charset=utf-8",
    "group": "text/plain; charset=utf-8",
    "qrels": "text/plain; charset=utf-8",
    "pairs-csv": "text/csv; charset=utf-8",
}
FILE_NAMES = {
    "letor": "letor.txt",
    "svmlight": "svmlight.txt",
    "group": "svmlight.txt.query",
    "qrels": "qrels.txt",
    "pairs-csv": "pairs.csv",
}
PAIR_COLUMNS = (
    "query_id",
    "assessor",
    "task_id",
    "seq",
    "left",
    "right",
    "outcome",
    "winner",
    "shown_swapped",
    "active_ms",
    "time",
)
CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True)
class ExportRequest:
    collection_id: int
    format: str = "letor"
    labels: str = "kappa"
    source: str = "first"
    assessor: str | None = None
    missing_features: str = "error"
    """LETOR formats: documents without features are an ``error``, ``skip``ped, or ``zero``."""
    plan: str | None = None
    """Only tasks with this plan label (e.g. ``study:A1``, the first assignment of a rotation:
    the digest's default "one labeling per query, the first assignment", §2.4 item 9)."""


@dataclass(slots=True)
class QueryLabels:
    """The labels of one query from one source (one task, or an aggregate)."""

    query_id: str
    labels: dict[str, int]
    origin: str
    task_id: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def check_request(req: ExportRequest, *, db: Database) -> None:
    """Validate a request (404/422) before any byte is produced."""
    if req.format not in FORMATS:
        raise Invalid(f"unknown format {req.format!r}; expected one of {', '.join(FORMATS)}")
    if req.format != "pairs-csv" and req.labels not in LABELS:
        raise Invalid(f"unknown labels {req.labels!r}; expected kappa or grades")
    if req.source not in SOURCES:
        raise Invalid(f"unknown source {req.source!r}; expected one of {', '.join(SOURCES)}")
    if req.format != "pairs-csv":
        if req.source in ("borda", "bt") and req.labels != "kappa":
            raise Invalid(f"source {req.source!r} aggregates top-k lists; use labels=kappa")
        if req.source == "mean" and req.labels != "grades":
            raise Invalid("source 'mean' averages grades; use labels=grades")
        if req.source == "all" and req.format != "qrels":
            raise Invalid(
                "source 'all' gives several labels per document, which only qrels can carry "
                "(one line per task); for LETOR use first, assessor, borda, bt or mean"
            )
    if req.source == "assessor" and not req.assessor:
        raise Invalid("source 'assessor' needs the assessor's name")
    if req.missing_features not in ("error", "skip", "zero"):
        raise Invalid("missing_features must be error, skip or zero")
    with db.read() as s:
        if s.get(Collection, req.collection_id) is None:
            raise NotFound(f"no collection with id {req.collection_id}")
        if req.assessor and s.scalar(select(User.id).where(User.username == req.assessor)) is None:
            raise NotFound(f"no user named {req.assessor!r}")


def _finished(
    s: Any, collection_id: int, method: str, plan: str | None = None
) -> list[tuple[Task, str, str]]:
    stmt = finished_tasks_select(collection_id, method)
    if plan is not None:
        stmt = stmt.where(Task.plan == plan)
    return [(t, q, u) for t, q, u in s.execute(stmt)]


def query_labels(s: Any, req: ExportRequest) -> Iterator[QueryLabels]:
    """Per query (in import order), the labels chosen by ``req.source``."""
    method = "topk" if req.labels == "kappa" else "graded"
    groups: dict[str, list[tuple[Task, str]]] = {}
    for task, qid, username in _finished(s, req.collection_id, method, req.plan):
        groups.setdefault(qid, []).append((task, username))
    for qid, tasks in groups.items():
        if req.source == "assessor":
            tasks = [(t, u) for t, u in tasks if u == req.assessor]
            if not tasks:
                continue
        if req.source in ("first", "assessor", "all"):
            chosen = tasks if req.source == "all" else tasks[:1]
            for task, username in chosen:
                result = replay_task(task, live_judgments(s, task.id)).result()
                labels = dict(result.kappa_labels) if method == "topk" else dict(result.grades)
                yield QueryLabels(qid, labels, username, task.id)
            continue
        results = [
            (task, replay_task(task, live_judgments(s, task.id)).result()) for task, _ in tasks
        ]
        universe = list(dict.fromkeys(d for task, _ in results for d in task.doc_ids))
        origin = f"{req.source} of {len(results)} task(s)"
        if req.source == "mean":
            sums: dict[str, list[int]] = {}
            for _, r in results:
                for doc, g in r.grades.items():
                    sums.setdefault(doc, []).append(g)
            labels = {d: math.floor(sum(v) / len(v) + 0.5) for d, v in sums.items()}
            yield QueryLabels(qid, labels, origin)
            continue
        k = max(task.k for task, _ in results)
        if req.source == "borda":
            agg = borda([r.top for _, r in results], k=k, universe=universe)
        else:
            prefs = [
                Preference(
                    j.a, j.b, "tie" if j.winner is None else ("a" if j.winner == j.a else "b")
                )
                for _, r in results
                for j in r.judged
                if not j.cached
            ]
            agg = bradley_terry(prefs, universe=universe)
        top, rest = agg.top(min(k, len(agg.order)))
        yield QueryLabels(qid, kappa_labels(top, rest, k), origin, extra={"k": k, "top": top})


def export_stream(*, db: Database, req: ExportRequest) -> Iterator[bytes]:
    """Validate ``req`` now, then return an iterator over the export's bytes."""
    check_request(req, db=db)
    if req.format == "pairs-csv":
        return _pairs_csv(db, req)
    if req.format == "qrels":
        return _qrels(db, req)
    path, sizes = _write_letor(db, req)
    if req.format == "group":
        path.unlink(missing_ok=True)
        return iter([("".join(f"{n}\n" for n in sizes)).encode()])
    return _stream_file(path)


def _qrels(db: Database, req: ExportRequest) -> Iterator[bytes]:
    with db.read() as s:
        for ql in query_labels(s, req):
            iteration = ql.task_id if req.source == "all" and ql.task_id is not None else 0
            lines = [
                f"{ql.query_id} {iteration} {doc} {label}\n" for doc, label in ql.labels.items()
            ]
            yield "".join(lines).encode()


def _pairs_csv(db: Database, req: ExportRequest) -> Iterator[bytes]:
    stmt = (
        select(Judgment, Task.seed, Query.external_id, User.username)
        .join(Task, Task.id == Judgment.task_id)
        .join(Query, Query.id == Task.query_id)
        .join(User, User.id == Task.assessor_id)
        .where(
            Task.collection_id == req.collection_id,
            Task.method == "topk",
            Judgment.undone.is_(False),
        )
        .order_by(Judgment.task_id, Judgment.seq)
        .execution_options(yield_per=1000)
    )
    if req.assessor:
        stmt = stmt.where(User.username == req.assessor)
    if req.plan is not None:
        stmt = stmt.where(Task.plan == req.plan)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(PAIR_COLUMNS)
    with db.read() as s:
        for j, seed, qid, username in s.execute(stmt):
            winner = {"left": j.left_doc, "right": j.right_doc}.get(j.outcome or "", "")
            writer.writerow(
                neutralise_row(
                    (
                        qid,
                        username,
                        j.task_id,
                        j.seq,
                        j.left_doc,
                        j.right_doc,
                        j.outcome,
                        winner,
                        shows_swapped(seed, j.seq),
                        j.active_ms,
                        j.created_at.isoformat(),
                    )
                )
            )
            if buf.tell() > CHUNK:
                yield buf.getvalue().encode()
                buf.seek(0)
                buf.truncate()
    yield buf.getvalue().encode()


def _write_letor(db: Database, req: ExportRequest) -> tuple[Any, list[int]]:
    """Collect labels and features, write them with the ranking writer to a temp file."""
    from pathlib import Path

    from ranking.letor import LetorData, write_letor
    from ranking.padding import offsets_from_sizes

    labels: list[float] = []
    qids: list[str] = []
    docids: list[str] = []
    feats: list[list[float]] = []
    sizes: list[int] = []
    missing: list[str] = []
    width: int | None = None
    with db.read() as s:
        for ql in query_labels(s, req):
            docs = {
                d.external_id: d
                for d in s.scalars(
                    select(Document)
                    .join(Query, Query.id == Document.query_id)
                    .where(
                        Document.collection_id == req.collection_id,
                        Query.external_id == ql.query_id,
                    )
                )
            }
            count = 0
            for doc_id, label in ql.labels.items():
                doc = docs.get(doc_id)
                vector = doc.features if doc is not None else None
                if vector is None:
                    if req.missing_features == "error":
                        missing.append(f"{ql.query_id}/{doc_id}")
                        continue
                    if req.missing_features == "skip":
                        continue
                    vector = []
                if width is None and vector:
                    width = len(vector)
                labels.append(float(label))
                qids.append(ql.query_id)
                docids.append(doc_id)
                feats.append(list(vector))
                count += 1
            if count:
                sizes.append(count)
    if missing:
        raise Invalid(
            f"{len(missing)} labelled document(s) have no feature vector (attach a LETOR file, "
            f"or use missing_features=skip|zero): {', '.join(missing[:10])}"
        )
    bad_qids = sorted({q for q in qids if not q or any(c.isspace() or c == ":" for c in q)})
    if bad_qids:
        raise Invalid(f"query ids unusable as LETOR qid (space or ':'): {', '.join(bad_qids[:5])}")
    width = width or 0
    matrix = np.zeros((len(labels), width), dtype=np.float64)
    for i, vector in enumerate(feats):
        if vector:
            if len(vector) != width:
                raise Invalid(
                    f"document {docids[i]} of query {qids[i]} has {len(vector)} features, "
                    f"others have {width}"
                )
            matrix[i] = vector
    data = LetorData(
        labels=np.asarray(labels, dtype=np.float64),
        qids=np.asarray(qids, dtype=str),
        features=matrix,
        offsets=offsets_from_sizes(np.asarray(sizes, dtype=np.int64)),
        comments=np.asarray([f"docid = {d}" for d in docids], dtype=str),
        docids=np.asarray(docids, dtype=str),
        sparse=False,
    )
    fd, name = tempfile.mkstemp(prefix="heapjudge-export-", suffix=".txt")
    os.close(fd)
    path = Path(name)
    if data.n_rows:
        write_letor(path, data, sparse=False, write_qid=req.format == "letor")
    return path, sizes


def _stream_file(path: Any) -> Iterator[bytes]:
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(CHUNK):
                yield chunk
    finally:
        os.unlink(path)
