"""Use case: export a collection's labels and judgments, streamed, in one of the registered
formats. The formats, their columns and the rules below are documented for users in
``docs/exports.md``.

:data:`FORMATS` maps a format name to an :class:`ExportFormat`: its writer, media type, file
name, the label kinds and label sources it accepts, and the ``heapjudge evaluate`` option that
reads it back (or why it is not an evaluation input). The REST endpoint, the CLI command and
the admin page all list and validate formats from this registry.

Which tasks (``docs/exports.md#label-sources``): finished tasks of the collection (topk tasks
for κ-labels, graded tasks for grades), optionally only those of one ``assessor`` and one
``plan`` label; per query, ``source`` picks

* ``first`` — the first finished task (by finish time, then id): one labeling per query, the
  paper's user study keeps every labeling and trains on the first assignment;
* ``assessor`` — the same, but the ``assessor`` must be named;
* ``all`` — every task (several lines per query; qrels put the task id in the iteration
  column, topk-jsonl writes one line per task naming its assessor);
* ``borda`` / ``bt`` — Borda count over the top-k lists (:func:`labeling.analysis.aggregate.borda`)
  /
  Bradley–Terry over the pooled pairwise judgments
  (:func:`labeling.analysis.aggregate.bradley_terry`),
  with k the largest k of the query's tasks, labelling the union of their pools;
* ``mean`` — the mean grade of the graded tasks, rounded half up.

κ-labels (Niu et al. 2012, "Top-k Learning to Rank: Labeling, Ranking and Evaluation",
§3.2.1): ``y_d = k + 1 − pos(d)`` for the ordered top-k, 0 for the rest of the pool.

Identifiers are free text and some were stored before the import checked them, so each
writer escapes or refuses what its format cannot carry (``docs/exports.md#identifiers``):
the JSON Lines formats escape every line break (JSON escapes plus U+0085/U+2028/U+2029), the
CSV format quotes any cell with a line break, the qrels and LETOR formats refuse (422, naming
the ids) ids their whitespace-separated columns cannot hold.

Every check (format, options, collection, assessor, identifiers, LETOR features) happens
before the first byte, so errors are clean 404/422 responses; the lines are then produced
lazily inside one read transaction.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Select, select
from sqlalchemy.orm import Session, aliased

from app.judging.loop import replay_task
from app.judging.repository import live_judgments
from app.kernel.db import Database
from app.kernel.errors import Invalid, NotFound
from app.kernel.models import Collection, Document, Judgment, Query, Task, User
from labeling.analysis.aggregate import Preference, borda, bradley_terry
from labeling.csv_safety import neutralise_row
from labeling.protocol.seeding import shows_swapped
from ranking.io.topk import kappa_labels as kappa_labels

LABELS = ("kappa", "grades")
SOURCES = ("first", "assessor", "all", "borda", "bt", "mean")
MISSING_FEATURES = ("error", "skip", "zero")
CHUNK = 64 * 1024
#: How many offending ids an error message names.
SHOWN = 5

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
    "broken_doc",
    "reason",
    "comment",
    "answered_by",
)


@dataclass(frozen=True, slots=True)
class ExportRequest:
    """One export: the format and whose labels. ``labels=None`` means the format's default."""

    collection_id: int
    format: str = "qrels"
    labels: str | None = None
    source: str = "first"
    assessor: str | None = None
    """Only this assessor's tasks (every format); required by ``source="assessor"``."""
    missing_features: str = "error"
    """LETOR formats: documents without features are an ``error``, ``skip``ped, or ``zero``."""
    plan: str | None = None
    """Only tasks with this plan label (e.g. ``study:A1``, the first assignment of a
    rotation). Empty means no filter."""


