"""TREC qrels/run and top-k JSONL files: round trips and errors with line numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ranking.io.topk import TopKFormatError, TopKTruth, read_topk_jsonl, write_topk_jsonl
from ranking.io.trec import (
    TrecFormatError,
    parse_run_line,
    read_qrels,
    read_run,
    write_qrels,
    write_run,
)


def test_qrels_and_run_round_trip(tmp_path: Path) -> None:
    qrels = {"q1": {"d1": 0, "d2": 1, "d3": -1}, "2": {"x": 4}}
    write_qrels(tmp_path / "q.txt", qrels)
    assert read_qrels(tmp_path / "q.txt") == qrels
    run = {"q1": {"d1": 0.1, "d2": 1 / 3, "d3": -2.5e-17}, "2": {"x": 1.0, "y": 1.0}}
    write_run(tmp_path / "r.txt", run, tag="mine")
    back, tag = read_run(tmp_path / "r.txt", with_tag=True)
    assert tag == "mine"
    assert back == run  # scores exact (repr)
    # file order of the written run is by descending score
    first = (tmp_path / "r.txt").read_text().splitlines()[0].split()
    assert first[:4] == ["q1", "Q0", "d2", "1"]


def test_run_rank_column_is_ignored(tmp_path: Path) -> None:
    p = tmp_path / "r.txt"
    p.write_text("1 Q0 a 1 0.5 t\n1 Q0 b 2 0.9 t\n")
    assert read_run(p) == {"1": {"a": 0.5, "b": 0.9}}


@pytest.mark.parametrize(
    ("reader", "text", "line", "what"),
    [
        (read_qrels, "1 0 a 1\n1 0 b\n", 2, "4 fields"),
        (read_qrels, "1 0 a 1\n1 0 b x\n", 2, "not a number"),
        (read_qrels, "1 0 a 1\n1 0 b 0.5\n", 2, "not a whole number; give a grade map"),
        (read_qrels, "1 0 a 1\n1 0 a 2\n", 2, "already judged on line 1"),
        (read_run, "1 Q0 a 1 0.5 t\n1 Q0 b 2 high t\n", 2, "not a number"),
        (read_run, "1 Q0 a 1 0.5 t\n1 Q0 a 2 0.4 t\n", 2, "listed twice"),
        (read_run, "1 Q0 a 1 0.5\n", 1, "6 fields"),
        (read_run, "1 Q0 a 1 nan t\n", 1, "NaN"),
    ],
)
def test_trec_errors(tmp_path: Path, reader, text: str, line: int, what: str) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "f.txt"
    p.write_text(text)
    with pytest.raises(TrecFormatError, match=what) as info:
        reader(p)
    assert info.value.line == line and str(info.value).startswith(f"{p}:{line}:")


def test_a_strict_run_line() -> None:
    """The uploads' reading of one line: blank and comment lines are None, the rank must be an
    integer and the score finite (read_run, trec_eval's reading, ignores the rank)."""
    assert parse_run_line("  q1\tQ0 d7  3 -2.5 tag ") == ("q1", "d7", 3, -2.5, "tag")
    assert parse_run_line("") is None and parse_run_line("  ") is None
    assert parse_run_line(" #q1 Q0 d7 3 1 t") is None
    for text, what in [
        ("q1 Q0 d7 3 1", "expected 6 columns 'qid Q0 docno rank score tag', got 5"),
        ("q1 Q0 d7 3.0 1 t", "rank '3.0' is not an integer"),
        ("q1 Q0 d7 3 high t", "score 'high' is not a number"),
        ("q1 Q0 d7 3 nan t", "score is NaN"),
        ("q1 Q0 d7 3 -1e999 t", "score '-1e999' is not finite"),
    ]:
        with pytest.raises(ValueError) as info:
            parse_run_line(text)
        assert str(info.value) == what


def test_topk_round_trip_and_kappa(tmp_path: Path) -> None:
    truths = [
        TopKTruth("q1", 3, ("d1", "d2", "d3"), ("d4", "d5"), {"assessor": "ann"}),
        TopKTruth("q2", 3, ("g", "e"), ()),
    ]
    p = tmp_path / "t.jsonl"
    write_topk_jsonl(p, truths)
    assert json.loads(p.read_text().splitlines()[0])["assessor"] == "ann"
    back = read_topk_jsonl(p)
    assert back == truths
    assert back[0].kappa_labels() == {"d1": 3, "d2": 2, "d3": 1, "d4": 0, "d5": 0}
    assert back[1].kappa_labels() == {"g": 3, "e": 2}  # n = 2 < k = 3 (docs/protocols.md: n < k)


@pytest.mark.parametrize(
    ("line2", "what"),
    [
        ("{not json", "invalid JSON"),
        ('{"query_id": "b", "k": 2, "top": ["x"]}', "missing key"),
        ('{"query_id": "b", "k": 0, "top": [], "rest": []}', "positive integer"),
        ('{"query_id": "b", "k": 1, "top": ["x", "y"], "rest": []}', "more than k"),
        ('{"query_id": "b", "k": 2, "top": ["x"], "rest": ["x"]}', "both top and rest"),
        ('{"query_id": "b", "k": 2, "top": [1], "rest": []}', "list of non-empty strings"),
        ('{"query_id": "a", "k": 2, "top": ["x"], "rest": []}', "already has a truth on line 1"),
        ("[1, 2]", "JSON object"),
        ("[" * 100_000, "nested too deeply"),
    ],
)
def test_topk_errors(tmp_path: Path, line2: str, what: str) -> None:
    p = tmp_path / "t.jsonl"
    p.write_text('{"query_id": "a", "k": 2, "top": ["x", "y"], "rest": ["z"]}\n' + line2 + "\n")
    with pytest.raises(TopKFormatError, match=what) as info:
        read_topk_jsonl(p)
    assert info.value.line == 2 and str(info.value).startswith(f"{p}:2:")


def test_bom_and_crlf(tmp_path: Path) -> None:
    p = tmp_path / "q.txt"
    p.write_bytes(b"\xef\xbb\xbf1 0 a 1\r\n1 0 b 0\r\n")
    assert read_qrels(p) == {"1": {"a": 1, "b": 0}}
    t = tmp_path / "t.jsonl"
    t.write_bytes(b'\xef\xbb\xbf{"query_id": 3, "k": 1, "top": ["x"], "rest": []}\r\n')
    assert read_topk_jsonl(t)[0].query_id == "3"
