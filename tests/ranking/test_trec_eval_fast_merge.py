"""The compiled join of the trec_eval drop-in (``ranking/trec_eval/_rankjoin.c``) against the
numpy merge it replaces, on random files: ties, duplicated documents in the run and in the
qrels, a run's queries out of order (the second, gathering pass), queries on one side only,
negative grades, and every flag that changes the join (``-M``, ``-J``, ``-c``, ``-l``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypedDict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ranking.io import trec_scan
from ranking.trec_eval import fast_merge as fm
from ranking.trec_eval import m_cutoffs as mc
from ranking.trec_eval import m_gain as mg
from ranking.trec_eval import m_interp as mi
from ranking.trec_eval import m_judged as mj
from ranking.trec_eval.fast_read import fast_qrels, fast_run
from ranking.trec_eval.merge import PAD, Batch, Merged, make_batch, merge
from ranking.trec_eval.readers import read_qrels, read_run
from ranking.trec_eval.strict_text import last_fields_are_integers
from tests.ranking.trec_eval_support import ours, theirs

if fm.rankjoin is None:
    if os.environ.get("HEAPJUDGE_REQUIRE_COMPILED"):
        pytest.fail("ranking.trec_eval._rankjoin is not built (python setup.py build_ext)")
    pytest.skip("ranking.trec_eval._rankjoin is not built", allow_module_level=True)


@contextmanager
def numpy_path() -> Iterator[None]:
    """The numpy path inside the block (the C path's oracle), the compiled path after."""
    trec_scan.USE_COMPILED = False
    try:
        yield
    finally:
        trec_scan.USE_COMPILED = True


@pytest.fixture(autouse=True)
def _compiled_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests compare the compiled code with the numpy code, so the compiled code is on
    even in a run of the suite with HEAPJUDGE_TREC_PURE=1 (each test turns it off itself
    for the numpy side)."""
    monkeypatch.delenv(trec_scan.PURE_ENV, raising=False)


QIDS = ["1", "2", "10", "q", "x", "Q"]
DOCS = [f"d{i}" for i in range(8)] + ["D1", "d10", "e", "ceci_nest_pas_un_docno"]
SCORES = st.sampled_from(["0.5", "1", "1.0", "2", "-0", "0", "3.25", "1e2", "-1.5", ".5"])


@st.composite
def files(draw: st.DrawFn) -> tuple[str, str]:
    qrels_lines = draw(
        st.lists(
            st.tuples(st.sampled_from(QIDS), st.sampled_from(DOCS), st.integers(-2, 4)),
            min_size=1,
            max_size=30,
        )
    )
    run_lines = draw(
        st.lists(
            st.tuples(st.sampled_from(QIDS), st.sampled_from(DOCS), SCORES),
            min_size=1,
            max_size=40,
        )
    )
    if draw(st.booleans()):  # most runs come grouped by query: the streaming pass
        run_lines.sort(key=lambda line: line[0])
    sep = draw(st.sampled_from([" ", "\t", "  "]))
    qrels = "".join(f"{q}{sep}0{sep}{d}{sep}{g}\n" for q, d, g in qrels_lines)
    run = "".join(
        f"{q}{sep}Q0{sep}{d}{sep}{i}{sep}{s}{sep}tag{i % 3}\n"
        for i, (q, d, s) in enumerate(run_lines)
    )
    return qrels, run


def _same(a: Merged, b: Merged) -> None:
    assert a.qids == b.qids
    assert a.errors == b.errors
    np.testing.assert_array_equal(a.bogus, b.bogus)
    np.testing.assert_array_equal(a.batch.num_ret, b.batch.num_ret)
    assert a.batch.rel.shape == b.batch.rel.shape
    np.testing.assert_array_equal(a.batch.rel, b.batch.rel)
    np.testing.assert_array_equal(a.batch.rel_levels, b.batch.rel_levels)
    assert (a.batch.stale is None) == (b.batch.stale is None)
    if a.batch.stale is not None and b.batch.stale is not None:
        np.testing.assert_array_equal(a.batch.stale, b.batch.stale)


class Flags(TypedDict):
    level: int
    max_ret: int
    judged_only: bool
    complete: bool


FLAGS: list[Flags] = [
    {"level": 1, "max_ret": 2147483647, "judged_only": False, "complete": False},
    {"level": 2, "max_ret": 2147483647, "judged_only": False, "complete": True},
    {"level": 1, "max_ret": 3, "judged_only": True, "complete": True},
    {"level": 1, "max_ret": 0, "judged_only": False, "complete": False},
    {"level": 0, "max_ret": -5, "judged_only": True, "complete": True},
]


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(files())
def test_the_compiled_join_gives_the_numpy_merge(tmp_path: Path, data: tuple[str, str]) -> None:
    qpath, rpath = tmp_path / "qrels", tmp_path / "run"
    qpath.write_text(data[0])
    rpath.write_text(data[1])
    qrels = read_qrels(str(qpath))
    run = read_run(str(rpath))
    for flags in FLAGS:
        fast = fm.fast_merge(str(qpath), str(rpath), **flags)
        assert fast is not None, flags
        _same(fast.merged, merge(qrels, run, **flags))
        assert fast.runid == run.runid
        assert fast.qrels_rel_count == int((qrels.rel > 0).sum())


BLANKS = st.text(alphabet=" \t", min_size=1, max_size=3)
EDGE = st.text(alphabet=" \t", max_size=2)
#: ids short and long: lines past 64 bytes are cut by the byte-at-a-time splitter
LONG_DOCS = st.sampled_from(["d1", "d2", "d3", "d" + "x" * 40, "d" + "y" * 70])


@st.composite
def blank_files(draw: st.DrawFn) -> tuple[str, str, bool]:
    """Qrels and a run whose fields are cut by runs of spaces and tabs, lines starting or
    ending with blanks, ids long enough to make lines of more than 64 bytes, and sometimes a
    control byte somewhere (which the compiled join must decline)."""
    qrels = ""
    for q in draw(st.lists(st.sampled_from(["1", "2"]), min_size=1, max_size=6)):
        doc, grade = draw(LONG_DOCS), draw(st.integers(0, 3))
        qrels += f"{q}{draw(BLANKS)}0{draw(BLANKS)}{doc}{draw(BLANKS)}{grade}\n"
    run = ""
    for i, q in enumerate(sorted(draw(st.lists(st.sampled_from(["1", "2"]), max_size=8)))):
        fields = [q, "Q0", draw(LONG_DOCS), str(i), draw(SCORES), "tag"]
        text = draw(EDGE)
        for field in fields[:-1]:
            text += field + draw(BLANKS)
        run += text + fields[-1] + draw(EDGE) + "\n"
    run = run or "1 Q0 d1 1 1 tag\n"
    control = draw(st.sampled_from(["", "\x01", "\x7f", "\x0b"]))
    if control:
        at = draw(st.integers(0, len(run) - 2))
        run = run[:at] + control + run[at:]
    return qrels, run, bool(control)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(blank_files())
def test_lines_are_cut_into_the_fields_the_python_readers_read(
    tmp_path: Path, data: tuple[str, str, bool]
) -> None:
    qpath, rpath = tmp_path / "qrels", tmp_path / "run"
    qpath.write_text(data[0])
    rpath.write_text(data[1])
    fast = fm.fast_merge(str(qpath), str(rpath), **FLAGS[0])
    if data[2]:
        assert fast is None
        return
    assert fast is not None
    run = read_run(str(rpath))
    _same(fast.merged, merge(read_qrels(str(qpath)), run, **FLAGS[0]))
    assert fast.runid == run.runid


def test_a_run_out_of_query_order_is_gathered(tmp_path: Path) -> None:
    """Query 1 comes back after query 2: the streaming pass gives way to the gathering one,
    which ranks all six lines of query 1 together."""
    qpath, rpath = tmp_path / "qrels", tmp_path / "run"
    qpath.write_text("1 0 a 1\n1 0 c 2\n2 0 b 1\n")
    rpath.write_text(
        "1 Q0 a 1 1.0 r\n1 Q0 b 2 3.0 r\n2 Q0 b 1 1.0 r\n1 Q0 c 3 2.0 r\n1 Q0 d 4 2.0 r\n"
    )
    fast = fm.fast_merge(
        str(qpath), str(rpath), level=1, max_ret=10, judged_only=False, complete=False
    )
    assert fast is not None
    # query 1: b (3.0), then d and c tied at 2.0 (d first: ids descending), then a
    assert fast.merged.batch.rel[0].tolist() == [-1, -1, 2, 1]
    assert fast.merged.batch.num_ret.tolist() == [4, 1]


@pytest.mark.parametrize(
    ("qrels", "run"),
    [
        ("1 0 a 1.5\n", "1 Q0 a 1 1.0 r\n"),  # a grade that is not an integer
        ("1 0 a 1\n", "1 Q0 a 1 high r\n"),  # a score that is not a number
        ("1 0 a 1\n", "1 Q0 a 1 1.0\n"),  # five fields
        ("# c\n1 0 a 1\n", "1 Q0 a 1 1.0 r\n"),  # a comment
        ("1 0 a 1\n", "1 Q0 a 1 1.0 r\n\n"),  # a blank line
        ("1 0 a 1\r\n", "1 Q0 a 1 1.0 r\n"),  # a carriage return
        ("1 0 a 1\n", "1 Q0 a 1 1e999 r\n"),  # an infinite score
        ("1 0 a 1\n", "1 Q0 a 1 1.0 r"),  # no final newline
        ("1 0 a 123456789\n", "1 Q0 a 1 1.0 r\n"),  # a grade of more than 8 characters
        ("1 0 a 1 \n", "1 Q0 a 1 1.0 r\n"),  # a blank after the grade
    ],
)
def test_files_it_does_not_take_go_to_the_python_readers(
    tmp_path: Path, qrels: str, run: str
) -> None:
    qpath, rpath = tmp_path / "qrels", tmp_path / "run"
    qpath.write_text(qrels)
    rpath.write_text(run)
    assert fm.fast_merge(str(qpath), str(rpath), **FLAGS[0]) is None


def test_the_cli_gives_the_same_bytes_with_the_compiled_join_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(3)
    qpath, rpath = tmp_path / "qrels", tmp_path / "run"
    qpath.write_text(
        "".join(f"{q} 0 d{d} {rng.integers(0, 4)}\n" for q in range(30) for d in range(0, 40, 3))
    )
    rpath.write_text(
        "".join(
            f"{q} Q0 d{d} {d} {rng.integers(0, 20) / 4} run\n" for q in range(28) for d in range(40)
        )
    )
    for flags in (["-q", "-m", "all_trec"], ["-q", "-c", "-M", "7", "-J", "-m", "all_trec"]):
        compiled = ours(*flags, str(qpath), str(rpath))
        monkeypatch.setattr(trec_scan, "USE_COMPILED", False)
        assert (
            fm.fast_merge(
                str(qpath), str(rpath), level=1, max_ret=9, judged_only=False, complete=False
            )
            is None
        )
        assert fast_qrels(str(qpath)) is None and fast_run(str(rpath)) is None
        pure = ours(*flags, str(qpath), str(rpath))
        monkeypatch.setattr(trec_scan, "USE_COMPILED", True)
        assert compiled == pure
        assert compiled[0] in (0, 4) and compiled[1]


def test_the_stand_in_document_is_looked_up_in_the_qrels(tmp_path: Path) -> None:
    """trec_eval's ``-c`` ranks "ceci_nest_pas_un_docno" for a query missing from the run and
    gives it its qrels grade when the qrels judge it (here 4: one relevant retrieved)."""
    qpath, rpath = tmp_path / "qrels", tmp_path / "run"
    qpath.write_text("Q 0 d2 0\nx 0 ceci_nest_pas_un_docno 4\n")
    rpath.write_text("Q Q0 d5 0 1 t\nq Q0 e 1 -1.5 t\n1 Q0 d2 2 -1.5 t\n")
    flags = ("-q", "-c", "-m", "num_rel_ret", "-l2")
    expected = "".join(
        f"num_rel_ret           \t{q}\t{v}\n" for q, v in (("Q", 0), ("x", 1), ("all", 1))
    )
    compiled = ours(*flags, str(qpath), str(rpath))
    with numpy_path():
        pure = ours(*flags, str(qpath), str(rpath))
    assert compiled == pure == (0, expected, "")
    status, out = theirs(*flags, str(qpath), str(rpath))
    assert (status, out) == (0, expected)


@pytest.mark.parametrize("block", [1, 2, 7, 64])
def test_lines_cut_by_the_read_blocks_are_joined_whole(tmp_path: Path, block: int) -> None:
    """The run read a few bytes at a time (lines spanning two or more blocks) gives what one
    block gives, in the streaming pass and in the gathering one (query 1 comes back)."""
    qpath, rpath = tmp_path / "qrels", tmp_path / "run"
    qpath.write_text("1 0 a 1\n1 0 bb 2\n2 0 c 1\n10 0 a 3\n")
    assert fm.rankjoin is not None
    for run in (
        "1 Q0 a 1 1.5 r1\n1 Q0 bb 2 2.25 r1\n2 Q0 c 1 0.5 r1\n10 Q0 a 1 3 tag\n",
        "1 Q0 a 1 1.5 r1\n2 Q0 c 1 0.5 r1\n1 Q0 bb 2 2.25 r1\n10 Q0 zz 1 3 tag\n",
    ):
        rpath.write_text(run)
        whole = fm.rankjoin.rank(str(qpath), str(rpath), 100, False, False)
        cut = fm.rankjoin.rank(str(qpath), str(rpath), 100, False, False, block)
        assert not isinstance(whole, str)
        assert cut == whole
        assert whole[-1] == "tag"


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(0, 9),
    st.integers(-2, 3),
    st.integers(0, 2**32 - 1),
)
def test_bpref_infap_and_bing_in_c_are_the_numpy_doubles(
    n: int, depth: int, level: int, seed: int
) -> None:
    """The one-walk C kernel (bpref, infAP, binG), average precision's running sums (map,
    map_cut) and the geometric means' logs against the numpy code, bit for bit, on random
    rankings: grades -2 to 4, short rankings (padding), levels down to -2 (unjudged
    documents relevant), queries without judgments (the previous query's counts: divisions
    by zero)."""
    rng = np.random.default_rng(seed)
    num_ret = rng.integers(0, depth + 1, n).astype(np.int64)
    rel = np.where(
        np.arange(depth)[None, :] < num_ret[:, None], rng.integers(-2, 5, (n, depth)), PAD
    ).astype(np.int64)
    levels = rng.integers(0, 3, (n, 5)).astype(np.int64) * (rng.random((n, 1)) < 0.8)
    batches = [make_batch(rel, num_ret, levels.copy(), level) for _ in range(2)]

    def values(batch: Batch) -> list[np.ndarray]:
        return [
            mj.bpref(batch),
            mj.inf_ap(batch),
            mj.bin_g(batch),
            mj.gm_bpref(batch),
            mj.gm_map(batch),
            mc.map_cut(batch, [1, 3, 100]),
            mc.mean_ap(batch),
        ]

    with numpy_path():
        numpy_values = values(batches[0])
    c_values = values(batches[1])
    assert mj.compiled_judged(batches[1]) is not None
    for ours_c, ours_numpy in zip(c_values, numpy_values, strict=True):
        assert ours_c.tobytes() == ours_numpy.tobytes()


GAIN_PAIRS = st.lists(
    st.tuples(
        st.sampled_from(["0", "1", "2", "3", "4", "-1", "x"]),
        st.sampled_from([-2.0, -0.5, 0.0, 0.25, 1.0, 1.5, 3.0, 7.0]),
    ),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(0, 9),
    st.integers(-2, 3),
    st.integers(0, 2**32 - 1),
    GAIN_PAIRS,
    st.lists(st.integers(0, 12), min_size=1, max_size=4),
)
def test_graded_measures_in_c_are_the_numpy_doubles(
    n: int,
    depth: int,
    level: int,
    seed: int,
    pairs: list[tuple[str, float]],
    cutoffs: list[int],
) -> None:
    """dcg, ideal_dcg, G, ndcg_rel, Rndcg, ndcg_cut, rbp and rbp_resid from the C kernels
    against the numpy code, bit for bit: random rankings and judgment counts, gain
    parameters negative (rbp rescales), fractional, zero and repeated (the ideal ranking's
    early end, rescaled ties), rbp's persistence above 1 (negative factors, -0.0), queries
    without judgments (divisions by zero: nan and inf must be the same too)."""
    rng = np.random.default_rng(seed)
    num_ret = rng.integers(0, depth + 1, n).astype(np.int64)
    rel = np.where(
        np.arange(depth)[None, :] < num_ret[:, None], rng.integers(-2, 5, (n, depth)), PAD
    ).astype(np.int64)
    levels = rng.integers(0, 3, (n, 5)).astype(np.int64) * (rng.random((n, 1)) < 0.8)
    batches = [make_batch(rel, num_ret, levels.copy(), level) for _ in range(2)]

    def values(batch: Batch) -> list[np.ndarray]:
        dcg, ideal = mg.dcg_values(batch, pairs)
        return [
            dcg,
            ideal,
            mg.g_measure(batch, pairs),
            mg.ndcg_rel(batch, pairs),
            mg.rndcg(batch, pairs),
            mg.ndcg_cut(batch, cutoffs),
            mg.rbp(batch, pairs),
            mg.rbp(batch, [*pairs, ("p", 0.5)]),
            mg.rbp(batch, [("p", 1.5), *pairs]),
            mg.rbp_resid(batch, pairs),
            mg.rbp_resid(batch, [("p", 1.5)]),
        ]

    with numpy_path():
        assert mg.compiled_graded(batches[0], pairs) is None
        numpy_values = values(batches[0])
    c_values = values(batches[1])
    assert mg.compiled_graded(batches[1], pairs) is not None
    for ours_c, ours_numpy in zip(c_values, numpy_values, strict=True):
        assert ours_c.shape == ours_numpy.shape
        assert ours_c.tobytes() == ours_numpy.tobytes()


GRADE_TEXT = st.lists(
    st.sampled_from(["0", "3", "12345678", "123456789", "+", "-", " ", "\t", "\n", "\r", "x", "."]),
    max_size=16,
).map("".join)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(GRADE_TEXT)
def test_the_integer_grade_check_in_c_answers_as_numpy(tmp_path: Path, text: str) -> None:
    """_rankjoin.integer_grades against the numpy check of strict_text on random texts made
    of digits, signs, separators, line ends and other bytes (empty last fields, long
    grades, a last line without its newline, an empty file)."""
    path = tmp_path / "qrels"
    path.write_bytes(text.encode())
    with numpy_path():
        numpy_answer = last_fields_are_integers(str(path))
    assert fm.compiled_integer_grades(str(path)) is numpy_answer
    assert last_fields_are_integers(str(path)) is numpy_answer


QRELS_TEXT = st.lists(
    st.sampled_from(["1", "0", "a", " ", "\t", "\n", "+", "-", "12345678", "9", "\r", "1.5"]),
    max_size=24,
).map("".join)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(QRELS_TEXT)
def test_the_join_takes_only_qrels_the_integer_check_passes(tmp_path: Path, text: str) -> None:
    """The command line asks last_fields_are_integers only when the join declines: every
    qrels file the join takes must be one that check passes (docs/trec-eval.md#speed)."""
    qpath, rpath = tmp_path / "qrels", tmp_path / "run"
    qpath.write_text(text)
    rpath.write_text("1 Q0 a 1 1.0 r\n")
    joined = fm.fast_merge(str(qpath), str(rpath), **FLAGS[0])
    assert joined is None or last_fields_are_integers(str(qpath))


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 9),
    st.integers(-2, 3),
    st.integers(0, 2**32 - 1),
    st.lists(
        st.sampled_from([-0.5, 0.0, 0.05, 0.1, 0.25, 0.5, 0.7, 1.0, 1.5]), min_size=1, max_size=5
    ),
)
def test_iprec_at_recall_in_c_is_the_numpy_doubles(
    n: int, depth: int, level: int, seed: int, points: list[float]
) -> None:
    """iprec_at_recall and 11pt_avg from the C kernel against the numpy code, bit for bit:
    points below 0, at 0 and above 1, rounding halves (lround), queries without relevant
    documents retrieved or without a ranking (a / ret: 0 or nan)."""
    rng = np.random.default_rng(seed)
    num_ret = rng.integers(0, depth + 1, n).astype(np.int64)
    rel = np.where(
        np.arange(depth)[None, :] < num_ret[:, None], rng.integers(-2, 5, (n, depth)), PAD
    ).astype(np.int64)
    levels = rng.integers(0, 3, (n, 5)).astype(np.int64) * (rng.random((n, 1)) < 0.8)
    batches = [make_batch(rel, num_ret, levels.copy(), level) for _ in range(2)]
    ascending = sorted(points)
    with numpy_path():
        numpy_values = [
            mi.iprec_at_recall(batches[0], points),
            mi.eleven_pt_avg(batches[0], ascending),
        ]
    c_values = [mi.iprec_at_recall(batches[1], points), mi.eleven_pt_avg(batches[1], ascending)]
    for ours_c, ours_numpy in zip(c_values, numpy_values, strict=True):
        assert ours_c.shape == ours_numpy.shape
        assert ours_c.tobytes() == ours_numpy.tobytes()