@dataclass(frozen=True, slots=True)
class ExportFormat:
    """A registered export format."""

    name: str
    summary: str
    media_type: str
    file_name: str
    write: Callable[[Database, ExportRequest], Iterator[bytes]]
    labels: tuple[str, ...] = ()
    """Label kinds the format carries, the first being the default; () for raw judgments."""
    sources: tuple[str, ...] = ()
    """Label sources it accepts; () when it carries every judgment of the selected tasks."""
    evaluate: str | None = None
    """The ``heapjudge evaluate`` option that reads it as a truth (or scored data)."""
    not_evaluable: str | None = None
    """Why it is not an evaluation input (for the docs and the help)."""

    def default_labels(self) -> str | None:
        return self.labels[0] if self.labels else None


@dataclass(frozen=True, slots=True)
class Source:
    """The task a query's labels come from (first/assessor sources)."""

    query_id: str
    task_id: int
    assessor: str


@dataclass(frozen=True, slots=True)
class TaskInfo:
    """A task that contributed to a query's labels."""

    task_id: int
    assessor: str
    judgments: int
    active_ms: int


@dataclass(slots=True)
class QueryLabels:
    """The labels of one query from one source (one task, or an aggregate of tasks).

    ``labels`` is in writing order: for κ-labels the top best first, then the rest by
    document id; for grades by document id. ``top``/``rest``/``k`` are set for κ-labels
    (``rest`` in the protocol's discard order, or the aggregate's rank order)."""

    query_id: str
    labels: dict[str, int]
    tasks: list[TaskInfo]
    aggregate: str | None = None
    k: int | None = None
    top: list[str] = field(default_factory=list)
    rest: list[str] = field(default_factory=list)
    #: Documents marked broken (id -> reason; docs/protocols.md#broken-documents): no label.
    broken: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- validation


def resolve(req: ExportRequest) -> ExportRequest:
    """The request with its format's default labels filled in and an empty plan/assessor
    read as "no filter" (HTML forms send empty fields)."""
    spec = FORMATS.get(req.format)
    labels = req.labels or (spec.default_labels() if spec else None)
    return replace(req, labels=labels, plan=req.plan or None, assessor=req.assessor or None)


def check_request(req: ExportRequest, *, db: Database) -> ExportRequest:
    """Validate ``req`` (404/422 naming what is wrong) and return it resolved."""
    spec = FORMATS.get(req.format)
    if spec is None:
        raise Invalid(f"unknown export format {req.format!r}; expected one of {', '.join(FORMATS)}")
    req = resolve(req)
    if spec.labels and req.labels not in spec.labels:
        raise Invalid(
            f"format {spec.name!r} carries labels {' or '.join(spec.labels)}, not {req.labels!r}"
        )
    if req.source not in SOURCES:
        raise Invalid(f"unknown source {req.source!r}; expected one of {', '.join(SOURCES)}")
    if spec.sources and req.source not in spec.sources:
        why = ""
        if req.source == "all":
            why = (
                " (several labels per document; only qrels and topk-jsonl carry one line per task)"
            )
        raise Invalid(
            f"format {spec.name!r} does not take source {req.source!r}{why}; "
            f"use one of {', '.join(spec.sources)}"
        )
    if spec.sources:
        if req.source in ("borda", "bt") and req.labels != "kappa":
            raise Invalid(f"source {req.source!r} aggregates top-k lists; use labels=kappa")
        if req.source == "mean" and req.labels != "grades":
            raise Invalid("source 'mean' averages grades; use labels=grades")
    if req.source == "assessor" and not req.assessor:
        raise Invalid("source 'assessor' needs the assessor's name")
    if req.missing_features not in MISSING_FEATURES:
        raise Invalid(f"missing_features must be one of {', '.join(MISSING_FEATURES)}")
    with db.read() as s:
        if s.get(Collection, req.collection_id) is None:
            raise NotFound(f"no collection with id {req.collection_id}")
        if req.assessor and s.scalar(select(User.id).where(User.username == req.assessor)) is None:
            raise NotFound(f"no user named {req.assessor!r}")
    return req


def export_stream(*, db: Database, req: ExportRequest) -> Iterator[bytes]:
    """Validate ``req`` now (every error before the first byte), then return an iterator over
    the export's bytes."""
    req = check_request(req, db=db)
    return FORMATS[req.format].write(db, req)


