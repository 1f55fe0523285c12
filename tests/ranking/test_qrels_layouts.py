"""Qrels layouts found in the wild: TREC, three columns, SMART .REL; sniffing, overrides,
float grades and grade maps, in the evaluator's reader, the importers' parser and
`heapjudge evaluate` alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import cli
from labeling.sources import SourceError
from labeling.sources.smart import parse_smart_qrels
from labeling.sources.trec import parse_qrels_file
from ranking.io.trec import TrecFormatError, parse_grade_map, read_qrels_detailed

# A SMART .REL file (CISI/CACM style): every listed pair is relevant.
SMART_REL = "1 28 0 0.000000\n1 35 0 0.000000\n1 38 0 0.000000\n2 12 0 0.000000\n"
TREC = "1 0 28 1\n1 0 35 0\n2 0 12 2\n"
THREE = "1 28 1\n1 35 0\n2 12 2\n"


@pytest.mark.parametrize(
    ("text", "layout", "expected"),
    [
        (SMART_REL, "smart-rel", {"1": {"28": 1, "35": 1, "38": 1}, "2": {"12": 1}}),
        (TREC, "trec", {"1": {"28": 1, "35": 0}, "2": {"12": 2}}),
        (THREE, "3col", {"1": {"28": 1, "35": 0}, "2": {"12": 2}}),
        # whitespace variants: tabs, runs of spaces, CRLF, a trailing blank line
        ("1\t0\t28\t1\r\n1   0 35  0\r\n\n2 0 12 2", "trec", None),
        # integer-valued floats are those integers
        ("1 0 28 1.0\n1 0 35 0.000\n2 0 12 2.00\n", "trec", None),
    ],
)
def test_layouts_are_sniffed(tmp_path: Path, text: str, layout: str, expected: dict) -> None:
    path = tmp_path / "qrels"
    path.write_text(text)
    qrels, sniffed = read_qrels_detailed(path)
    assert sniffed.layout == layout and not sniffed.explicit
    assert qrels == (expected or {"1": {"28": 1, "35": 0}, "2": {"12": 2}})
    entries = parse_qrels_file(text).entries
    assert {(e.query_id, e.doc_id, e.grade) for e in entries} == {
        (q, d, g) for q, docs in qrels.items() for d, g in docs.items()
    }


def test_smart_rel_read_as_trec_is_nonsense_and_sniffing_avoids_it(tmp_path: Path) -> None:
    path = tmp_path / "CISI.REL"
    path.write_text(SMART_REL)
    # Forced TREC reading: the document of every line is "0" -> a duplicate on line 2.
    with pytest.raises(TrecFormatError, match="document 0 of query 1 already judged") as info:
        read_qrels_detailed(path, layout="trec")
    assert info.value.line == 2
    qrels, sniffed = read_qrels_detailed(path)
    assert sniffed.layout == "smart-rel" and qrels["1"] == {"28": 1, "35": 1, "38": 1}
    assert "columns 3 and 4 are 0 on all 4 lines" in sniffed.describe()
    # The import parser agrees, and a SMART import reads it as binary relevance.
    parsed = parse_smart_qrels(SMART_REL, file="CISI.REL")
    assert parsed.layout.layout == "smart-rel" and {e.grade for e in parsed.entries} == {1}
    assert "every listed pair relevant" in parsed.describe()


def test_explicit_layout_overrides_and_later_lines_must_agree(tmp_path: Path) -> None:
    path = tmp_path / "q"
    # A TREC file whose first lines happen to look like SMART .REL (doc "0" grade 0)...
    path.write_text("1 5 0 0\n")
    assert read_qrels_detailed(path)[1].layout == "smart-rel"
    qrels, sniffed = read_qrels_detailed(path, layout="trec")
    assert sniffed.explicit and qrels == {"1": {"0": 0}}
    # ...and a SMART .REL file with a line that carries a value is an error on that line.
    path.write_text(SMART_REL + "2 13 0 1\n")
    with pytest.raises(TrecFormatError, match="not 0 as in the rest") as info:
        read_qrels_detailed(path, layout="smart-rel")
    assert info.value.line == 5
    with pytest.raises(SourceError) as err:
        parse_qrels_file(SMART_REL + "2 13 0 1\n", layout="smart-rel", file="rel")
    assert [i.line for i in err.value.issues] == [5]


def test_float_grades_need_a_grade_map(tmp_path: Path) -> None:
    path = tmp_path / "q"
    path.write_text("1 0 a 0.25\n1 0 b 0.75\n1 0 c 1\n")
    with pytest.raises(TrecFormatError, match="not a whole number; give a grade map") as info:
        read_qrels_detailed(path)
    assert info.value.line == 1
    qrels, _ = read_qrels_detailed(path, grade_map=parse_grade_map("threshold:0.5"))
    assert qrels == {"1": {"a": 0, "b": 1, "c": 1}}
    qrels, _ = read_qrels_detailed(path, grade_map=parse_grade_map("0.25:0,0.75:2,1:3"))
    assert qrels == {"1": {"a": 0, "b": 2, "c": 3}}
    with pytest.raises(TrecFormatError, match="not in the grade map"):
        read_qrels_detailed(path, grade_map=parse_grade_map("0.25:0"))
    with pytest.raises(ValueError, match="bad part"):
        parse_grade_map("1-2")


def test_cranfield_codes(shared_data: Path) -> None:
    qrels, sniffed = read_qrels_detailed(
        shared_data / "cranfield" / "cranqrel", grade_map=parse_grade_map("cranfield")
    )
    assert sniffed.layout == "3col"
    assert sum(len(d) for d in qrels.values()) == 1837
    assert qrels["2"]["12"] == 4  # code 1, a complete answer
    assert min(v for d in qrels.values() for v in d.values()) == 0  # the -1 entries
    parsed = parse_smart_qrels((shared_data / "cranfield" / "cranqrel").read_bytes())
    assert "Cranfield codes" in parsed.grades
    assert {(e.query_id, e.doc_id): e.grade for e in parsed.entries} == {
        (q, d): g for q, docs in qrels.items() for d, g in docs.items()
    }


def test_mixed_column_counts_report_each_line() -> None:
    with pytest.raises(SourceError) as info:
        parse_qrels_file("1 0 a 1\n1 0 b 1\n1 c 1\n1 0 d 1\n1 e\n", file="q")
    assert [i.line for i in info.value.issues] == [3, 5]
    assert "TREC" in info.value.issues[0].message
    with pytest.raises(SourceError, match="expected 3 or 4 fields"):
        parse_qrels_file("1 2\n", file="q")


def test_evaluate_cli_reads_every_layout_and_says_which(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.write_text("1 Q0 28 1 3 t\n1 Q0 99 2 2 t\n1 Q0 35 3 1 t\n2 Q0 12 1 1 t\n")
    runner = CliRunner()
    results = {}
    for name, text in (("rel", SMART_REL), ("three", "1 28 1\n1 35 1\n1 38 1\n2 12 1\n")):
        path = tmp_path / name
        path.write_text(text)
        args = ["evaluate", "--qrels", str(path), "--run", str(run), "--metrics", "map"]
        args += ["--preset", "trec_eval"]  # R = every relevant judgment
        out = runner.invoke(cli, args)
        assert out.exit_code == 0, out.output
        assert "qrels: " in out.output
        js = runner.invoke(cli, [*args, "--json"])
        results[name] = json.loads(js.stdout)
    assert "SMART .REL" in results["rel"]["qrels_read"]
    assert "three columns" in results["three"]["qrels_read"]
    # Same relevance either way: query 1 AP = (1/1 + 2/3) / 3 (38 never retrieved), query 2
    # AP = 1.
    expected = ((1 + 2 / 3) / 3 + 1) / 2
    assert results["rel"]["metrics"]["map"] == pytest.approx(expected, abs=1e-12)
    assert results["three"]["metrics"]["map"] == pytest.approx(expected, abs=1e-12)
    bad = runner.invoke(
        cli,
        ["evaluate", "--qrels", str(tmp_path / "rel"), "--qrels-format", "trec", "--run", str(run)],
    )
    assert bad.exit_code == 1 and "already judged on line 1" in bad.output
