"""Assemble parsed sources into the service's NDJSON import rows, and join grades/features.

A row is one (query, document) pair, exactly the object ``POST /collections/{id}/import``
accepts::

    {"query_id", "query", "description"?, "doc_id", "title"?, "text"? | "html"?,
     "features"?: [numbers], "grade"?: 0..4}

Which documents go with which query is the *pairing*:

* ``"qrels"`` — the documents judged for the query in the qrels (Cranfield: the 1,837
  listed pairs, including the ``-1`` non-relevant ones);
* ``"all"`` — every document under every query (small collections; Cranfield would give
  315,000 rows, so the service import bounds it);
* a mapping ``query_id -> [doc ids]`` — e.g. the top n of a TREC run (:mod:`labeling.study.pools`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from labeling.sources.base import (
    FeatureRow,
    IssueCollector,
    QrelsEntry,
    SourceDocument,
    Topic,
)

Pairing = Literal["qrels", "all"] | Mapping[str, Sequence[str]]


def topic_fields(topic: Topic, *, include_narrative: bool = False) -> dict[str, Any]:
    """The query part of a row. With ``include_narrative`` the narrative (TREC's relevance
    guidelines) is appended to the description, since the row has no field of its own for it."""
    row: dict[str, Any] = {"query_id": topic.query_id, "query": topic.title}
    description = topic.description or ""
    if include_narrative and topic.narrative:
        description = f"{description}\n\n{topic.narrative}".strip()
    if description:
        row["description"] = description
    return row


def document_fields(doc: SourceDocument) -> dict[str, Any]:
    """The document part of a row (``text`` or ``html``; empty text kept as ``""``)."""
    row: dict[str, Any] = {"doc_id": doc.doc_id}
    if doc.title:
        row["title"] = doc.title
    if doc.html is not None:
        row["html"] = doc.html
    else:
        row["text"] = doc.text or ""
    return row


def build_rows(
    topics: Sequence[Topic],
    documents: Iterable[SourceDocument],
    *,
    pairing: Pairing = "qrels",
    qrels: Sequence[QrelsEntry] | None = None,
    qrels_file: str = "qrels",
    unjudged_grade: int | None = None,
    include_narrative: bool = False,
    ignore_unknown_qrels: bool = False,
) -> Iterator[dict[str, Any]]:
    """Yield import rows for ``topics`` × ``documents`` according to ``pairing``.

    ``qrels`` attach grades; a qrels line naming an unknown query or document is an error with
    its line number (raised before any row is yielded, so callers can rely on all-or-nothing).
    With ``ignore_unknown_qrels`` such lines are skipped instead (importing a subset of the
    topics or documents with the full qrels). ``unjudged_grade`` is the grade of pairs without a
    qrels entry (``None`` = no grade; the
    Cranfield README suggests 0). Rows come grouped by query, in topic order, documents in
    collection order (``"all"``/``"qrels"``) or in the mapping's order.
    """
    docs = {d.doc_id: d for d in documents}
    topic_ids = {t.query_id for t in topics}
    grades: dict[tuple[str, str], int] = {}
    judged: dict[str, list[str]] = {}
    if qrels is not None:
        grades, judged = _judged_pairs(qrels, topic_ids, docs, qrels_file, ignore_unknown_qrels)
    _check_pairing(pairing, qrels is not None, topic_ids, docs)
    order = {d: i for i, d in enumerate(docs)}
    for topic in topics:
        if pairing == "all":
            ids: Sequence[str] = list(docs)
        elif pairing == "qrels":
            ids = sorted(judged.get(topic.query_id, []), key=order.__getitem__)
        else:
            ids = list(dict.fromkeys(pairing.get(topic.query_id, ())))
        head = topic_fields(topic, include_narrative=include_narrative)
        for doc_id in ids:
            row = {**head, **document_fields(docs[doc_id])}
            grade = grades.get((topic.query_id, doc_id), unjudged_grade)
            if grade is not None:
                row["grade"] = grade
            yield row


@dataclass(frozen=True, slots=True)
class UnpooledJudgment:
    """A qrels grade of a document its query's pairing left out of the pool: kept as a label
    (evaluation counts it) though no assessor is shown the document."""

    query_id: str
    doc_id: str
    grade: int


def unpooled_judgments(
    topics: Sequence[Topic],
    documents: Iterable[SourceDocument],
    *,
    pairing: Pairing,
    qrels: Sequence[QrelsEntry],
) -> list[UnpooledJudgment]:
    """The qrels' judgments of (query, document) pairs that ``pairing`` does not pool, in
    qrels order (a pair listed twice keeps its last grade, as :func:`build_rows` does). Lines
    naming an unknown query or document are :func:`build_rows`'s concern (an error, or skipped
    with ``ignore_unknown_qrels``). ``"qrels"`` and ``"all"`` pool every judged pair: none."""
    if isinstance(pairing, str):
        return []
    known = {d.doc_id for d in documents}
    topic_ids = {t.query_id for t in topics}
    pooled = {qid: set(ids) for qid, ids in pairing.items()}
    out: dict[tuple[str, str], int] = {}
    for q in qrels:
        known_pair = q.query_id in topic_ids and q.doc_id in known
        if known_pair and q.doc_id not in pooled.get(q.query_id, ()):
            out.pop((q.query_id, q.doc_id), None)  # the last line's place and grade
            out[(q.query_id, q.doc_id)] = q.grade
    return [UnpooledJudgment(qid, doc, grade) for (qid, doc), grade in out.items()]


def _judged_pairs(
    qrels: Sequence[QrelsEntry],
    topic_ids: set[str],
    docs: Mapping[str, SourceDocument],
    qrels_file: str,
    ignore_unknown: bool,
) -> tuple[dict[tuple[str, str], int], dict[str, list[str]]]:
    """The grades of the qrels' (query, document) pairs and each query's judged documents;
    every line naming an unknown query or document is an issue (or skipped with
    ``ignore_unknown``), all raised together."""
    grades: dict[tuple[str, str], int] = {}
    judged: dict[str, list[str]] = {}
    issues = IssueCollector(qrels_file)
    for q in qrels:
        if q.query_id not in topic_ids or q.doc_id not in docs:
            if not ignore_unknown:
                unknown = q.query_id not in topic_ids
                what = f"query {q.query_id}" if unknown else f"document {q.doc_id}"
                issues.add(q.line, f"unknown {what}")
            continue
        grades[(q.query_id, q.doc_id)] = q.grade
        judged.setdefault(q.query_id, []).append(q.doc_id)
    issues.raise_if_any()
    return grades, judged


def _check_pairing(
    pairing: Pairing, has_qrels: bool, topic_ids: set[str], docs: Mapping[str, SourceDocument]
) -> None:
    """A pairing names ``"qrels"`` (with qrels), ``"all"``, or known queries and documents."""
    if isinstance(pairing, str):
        if pairing == "qrels" and not has_qrels:
            raise ValueError("pairing 'qrels' needs qrels")
        if pairing not in ("qrels", "all"):
            raise ValueError(f"unknown pairing {pairing!r}")
        return
    issues = IssueCollector("pairing")
    for qid, paired in pairing.items():
        if qid not in topic_ids:
            issues.add(0, f"unknown query {qid}")
        for d in paired:
            if d not in docs:
                issues.add(0, f"query {qid}: unknown document {d}")
    issues.raise_if_any()


#: Query description of a LETOR import that names the partition file (e.g. ``S1`` of
#: MQ2008): training folds follow the benchmark's own rotation when every query carries one.
LETOR_PART_PREFIX = "LETOR part "


def letor_part(description: str) -> str | None:
    """The partition a LETOR-imported query came from (``"S1"``), or None."""
    if description.startswith(LETOR_PART_PREFIX):
        return description[len(LETOR_PART_PREFIX) :] or None
    return None


def rows_from_letor(
    feature_rows: Iterable[FeatureRow], *, grades: bool = True, part: str | None = None
) -> Iterator[dict[str, Any]]:
    """Rows for a collection made from a LETOR file alone (features, no text).

    The query text is the query id (LETOR files carry no text); ``grade`` is the file's label
    when ``grades`` (LETOR 4.0 labels 0..2 fit heapjudge's 0..4 scale). ``part`` (the file's
    stem, e.g. ``S1``) becomes the query description ``"LETOR part S1"``.
    """
    for r in feature_rows:
        row: dict[str, Any] = {
            "query_id": r.query_id,
            "query": r.query_id,
            "doc_id": r.doc_id,
            "text": "",
            "features": list(r.features),
        }
        if part:
            row["description"] = LETOR_PART_PREFIX + part
        if grades:
            row["grade"] = int(r.label)
        yield row


@dataclass(frozen=True, slots=True)
class Join:
    """Result of joining records (grades or features) to existing (query, document) keys."""

    matched: dict[tuple[str, str], Any]
    unmatched: list[int]
    """Line numbers of records whose (query, document) is not in the collection."""


def join_features(
    keys: Iterable[tuple[str, str]],
    rows: Iterable[FeatureRow],
    *,
    file: str = "features",
    strict: bool = False,
) -> Join:
    """Match LETOR rows to the collection's (query_id, doc_id) pairs.

    All matched vectors must have one length (the trainer needs a fixed width). ``strict``
    turns rows without a matching document into errors (with line numbers); otherwise their
    lines are returned in :attr:`Join.unmatched` for the report.
    """
    wanted = set(keys)
    issues = IssueCollector(file)
    matched: dict[tuple[str, str], Any] = {}
    unmatched: list[int] = []
    width: int | None = None
    for r in rows:
        key = (r.query_id, r.doc_id)
        if key not in wanted:
            if strict:
                issues.add(r.line, f"no document {r.doc_id} under query {r.query_id}")
            unmatched.append(r.line)
            continue
        if width is None:
            width = len(r.features)
        elif len(r.features) != width:
            issues.add(r.line, f"{len(r.features)} features, earlier rows have {width}")
            continue
        matched[key] = list(r.features)
    issues.raise_if_any()
    return Join(matched, unmatched)


def join_grades(
    keys: Iterable[tuple[str, str]],
    qrels: Iterable[QrelsEntry],
    *,
    file: str = "qrels",
    strict: bool = False,
) -> Join:
    """Match qrels entries to the collection's (query_id, doc_id) pairs (see
    :func:`join_features`; qrels usually judge documents outside the imported pools, so
    unmatched lines are reported, not errors, unless ``strict``)."""
    wanted = set(keys)
    issues = IssueCollector(file)
    matched: dict[tuple[str, str], Any] = {}
    unmatched: list[int] = []
    for q in qrels:
        key = (q.query_id, q.doc_id)
        if key not in wanted:
            if strict:
                issues.add(q.line, f"no document {q.doc_id} under query {q.query_id}")
            unmatched.append(q.line)
            continue
        matched[key] = q.grade
    issues.raise_if_any()
    return Join(matched, unmatched)
