"""The columnar join (ranking.io.trec_join) and evaluate_columns against the exact dict path
on random files: ids of shared prefixes and lengths across word boundaries, queries only in
one file, negative grades, scores with and without ties (the shortcut that skips trec_eval's
second pass when no two scores of a query tie in single precision)."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ranking.evaluate import evaluate, evaluate_columns
from ranking.io.trec import read_qrels, read_run
from ranking.io.trec_fast import TrecColumns, read_qrels_columns, read_run_columns

# every test here runs on the compiled scan and join and on the numpy/pyarrow ones (conftest)
pytestmark = pytest.mark.usefixtures("trec_path")

METRICS = ["ndcg@10", "ndcg", "err", "map", "p@5", "nDCG@10"]
PRESETS = ["ranx", "trec_eval", "paper", "gdeval"]


@st.composite
def files(draw: st.DrawFn) -> tuple[list[str], list[str], bool]:
    """Run and qrels lines (in random order) and whether the run's scores may tie."""
    seed = draw(st.integers(0, 2**32 - 1))
    ties = draw(st.booleans())
    rng = np.random.default_rng(seed)
    n_queries = int(rng.integers(1, 12))
    # a few prefixes and lengths 1..20: ids that agree in their first word or differ in one byte
    prefixes = ["", "d", "doc-", "clueweb09-en00"]
    run_lines: list[str] = []
    qrels_lines: list[str] = []
    for q in range(n_queries):
        qid = f"q{q}" if q % 3 else f"topic{q:03d}"
        n = int(rng.integers(1, 30))
        docs = sorted(
            {prefixes[int(rng.integers(4))] + str(int(rng.integers(0, 10**6))) for _ in range(n)}
        )
        if ties:
            scores = rng.choice([0.5, 1.0, 0.30000001, 0.3, 2.0], size=len(docs))
        else:
            scores = rng.permutation(len(docs)) / 7.0 + 0.001
        if q % 5 != 1:  # some queries only in the qrels
            run_lines += [
                f"{qid} Q0 {d} {i} {s!r} t"
                for i, (d, s) in enumerate(zip(docs, scores.tolist(), strict=True))
            ]
        if q % 5 != 2:  # some only in the run
            judged = [d for d in docs if rng.random() < 0.5] + [f"unret{q}"]
            qrels_lines += [f"{qid} 0 {d} {int(rng.integers(-1, 4))}" for d in judged]
    run_lines = [run_lines[i] for i in rng.permutation(len(run_lines))] if seed % 2 else run_lines
    return run_lines, qrels_lines, ties


def _same(a, b) -> None:  # type: ignore[no-untyped-def]
    assert a.queries == b.queries
    assert a.unknown_queries == b.unknown_queries
    assert a.missing_queries == b.missing_queries
    assert a.trec_eval_differs == b.trec_eval_differs
    for name in a.metrics:
        for q in a.queries:
            x, y = a.per_query[name][q], b.per_query[name][q]
            assert (math.isnan(x) and math.isnan(y)) or x == y, (name, q, x, y)


# trec_path is set once per test, not per example: the function-scoped fixture is fine
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(files(), st.sampled_from(PRESETS), st.sampled_from(["ignore", "zero"]))
def test_columns_equal_the_dict_path(
    case: tuple[list[str], list[str], bool], preset: str, missing: str
) -> None:
    run_lines, qrels_lines, _ = case
    if not qrels_lines or not run_lines:
        return
    with tempfile.TemporaryDirectory() as tmp:
        run_path, qrels_path = Path(tmp) / "run", Path(tmp) / "qrels"
        run_path.write_text("\n".join(run_lines) + "\n")
        qrels_path.write_text("\n".join(qrels_lines) + "\n")
        kw = {"metrics": METRICS, "conventions": preset, "missing": missing}
        try:
            exact = evaluate(
                read_run(run_path), qrels=read_qrels(qrels_path), **kw, trec_eval_check=True
            )  # type: ignore[arg-type]
        except ValueError:  # no query in both files
            return
        run_cols, qrels_cols = read_run_columns(run_path), read_qrels_columns(qrels_path)
        assert run_cols.fast and qrels_cols.fast
        _same(exact, evaluate_columns(run_cols, qrels_cols, **kw, trec_eval_check=True))  # type: ignore[arg-type]
        # columns built from the dicts (the exact readers' path) join alike
        _same(
            exact,
            evaluate_columns(
                TrecColumns.from_mapping(read_run(run_path)),  # type: ignore[arg-type]
                TrecColumns.from_mapping(read_qrels(qrels_path)),
                **kw,  # type: ignore[arg-type]
                trec_eval_check=True,
            ),
        )


def test_the_untied_shortcut_still_reports_what_trec_eval_would_print(tmp_path: Path) -> None:
    # Distinct scores: trec_eval's ranking is the caller's, so ranx's NDCG is trec_eval's and
    # no line is printed; paper's exp gain and list ideal still differ and are reported.
    run = {"q": {"a": 0.9, "b": 0.8, "c": 0.7}, "r": {"a": 0.1, "x": 0.2}}
    qrels = {"q": {"a": 0, "c": 3, "z": 2}, "r": {"x": 1}}
    for preset in ("ranx", "paper"):
        kw = {"metrics": ["ndcg@10", "map"], "conventions": preset, "trec_eval_check": True}
        exact = evaluate(run, qrels=qrels, **kw)  # type: ignore[arg-type]
        columns = evaluate_columns(
            TrecColumns.from_mapping(run),
            TrecColumns.from_mapping(qrels),
            **kw,  # type: ignore[arg-type]
        )
        _same(exact, columns)
        assert bool(columns.trec_eval_differs) is (preset == "paper")


def test_many_runs_against_one_qrels_reuse_nothing_stale(tmp_path: Path) -> None:
    # The qrels' sorted keys and padded labels are kept between runs (release_truth_index=False):
    # runs of other queries, and the other missing-query policy, still get their own.
    qrels = {"q1": {"a": 2, "b": 0}, "q2": {"c": 1}, "q3": {"d": 3, "e": 1}}
    runs = [
        {"q1": {"a": 0.5, "b": 0.9}, "q2": {"c": 0.1}},
        {"q3": {"e": 2.0, "d": 1.0, "x": 3.0}},
        {"q1": {"b": 1.0}, "q3": {"d": 0.2}},
    ]
    truth = TrecColumns.from_mapping(qrels)
    for missing in ("ignore", "zero", "ignore"):
        for run in runs:
            kw = {"metrics": ["ndcg@10", "map"], "conventions": "trec_eval", "missing": missing}
            columns = evaluate_columns(
                TrecColumns.from_mapping(run),
                truth,
                **kw,  # type: ignore[arg-type]
                release_truth_index=False,
            )
            _same(evaluate(run, qrels=qrels, **kw), columns)  # type: ignore[arg-type]
