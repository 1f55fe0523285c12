"""SMART-format collections (Cranfield 1400, CACM, CISI, MED, ...).

A record starts with ``.I <id>``; field markers sit alone on their line: ``.T`` title, ``.A``
authors, ``.B`` bibliographic source, ``.W`` abstract (the text), plus ``.X``/``.K``/``.N``/``.C``
in some collections. The Cranfield collection's quirks (docs/data-formats.md) are honoured:

* all files use CRLF line endings (the line reader strips ``\\r``);
* doc 240 has stray ``.A``/``.B`` marker lines inside its abstract and docs 576/578 have two
  ``.W`` sections: after the first ``.W``, a marker line that repeats a field the record has
  already had is dropped and the text after it kept; a field the record has not had yet
  (CACM's ``.B`` after the abstract, a query's ``.B`` citation) starts that field;
* docs 471 and 995 have empty abstracts (kept as empty text, title kept);
* query ids in ``cran.qry`` are not sequential (001, 002, 004, 008, ...): the qrels number the
  queries 1..225 in file order, so ``numbering="ordinal"`` (the default) names query i by i and
  keeps the printed id in :attr:`Topic.source_id`;
* qrels codes 1..4 mean complete answer .. minimum interest (``cranqrel.readme``), so the grade
  is ``5 - code`` (4..1); the one ``-1`` per query is non-relevant (0). See
  :func:`cranfield_grade`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from labeling.sources.base import (
    IssueCollector,
    Lines,
    QrelsEntry,
    SourceDocument,
    Topic,
    as_lines,
    numbered_lines,
)
from labeling.sources.trec import QrelsFile, parse_qrels, parse_qrels_file, trec_grade

_RECORD = re.compile(r"^\.I(?:\s+(.*?))?\s*$")
_MARKER = re.compile(r"^\.([A-Z])\s*$")
#: Markers known from SMART collections; anything else on a marker line is an error.
_KNOWN = frozenset("TABWXKNC")
_SPACE = re.compile(r"\s+")


@dataclass(slots=True)
class _Record:
    ident: str
    line: int
    fields: dict[str, list[str]] = field(default_factory=dict)
    seen_w: bool = False
    current: str | None = None


def _records(data: Lines, file: str, issues: IssueCollector) -> Iterator[_Record]:
    record: _Record | None = None
    for number, text in numbered_lines(as_lines(data), file):
        m = _RECORD.match(text)
        if m:
            if record is not None:
                yield record
            ident = m.group(1)
            if ident is None or not ident.isdigit():
                issues.add(number, f"record id must be a number: {text.strip()!r}")
                # An empty ident marks a record to skip, so its lines are not reported too.
                record = _Record("", number)
                continue
            record = _Record(ident, number)
            continue
        if record is None:
            if text.strip():
                issues.add(number, "text before the first .I record")
            continue
        if not record.ident:
            continue
        mk = _MARKER.match(text)
        if mk:
            name = mk.group(1)
            if name not in _KNOWN:
                issues.add(number, f"unknown field marker .{name}")
                continue
            if record.seen_w and name in record.fields:
                # Cranfield quirk: a repeated marker inside the abstract; the text continues.
                record.current = "W"
                continue
            record.current = name
            record.seen_w = record.seen_w or name == "W"
            record.fields.setdefault(name, [])
            continue
        if record.current is None:
            if text.strip():
                issues.add(number, f"text before any field marker in record .I {record.ident}")
            continue
        record.fields.setdefault(record.current, []).append(text)
    if record is not None:
        yield record


def _one_line(parts: list[str] | None) -> str:
    return _SPACE.sub(" ", " ".join(parts or [])).strip()


def _text(parts: list[str] | None) -> str:
    return "\n".join(p.rstrip() for p in (parts or [])).strip()


def parse_smart_docs(data: Lines, *, file: str = "docs") -> list[SourceDocument]:
    """Documents of a SMART collection: ``doc_id`` = the ``.I`` id without leading zeros,
    ``title`` from ``.T`` (one line), ``text`` from ``.W`` (line breaks kept). Authors and
    source (``.A``/``.B``) are not part of heapjudge's document shape and are dropped."""
    issues = IssueCollector(file)
    out: list[SourceDocument] = []
    seen: dict[str, int] = {}
    for rec in _records(data, file, issues):
        if not rec.ident:
            continue
        doc_id = str(int(rec.ident))
        if doc_id in seen:
            issues.add(rec.line, f"duplicate document id {doc_id} (first on line {seen[doc_id]})")
            continue
        seen[doc_id] = rec.line
        out.append(
            SourceDocument(
                doc_id, _one_line(rec.fields.get("T")), _text(rec.fields.get("W")), None, rec.line
            )
        )
    if not out and not issues:
        issues.add(1, "no .I records found")
    issues.raise_if_any()
    return out


