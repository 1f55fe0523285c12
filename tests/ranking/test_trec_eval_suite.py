"""Byte-identical output on trec_eval 10.0's own test suite (its Makefile's ``quicktest``):
every command, compared with the expected ``out.*`` file shipped with trec_eval."""

from __future__ import annotations

import pytest

from tests.ranking.trec_eval_support import ours, trec_eval_test_dir

QUICKTEST = [
    ("out.test", ["qrels.test", "results.test"]),
    ("out.test", ["qrels.test.with-comments", "results.test"]),
    ("out.comment.test", ["qrels.comment.test", "results.comment.test"]),
    ("out.test.a", ["-m", "all_trec", "qrels.test", "results.test"]),
    ("out.test.aq", ["-m", "all_trec", "-q", "qrels.test", "results.test"]),
    ("out.test.aqc", ["-m", "all_trec", "-q", "-c", "qrels.test", "results.trunc"]),
    ("out.test.aqcM", ["-m", "all_trec", "-q", "-c", "-M100", "qrels.test", "results.trunc"]),
    (
        "out.test.aql",
        ["-m", "all_trec", "-mrelstring.20", "-q", "-l2", "qrels.rel_level", "results.test"],
    ),
    (
        "out.test.prefs",
        ["-m", "all_prefs", "-q", "-R", "prefs", "prefs.test", "prefs.results.test"],
    ),
    (
        "out.test.prefs",
        ["-m", "all_prefs", "-q", "-R", "prefs", "prefs.comment.test", "prefs.results.test"],
    ),
    (
        "out.test.qrels_prefs",
        ["-m", "all_prefs", "-q", "-R", "qrels_prefs", "qrels.test", "results.test"],
    ),
    ("out.test.qrels_jg", ["-m", "qrels_jg", "-q", "-R", "qrels_jg", "qrels.123", "results.test"]),
    (
        "out.test.qrels_jg",
        ["-m", "qrels_jg", "-q", "-R", "qrels_jg", "qrels.comments.123", "results.test"],
    ),
    (
        "out.test.meas_params",
        [
            "-q",
            "-miprec_at_recall..10,.20,.25,.75,.50",
            "-m",
            "P.5,7,3",
            "-m",
            "recall.20,2000",
            "-m",
            "Rprec_mult.5.0,0.2,0.35",
            "-mutility.2,-1,0,0",
            "-m",
            "11pt_avg..25,.5,.75",
            "-mndcg.1=3,2=9,4=4.5",
            "-mndcg_cut.10,20,23.4",
            "-msuccess.2,5,20",
            "qrels.test",
            "results.test",
        ],
    ),
    ("out.test.aqZ", ["-q", "-m", "all_trec", "-Z", "zscores_file", "qrels.test", "results.test"]),
]

FILES = {
    "qrels.test",
    "qrels.test.with-comments",
    "qrels.comment.test",
    "results.comment.test",
    "results.test",
    "results.trunc",
    "qrels.rel_level",
    "prefs.test",
    "prefs.comment.test",
    "prefs.results.test",
    "qrels.123",
    "qrels.comments.123",
    "zscores_file",
}


@pytest.mark.parametrize(("expected", "args"), QUICKTEST, ids=[" ".join(a) for _, a in QUICKTEST])
def test_identical_to_trec_eval_expected_output(expected: str, args: list[str]) -> None:
    folder = trec_eval_test_dir()
    full = [str(folder / a) if a in FILES else a for a in args]
    status, out, err = ours(*full)
    assert status == 0, err
    assert out == (folder / expected).read_text()