def method_of(labels: str | None) -> str:
    """The task method whose results give ``labels``."""
    return "graded" if labels == "grades" else "topk"


# --------------------------------------------------------------------------- task selection


def finished_tasks_select(collection_id: int, method: str) -> Select[Task, str, str]:
    """(task, query external id, assessor username) of the collection's finished tasks of one
    method, in query import order, then finishing order: the rows every export starts from."""
    return (
        select(Task, Query.external_id, User.username)
        .join(Query, Query.id == Task.query_id)
        .join(User, User.id == Task.assessor_id)
        .where(Task.collection_id == collection_id, Task.method == method, Task.status == "done")
        .order_by(Query.id, Task.finished_at, Task.id)
    )


def _finished(s: Session, req: ExportRequest) -> list[tuple[Task, str, str]]:
    stmt = finished_tasks_select(req.collection_id, method_of(req.labels))
    if req.assessor:
        stmt = stmt.where(User.username == req.assessor)
    if req.plan:
        stmt = stmt.where(Task.plan == req.plan)
    return [(t, q, u) for t, q, u in s.execute(stmt)]


def _chosen(s: Session, req: ExportRequest) -> list[tuple[Task, str, str]]:
    """The finished tasks whose labels the export writes, one per query unless
    ``source`` is ``all`` or an aggregate (then every selected task)."""
    rows = _finished(s, req)
    if req.source not in ("first", "assessor"):
        return rows
    seen: set[str] = set()
    out = []
    for task, qid, username in rows:
        if qid not in seen:
            seen.add(qid)
            out.append((task, qid, username))
    return out


def sources(
    *, db: Database, collection_id: int, method: str = "topk", assessor: str | None = None
) -> list[Source]:
    """Per query, the finished task whose labels the exports use by default (``first``)."""
    labels = "grades" if method == "graded" else "kappa"
    req = ExportRequest(collection_id=collection_id, labels=labels, assessor=assessor)
    with db.read() as s:
        return [Source(qid, task.id, username) for task, qid, username in _chosen(s, req)]


def _labels_of_task(s: Session, task: Task, qid: str, username: str) -> QueryLabels:
    rows = live_judgments(s, task.id)
    result = replay_task(task, rows).result()
    info = TaskInfo(task.id, username, len(rows), sum(r.active_ms for r in rows))
    broken = dict(result.broken)
    if task.method == "topk":
        top, rest = list(result.top), list(result.rest)
        labels = kappa_labels(top, sorted(rest), result.k)
        return QueryLabels(qid, labels, [info], k=result.k, top=top, rest=rest, broken=broken)
    grades = {doc: result.grades[doc] for doc in sorted(result.grades)}
    return QueryLabels(qid, grades, [info], broken=broken)


def query_labels(s: Session, req: ExportRequest) -> Iterator[QueryLabels]:
    """Per query (in import order), the labels chosen by ``req.source`` (resolved request)."""
    if req.source not in ("borda", "bt", "mean"):
        for task, qid, username in _chosen(s, req):
            yield _labels_of_task(s, task, qid, username)
        return
    groups: dict[str, list[tuple[Task, str]]] = {}
    for task, qid, username in _finished(s, req):
        groups.setdefault(qid, []).append((task, username))
    for qid, tasks in groups.items():
        yield _aggregate(s, req.source, qid, tasks)