def parse_smart_queries(
    data: Lines,
    *,
    file: str = "queries",
    numbering: Literal["ordinal", "id"] = "ordinal",
) -> list[Topic]:
    """Queries of a SMART collection (``.I`` + ``.W``, optionally ``.T``, ``.A``, ``.B``).

    The query's title (what heapjudge shows and searches) is the ``.T`` title when the record
    has one (collections that use papers as requests: ``.T`` title, ``.A`` authors, ``.W``
    abstract, ``.B`` source), with the ``.W`` text as its description; otherwise (Cranfield)
    the ``.W`` text. Authors and source are dropped.

    ``numbering="ordinal"``: the i-th query in the file is query ``"i"`` (what Cranfield's qrels
    use); ``"id"``: the printed id without leading zeros. A query without ``.W`` text is an error.
    """
    issues = IssueCollector(file)
    out: list[Topic] = []
    seen: dict[str, int] = {}
    for rec in _records(data, file, issues):
        if not rec.ident:
            continue
        text = _one_line(rec.fields.get("W"))
        if not text:
            issues.add(rec.line, f"query .I {rec.ident} has no .W text")
            continue
        printed = str(int(rec.ident))
        if printed in seen:
            issues.add(rec.line, f"duplicate query id {rec.ident} (first on line {seen[printed]})")
            continue
        seen[printed] = rec.line
        qid = str(len(out) + 1) if numbering == "ordinal" else printed
        title = _one_line(rec.fields.get("T"))
        if title:
            out.append(Topic(qid, title, text, None, rec.ident, rec.line))
        else:
            out.append(Topic(qid, text, None, None, rec.ident, rec.line))
    if not out and not issues:
        issues.add(1, "no .I records found")
    issues.raise_if_any()
    return out


def cranfield_grade(code: int) -> int:
    """Cranfield relevance code -> grade, per ``cranqrel.readme`` (Cleverdon).

    1 complete answer -> 4, 2 high relevance -> 3, 3 useful background -> 2,
    4 minimum interest -> 1, 5 no interest (never present) -> 0, -1 (one per query) -> 0.
    ``rel = 5 - code``; note ir_datasets documents the opposite direction, which the README
    shows to be wrong (qrels query 2: docs 12 and 746 are code 1 and are the best answers).
    """
    if code == -1:
        return 0
    if 1 <= code <= 5:
        return 5 - code
    raise ValueError(f"unknown Cranfield relevance code {code} (expected 1..5 or -1)")


def parse_cranfield_qrels(data: Lines, *, file: str = "cranqrel") -> list[QrelsEntry]:
    """``cranqrel``: ``query doc code`` (3 columns) with :func:`cranfield_grade`."""
    return parse_qrels(data, file=file, grade_of=cranfield_grade, columns=3)


def parse_smart_qrels(data: Lines, *, file: str = "qrels", qrels_format: str = "auto") -> QrelsFile:
    """Qrels of a SMART collection, in any layout (``docs/data-formats.md#qrels``).

    ``qrels_format="auto"`` sniffs the layout; a three-column file is then read as Cranfield's
    ``query doc code`` (the graded SMART qrels: :func:`cranfield_grade`), the four-column
    ``.REL`` layout ``qid docid 0 0.000000`` of CACM/CISI/MED/... as binary (every listed pair
    relevant), a four-column TREC file as TREC. ``"cranfield"`` forces Cranfield's reading;
    ``"trec"``, ``"3col"`` and ``"smart-rel"`` force a layout with the file's own values.
    """
    if qrels_format == "cranfield":
        parsed = parse_qrels_file(data, file=file, grade_of=cranfield_grade, layout="3col")
        return QrelsFile(parsed.entries, parsed.layout, CRANFIELD_GRADES_TEXT)
    if qrels_format != "auto":
        return parse_qrels_file(data, file=file, layout=qrels_format)
    # The layout decides the grade mapping: read once with the values kept, then map them.
    parsed = parse_qrels_file(data, file=file, grade_of=lambda value: value)
    if parsed.layout.layout == "smart-rel":
        return parsed
    cranfield = parsed.layout.layout == "3col"
    grade_of = cranfield_grade if cranfield else trec_grade
    issues = IssueCollector(file)
    entries = []
    for e in parsed.entries:
        try:
            entries.append(replace(e, grade=grade_of(e.grade)))
        except ValueError as exc:
            issues.add(e.line, str(exc))
    issues.raise_if_any()
    grades = CRANFIELD_GRADES_TEXT if cranfield else "the file's values (negative -> 0)"
    return QrelsFile(entries, parsed.layout, grades)


CRANFIELD_GRADES_TEXT = "Cranfield codes (grade = 5 - code; -1 -> 0)"


@dataclass(frozen=True, slots=True)
class SmartCollection:
    """A whole SMART collection as parsed: queries, documents and (optional) qrels."""

    topics: list[Topic]
    documents: list[SourceDocument]
    qrels: list[QrelsEntry]


def load_cranfield(directory: str | Path) -> SmartCollection:
    """Read ``cran.all.1400``, ``cran.qry`` and ``cranqrel`` from ``directory``."""
    d = Path(directory)
    with (d / "cran.all.1400").open("rb") as fh:
        docs = parse_smart_docs(fh, file="cran.all.1400")
    with (d / "cran.qry").open("rb") as fh:
        topics = parse_smart_queries(fh, file="cran.qry")
    with (d / "cranqrel").open("rb") as fh:
        qrels = parse_cranfield_qrels(fh, file="cranqrel")
    return SmartCollection(topics, docs, qrels)
