"""A collection's label sets: the truths its runs can be scored against
(docs/campaigns.md#label-sets).

Each label set has a stable key and is one entry of :data:`LABEL_SETS`: how many queries it
labels and how to load it as a :class:`ranking.compare.leaderboard.Truth`. Adding one (say,
top-k κ-labels from tasks with machine answers beside the people-only ones) is one more entry
there; the REST API, the runs page and the CLI list them from this registry.

* ``qrels``   the imported grades (``document.grade``, from a qrels file or the NDJSON import,
  and the judgments outside the pool an import kept, ``unpooled_grade``,
  docs/data-formats.md#judgments-outside-the-pool): TREC qrels, graded 0..4;
* ``topk``    top-k κ-labels: per query the first finished top-k task (as the exports'
  ``source=first``), a top-k truth (its ordered top and the rest of its pool) from every
  answer. Where a machine answered (docs/machine-judges.md#the-service) they are **hybrid**
  (people's and the machine's answers; the exports' ``labels=hybrid``) and titled so;
  without machine answers they are people's alone;
* ``topk-human`` the same tasks' human-decided top-k κ-labels: only the documents no machine
  answer compared (the exports' ``labels=human``, docs/exports.md#machine-answers: ``top``
  and ``rest`` without the documents a machine answer touched, which stay unjudged); the same
  as ``topk`` where no machine answered. ``topk`` against ``topk-human`` is the agreement of
  the hybrid labels with the people's on the system ordering;
* ``grades``  human grades: per query the first finished graded task's five grades, as qrels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from app.exports import service as exports
from app.exports.selection import query_labels
from app.kernel.db import Database
from app.kernel.errors import Invalid, NotFound
from app.runs import repository
from ranking.compare.leaderboard import Truth
from ranking.io.topk import TopKTruth
from ranking.io.trec_fast import TrecColumns

Kind = Literal["qrels", "topk"]


@dataclass(frozen=True, slots=True)
class LabelSetSource:
    """A kind of label set a collection may have."""

    key: str
    kind: Kind
    title: str
    description: str
    queries: Callable[[Database, int], int]
    """How many of the collection's queries it labels (0: not available)."""
    load: Callable[[Database, int], Truth]
    machine_title: str | None = None
    """The title when a machine answered in the collection's finished top-k tasks (None: the
    same title either way)."""


@dataclass(frozen=True, slots=True)
class LabelSet:
    """One label set of a collection, as listed."""

    key: str
    kind: Kind
    title: str
    description: str
    queries: int

    @property
    def available(self) -> bool:
        return self.queries > 0


def _imported_queries(db: Database, collection_id: int) -> int:
    with db.read() as s:
        return repository.graded_query_count(s, collection_id)


def _imported_qrels(db: Database, collection_id: int) -> Truth:
    mapping: dict[str, dict[str, float]] = {}
    with db.read() as s:
        for qid, doc, grade in repository.graded_documents(s, collection_id):
            mapping.setdefault(qid, {})[doc] = float(grade)
    return Truth("qrels", "imported qrels", qrels=TrecColumns.from_mapping(mapping))


def _finished(method: str) -> Callable[[Database, int], int]:
    def count(db: Database, collection_id: int) -> int:
        return len(exports.sources(db=db, collection_id=collection_id, method=method))

    return count


def _request(collection_id: int, labels: str) -> exports.ExportRequest:
    fmt = "grades-qrels" if labels == "grades" else "topk-jsonl"
    return exports.resolve(
        exports.ExportRequest(collection_id=collection_id, format=fmt, labels=labels)
    )


def _topk_truth(db: Database, collection_id: int, labels: str) -> list[TopKTruth]:
    """The top-k truths the ``topk-jsonl`` export writes with ``labels`` (hybrid or human)
    and ``source=first``."""
    req = _request(collection_id, labels)
    with db.read() as s:
        return [
            TopKTruth(ql.query_id, int(ql.k or len(ql.top)), tuple(ql.top), tuple(ql.rest))
            for ql in query_labels(s, req)
        ]


def _hybrid_topk(db: Database, collection_id: int) -> Truth:
    return Truth(
        "topk", _topk_title(db, collection_id), topk=_topk_truth(db, collection_id, "hybrid")
    )


def _human_topk(db: Database, collection_id: int) -> Truth:
    truths = _topk_truth(db, collection_id, "human")
    return Truth("topk", LABEL_SETS["topk-human"].title, topk=truths)


def _human_grades(db: Database, collection_id: int) -> Truth:
    req = _request(collection_id, "grades")
    with db.read() as s:
        mapping = {
            ql.query_id: {doc: float(g) for doc, g in ql.labels.items()}
            for ql in query_labels(s, req)
        }
    return Truth("qrels", "human grades", qrels=TrecColumns.from_mapping(mapping))


LABEL_SETS: dict[str, LabelSetSource] = {
    source.key: source
    for source in (
        LabelSetSource(
            "qrels",
            "qrels",
            "imported qrels",
            "the grades imported with the collection (a qrels file or the NDJSON import)",
            _imported_queries,
            _imported_qrels,
        ),
        LabelSetSource(
            "topk",
            "topk",
            "human top-k κ-labels",
            "per query the first finished top-k task: its ordered top k, the rest of its pool 0 "
            "(with a machine judge: from people's and the machine's answers, hybrid)",
            _finished("topk"),
            _hybrid_topk,
            machine_title="hybrid top-k κ-labels (people and machine)",
        ),
        LabelSetSource(
            "topk-human",
            "topk",
            "human-decided top-k κ-labels",
            "the same tasks' κ-labels of only the documents no machine answer compared (the "
            "others unjudged); the same as topk where no machine answered",
            _finished("topk"),
            _human_topk,
        ),
        LabelSetSource(
            "grades",
            "qrels",
            "human grades",
            "per query the first finished graded task's five grades (0..4)",
            _finished("graded"),
            _human_grades,
        ),
    )
}


def _require_collection(db: Database, collection_id: int) -> None:
    with db.read() as s:
        if not repository.collection_exists(s, collection_id):
            raise NotFound(f"no collection with id {collection_id}")


def _machine_answered(db: Database, collection_id: int) -> bool:
    with db.read() as s:
        return repository.has_machine_answers(s, collection_id)


def _title(src: LabelSetSource, machine: bool) -> str:
    return src.machine_title if machine and src.machine_title else src.title


def _topk_title(db: Database, collection_id: int) -> str:
    return _title(LABEL_SETS["topk"], _machine_answered(db, collection_id))


def label_sets(*, db: Database, collection_id: int) -> list[LabelSet]:
    """Every label set of :data:`LABEL_SETS` for the collection, with how many queries it
    labels (0: not available yet); ``topk`` is titled hybrid when a machine answered in the
    collection's finished top-k tasks."""
    _require_collection(db, collection_id)
    machine = _machine_answered(db, collection_id)
    return [
        LabelSet(
            src.key,
            src.kind,
            _title(src, machine),
            src.description,
            src.queries(db, collection_id),
        )
        for src in LABEL_SETS.values()
    ]


def load_label_set(*, db: Database, collection_id: int, key: str) -> Truth:
    """The label set ``key`` of the collection, read once. 422 for an unknown key or a label
    set with no query yet."""
    source = LABEL_SETS.get(key)
    if source is None:
        raise Invalid(f"unknown label set {key!r}; expected one of {', '.join(LABEL_SETS)}")
    _require_collection(db, collection_id)
    truth = source.load(db, collection_id)
    if not truth.queries:
        raise Invalid(f"the collection has no {source.title} yet (label set {key!r} is empty)")
    return truth
