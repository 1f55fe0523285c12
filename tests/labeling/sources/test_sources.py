"""Source parsers: Cranfield (SMART), TREC topics/docs/qrels, JSONL, LETOR features."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from labeling.sources import (
    SourceError,
    build_rows,
    cranfield_grade,
    iter_byte_lines,
    join_features,
    join_grades,
    load_cranfield,
    parse_cranfield_qrels,
    parse_jsonl_docs,
    parse_qrels,
    parse_smart_docs,
    parse_smart_queries,
    parse_topics,
    parse_trec_docs,
    rows_from_letor,
)
from labeling.sources.letor import read_letor_features


@pytest.fixture(scope="module")
def cranfield(shared_data: Path):
    return load_cranfield(shared_data / "cranfield")


def test_cranfield_counts_and_numbering(cranfield) -> None:
    assert len(cranfield.documents) == 1400
    assert [d.doc_id for d in cranfield.documents] == [str(i) for i in range(1, 1401)]
    assert len(cranfield.topics) == 225
    # Queries are numbered 1..225 in file order; the printed ids are not sequential.
    assert [t.query_id for t in cranfield.topics] == [str(i) for i in range(1, 226)]
    assert [t.source_id for t in cranfield.topics[:5]] == ["001", "002", "004", "008", "009"]
    assert cranfield.topics[-1].source_id == "365"
    assert cranfield.topics[1].title.startswith("what are the structural and aeroelastic problems")
    assert len(cranfield.qrels) == 1837


def test_cranfield_grade_direction(cranfield) -> None:
    # README: code 1 complete answer .. 4 minimum interest; rel = 5 - code; -1 -> 0.
    assert [cranfield_grade(c) for c in (1, 2, 3, 4, -1)] == [4, 3, 2, 1, 0]
    codes = Counter(q.raw for q in cranfield.qrels)
    assert codes == {"1": 128, "2": 387, "3": 734, "4": 363, "-1": 225}
    grades = Counter(q.grade for q in cranfield.qrels)
    assert grades == {4: 128, 3: 387, 2: 734, 1: 363, 0: 225}
    by_pair = {(q.query_id, q.doc_id): q.grade for q in cranfield.qrels}
    # The README's spot check: qrels query 2, docs 12 and 746 are complete answers.
    assert by_pair[("2", "12")] == 4 and by_pair[("2", "746")] == 4
    assert sum(1 for q in cranfield.qrels if q.raw == "-1") == 225
    assert len({q.query_id for q in cranfield.qrels if q.raw == "-1"}) == 225


def test_cranfield_quirks(cranfield) -> None:
    docs = {d.doc_id: d for d in cranfield.documents}
    # CRLF stripped everywhere.
    assert not any("\r" in (d.text or "") or "\r" in (d.title or "") for d in docs.values())
    # Doc 240: stray .A/.B markers inside the abstract; the text after them is kept.
    t240 = docs["240"].text or ""
    assert "application to turbulent separations is made for a prandtl number of" in t240
    assert "unity in low-speed flow without injection" in t240
    assert t240.rstrip().endswith("transfer in a laminar separated flow .")
    assert not any(line.strip() in {".A", ".B", ".W"} for line in t240.splitlines())
    # Docs 576 and 578: two .W sections, both kept.
    assert "alleviation of part-speed operational" in (docs["576"].text or "")
    assert docs["576"].text.startswith("viscous and inviscid stagnation flow")  # type: ignore[union-attr]
    # Docs 471 and 995: empty abstracts (and titles), still documents.
    assert docs["471"].text == "" and docs["995"].text == ""
    assert (
        docs["1"].title
        == "experimental investigation of the aerodynamics of a wing in a slipstream ."
    )


def test_cranfield_rows_with_grades(cranfield) -> None:
    rows = list(build_rows(cranfield.topics, cranfield.documents, qrels=cranfield.qrels))
    assert len(rows) == 1837
    assert len({r["query_id"] for r in rows}) == 225
    row = next(r for r in rows if r["query_id"] == "2" and r["doc_id"] == "12")
    assert row["grade"] == 4 and row["query"].startswith("what are the structural")
    assert set(row) == {"query_id", "query", "doc_id", "title", "text", "grade"}
    # "all" pairing for two queries: every document, unjudged ones graded 0 (README).
    small = list(
        build_rows(
            cranfield.topics[:2],
            cranfield.documents,
            pairing="all",
            qrels=[q for q in cranfield.qrels if q.query_id in {"1", "2"}],
            unjudged_grade=0,
        )
    )
    assert len(small) == 2800
    assert Counter(r["grade"] > 0 for r in small)[True] == sum(
        1 for q in cranfield.qrels if q.query_id in {"1", "2"} and q.grade > 0
    )


def test_smart_corruption_line_numbers(shared_data: Path) -> None:
    lines = (shared_data / "cranfield" / "cran.all.1400").read_bytes().splitlines(keepends=True)
    target = lines.index(b".I 500\r\n")
    broken = [*lines[:target], b".I five hundred\r\n", *lines[target + 1 :]]
    with pytest.raises(SourceError) as info:
        parse_smart_docs(broken, file="cran.all.1400")
    assert [(i.file, i.line) for i in info.value.issues] == [("cran.all.1400", target + 1)]
    with pytest.raises(SourceError, match=r"docs:1: text before the first \.I"):
        parse_smart_docs(b"garbage\n.I 1\n.W\ntext\n")
    with pytest.raises(SourceError, match=r"docs:3: unknown field marker \.Q"):
        parse_smart_docs(".I 1\n.T\n.Q\n")
    with pytest.raises(SourceError, match=r"docs:3: duplicate document id 1"):
        parse_smart_docs(".I 1\n.W\n.I 001\n.W\n")
    with pytest.raises(SourceError, match=r"queries:4: query \.I 2 has no \.W text"):
        parse_smart_queries(".I 1\n.W\nfirst\n.I 2\n")
    qrels = (shared_data / "cranfield" / "cranqrel").read_bytes().splitlines(keepends=True)
    qrels[99] = b"10 20 7\r\n"
    with pytest.raises(SourceError, match=r"cranqrel:100: unknown Cranfield relevance code 7"):
        parse_cranfield_qrels(qrels)


def test_smart_query_numbering_by_id() -> None:
    topics = parse_smart_queries(".I 004\n.W\nfirst query\n.I 9\n.W\nsecond\n", numbering="id")
    assert [(t.query_id, t.source_id) for t in topics] == [("4", "004"), ("9", "9")]


#: Queries that are papers (as in CISI): title, authors, abstract, then the source.
PAPER_QUERIES = """\
.I 1
.T
Computerized Information Retrieval Systems
.A
Smith, J.
.W
How can a library use computers to
retrieve documents ?
.B
(Journal of Documentation, Vol. 31, No. 6, 1975)
.I 2
.W
What is information science?
"""


def test_smart_queries_with_title_authors_and_source() -> None:
    first, second = parse_smart_queries(PAPER_QUERIES)
    assert first.title == "Computerized Information Retrieval Systems"
    assert first.description == "How can a library use computers to retrieve documents ?"
    assert "Journal" not in first.title + (first.description or "")
    assert "Smith" not in first.title + (first.description or "")
    # A query with only .W (Cranfield's shape) keeps it as its title.
    assert (second.title, second.description) == ("What is information science?", None)


def test_smart_source_after_the_abstract_is_not_text() -> None:
    # CACM's documents carry .B (and .N, .X) after the abstract; a repeated marker inside the
    # abstract (Cranfield's doc 240) is still text.
    (doc,) = parse_smart_docs(".I 1\n.T\nA title\n.W\nabstract text\n.B\nCACM June, 1960\n")
    assert doc.text == "abstract text"
    (doc,) = parse_smart_docs(".I 1\n.T\nt\n.A\na\n.W\nfirst\n.A\nsecond\n.W\nthird\n")
    assert doc.text == "first\nsecond\nthird"


TOPICS = """\
<top>
<num> Number: 401
<title> foreign minorities, Germany
<desc> Description:
What language and cultural differences impede
the integration of foreign minorities in Germany?
<narr> Narrative:
A relevant document will focus on the causes.
</top>

