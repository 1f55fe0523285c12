"""The identifier, label and text rules of labeling.identifiers, checked against Unicode's
own categories over every code point (an independent oracle: ``unicodedata.category``)."""

from __future__ import annotations

import unicodedata

import pytest

from labeling.identifiers import (
    MAX_IDENTIFIER_CHARS,
    identifier_problem,
    label_problem,
    normal_identifier,
    same_identifier,
    text_problem,
)
from labeling.sources.base import SourceError


def test_every_code_point_against_its_unicode_category() -> None:
    """An identifier character is one outside the categories Z* and C*; a label character is
    outside C*, Zl and Zp; free text refuses only NUL and surrogates. Planes 0-2 (every
    assigned script), the tag block of plane 14 and the start of private-use plane 15."""
    code_points = [*range(0x30000), *range(0xE0000, 0xE1000), *range(0xF0000, 0xF0100)]
    for cp in code_points:
        char = chr(cp)
        category = unicodedata.category(char)
        ok_id = category[0] not in "ZC"
        ok_label = category[0] != "C" and category not in ("Zl", "Zp")
        ok_text = cp != 0 and category != "Cs"
        assert (identifier_problem(f"a{char}b") is None) == ok_id, hex(cp)
        assert (label_problem(f"a{char}b") is None) == ok_label, hex(cp)
        assert (text_problem(f"a{char}b") is None) == ok_text, hex(cp)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("x\ny 9 FAKE 4", "contains U+000A at character 2"),
        ("a b", "contains U+0020 (SPACE) at character 2"),
        ("ok\u202eevil", "contains U+202E (RIGHT-TO-LEFT OVERRIDE) at character 3"),
        ("d\ud800", "contains a lone surrogate U+D800 at character 2"),
        ("", "is empty"),
        ("x" * (MAX_IDENTIFIER_CHARS + 1), "is too long (201 characters)"),
    ],
)
def test_messages_name_the_character_and_position_not_the_value(value: str, message: str) -> None:
    problem = identifier_problem(value)
    assert problem is not None and problem.startswith(message)
    assert problem.encode("utf-8")  # always encodable, whatever the value was


@pytest.mark.parametrize(
    "value", ["FBIS3-10082", "clueweb09-en0000-00-00000", "q:7", "文档-1", "x" * 200, "GX000-00"]
)
def test_real_identifiers_pass(value: str) -> None:
    assert identifier_problem(value) is None


# Unicode normal form (docs/security.md#text-hygiene): one identifier, one spelling.

E_ACUTE_NFC = "caf\u00e9"  # é as one code point
E_ACUTE_NFD = "cafe\u0301"  # e + COMBINING ACUTE ACCENT


def test_both_spellings_have_one_normal_form() -> None:
    assert E_ACUTE_NFC != E_ACUTE_NFD
    assert normal_identifier(E_ACUTE_NFD) == normal_identifier(E_ACUTE_NFC) == E_ACUTE_NFC
    assert normal_identifier("FBIS3-10082") == "FBIS3-10082"
    assert same_identifier(E_ACUTE_NFD, E_ACUTE_NFC) and same_identifier(E_ACUTE_NFC, E_ACUTE_NFD)
    assert not same_identifier("cafe", E_ACUTE_NFC)


@pytest.mark.parametrize("value", ["\u0301", "\u0301x", "\u20dd1", "\u0903a"])
def test_an_identifier_cannot_start_with_a_combining_mark(value: str) -> None:
    problem = identifier_problem(normal_identifier(value))
    assert problem is not None and problem.startswith("starts with the combining mark U+")
    assert "at character 1" in problem and value not in problem


def test_trec_qrels_and_runs_in_nfd_match_nfc_documents() -> None:
    from labeling.sources.base import SourceDocument, Topic
    from labeling.sources.rows import build_rows
    from labeling.sources.trec import parse_qrels
    from labeling.study.pools import parse_trec_run

    qrels = parse_qrels(f"q\u0301 0 {E_ACUTE_NFD} 2\nq\u0301 0 other 0\n")
    assert (qrels[0].query_id, qrels[0].doc_id) == ("q\u0301", E_ACUTE_NFC)
    docs = [SourceDocument(E_ACUTE_NFC, "t", "x"), SourceDocument("other", "t", "y")]
    rows = list(build_rows([Topic("q\u0301", "query")], docs, qrels=qrels))
    assert [(r["doc_id"], r["grade"]) for r in rows] == [(E_ACUTE_NFC, 2), ("other", 0)]
    run = parse_trec_run(f"Q1 Q0 {E_ACUTE_NFD} 1 9.5 sys\nQ1 Q0 other 2 1.0 sys\n")
    assert [e.doc_id for e in run["Q1"]] == [E_ACUTE_NFC, "other"]
    with pytest.raises(SourceError) as err:
        parse_trec_run(f"Q1 Q0 {E_ACUTE_NFC} 1 9.5 sys\nQ1 Q0 {E_ACUTE_NFD} 2 1.0 sys\n")
    assert err.value.issues[0].line == 2 and "listed twice" in err.value.issues[0].message


def test_file_readers_fold_spellings_and_refuse_a_leading_combining_mark() -> None:
    from labeling.sources.jsonl import parse_jsonl_docs
    from labeling.sources.trec import parse_topics, parse_trec_docs

    docs = (
        f"<DOC>\n<DOCNO> {E_ACUTE_NFC} </DOCNO>\n<TEXT>one</TEXT>\n</DOC>\n"
        f"<DOC>\n<DOCNO> {E_ACUTE_NFD} </DOCNO>\n<TEXT>two</TEXT>\n</DOC>\n"
        "<DOC>\n<DOCNO> \u0301 </DOCNO>\n<TEXT>three</TEXT>\n</DOC>\n"
    )
    with pytest.raises(SourceError) as err:
        list(parse_trec_docs(docs, file="d.sgml"))
    first, second = err.value.issues
    assert (first.line, second.line) == (5, 9)
    assert first.message.startswith(f"duplicate DOCNO {E_ACUTE_NFC} (first on line 1)")
    assert second.message.startswith("DOCNO starts with the combining mark U+0301")
    jsonl = f'{{"doc_id": "{E_ACUTE_NFD}", "text": "a"}}\n{{"doc_id": "\u0301", "text": "b"}}\n'
    with pytest.raises(SourceError) as err:
        list(parse_jsonl_docs(jsonl, file="d.jsonl"))
    [issue] = err.value.issues
    assert issue.line == 2 and issue.message.startswith("doc_id starts with the combining mark")
    topics = parse_topics(f"<top>\n<num> Number: {E_ACUTE_NFD}\n<title> t\n</top>\n")
    assert [t.query_id for t in topics] == [E_ACUTE_NFC]
