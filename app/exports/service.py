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
§3.2.1): ``y_d = k + 1 − pos(d)`` for the ordered top-k, 0 for the rest of the pool
(:mod:`app.exports.selection`).

Identifiers are free text and some were stored before the import checked them, so each
writer escapes or refuses what its format cannot carry (``docs/exports.md#identifiers``):
the JSON Lines formats escape every line break (JSON escapes plus U+0085/U+2028/U+2029), the
CSV format quotes any cell with a line break, the qrels and LETOR formats refuse (422, naming
the ids) ids their whitespace-separated columns cannot hold (:mod:`app.exports.lines`).

The writers, one module per family of formats: :mod:`app.exports.qrels`,
:mod:`app.exports.topk`, :mod:`app.exports.letor`, :mod:`app.exports.pairs`; each tabular
format also has a Parquet form (typed columns, :mod:`app.exports.parquet`).

Every check (format, options, collection, assessor, identifiers, LETOR features) happens
before the first byte, so errors are clean 404/422 responses; the lines are then produced
lazily inside one read transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

from app.exports import repository
from app.exports.letor import write_group, write_letor_file, write_letor_parquet
from app.exports.pairs import write_pairs_csv, write_pairs_jsonl, write_pairs_parquet
from app.exports.parquet import MEDIA_TYPE as PARQUET_MEDIA_TYPE
from app.exports.prefs import write_qrels_jg, write_trec_prefs
from app.exports.qrels import write_qrels, write_qrels_parquet
from app.exports.selection import chosen_tasks, method_of
from app.exports.topk import write_topk_jsonl, write_topk_parquet
from app.kernel.db import Database
from app.kernel.errors import Conflict, Invalid, NotFound

LABELS = ("kappa", "grades")
#: The formats that write the documents' feature vectors.
LETOR_FORMATS = ("letor", "svmlight", "group", "letor-parquet")
NO_FEATURES = "the collection has no feature vectors (attach LETOR features first)"
#: Which answers top-k labels come from (docs/exports.md#machine-answers): ``hybrid`` (every
#: answer, people's and a machine's: the same labels as ``kappa``) or ``human`` (only the
#: documents no machine answer touched keep their label).
PROVENANCE = ("hybrid", "human")
SOURCES = ("first", "assessor", "all", "borda", "bt", "mean")
MISSING_FEATURES = ("error", "skip", "zero")


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
    label: str = ""
    """A short name for menus (at most 40 characters; ``summary`` explains it)."""

    def default_labels(self) -> str | None:
        return self.labels[0] if self.labels else None


@dataclass(frozen=True, slots=True)
class Source:
    """The task a query's labels come from (first/assessor sources)."""

    query_id: str
    task_id: int
    assessor: str


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
        if req.source in ("borda", "bt") and req.labels not in ("kappa", "hybrid"):
            raise Invalid(
                f"source {req.source!r} aggregates top-k lists; use labels=kappa (or hybrid)"
            )
        if req.source == "mean" and req.labels != "grades":
            raise Invalid("source 'mean' averages grades; use labels=grades")
    if req.source == "assessor" and not req.assessor:
        raise Invalid("source 'assessor' needs the assessor's name")
    if req.missing_features not in MISSING_FEATURES:
        raise Invalid(f"missing_features must be one of {', '.join(MISSING_FEATURES)}")
    with db.read() as s:
        if not repository.collection_exists(s, req.collection_id):
            raise NotFound(f"no collection with id {req.collection_id}")
        if req.assessor and not repository.user_exists(s, req.assessor):
            raise NotFound(f"no user named {req.assessor!r}")
        empty = nothing_to_export(s, req)
    if empty is not None:
        raise Conflict(f"nothing to export: {empty}")
    return req


def nothing_to_export(s: Any, req: ExportRequest) -> str | None:
    """Why the (resolved) export ``req`` would be empty, or None: a label format without a
    finished task of the label's method among the selected ones, a LETOR format on a
    collection without feature vectors when they are skipped (``error``, the default, is a
    422 naming the documents), a judgment format without a live top-k judgment
    (docs/exports.md#empty-exports). Every export that is not refused has a line."""
    spec = FORMATS[req.format]
    if spec.name == "trec-prefs":
        people = " from people" if req.labels == "human" else ""
        if not repository.has_topk_judgments(
            s,
            req.collection_id,
            assessor=req.assessor,
            plan=req.plan,
            preferences=True,
            person_only=req.labels == "human",
        ):
            chosen = "".join(
                f" {what} {value!r}"
                for what, value in (("of assessor", req.assessor), ("in plan", req.plan))
                if value
            )
            return f"no pairwise preferences{people}{chosen} yet (ties are not preferences)"
        return None
    chosen = "".join(
        f" {what} {value!r}"
        for what, value in (("of assessor", req.assessor), ("in plan", req.plan))
        if value
    )
    if spec.labels:
        if (
            spec.name in LETOR_FORMATS
            and req.missing_features == "skip"
            and not repository.has_features(s, req.collection_id)
        ):
            return NO_FEATURES
        method = method_of(req.labels)
        if not repository.has_finished_tasks(
            s, req.collection_id, method, assessor=req.assessor, plan=req.plan
        ):
            kind = "graded" if method == "graded" else "top-k"
            return f"no finished {kind} tasks{chosen} yet"
    elif not repository.has_topk_judgments(
        s, req.collection_id, assessor=req.assessor, plan=req.plan
    ):
        return f"no top-k judgments{chosen} yet"
    return None


def availability(*, db: Database, collection_id: int) -> dict[str, str | None]:
    """Per format, why its default export (labels, source ``first``, every assessor and
    plan) would be empty on the collection, or None: what the collection page offers."""
    with db.read() as s:
        features = repository.has_features(s, collection_id)
        return {
            name: NO_FEATURES
            if name in LETOR_FORMATS and not features
            else nothing_to_export(s, resolve(ExportRequest(collection_id, format=name)))
            for name in FORMATS
        }


def export_stream(*, db: Database, req: ExportRequest) -> Iterator[bytes]:
    """Validate ``req`` now (every error before the first byte), then return an iterator over
    the export's bytes."""
    req = check_request(req, db=db)
    return FORMATS[req.format].write(db, req)


def sources(
    *, db: Database, collection_id: int, method: str = "topk", assessor: str | None = None
) -> list[Source]:
    """Per query, the finished task whose labels the exports use by default (``first``)."""
    labels = "grades" if method == "graded" else "kappa"
    req = ExportRequest(collection_id=collection_id, labels=labels, assessor=assessor)
    with db.read() as s:
        return [Source(qid, task.id, username) for task, qid, username in chosen_tasks(s, req)]


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
            write_qrels,
            labels=(*LABELS, *PROVENANCE),
            sources=_QRELS_SOURCES,
            evaluate="--qrels",
            not_evaluable="with source=all (several labels per document)",
            label="qrels, TREC (κ-labels or grades)",
        ),
        ExportFormat(
            "grades-qrels",
            "TREC qrels of the five grades (0..4) of graded tasks",
            _TEXT,
            "grades-qrels.txt",
            write_qrels,
            labels=("grades",),
            sources=_QRELS_SOURCES,
            evaluate="--qrels",
            not_evaluable="with source=all (several labels per document)",
            label="qrels of grades, TREC",
        ),
        ExportFormat(
            "topk-jsonl",
            "top-k ground truth, one JSON object per query: query_id, k, top, rest, assessor",
            _NDJSON,
            "topk.jsonl",
            write_topk_jsonl,
            labels=("kappa", *PROVENANCE),
            sources=("first", "assessor", "all", "borda", "bt"),
            evaluate="--topk",
            not_evaluable="with source=all (several truths per query)",
            label="top-k JSONL",
        ),
        ExportFormat(
            "letor",
            "LETOR/SVMlight 'label qid:Q 1:v ... #docid = D' with the documents' features",
            _TEXT,
            "letor.txt",
            write_letor_file,
            labels=LABELS,
            sources=_ONE_PER_QUERY,
            evaluate="--letor (with --scores)",
            label="LETOR with features",
        ),
        ExportFormat(
            "svmlight",
            "the letor rows without qid: (LightGBM; query boundaries in the group file)",
            _TEXT,
            "svmlight.txt",
            write_letor_file,
            labels=LABELS,
            sources=_ONE_PER_QUERY,
            not_evaluable="no query ids; a training input for LightGBM with its group file",
            label="SVMlight rows (LightGBM)",
        ),
        ExportFormat(
            "group",
            "LightGBM group file: rows per query of the svmlight export, one per line",
            _TEXT,
            "svmlight.txt.query",
            write_group,
            labels=LABELS,
            sources=_ONE_PER_QUERY,
            not_evaluable="row counts only, no labels",
            label="LightGBM group file",
        ),
        ExportFormat(
            "pairs-jsonl",
            "one JSON object per live pair judgment (query, assessor, task, seq, left, right, "
            "outcome, active_ms, time, doc_id and reason of a broken document, comment, "
            "answered_by: the second assessor of a routed repeat, else null)",
            _NDJSON,
            "pairs.jsonl",
            write_pairs_jsonl,
            not_evaluable=_RAW,
            label="pair judgments, JSONL",
        ),
        ExportFormat(
            "pairs-csv",
            "one CSV row per live pair judgment, with the winner, the side shown, a broken "
            "document and its reason, the comment and answered_by (a second opinion's assessor)",
            "text/csv; charset=utf-8",
            "pairs.csv",
            write_pairs_csv,
            not_evaluable=_RAW,
            label="pair judgments, CSV",
        ),
    )
}