def _aggregate(s: Session, source: str, qid: str, tasks: list[tuple[Task, str]]) -> QueryLabels:
    replayed = []
    infos = []
    for task, username in tasks:
        rows = live_judgments(s, task.id)
        replayed.append((task, replay_task(task, rows).result()))
        infos.append(TaskInfo(task.id, username, len(rows), sum(r.active_ms for r in rows)))
    # A document any of the tasks marked broken gets no aggregate label (its first reason is
    # listed), so every aggregate covers the same documents.
    broken: dict[str, str] = {}
    for _, r in replayed:
        for doc, reason in r.broken.items():
            broken.setdefault(doc, reason)
    if source == "mean":
        # Mean grade, rounded half up (floor(x + 0.5)), over the tasks that graded the doc.
        given: dict[str, list[int]] = {}
        for _, r in replayed:
            for doc, g in r.grades.items():
                if doc not in broken:
                    given.setdefault(doc, []).append(g)
        labels = {d: math.floor(sum(v) / len(v) + 0.5) for d, v in sorted(given.items())}
        return QueryLabels(qid, labels, infos, aggregate=source, broken=broken)
    universe = [
        d for d in dict.fromkeys(d for task, _ in replayed for d in task.doc_ids) if d not in broken
    ]
    k = max(task.k for task, _ in replayed)
    if source == "borda":
        agg = borda([r.top for _, r in replayed], k=k, universe=universe)
    else:
        prefs = [
            Preference(j.a, j.b, "tie" if j.winner is None else ("a" if j.winner == j.a else "b"))
            for _, r in replayed
            for j in r.judged
            if not j.cached and j.a not in broken and j.b not in broken
        ]
        agg = bradley_terry(prefs, universe=universe)
    top, rest = agg.top(min(k, len(agg.order)))
    labels = kappa_labels(top, sorted(rest), k)
    return QueryLabels(qid, labels, infos, aggregate=source, k=k, top=top, rest=rest, broken=broken)


# --------------------------------------------------------------------------- identifiers


def _unsafe_in_columns(value: str) -> bool:
    """True if ``value`` cannot be one whitespace-separated column: empty, or containing a
    character ``str.split()`` splits at (every Unicode whitespace, line breaks included)."""
    return not value or any(c.isspace() for c in value)


def _refuse_ids(format_name: str, bad: dict[str, str]) -> None:
    """Raise Invalid naming up to :data:`SHOWN` offending ids and why, if there are any."""
    if not bad:
        return
    shown = "; ".join(f"{ident!r}: {why}" for ident, why in list(bad.items())[:SHOWN])
    more = f" (and {len(bad) - SHOWN} more)" if len(bad) > SHOWN else ""
    raise Invalid(
        f"{len(bad)} id(s) cannot be written to {format_name} (its columns are separated by "
        f"whitespace): {shown}{more}; export topk-jsonl, pairs-jsonl or pairs-csv instead, "
        "or re-import the documents with clean ids"
    )


def _check_qrels_ids(db: Database, req: ExportRequest) -> None:
    """Refuse ids that would split or comment out a TREC qrels line: the query and document
    ids of every task the export reads (``task.doc_ids`` is the pool the labels cover)."""
    bad: dict[str, str] = {}
    with db.read() as s:
        for task, qid, _ in _chosen(s, req):
            if _unsafe_in_columns(qid):
                bad.setdefault(qid, "query id with whitespace or empty")
            elif qid.startswith("#"):
                bad.setdefault(qid, "query id starting with '#' (a comment line)")
            for doc in task.doc_ids:
                if _unsafe_in_columns(doc):
                    bad.setdefault(doc, "document id with whitespace or empty")
    _refuse_ids(req.format, bad)


#: Characters ``str.splitlines`` breaks at that ``json.dumps(ensure_ascii=False)`` leaves raw.
_RAW_LINE_BREAKS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def json_line(record: dict[str, Any]) -> str:
    """One JSON Lines record: non-ASCII text kept readable, every line break escaped (JSON
    escapes control characters; the three Unicode line separators are escaped here so that
    ``str.splitlines`` readers see one record per line too)."""
    text = json.dumps(record, ensure_ascii=False)
    for raw, escaped in _RAW_LINE_BREAKS.items():
        text = text.replace(raw, escaped)
    return text + "\n"


#: A CSV cell with one of these is quoted (RFC 4180 allows line breaks inside quotes); the
#: csv module's minimal quoting leaves a bare "\r" unquoted when the line ends in "\n".
_CSV_SPECIAL = frozenset(',"\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029')


