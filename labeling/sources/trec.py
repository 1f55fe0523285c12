"""TREC formats: topics (``<top>`` blocks), SGML documents (``<DOC>``) and qrels.

Topics (TREC ad hoc / Web style; closing tags optional, field labels optional)::

    <top>
    <num> Number: 401
    <title> foreign minorities, Germany
    <desc> Description:
    What language and cultural differences impede the integration ...
    <narr> Narrative:
    A relevant document will focus on ...
    </top>

Documents::

    <DOC>
    <DOCNO> WSJ880406-0090 </DOCNO>
    <HL> AT&T Unveils Services to Upgrade Phone Networks </HL>
    <TEXT> ... </TEXT>
    </DOC>

Qrels: ``qid iteration docno rel``, ``qid docno rel`` or SMART ``.REL`` ``qid docno 0 0.0``
(sniffed; see :mod:`ranking.io.trec` and ``docs/data-formats.md#qrels``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from labeling.identifiers import identifier_problem, normal_identifier
from labeling.sources.base import (
    IssueCollector,
    Lines,
    QrelsEntry,
    SourceDocument,
    Topic,
    as_lines,
    numbered_lines,
)
from ranking.io.trec import (
    LAYOUT_TEXT,
    QRELS_LAYOUTS,
    SNIFF_LINES,
    GradeMap,
    SniffedLayout,
    choose_layout,
    is_zero_field,
    layout_columns,
    parse_relevance,
    split_qrels_row,
)

_TOPIC_FIELD = re.compile(r"<\s*(num|title|desc|narr)\s*>", re.IGNORECASE)
_CLOSE_FIELD = re.compile(r"<\s*/\s*(num|title|desc|narr)\s*>", re.IGNORECASE)
_LABELS = {
    "num": re.compile(r"^\s*(?:number|topic)\s*:\s*", re.IGNORECASE),
    "desc": re.compile(r"^\s*description\s*:\s*", re.IGNORECASE),
    "narr": re.compile(r"^\s*narrative\s*:\s*", re.IGNORECASE),
    "title": re.compile(r"^\s*(?:topic|title)\s*:\s*", re.IGNORECASE),
}
_SPACE = re.compile(r"\s+")


def _clean(text: str, *, keep_newlines: bool = False) -> str:
    if keep_newlines:
        return "\n".join(_SPACE.sub(" ", ln).strip() for ln in text.strip().splitlines()).strip()
    return _SPACE.sub(" ", text).strip()


def parse_topics(data: Lines, *, file: str = "topics") -> list[Topic]:
    """Parse TREC ``<top>`` blocks into :class:`Topic` values (in file order).

    ``<num>`` gives the query id (a leading ``Number:`` is dropped), ``<title>`` the query text,
    ``<desc>``/``<narr>`` the description and narrative (labels ``Description:``/``Narrative:``
    dropped). Errors with line numbers: text outside a block, a block opened twice or never
    closed, a block without ``<num>`` or ``<title>``, a repeated field, a duplicate query id.
    """
    issues = IssueCollector(file)
    topics: list[Topic] = []
    seen: dict[str, int] = {}
    block: list[tuple[int, str]] | None = None
    start = 0
    for number, text in numbered_lines(as_lines(data), file):
        stripped = text.strip()
        low = stripped.lower()
        if block is None:
            if not stripped:
                continue
            if low.startswith("<top>"):
                block, start = [], number
                rest = stripped[5:].strip()
                if rest:
                    block.append((number, rest))
                continue
            issues.add(number, f"text outside a <top> block: {stripped[:40]!r}")
            continue
        if low.startswith("<top>"):
            issues.add(number, f"<top> inside the block opened on line {start} (missing </top>)")
            block, start = [], number
            continue
        if low.startswith("</top>"):
            topic = _topic_from_block(block, start, issues)
            if topic is not None:
                if topic.query_id in seen:
                    issues.add(
                        start,
                        f"duplicate topic number {topic.query_id} (first on line "
                        f"{seen[topic.query_id]})",
                    )
                else:
                    seen[topic.query_id] = start
                    topics.append(topic)
            block = None
            continue
        block.append((number, text))
    if block is not None:
        issues.add(start, "<top> block is never closed with </top>")
    if not topics and not issues:
        issues.add(1, "no <top> blocks found")
    issues.raise_if_any()
    return topics


def _topic_from_block(
    block: list[tuple[int, str]], start: int, issues: IssueCollector
) -> Topic | None:
    fields: dict[str, list[str]] = {}
    field_line: dict[str, int] = {}
    current: str | None = None
    ok = True
    for number, text in block:
        pos = 0
        line = _CLOSE_FIELD.sub(" ", text)
        for match in _TOPIC_FIELD.finditer(line):
            if current is not None:
                fields[current].append(line[pos : match.start()])
            current = match.group(1).lower()
            if current in fields:
                issues.add(
                    number, f"<{current}> appears twice in the topic starting on line {start}"
                )
                ok = False
            fields[current] = []
            field_line[current] = number
            pos = match.end()
        if current is None:
            if line.strip():
                issues.add(number, "text before the first field tag (<num>, <title>, ...)")
                ok = False
            continue
        fields[current].append(line[pos:])
    values = {
        name: _LABELS[name].sub("", _clean(" ".join(parts))) if name in _LABELS else ""
        for name, parts in fields.items()
    }
    if "num" not in values or not values["num"]:
        issues.add(start, "topic has no <num>")
        return None
    values["num"] = normal_identifier(values["num"])
    problem = identifier_problem(values["num"])
    if problem is not None:
        issues.add(field_line.get("num", start), f"topic number {problem}")
        return None
    if "title" not in values or not values["title"]:
        issues.add(field_line.get("title", start), f"topic {values['num']} has no <title> text")
        return None
    if not ok:
        return None
    return Topic(
        query_id=values["num"],
        title=values["title"],
        description=values.get("desc") or None,
        narrative=values.get("narr") or None,
        line=start,
    )


_DOC_TAG = re.compile(r"<\s*(/?)\s*([A-Za-z]+)[^>]*>")
_TITLE_TAGS = ("title", "headline", "hl", "head")

BodyMode = Literal["auto", "text", "html"]


def parse_trec_docs(
    data: Lines, *, file: str = "docs", body: BodyMode = "auto"
) -> Iterator[SourceDocument]:
    """Parse TREC SGML ``<DOC>`` … ``</DOC>`` records (a generator; errors raised at the end).

    ``<DOCNO>`` is required. The title comes from the first of ``<TITLE>``, ``<HEADLINE>``,
    ``<HL>``, ``<HEAD>``. The body is the content of every ``<TEXT>`` element; without any, the
    whole record minus ``<DOCNO>``/``<DOCHDR>`` (web collections such as .GOV/GOV2 carry raw
    HTML after the HTTP header block). ``body="auto"`` stores it as ``html`` when it contains an
    ``<html``/``<body`` tag or the record has a ``<DOCHDR>``, else as ``text``.
    """
    issues = IssueCollector(file)
    seen: dict[str, int] = {}
    block: list[str] | None = None
    start = 0
    for number, text in numbered_lines(as_lines(data), file):
        low = text.strip().lower()
        if block is None:
            if not low:
                continue
            if low.startswith("<doc>"):
                block, start = [text.strip()[5:]], number
                if low.endswith("</doc>") and len(low) > 5:
                    block[0] = block[0][: -len("</doc>")]
                    doc = _doc_from_block(block, start, issues, body, seen)
                    block = None
                    if doc is not None:
                        yield doc
                continue
            issues.add(number, f"text outside a <DOC> record: {text.strip()[:40]!r}")
            continue
        if low.startswith("<doc>"):
            issues.add(number, f"<DOC> inside the record opened on line {start} (missing </DOC>)")
            block, start = [], number
            continue
        if low.endswith("</doc>"):
            block.append(text.rstrip()[: -len("</doc>")])
            doc = _doc_from_block(block, start, issues, body, seen)
            block = None
            if doc is not None:
                yield doc
            continue
        block.append(text)
    if block is not None:
        issues.add(start, "<DOC> record is never closed with </DOC>")
    if not seen and not issues:
        issues.add(1, "no <DOC> records found")
    issues.raise_if_any()


def _element(raw: str, tag: str) -> list[str]:
    pattern = re.compile(rf"<\s*{tag}\b[^>]*>(.*?)<\s*/\s*{tag}\s*>", re.IGNORECASE | re.DOTALL)
    return [m.group(1) for m in pattern.finditer(raw)]


def _doc_from_block(
    block: list[str],
    start: int,
    issues: IssueCollector,
    body: BodyMode,
    seen: dict[str, int],
) -> SourceDocument | None:
    raw = "\n".join(block)
    docnos = _element(raw, "docno")
    if len(docnos) != 1 or not docnos[0].strip():
        issues.add(
            start,
            "record needs exactly one non-empty <DOCNO>"
            + (f" (found {len(docnos)})" if len(docnos) != 1 else ""),
        )
        return None
    doc_id = normal_identifier(docnos[0].strip())
    problem = identifier_problem(doc_id)
    if problem is not None:
        issues.add(start, f"DOCNO {problem}")
        return None
    if doc_id in seen:
        issues.add(start, f"duplicate DOCNO {doc_id} (first on line {seen[doc_id]})")
        return None
    seen[doc_id] = start
    title = None
    for tag in _TITLE_TAGS:
        found = _element(raw, tag)
        if found:
            title = _clean(found[0])
            break
    texts = _element(raw, "text")
    has_header = bool(re.search(r"<\s*dochdr\b", raw, re.IGNORECASE))
    if texts:
        content = "\n".join(t.strip("\n") for t in texts).strip()
    else:
        content = re.sub(r"<\s*docno\b.*?<\s*/\s*docno\s*>", "", raw, flags=re.I | re.S)
        content = re.sub(r"<\s*dochdr\b.*?<\s*/\s*dochdr\s*>", "", content, flags=re.I | re.S)
        content = content.strip()
    as_html = body == "html" or (
        body == "auto"
        and (has_header or re.search(r"<\s*(html|body)\b", content, re.IGNORECASE) is not None)
    )
    if as_html:
        return SourceDocument(doc_id, title, None, content, start)
    # Plain text: drop inline SGML tags (<P>, <F P=102>, ...) that TREC newswire carries.
    content = _clean(_DOC_TAG.sub(" ", content), keep_newlines=True)
    return SourceDocument(doc_id, title, content, None, start)


def trec_grade(raw: int) -> int:
    """TREC relevance value -> heapjudge grade: negatives (junk/spam, -1/-2) become 0.

    Values above 4 are errors (heapjudge grades are 0..4, the five-grade scale).
    """
    if raw > 4:
        raise ValueError(f"relevance {raw} is above 4 (heapjudge grades are 0..4)")
    return max(raw, 0)


#: ``qrels_format`` values the importers accept: ``auto`` sniffs the layout; ``cranfield`` is
#: the three-column layout with Cranfield's codes mapped to grades.
QRELS_FORMATS = ("auto", *QRELS_LAYOUTS, "cranfield")


@dataclass(frozen=True, slots=True)
class QrelsFile:
    """A parsed qrels file: its entries and the layout they were read with."""

    entries: list[QrelsEntry]
    layout: SniffedLayout
    grades: str
    """How values became grades, for the import summary (e.g. ``"Cranfield codes"``)."""

    def describe(self) -> str:
        return f"{self.layout.describe()}; grades: {self.grades}"


def parse_qrels(
    data: Lines,
    *,
    file: str = "qrels",
    grade_of: Callable[[int], int] = trec_grade,
    columns: Literal[3, 4] | None = None,
    layout: str = "auto",
    grade_map: GradeMap | None = None,
) -> list[QrelsEntry]:
    """The entries of :func:`parse_qrels_file` (same arguments)."""
    return parse_qrels_file(
        data, file=file, grade_of=grade_of, columns=columns, layout=layout, grade_map=grade_map
    ).entries


def parse_qrels_file(
    data: Lines,
    *,
    file: str = "qrels",
    grade_of: Callable[[int], int] = trec_grade,
    columns: Literal[3, 4] | None = None,
    layout: str = "auto",
    grade_map: GradeMap | None = None,
) -> QrelsFile:
    """Parse qrels in any layout of :mod:`ranking.io.trec` (``trec``, ``3col``, ``smart-rel``).

    ``layout="auto"`` sniffs it from the first data lines (:func:`ranking.io.trec.
    sniff_qrels_layout`); ``columns`` (3 or 4) is the older way to force ``3col``/``trec``. A
    later line that does not fit the layout is an error on that line. Relevance values are
    integers or integer-valued floats (:func:`ranking.io.trec.parse_relevance`; ``grade_map``
    maps other values), then ``grade_of`` maps the integer to a 0..4 grade (raising
    ``ValueError`` for a value it does not know, which becomes an error on that line).
    ``smart-rel`` lines are relevant: grade 1. Ids are read in Unicode NFC
    (:func:`labeling.identifiers.normal_identifier`), so they match imported ones whatever the
    file's spelling. A (query, document) pair listed twice is an error naming both lines.
    """
    if columns is not None:
        layout = "3col" if columns == 3 else "trec"
    issues = IssueCollector(file)
    rows = (
        (number, text.split())
        for number, text in numbered_lines(as_lines(data), file)
        if text.split() and not text.lstrip().startswith("#")
    )
    head = list(itertools.islice(rows, SNIFF_LINES))
    chosen = _qrels_layout(head, layout, issues)
    width = layout_columns(chosen.layout)
    out: list[QrelsEntry] = []
    seen: dict[tuple[str, str], int] = {}
    for number, cols in itertools.chain(head, rows):
        if len(cols) != width:
            issues.add(
                number,
                f"expected {width} columns ({LAYOUT_TEXT[chosen.layout]}), got {len(cols)}",
            )
            continue
        qid, doc, rel_s = split_qrels_row(cols, chosen.layout)
        qid, doc = normal_identifier(qid), normal_identifier(doc)
        try:
            if rel_s is None:
                if not (is_zero_field(cols[2]) and is_zero_field(cols[3])):
                    raise ValueError
                grade = 1
            else:
                grade = grade_of(parse_relevance(rel_s, grade_map))
        except ValueError as exc:
            issues.add(
                number,
                str(exc)
                or f"columns 3 and 4 are {cols[2]!r} {cols[3]!r}, not 0 as in the rest of this "
                "SMART .REL file (choose the TREC qrels format if it is TREC qrels)",
            )
            continue
        key = (qid, doc)
        if key in seen:
            issues.add(
                number, f"query {qid} document {doc} is judged twice (first on line {seen[key]})"
            )
            continue
        seen[key] = number
        out.append(QrelsEntry(qid, doc, grade, rel_s if rel_s is not None else "1", number))
    if not out and not issues:
        issues.add(1, "no qrels lines found")
    issues.raise_if_any()
    if chosen.layout == "smart-rel":
        grades = "every listed pair relevant (grade 1)"
    elif grade_map is not None:
        grades = f"grade map {grade_map.name}"
    else:
        grades = "the file's values (negative -> 0)"
    return QrelsFile(out, chosen, grades)


def _qrels_layout(
    head: list[tuple[int, list[str]]], layout: str, issues: IssueCollector
) -> SniffedLayout:
    """The layout of a qrels file from its first data lines ``head`` (``layout`` names it or is
    ``auto``); a SourceError through ``issues`` when there are none or they fit no layout."""
    if not head:
        issues.add(1, "no qrels lines found")
        issues.raise_if_any()
    try:
        return choose_layout([cols for _, cols in head], layout)
    except ValueError as exc:
        index = getattr(exc, "index", 0)
        issues.add(head[index][0], str(exc))
        issues.raise_if_any()
        raise  # unreachable: raise_if_any raised