def _write_qrels_jg(db: Database, req: ExportRequest) -> Iterator[bytes]:
    """``qrels-jg`` reads every selected task (one judgment group each)."""
    return write_qrels_jg(db, replace(req, source="all"))


_TREC_EVAL = "read by `heapjudge trec-eval -R {0}` (trec_eval's {0} measures), not by evaluate"
FORMATS.update(
    (f.name, f)
    for f in (
        ExportFormat(
            "trec-prefs",
            "trec_eval 'prefs' lines 'qid jg jsg docno rel_level': every live pairwise "
            "answer, one judgment group per task and judge (labels=human: people's only)",
            _TEXT,
            "prefs.txt",
            write_trec_prefs,
            labels=PROVENANCE,
            not_evaluable=_TREC_EVAL.format("prefs"),
            label="preferences, trec_eval prefs",
        ),
        ExportFormat(
            "qrels-jg",
            "trec_eval 'qrels_jg' lines 'qid jg docno rel': every finished task's grades "
            "(or κ-labels), one judgment group per task",
            _TEXT,
            "qrels-jg.txt",
            _write_qrels_jg,
            labels=("grades", "kappa"),
            not_evaluable=_TREC_EVAL.format("qrels_jg"),
            label="qrels per assessor, trec_eval qrels_jg",
        ),
    )
)

