"""The drop-in against independent oracles on random qrels and runs (ties, duplicate
scores, queries missing on either side, graded relevance): pytrec_eval, which wraps
trec_eval's C code (its 9.x version: iprec_at_recall and 11pt_avg round recall points
differently from 10.0 and are compared with the binary only), and the trec_eval 10.0 binary
itself when ``HEAPJUDGE_TREC_EVAL_BIN`` names one (every flag set, output bytes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ranking.trec_eval.api import evaluate
from tests.ranking.trec_eval_support import ours, theirs

pytrec_eval = pytest.importorskip("pytrec_eval")

#: Names whose trec_eval 9.x values (pytrec_eval) differ from 10.0's by design.
VERSION_CHANGED = ("iprec_at_recall", "11pt_avg")

SCORES = st.sampled_from([0.5, 1.0, 1.0, 2.0, 3.25, -1.0, 0.0])


@st.composite
def collections(draw: st.DrawFn) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    n_queries = draw(st.integers(1, 4))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n_queries):
        qid = draw(st.sampled_from(["1", "2", "10", "q", f"x{q}"]))
        docs = draw(
            st.lists(
                st.sampled_from([f"d{i}" for i in range(15)]), min_size=1, max_size=12, unique=True
            )
        )
        judged = draw(
            st.lists(
                st.sampled_from([*docs, "u1", "u2", "u3"]), min_size=1, max_size=10, unique=True
            )
        )
        qrels[qid] = {d: draw(st.integers(0, 3)) for d in judged}
        if draw(st.booleans()) or q == 0:
            run[qid] = {d: draw(SCORES) for d in docs}
    run.setdefault("nojudged", {"d0": 1.0})
    return qrels, run


def _common(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]
) -> dict[str, dict[str, int]]:
    return {q: docs for q, docs in qrels.items() if q in run}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections())
def test_every_shared_measure_matches_pytrec_eval(
    data: tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]],
) -> None:
    qrels, run = data
    qrels = _common(qrels, run)
    ours_values = evaluate(qrels, run, ["all_trec"])
    theirs_values = pytrec_eval.RelevanceEvaluator(qrels, pytrec_eval.supported_measures).evaluate(
        run
    )
    compared = 0
    for qid, values in theirs_values.items():
        for name, value in values.items():
            if name in ours_values[qid] and not name.startswith(VERSION_CHANGED):
                assert ours_values[qid][name] == pytest.approx(value, abs=1e-12), (qid, name)
                compared += 1
    assert compared > 50


def _write(
    tmp: Path, qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]
) -> tuple[Path, Path]:
    qpath, rpath = tmp / "qrels", tmp / "run"
    qpath.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items())
    )
    rpath.write_text(
        "".join(f"{q} Q0 {d} 0 {s} r\n" for q, docs in run.items() for d, s in docs.items())
    )
    return qpath, rpath


FLAG_SETS = [
    ["-m", "official", "-q"],
    ["-m", "all_trec", "-q", "-c"],
    ["-m", "all_trec", "-q", "-c", "-M3", "-l2"],
    ["-m", "all_trec", "-q", "-c", "-J"],
    [
        "-q",
        "-n",
        "-c",
        "-m",
        "ndcg.1=3,3=0.5",
        "-m",
        "G",
        "-m",
        "Rndcg",
        "-m",
        "ndcg_rel",
        "-m",
        "11pt_avg.0.5,0.1",
    ],
]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(collections())
def test_output_bytes_match_the_binary(
    tmp_path: Path, data: tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]
) -> None:
    qpath, rpath = _write(tmp_path, *data)
    for flags in FLAG_SETS:
        status, expected = theirs(*flags, qpath, rpath)
        got_status, got, _ = ours(*flags, qpath, rpath)
        assert (got_status, got) == (status, expected), flags