def csv_line(cells: Iterable[str]) -> str:
    """One CSV row: a cell is quoted (``"`` doubled) when it holds a comma, a quote or any
    line break, so a stored id can never start a row of its own."""
    out = []
    for cell in cells:
        if any(c in _CSV_SPECIAL for c in cell):
            cell = '"' + cell.replace('"', '""') + '"'
        out.append(cell)
    return ",".join(out) + "\n"


# --------------------------------------------------------------------------- writers


def _batched(lines: Iterable[str]) -> Iterator[bytes]:
    """Join lines into chunks of about :data:`CHUNK` bytes."""
    buf: list[str] = []
    size = 0
    for line in lines:
        buf.append(line)
        size += len(line)
        if size >= CHUNK:
            yield "".join(buf).encode()
            buf, size = [], 0
    if buf:
        yield "".join(buf).encode()


def _write_qrels(db: Database, req: ExportRequest) -> Iterator[bytes]:
    """``query_id iteration doc_id label``: iteration 0, or the task id with ``source=all``."""
    _check_qrels_ids(db, req)

    def lines() -> Iterator[str]:
        with db.read() as s:
            for ql in query_labels(s, req):
                iteration = ql.tasks[0].task_id if req.source == "all" else 0
                for doc, label in ql.labels.items():
                    yield f"{ql.query_id} {iteration} {doc} {label}\n"

    return _batched(lines())


def _topk_record(ql: QueryLabels) -> dict[str, Any]:
    record: dict[str, Any] = {"query_id": ql.query_id, "k": ql.k, "top": ql.top, "rest": ql.rest}
    if ql.aggregate is None:
        (info,) = ql.tasks
        record.update(
            assessor=info.assessor,
            task_id=info.task_id,
            judgments=info.judgments,
            active_ms=info.active_ms,
        )
    else:
        record.update(
            aggregate=ql.aggregate,
            assessors=[t.assessor for t in ql.tasks],
            task_ids=[t.task_id for t in ql.tasks],
        )
    record["broken"] = ql.broken
    return record


def _write_topk_jsonl(db: Database, req: ExportRequest) -> Iterator[bytes]:
    """One JSON object per query (per task with ``source=all``): the evaluator's top-k
    ground truth (``query_id, k, top, rest``) plus where it came from."""

    def lines() -> Iterator[str]:
        with db.read() as s:
            for ql in query_labels(s, req):
                yield json_line(_topk_record(ql))

    return _batched(lines())


def _judgments_select(req: ExportRequest) -> Select[Judgment, int, str, str, str | None]:
    """Live judgments of the collection's topk tasks (finished or not), in task and seq
    order, with the task's seed, query id and assessor, and who answered when it was not the
    assessor (a second opinion, docs/noise.md); filtered by assessor and plan."""
    second = aliased(User)
    answered_by = select(second.username).where(second.id == Judgment.answered_by).scalar_subquery()
    stmt = (
        select(Judgment, Task.seed, Query.external_id, User.username, answered_by)
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
    if req.plan:
        stmt = stmt.where(Task.plan == req.plan)
    return stmt


def _write_pairs_jsonl(db: Database, req: ExportRequest) -> Iterator[bytes]:
    def lines() -> Iterator[str]:
        with db.read() as s:
            for j, _seed, qid, username, second in s.execute(_judgments_select(req)):
                yield json_line(
                    {
                        "query_id": qid,
                        "assessor": username,
                        "task_id": j.task_id,
                        "seq": j.seq,
                        "left": j.left_doc,
                        "right": j.right_doc,
                        "outcome": j.outcome,
                        "active_ms": j.active_ms,
                        "time": j.created_at.isoformat(),
                        "doc_id": j.doc_id,
                        "reason": j.reason,
                        "comment": j.comment,
                        "answered_by": second,
                    }
                )

    return _batched(lines())


def _write_pairs_csv(db: Database, req: ExportRequest) -> Iterator[bytes]:
    """One row per live pair judgment; every cell neutralised against spreadsheet formula
    injection (:mod:`labeling.csv_safety`) and quoted when it holds a line break."""

    def lines() -> Iterator[str]:
        yield csv_line(PAIR_COLUMNS)
        with db.read() as s:
            for j, seed, qid, username, second in s.execute(_judgments_select(req)):
                winner = {"left": j.left_doc, "right": j.right_doc}.get(j.outcome or "", "")
                yield csv_line(
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
                            j.doc_id or "",
                            j.reason or "",
                            j.comment or "",
                            second or "",
                        )
                    )
                )

    return _batched(lines())


