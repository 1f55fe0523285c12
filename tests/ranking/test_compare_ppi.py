"""Prediction-powered intervals (ranking.compare.ppi) against ppi_py, the estimators' reference
implementation (Angelopoulos et al.), by hand, and through ``evaluate``/``compare``
--machine-qrels/--audit-qrels."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import ppi_py
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from app.cli import cli
from ranking.compare.ppi import ppi_board, ppi_mean, ppi_of_queries
from ranking.evaluate import evaluate
from ranking.io.trec import write_qrels, write_run


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(2, 40),
    big_n=st.integers(2, 300),
    lam=st.sampled_from([0.0, 0.3, 1.0, None]),
    level=st.sampled_from([0.8, 0.9, 0.95]),
)
def test_the_interval_is_ppi_py_s(
    seed: int, n: int, big_n: int, lam: float | None, level: float
) -> None:
    rng = np.random.default_rng(seed)
    f_all = rng.random(big_n)
    f_n = rng.random(n)
    y = np.clip(f_n + rng.normal(0.0, 0.2, n), 0.0, 1.0)
    ours = ppi_mean(f_all, f_n, y, level=level, lam="tuned" if lam is None else lam)
    low, high = ppi_py.ppi_mean_ci(y, f_n, f_all, alpha=1.0 - level, lam=lam)
    assert (ours.low, ours.high) == pytest.approx(
        (float(low[0]), float(high[0])), rel=1e-9, abs=1e-12
    )
    point = ppi_py.ppi_mean_pointestimate(y, f_n, f_all, lam=lam)
    assert ours.estimate == pytest.approx(float(np.ravel(point)[0]), rel=1e-9, abs=1e-12)


def test_a_small_case_by_hand() -> None:
    # f on all 4 queries: 0.5, 0.5, 0.7, 0.3 (mean 0.5); audited: f = 0.5, 0.7 and y = 0.6, 0.9
    # (rectifier y − f = 0.1, 0.2, mean 0.15): θ = 0.65. Var(f_all) = 0.02, Var(y − f) =
    # 0.0025, se² = 0.02/4 + 0.0025/2 = 0.00625.
    iv = ppi_mean([0.5, 0.5, 0.7, 0.3], [0.5, 0.7], [0.6, 0.9], level=0.95)
    assert iv.estimate == pytest.approx(0.65)
    assert iv.se == pytest.approx(0.00625**0.5)
    assert iv.high - iv.estimate == pytest.approx(1.959963984540054 * 0.00625**0.5)
    assert iv.machine_only == pytest.approx(0.5)
    assert (iv.audited, iv.queries) == (2, 4)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        ppi_mean([], [0.1], [0.2])
    with pytest.raises(ValueError, match="human values"):
        ppi_mean([0.1, 0.2], [0.1], [0.2, 0.3])
    with pytest.raises(ValueError, match="finite"):
        ppi_mean([0.1, float("nan")], [0.1], [0.2])
    with pytest.raises(ValueError, match="lam"):
        ppi_mean([0.1, 0.2], [0.1], [0.2], lam=2.0)
    with pytest.raises(ValueError, match="sample of the machine-labelled"):
        ppi_of_queries({"q1": 0.1}, {"q9": 0.3})


def test_pairs_use_the_paired_difference() -> None:
    machine = {"a": {"q1": 0.5, "q2": 0.6, "q3": 0.2}, "b": {"q1": 0.4, "q2": 0.7, "q3": 0.1}}
    human = {"a": {"q1": 0.6, "q3": 0.3}, "b": {"q1": 0.3, "q3": 0.3}}
    board = ppi_board(machine, human, level=0.9)
    diff = board.pairs[("a", "b")]
    direct = ppi_mean([0.1, -0.1, 0.1], [0.1, 0.1], [0.3, 0.0], level=0.9)
    assert (diff.estimate, diff.low, diff.high) == pytest.approx(
        (direct.estimate, direct.low, direct.high)
    )
    assert board.could_swap == ([("a", "b")] if direct.holds(0.0) else [])


def _study(tmp_path: Path, queries: int = 60, audited: int = 20) -> dict[str, Path]:
    """Truth grades per query; machine labels = truth with a tenth of the grades changed; the
    audit = the truth on a random sample of queries; three runs of differing quality."""
    rng = random.Random(4)
    truth, machine = {}, {}
    for q in range(queries):
        grades = {f"d{i}": rng.choice([0, 0, 1, 2]) for i in range(15)}
        truth[f"q{q}"] = grades
        machine[f"q{q}"] = {
            d: (g if rng.random() > 0.1 else rng.choice([0, 1, 2])) for d, g in grades.items()
        }
    sample = rng.sample(sorted(truth), audited)
    paths = {"machine": tmp_path / "machine.txt", "audit": tmp_path / "audit.txt"}
    write_qrels(paths["machine"], machine)
    write_qrels(paths["audit"], {q: truth[q] for q in sample})
    runs = tmp_path / "runs"
    runs.mkdir()
    for name, noise in (("good", 0.5), ("fair", 1.5), ("poor", 4.0)):
        run = {q: {d: g + rng.gauss(0, noise) for d, g in truth[q].items()} for q in truth}
        write_run(runs / name, run)
    paths["runs"] = runs
    return paths


def test_evaluate_gives_every_run_its_ppi_interval(tmp_path: Path) -> None:
    p = _study(tmp_path)
    r = CliRunner().invoke(
        cli,
        [
            "evaluate",
            "--machine-qrels",
            str(p["machine"]),
            "--audit-qrels",
            str(p["audit"]),
            "--run",
            str(p["runs"]),
            "--metrics",
            "ndcg@10",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    board = out["metrics"]["ndcg@10"]
    assert set(board["runs"]) == {"good", "fair", "poor"}
    # Independently: evaluate under each label set, then the PPI formula.
    from ranking.io.trec import read_qrels, read_run

    machine, audit = read_qrels(p["machine"]), read_qrels(p["audit"])
    for name, iv in board["runs"].items():
        run = read_run(p["runs"] / name)
        f = evaluate(
            run, qrels=machine, metrics=["ndcg@10"], conventions="trec_eval", missing="zero"
        )
        y = evaluate(run, qrels=audit, metrics=["ndcg@10"], conventions="trec_eval", missing="zero")
        fq, yq = f.per_query["ndcg@10"], y.per_query["ndcg@10"]
        lo, hi = ppi_py.ppi_mean_ci(
            np.array([yq[q] for q in yq]),
            np.array([fq[q] for q in yq]),
            np.array(list(fq.values())),
            alpha=0.05,
            lam=1.0,
        )
        assert iv["interval"] == pytest.approx([float(lo[0]), float(hi[0])], rel=1e-9)
        assert (iv["audited"], iv["queries"]) == (20, 60)
    assert len(board["pairs"]) == 3
    assert board["ranking_could_change"] == any(x["could_swap"] for x in board["pairs"])
    text = CliRunner().invoke(
        cli,
        [
            "evaluate",
            "--machine-qrels",
            str(p["machine"]),
            "--audit-qrels",
            str(p["audit"]),
            "--run",
            str(p["runs"]),
            "--metrics",
            "ndcg@10",
        ],
    )
    assert text.exit_code == 0 and "the system ranking could change" in text.output


def test_compare_says_which_pairs_could_swap(tmp_path: Path) -> None:
    p = _study(tmp_path)
    args = [
        "compare",
        "--machine-qrels",
        str(p["machine"]),
        "--audit-qrels",
        str(p["audit"]),
        "--runs",
        str(p["runs"]),
        "--metric",
        "ndcg@10",
        "--json",
    ]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    board = json.loads(r.output)["metrics"]["ndcg@10"]
    good_poor = next(x for x in board["pairs"] if {x["a"], x["b"]} == {"good", "poor"})
    assert not good_poor["could_swap"]  # far apart: no label noise reverses them
    assert json.loads(r.output)["level"] == pytest.approx(0.95)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--machine-qrels", "M"], "go together"),
        (["--machine-qrels", "M", "--audit-qrels", "A", "--qrels", "M"], "replace --qrels"),
        (["--machine-qrels", "M", "--audit-qrels", "A", "--ppi-lambda", "2"], "--ppi-lambda"),
    ],
)
def test_bad_options_are_refused(tmp_path: Path, extra: list[str], message: str) -> None:
    p = _study(tmp_path, queries=6, audited=3)
    names = {"M": str(p["machine"]), "A": str(p["audit"])}
    args = [names.get(a, a) for a in extra]
    r = CliRunner().invoke(
        cli, ["evaluate", *args, "--run", str(p["runs"]), "--metrics", "ndcg@10"]
    )
    assert r.exit_code != 0
    assert message in r.output
