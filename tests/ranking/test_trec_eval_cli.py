"""The drop-in's command line on small files written here: hand-computed values, each flag's
effect, trec_eval's errors and heapjudge's line-numbered ones."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from ranking.trec_eval.api import evaluate
from tests.ranking.trec_eval_support import ours

QRELS = "1 0 a 1\n1 0 b 0\n1 0 c 2\n1 0 d 1\n2 0 x 1\n3 0 y 1\n"
# query 1 ranked: c (3.0), b (2.0), then e and a tie at 1.0 (e > a: ids descending), d
RUN = (
    "1 Q0 a 1 1.0 t\n1 Q0 b 2 2.0 t\n1 Q0 c 3 3.0 t\n1 Q0 e 4 1.0 t\n1 Q0 d 5 0.5 t\n"
    "2 Q0 z 1 1.0 t\n"
)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    q, r = tmp_path / "qrels", tmp_path / "run"
    q.write_text(QRELS)
    r.write_text(RUN)
    return q, r


def _values(out: str) -> dict[tuple[str, str], str]:
    rows = [line.split("\t") for line in out.splitlines()]
    return {(name.strip(), qid): value for name, qid, value in rows}


def test_hand_computed_values(files: tuple[Path, Path]) -> None:
    q, r = files
    status, out, _ = ours("-q", "-c", "-m", "all_trec", q, r)
    v = _values(out)
    # query 1: ranking c b e a d, relevant (grade >= 1): c, a, d; R = 3
    assert v[("map", "1")] == f"{(1 / 1 + 2 / 4 + 3 / 5) / 3:.4f}"
    assert v[("P_5", "1")] == "0.6000"
    assert v[("recip_rank", "1")] == "1.0000"
    assert v[("Rprec", "1")] == f"{1 / 3:.4f}"
    # bpref: c (no non-relevant above) 1; a, d: 1 - min(1,3)/min(1,3) = 0 -> 1/3
    assert v[("bpref", "1")] == f"{1 / 3:.4f}"
    assert v[("relstring", "1")] == "'20-11'"
    dcg = 2 / math.log2(2) + 1 / math.log2(5) + 1 / math.log2(6)
    ideal = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert v[("ndcg", "1")] == f"{dcg / ideal:.4f}"
    assert v[("num_ret", "3")] == "0"  # -c: query 3 is not in the run
    assert v[("num_q", "all")] == "3"
    assert status == 0


def test_flags_change_the_output_as_trec_eval_does(files: tuple[Path, Path]) -> None:
    q, r = files
    base = _values(ours("-q", "-c", "-m", "all_trec", q, r)[1])
    cut = _values(ours("-q", "-c", "-M2", "-m", "all_trec", q, r)[1])
    assert cut[("num_ret", "1")] == "2" and base[("num_ret", "1")] == "5"
    strict = _values(ours("-q", "-c", "-l2", "-m", "all_trec", q, r)[1])
    assert strict[("num_rel", "1")] == "1" and strict[("map", "1")] == "1.0000"
    judged = _values(ours("-q", "-c", "-J", "-m", "all_trec", q, r)[1])
    assert judged[("relstring", "1")] == "'2011'"
    no_summary = ours("-q", "-n", "-c", q, r)[1]
    assert "\tall\t" not in no_summary and "\t1\t" in no_summary
    summary_only = ours("-c", q, r)[1]
    assert all("\tall\t" in line for line in summary_only.splitlines())
    assert _values(ours("-c", "-m", "P.2,1", q, r)[1]) == {
        ("P_1", "all"): "0.3333",
        ("P_2", "all"): "0.1667",
    }
    without_c = _values(ours("-m", "num_q", "-m", "map", "-c", q, r)[1])
    assert without_c[("num_q", "all")] == "3"


def test_long_options_and_stdin(files: tuple[Path, Path]) -> None:
    q, r = files
    a = ours("--measure=P.5", "-c", q, r)[1]
    b = subprocess.run(
        [sys.executable, "-m", "ranking.trec_eval", "-m", "P.5", "-c", str(q), "-"],
        input=RUN,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert a == b == "P_5                   \tall\t0.2000\n"


def test_missing_query_without_c_stops_as_trec_eval_does(files: tuple[Path, Path]) -> None:
    q, r = files
    status, out, err = ours("-q", "-m", "map", q, r)
    assert status == 4 and "result qid '3' not found" in err
    assert (
        out.splitlines()[0].startswith("map") and "\tall\t" not in out
    )  # queries before it printed


def test_malformed_lines_name_file_and_line(tmp_path: Path, files: tuple[Path, Path]) -> None:
    q, r = files
    bad_run = tmp_path / "bad_run"
    bad_run.write_text(RUN + "1 Q0 f 6 high t\n")
    status, out, err = ours(q, bad_run)
    assert status == 2 and out == ""
    assert f"{bad_run}:7: expected a decimal score in field 5" in err
    bad_qrels = tmp_path / "bad_qrels"
    bad_qrels.write_text(QRELS + "1 0 g\n")
    status, _, err = ours(bad_qrels, r)
    assert status == 2 and f"{bad_qrels}:7: expected 4 fields" in err
    graded = tmp_path / "graded"
    graded.write_text(QRELS + "1 0 g 1.5\n")
    assert ours("-c", graded, r)[0] == 2
    # --lenient reads as trec_eval does: atof("high") = 0, atol("1.5") = 1
    assert ours("--lenient", "-c", graded, r)[0] == 0
    assert ours("--lenient", "-c", q, bad_run)[0] == 0


def test_usage_and_measure_errors(files: tuple[Path, Path]) -> None:
    q, r = files
    assert ours(q)[0] == 1
    status, _, err = ours("-m", "nosuch", q, r)
    assert status == 1 and "illegal measure 'nosuch'" in err
    status, _, err = ours("-m", "P.0,5", "-c", q, r)
    assert status == 2 and "Negative cutoff" in err
    assert ours("-R", "nosuch", q, r)[0] == 2


def test_duplicate_documents_stop_at_their_query(tmp_path: Path, files: tuple[Path, Path]) -> None:
    q, _ = files
    dup = tmp_path / "dup"
    dup.write_text(RUN + "1 Q0 a 9 0.1 t\n")
    status, _, err = ours("-c", q, dup)
    assert status == 4 and "duplicate docs a" in err
    # past -M the duplicate is not seen, as in trec_eval
    assert ours("-c", "-M5", q, dup)[0] == 0


def test_python_api_matches_the_command_line(files: tuple[Path, Path]) -> None:
    q, r = files
    values = evaluate(
        {"1": {"a": 1, "b": 0, "c": 2, "d": 1}, "2": {"x": 1}, "3": {"y": 1}},
        {"1": {"a": 1.0, "b": 2.0, "c": 3.0, "e": 1.0, "d": 0.5}, "2": {"z": 1.0}},
        ["all_trec"],
        complete=True,
    )
    printed = _values(ours("-q", "-c", "-m", "all_trec", q, r)[1])
    for (name, qid), text in printed.items():
        if name not in {"runid", "relstring"}:
            assert f"{values[qid][name]:6.4f}" == text or str(int(values[qid][name])) == text, (
                name,
                qid,
            )


def test_heapjudge_command_runs_the_drop_in(files: tuple[Path, Path]) -> None:
    q, r = files
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.argv[0]='heapjudge'; from app.cli import main; main()",
            "trec-eval",
            "-c",
            "-mP.5",
            str(q),
            str(r),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and done.stdout == "P_5                   \tall\t0.2000\n"


def test_compiled_scan_and_python_reader_give_the_same_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ranking.io import trec_scan
    from ranking.trec_eval.fast_read import fast_qrels, fast_run
    from ranking.trec_eval.readers import read_qrels, read_run
    from tests.ranking.conftest import require_compiled

    require_compiled()
    # the compiled scan on, even in a run of the suite with HEAPJUDGE_TREC_PURE=1
    monkeypatch.delenv(trec_scan.PURE_ENV, raising=False)
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("".join(f"{i % 7} 0 d{i} {i % 4}\n" for i in range(300)))
    lines = (f"{i % 7} Q0 d{i} {i} {((i * 37) % 11) / 4} tag{i % 3}\n" for i in range(400))
    r.write_text("".join(lines))
    fast, slow = fast_run(str(r)), read_run(str(r))
    assert fast is not None
    assert (fast.qid == slow.qid).all() and (fast.doc == slow.doc).all()
    assert (fast.sim == slow.sim).all() and fast.runid == slow.runid == "tag0"
    fq, sq = fast_qrels(str(q)), read_qrels(str(q))
    assert fq is not None
    assert (fq.qid == sq.qid).all() and (fq.doc == sq.doc).all() and (fq.rel == sq.rel).all()
    # a line the fast path does not read exactly goes to the Python reader
    r.write_text(r.read_text() + "# comment\n")
    assert fast_run(str(r)) is None