def _letor_qid_problem(qid: str) -> str | None:
    if _unsafe_in_columns(qid):
        return "query id with whitespace or empty"
    if ":" in qid or "#" in qid:
        return "query id with ':' or '#' (qid:Q ends at the first of them)"
    return None


def _letor_rows(db: Database, req: ExportRequest) -> tuple[Any, list[int]]:
    """Collect labels and feature vectors into a :class:`ranking.io.letor.LetorData` (checked:
    ids, missing features, widths) and the rows per query."""
    from ranking.io.letor import LetorData
    from ranking.padding import offsets_from_sizes

    labels: list[float] = []
    qids: list[str] = []
    docids: list[str] = []
    feats: list[list[float]] = []
    sizes: list[int] = []
    missing: list[str] = []
    bad: dict[str, str] = {}
    width: int | None = None
    with db.read() as s:
        for ql in query_labels(s, req):
            docs = {
                d.external_id: d.features
                for d in s.scalars(
                    select(Document)
                    .join(Query, Query.id == Document.query_id)
                    .where(
                        Document.collection_id == req.collection_id,
                        Query.external_id == ql.query_id,
                    )
                )
            }
            problem = _letor_qid_problem(ql.query_id)
            if problem:
                bad.setdefault(ql.query_id, problem)
            count = 0
            for doc_id, label in ql.labels.items():
                if _unsafe_in_columns(doc_id):
                    # "docid = D" in the row's comment: D ends at the first whitespace.
                    bad.setdefault(doc_id, "document id with whitespace or empty")
                vector = docs.get(doc_id)
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
    _refuse_ids(req.format, bad)
    if missing:
        raise Invalid(
            f"{len(missing)} labelled document(s) have no feature vector (attach a LETOR file, "
            f"or use missing_features=skip|zero): {', '.join(missing[:10])}"
        )
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
    return data, sizes


def _write_letor_file(db: Database, req: ExportRequest) -> Iterator[bytes]:
    """Write with the ranking writer (so it reads back with :func:`ranking.io.letor.read_letor`)
    into a temporary file that is streamed and deleted."""
    from ranking.io.letor import write_letor

    data, _ = _letor_rows(db, req)
    fd, name = tempfile.mkstemp(prefix="heapjudge-export-", suffix=".txt")
    os.close(fd)
    path = Path(name)
    try:
        if data.n_rows:
            write_letor(path, data, sparse=False, write_qid=req.format == "letor")
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return _stream_file(path)


def _write_group(db: Database, req: ExportRequest) -> Iterator[bytes]:
    """Rows per query, one number per line, in the order of the svmlight export."""
    _, sizes = _letor_rows(db, req)
    return iter([("".join(f"{n}\n" for n in sizes)).encode()])


def _stream_file(path: Path) -> Iterator[bytes]:
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(CHUNK):
                yield chunk
    finally:
        os.unlink(path)


# --------------------------------------------------------------------------- registry

_TEXT = "text/plain; charset=utf-8"
_NDJSON = "application/x-ndjson"
_QRELS_SOURCES = ("first", "assessor", "all", "borda", "bt", "mean")
_ONE_PER_QUERY = ("first", "assessor", "borda", "bt", "mean")
_RAW = "raw judgments, not a ground truth; the labels derived from them are in qrels"

