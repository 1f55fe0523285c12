"""Malformed input to ``heapjudge trec-eval`` (docs/trec-eval.md#input): every reader names
the file, the line and what it expected, exits with status 2 and prints nothing, on the
compiled scan's path and on the Python reader's; trec_eval's silent ``atol``/``atof`` reading
only with ``--lenient``."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from ranking.trec_eval.strict_text import last_fields_are_integers
from tests.ranking.trec_eval_support import BIN_ENV, ours, theirs

QRELS = "1 0 a 1\n1 0 b 0\n1 0 c 2\n2 0 x 1\n"
RUN = "1 Q0 a 1 3.0 t\n1 Q0 b 2 2.0 t\n1 Q0 c 3 1.0 t\n2 Q0 x 1 1.0 t\n"
PREFS = "1 g 1 a 2\n1 g 1 b 1\n2 g 1 x 2\n2 g 1 y 1\n"

# (which file, its text, the line number, what the message says was expected)
CASES = [
    ("qrels", QRELS + "1 0 d 1.5\n", 5, "an integer relevance grade in field 4"),
    ("qrels", QRELS + "1 0 d 1.0\n", 5, "an integer relevance grade in field 4"),
    ("qrels", QRELS + "1 0 d 1e1\n", 5, "an integer relevance grade in field 4"),
    ("qrels", QRELS + "1 0 d high\n", 5, "an integer relevance grade in field 4"),
    ("qrels", QRELS + "1 0 d\n", 5, "4 fields 'qid iter docno rel'"),
    ("qrels", "1 0 a 1 extra\n" + QRELS, 1, "4 fields 'qid iter docno rel'"),
    ("run", RUN + "1 Q0 d 4 high t\n", 5, "a decimal score in field 5"),
    ("run", RUN + "1 Q0 d 4 nan t\n", 5, "a decimal score in field 5"),
    ("run", RUN + "1 Q0 d 4 0x1p3 t\n", 5, "a decimal score in field 5"),
    ("run", "1 Q0 d 4 1.0\n" + RUN, 1, "6 fields 'qid iter docno rank sim run_id'"),
]


def _write(tmp: Path, which: str, text: str) -> tuple[Path, Path]:
    q, r = tmp / "qrels", tmp / "run"
    q.write_text(text if which == "qrels" else QRELS)
    r.write_text(text if which == "run" else RUN)
    return q, r


@pytest.mark.parametrize(("which", "text", "line", "expected"), CASES)
def test_a_malformed_line_is_named(
    tmp_path: Path, trec_path: str, which: str, text: str, line: int, expected: str
) -> None:
    q, r = _write(tmp_path, which, text)
    status, out, err = ours("-q", "-m", "all_trec", q, r)
    bad = q if which == "qrels" else r
    got = text.splitlines()[line - 1]
    assert (status, out) == (2, "")
    assert err == f"{bad}:{line}: expected {expected}, got '{got}'\n"


def test_lenient_reads_as_trec_eval(tmp_path: Path, trec_path: str) -> None:
    """atol("1e1") = 1, atol("2.7") = 2, atof("high") = 0: the same output as the file with
    those numbers written as trec_eval reads them, and as the binary's where it is built."""
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text(QRELS.replace("1 0 c 2", "1 0 c 2.7").replace("1 0 a 1", "1 0 a 1e1"))
    r.write_text(RUN.replace("2.0 t", "high t"))
    clean_q, clean_r = tmp_path / "cq", tmp_path / "cr"
    clean_q.write_text(QRELS)
    clean_r.write_text(RUN.replace("2.0 t", "0 t"))
    status, out, err = ours("--lenient", "-q", "-m", "all_trec", q, r)
    assert (status, err) == (0, "")
    assert out == ours("-q", "-m", "all_trec", clean_q, clean_r)[1]
    assert ours("-q", "-m", "all_trec", q, r)[0] == 2  # without the flag: refused
    # the binary is compared where it is built; the clean files stand in elsewhere
    with contextlib.suppress(pytest.skip.Exception):
        assert theirs("-q", "-m", "all_trec", q, r) == (0, out), BIN_ENV


def test_malformed_prefs_and_zscores(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.write_text(RUN)
    prefs = tmp_path / "prefs"
    prefs.write_text(PREFS + "1 g 1 c\n")
    status, out, err = ours("-m", "all_prefs", "-R", "prefs", prefs, run)
    assert (status, out) == (2, "")
    assert err.startswith(f"{prefs}:5: expected 5 fields 'qid jg jsg docno rel_level'")
    prefs.write_text(PREFS + "1 g 1 c best\n")
    status, _, err = ours("-m", "all_prefs", "-R", "prefs", prefs, run)
    assert status == 2 and err.startswith(f"{prefs}:5: expected a number rel_level in field 5")
    assert ours("--lenient", "-m", "all_prefs", "-R", "prefs", prefs, run)[0] == 0
    qrels = tmp_path / "qrels"
    qrels.write_text(QRELS)
    z = tmp_path / "z"
    z.write_text("1 map 0.5 0.1\n1 P_5 x 0.1\n")
    status, out, err = ours("-Z", z, "-m", "map", qrels, run)
    assert (status, out) == (2, "")
    assert err == f"{z}:2: expected a decimal mean in field 3, got '1 P_5 x 0.1'\n"
    z.write_text("1 map 0.5 -\n")
    assert ours("-Z", z, "-m", "map", qrels, run)[2].startswith(
        f"{z}:1: expected a decimal stddev in field 4"
    )


def test_only_integer_grades_take_the_compiled_path(tmp_path: Path) -> None:
    path = tmp_path / "q"
    for text, integer in [
        ("1 0 a 1\n1 0 b 12\n", True),
        ("1 0 a -1\n1 0 b +2", True),  # no final newline
        ("1 0 a 1\n1 0 b 1.0\n", False),
        ("1 0 a 1e1\n", False),
        ("1 0 a 1\r\n", False),
        ("1 0 a 1 \n", False),
        ("1 0 a 1\n\n", False),
        ("1 0 a 123456789\n", False),  # longer than any grade: the exact reader decides
    ]:
        path.write_text(text)
        assert last_fields_are_integers(str(path)) is integer, text
    assert not last_fields_are_integers("-")
    assert not last_fields_are_integers(str(tmp_path / "missing"))