#: The Parquet form of each tabular format (``docs/exports.md#parquet``): same labels and
#: sources as the text format it mirrors.
_PARQUET = {
    "qrels": ("qrels-parquet", write_qrels_parquet, "qrels.parquet"),
    "grades-qrels": ("grades-qrels-parquet", write_qrels_parquet, "grades-qrels.parquet"),
    "topk-jsonl": ("topk-parquet", write_topk_parquet, "topk.parquet"),
    "letor": ("letor-parquet", write_letor_parquet, "letor.parquet"),
    "pairs-csv": ("pairs-parquet", write_pairs_parquet, "pairs.parquet"),
}
FORMATS.update(
    (
        name,
        ExportFormat(
            name,
            f"Parquet: the {text} rows as typed columns (pandas, datasets)",
            PARQUET_MEDIA_TYPE,
            file_name,
            write,
            labels=FORMATS[text].labels,
            sources=FORMATS[text].sources,
            not_evaluable=f"the evaluator reads {text}; this is its copy for pandas and datasets",
        ),
    )
    for text, (name, write, file_name) in _PARQUET.items()
)


def download_name(req: ExportRequest) -> str:
    """``collection-<id>[-<labels>-<source>]-<file name>``; svmlight and its group file share
    the prefix so LightGBM finds ``X.txt.query`` next to ``X.txt``."""
    spec = FORMATS[req.format]
    middle = f"-{req.labels}-{req.source}" if spec.labels else ""
    if spec.labels and not spec.sources:  # every selected task: no source to name
        middle = f"-{req.labels}"
    return f"collection-{req.collection_id}{middle}-{spec.file_name}"


def sources_header(db: Database, req: ExportRequest) -> str | None:
    """For the qrels formats with one task per query: ``query:assessor:task`` per query,
    comma-separated, each part percent-encoded (UTF-8) so the header is ASCII, cannot carry
    CR/LF, and ``:`` / ``,`` inside an id stay unambiguous. None otherwise."""
    if req.format not in (
        "qrels",
        "grades-qrels",
        "qrels-parquet",
        "grades-qrels-parquet",
    ) or req.source not in ("first", "assessor"):
        return None
    with db.read() as s:
        used = [Source(qid, t.id, u) for t, qid, u in chosen_tasks(s, req)]
    return ",".join(
        ":".join(quote(str(part), safe="") for part in (u.query_id, u.assessor, u.task_id))
        for u in used
    )[:4000]


#: The formats whose columns are the documents' feature vectors.
VECTOR_FORMATS = ("letor", "svmlight")


def feature_set_headers(db: Database, req: ExportRequest) -> dict[str, str]:
    """For the LETOR formats of a collection whose vectors are heapjudge's text features
    (docs/features.md#stored-features): ``X-Heapjudge-Feature-Set`` (``name/version``) and
    ``X-Heapjudge-Feature-Names`` (the column names in order, comma-separated: feature j of a
    row is name j). Empty otherwise (imported vectors carry no names)."""
    if req.format not in VECTOR_FORMATS:
        return {}
    with db.read() as s:
        fs = repository.feature_set(s, req.collection_id)
    if not fs:
        return {}
    return {
        "X-Heapjudge-Feature-Set": f"{fs.get('name')}/{fs.get('version')}",
        "X-Heapjudge-Feature-Names": ",".join(str(n) for n in fs.get("names", [])),
    }