FORMATS: dict[str, ExportFormat] = {
    f.name: f
    for f in (
        ExportFormat(
            "qrels",
            "TREC qrels 'query_id iteration doc_id label' (κ-labels, or grades with labels=grades)",
            _TEXT,
            "qrels.txt",
            _write_qrels,
            labels=LABELS,
            sources=_QRELS_SOURCES,
            evaluate="--qrels",
            not_evaluable="with source=all (several labels per document)",
        ),
        ExportFormat(
            "grades-qrels",
            "TREC qrels of the five grades (0..4) of graded tasks",
            _TEXT,
            "grades-qrels.txt",
            _write_qrels,
            labels=("grades",),
            sources=_QRELS_SOURCES,
            evaluate="--qrels",
            not_evaluable="with source=all (several labels per document)",
        ),
        ExportFormat(
            "topk-jsonl",
            "top-k ground truth, one JSON object per query: query_id, k, top, rest, assessor",
            _NDJSON,
            "topk.jsonl",
            _write_topk_jsonl,
            labels=("kappa",),
            sources=("first", "assessor", "all", "borda", "bt"),
            evaluate="--topk",
            not_evaluable="with source=all (several truths per query)",
        ),
        ExportFormat(
            "letor",
            "LETOR/SVMlight 'label qid:Q 1:v ... #docid = D' with the documents' features",
            _TEXT,
            "letor.txt",
            _write_letor_file,
            labels=LABELS,
            sources=_ONE_PER_QUERY,
            evaluate="--letor (with --scores)",
        ),
        ExportFormat(
            "svmlight",
            "the letor rows without qid: (LightGBM; query boundaries in the group file)",
            _TEXT,
            "svmlight.txt",
            _write_letor_file,
            labels=LABELS,
            sources=_ONE_PER_QUERY,
            not_evaluable="no query ids; a training input for LightGBM with its group file",
        ),
        ExportFormat(
            "group",
            "LightGBM group file: rows per query of the svmlight export, one per line",
            _TEXT,
            "svmlight.txt.query",
            _write_group,
            labels=LABELS,
            sources=_ONE_PER_QUERY,
            not_evaluable="row counts only, no labels",
        ),
        ExportFormat(
            "pairs-jsonl",
            "one JSON object per live pair judgment (query, assessor, task, seq, left, right, "
            "outcome, active_ms, time, doc_id and reason of a broken document, comment, "
            "answered_by: the second assessor of a routed repeat, else null)",
            _NDJSON,
            "pairs.jsonl",
            _write_pairs_jsonl,
            not_evaluable=_RAW,
        ),
        ExportFormat(
            "pairs-csv",
            "one CSV row per live pair judgment, with the winner, the side shown, a broken "
            "document and its reason, the comment and answered_by (a second opinion's assessor)",
            "text/csv; charset=utf-8",
            "pairs.csv",
            _write_pairs_csv,
            not_evaluable=_RAW,
        ),
    )
}


def formats_help() -> str:
    """One line per registered format, for the REST and CLI help."""
    return "\n".join(f"{f.name}: {f.summary}" for f in FORMATS.values())


def download_name(req: ExportRequest) -> str:
    """``collection-<id>[-<labels>-<source>]-<file name>``; svmlight and its group file share
    the prefix so LightGBM finds ``X.txt.query`` next to ``X.txt``."""
    spec = FORMATS[req.format]
    middle = f"-{req.labels}-{req.source}" if spec.labels else ""
    return f"collection-{req.collection_id}{middle}-{spec.file_name}"


def sources_header(db: Database, req: ExportRequest) -> str | None:
    """For the qrels formats with one task per query: ``query:assessor:task`` per query,
    comma-separated, each part percent-encoded (UTF-8) so the header is ASCII, cannot carry
    CR/LF, and ``:`` / ``,`` inside an id stay unambiguous. None otherwise."""
    from urllib.parse import quote

    if req.format not in ("qrels", "grades-qrels") or req.source not in ("first", "assessor"):
        return None
    with db.read() as s:
        used = [Source(qid, t.id, u) for t, qid, u in _chosen(s, req)]
    return ",".join(
        ":".join(quote(str(part), safe="") for part in (u.query_id, u.assessor, u.task_id))
        for u in used
    )[:4000]