<top>
<num>402</num>
<title>behavioral genetics</title>
</top>
"""


def test_trec_topics() -> None:
    topics = parse_topics(TOPICS)
    assert [t.query_id for t in topics] == ["401", "402"]
    assert topics[0].title == "foreign minorities, Germany"
    assert topics[0].description == (
        "What language and cultural differences impede the integration of foreign minorities "
        "in Germany?"
    )
    assert topics[0].narrative == "A relevant document will focus on the causes."
    assert topics[1].description is None


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        (TOPICS.replace("</top>\n\n<top>", "\n<top>", 1), 10, "missing </top>"),
        (TOPICS + "<top>\n<num> 403\n", 15, "never closed"),
        (TOPICS.replace("<num>402</num>", "<num>401</num>"), 11, "duplicate topic number 401"),
        (TOPICS.replace("<title>behavioral genetics</title>", ""), 11, "no <title>"),
        ("stray\n" + TOPICS, 1, "outside a <top>"),
    ],
)
def test_trec_topics_errors(text: str, line: int, needle: str) -> None:
    with pytest.raises(SourceError) as info:
        parse_topics(text, file="topics.txt")
    assert any(i.line == line and needle in i.message for i in info.value.issues), info.value


DOCS = """\
<DOC>
<DOCNO> WSJ-1 </DOCNO>
<HL> Phone networks </HL>
<TEXT>
AT&T unveiled <P> services
today.
</TEXT>
</DOC>
<DOC>
<DOCNO>GX-2</DOCNO>
<DOCHDR>
http://example.org/ HTTP/1.0 200 OK
</DOCHDR>
<html><head><title>Page</title></head><body>Hi</body></html>
</DOC>
<DOC><DOCNO>ONE-LINE</DOCNO><TEXT>short</TEXT></DOC>
"""


def test_trec_sgml_docs() -> None:
    docs = list(parse_trec_docs(DOCS))
    assert [d.doc_id for d in docs] == ["WSJ-1", "GX-2", "ONE-LINE"]
    assert docs[0].title == "Phone networks"
    assert docs[0].text == "AT&T unveiled services\ntoday."
    assert docs[1].html is not None and docs[1].html.startswith("<html>")
    assert docs[1].text is None and docs[1].title == "Page"
    assert docs[2].text == "short"


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        (DOCS.replace("<DOCNO> WSJ-1 </DOCNO>\n", ""), 1, "exactly one non-empty <DOCNO>"),
        (DOCS.replace("</DOC>\n<DOC>\n<DOCNO>GX-2", "<DOC>\n<DOCNO>GX-2", 1), 8, "missing </DOC>"),
        (DOCS.replace("GX-2", "WSJ-1"), 9, "duplicate DOCNO WSJ-1"),
        (DOCS + "<DOC>\n<DOCNO>X</DOCNO>\n", 17, "never closed"),
    ],
)
def test_trec_sgml_errors(text: str, line: int, needle: str) -> None:
    with pytest.raises(SourceError) as info:
        list(parse_trec_docs(text, file="docs.sgml"))
    assert any(i.line == line and needle in i.message for i in info.value.issues), info.value


def test_jsonl_docs_and_errors() -> None:
    good = '{"doc_id": "a", "title": "A", "text": "x"}\n\n{"id": 7, "html": "<p>y</p>"}\n'
    docs = list(parse_jsonl_docs(good))
    assert [(d.doc_id, d.text, d.html) for d in docs] == [("a", "x", None), ("7", None, "<p>y</p>")]
    bad = (
        '{"doc_id": "a", "text": "x"}\n'
        "{not json}\n"
        "[1, 2]\n"
        '{"title": "no id"}\n'
        '{"doc_id": "b", "text": "x", "html": "y"}\n'
        '{"doc_id": "a", "text": "again"}\n'
        '{"doc_id": "c", "text": 5}\n'
        + "[" * 100_000
        + "\n"
        + '{"doc_id": "d", "n": '
        + "9" * 5000
        + "}\n"
    )
    with pytest.raises(SourceError) as info:
        list(parse_jsonl_docs(bad, file="docs.jsonl"))
    assert [i.line for i in info.value.issues] == [2, 3, 4, 5, 6, 7, 8, 9]
    assert "nested too deeply" in info.value.issues[6].message
    assert str(info.value).startswith("docs.jsonl:2: not valid JSON")


def test_trec_qrels() -> None:
    entries = parse_qrels("401 0 d1 2\n401 0 d2 0\n402 0 d1 -2\n")
    assert [(e.query_id, e.doc_id, e.grade) for e in entries] == [
        ("401", "d1", 2),
        ("401", "d2", 0),
        ("402", "d1", 0),
    ]
    with pytest.raises(SourceError) as info:
        parse_qrels("401 0 d1 2\n401 0 d2 x\n401 0 d1 1\n401 d3 1\n401 0 d4 9\n", file="q")
    assert [i.line for i in info.value.issues] == [2, 3, 4, 5]


def test_byte_stream_lines_keep_utf8_across_chunks() -> None:
    payload = '{"doc_id": "é", "text": "naïve"}\n'.encode()
    chunks = [payload[i : i + 3] for i in range(0, len(payload), 3)]
    docs = list(parse_jsonl_docs(iter_byte_lines(chunks)))
    assert docs[0].doc_id == "é" and docs[0].text == "naïve"
    with pytest.raises(SourceError, match="x:2: not valid UTF-8"):
        list(parse_jsonl_docs([b'{"doc_id": "a"}\n', b'{"doc_id": "\xff"}\n'], file="x"))


def test_mq2008_feature_join(shared_data: Path) -> None:
    rows = read_letor_features(shared_data / "letor4-mq2008" / "S1.txt")
    assert len(rows) == 2933
    assert len({r.query_id for r in rows}) == 157
    assert all(len(r.features) == 46 for r in rows)
    first = rows[0]
    assert (first.query_id, first.doc_id, first.line) == ("10002", "GX008-86-4444840", 1)
    # A collection holding a third of the pairs plus one document MQ2008 does not know.
    keys = [(r.query_id, r.doc_id) for r in rows[::3]] + [("10002", "GX-unknown")]
    joined = join_features(keys, rows)
    assert len(joined.matched) == len(rows[::3])
    assert joined.matched[(first.query_id, first.doc_id)] == list(first.features)
    assert len(joined.unmatched) == 2933 - len(rows[::3])
    with pytest.raises(SourceError, match=r"S1\.txt:2: no document"):
        join_features(keys, rows, file="S1.txt", strict=True)
    # A LETOR-only collection: query ids as text, labels as grades.
    built = list(rows_from_letor(rows[:3]))
    assert built[0]["features"] == list(first.features)
    assert built[0]["grade"] == int(first.label)


def test_letor_corruption_line_number(shared_data: Path, tmp_path: Path) -> None:
    lines = (shared_data / "letor4-mq2008" / "S1.txt").read_text().splitlines(keepends=True)[:20]
    lines[11] = lines[11].replace("3:", "3:abc", 1)
    bad = tmp_path / "S1.txt"
    bad.write_text("".join(lines))
    with pytest.raises(SourceError) as info:
        read_letor_features(bad)
    assert [(i.file, i.line) for i in info.value.issues] == [("S1.txt", 12)]


def test_grade_join_and_unknown_references() -> None:
    entries = parse_qrels("1 0 a 2\n1 0 zz 1\n")
    joined = join_grades([("1", "a")], entries)
    assert joined.matched == {("1", "a"): 2} and joined.unmatched == [2]
    topics = parse_topics("<top>\n<num> 1\n<title> t\n</top>\n")
    docs = list(parse_jsonl_docs('{"doc_id": "a", "text": "x"}\n'))
    with pytest.raises(SourceError, match="qrels:2: unknown document zz"):
        list(build_rows(topics, docs, qrels=entries))


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+1+2", "'+1+2"),
        ("-cmd", "'-cmd"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("-1", "-1"),
        ("+3.5e2", "+3.5e2"),
        (-7, "-7"),
        (0.25, "0.25"),
        (None, ""),
        ("plain", "plain"),
        ("'tis", "'tis"),
    ],
)
def test_csv_cells_are_neutralised(cell: object, expected: str) -> None:
    from labeling.csv_safety import neutralise_cell, unneutralise_cell

    assert neutralise_cell(cell) == expected
    if isinstance(cell, str):
        assert unneutralise_cell(neutralise_cell(cell)) == cell
