"""Simulated assessors, the time model, the study simulation and ``heapjudge simulate``."""

from __future__ import annotations

import json
import math
import random
import statistics

import pytest
import typer
from scipy import stats
from typer.testing import CliRunner

from labeling.errors import ConfigError
from labeling.protocol.session import open_session
from labeling.protocol.types import PairQuestion
from labeling.study.simulation import (
    GRADE_SECONDS,
    PAIR_SECONDS,
    Assessor,
    TimeModel,
    run_session,
    simulate,
    simulate_tasks,
)

DOCS = [f"s{i}" for i in range(30)]


def test_consistent_oracle_breaks_equal_scores_by_seed():
    scores = dict.fromkeys(DOCS, 1.0)
    a, b = Assessor(scores, seed=1), Assessor(scores, seed=2)
    assert a.true_order() == Assessor(scores, seed=1).true_order()
    assert a.true_order() != b.true_order()
    x, y = a.true_order()[:2]
    assert a.prefers(x, y) and not a.prefers(y, x)  # strict and transitive, no ties


def test_flip_noise_rate_matches_p():
    scores = {d: float(i) for i, d in enumerate(DOCS)}
    a = Assessor(scores, seed=3, flip=0.2)
    wrong = sum(not a.prefers("s29", "s0") for _ in range(20000))
    assert stats.binomtest(wrong, 20000, 0.2).pvalue > 1e-4


@pytest.mark.parametrize("model", ["thurstone", "bradley_terry"])
def test_noise_models_confuse_close_documents_more(model):
    scores = {"a": 1.0, "b": 0.8, "c": 0.0}
    a = Assessor(scores, seed=4, noise=model, scale=0.5)
    trials = 20000
    close = sum(a.prefers("a", "b") for _ in range(trials)) / trials
    far = sum(a.prefers("a", "c") for _ in range(trials)) / trials
    if model == "thurstone":
        expect_close = stats.norm.cdf(0.2 / (0.5 * math.sqrt(2)))
        expect_far = stats.norm.cdf(1.0 / (0.5 * math.sqrt(2)))
    else:
        expect_close = 1 / (1 + math.exp(-0.2 / 0.5))
        expect_far = 1 / (1 + math.exp(-1.0 / 0.5))
    assert 0.5 < close < far
    assert abs(close - expect_close) < 0.015 and abs(far - expect_far) < 0.015


def test_tie_probability_and_not_relevant_answers():
    scores = {d: float(i) for i, d in enumerate(DOCS)}
    a = Assessor(scores, seed=5, tie=0.3)
    q = PairQuestion(0, "s1", "s2")
    answers = [a.answer_pair(q, ("left", "right", "tie")).outcome for _ in range(5000)]
    assert abs(answers.count("tie") / 5000 - 0.3) < 0.03
    assert all(a.answer_pair(q).outcome != "tie" for _ in range(200))  # ties not allowed
    b = Assessor(scores, seed=5, not_relevant_below=10)
    full = ("left", "right", "not_relevant")
    assert b.answer_pair(q, full, challenger="s1").outcome == "not_relevant"
    assert b.answer_pair(PairQuestion(0, "s11", "s2"), full, challenger="s11").outcome == "left"
    run = simulate("topk", DOCS, b, k=5, seed=2, options={"not_relevant": True})
    assert run.result.top == b.true_topk(5)
    assert any(j.not_relevant for j in run.result.judged)


def test_bad_parameters():
    with pytest.raises(ConfigError, match="flip"):
        Assessor({"a": 1.0}, flip=1.5)
    with pytest.raises(ConfigError, match="noise model"):
        Assessor({"a": 1.0}, noise="gauss")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        TimeModel(pair_mean=0)
    with pytest.raises(ConfigError):
        simulate_tasks(0, 3, 1)


def test_lognormal_time_model_has_the_configured_means():
    rng = random.Random(7)
    model = TimeModel()
    assert model.grade_mean == GRADE_SECONDS == 13.87
    assert 2 <= GRADE_SECONDS / PAIR_SECONDS <= 3
    pairs = [model.sample(rng, "pair") for _ in range(40000)]
    grades = [model.sample(rng, "grade") for _ in range(40000)]
    assert abs(statistics.fmean(pairs) / PAIR_SECONDS - 1) < 0.02
    assert abs(statistics.fmean(grades) / GRADE_SECONDS - 1) < 0.02
    # log of the samples is normal with σ = 0.6
    assert abs(statistics.stdev(math.log(x) for x in pairs) - 0.6) < 0.01


def test_graded_assessor_uses_qrels_or_quintiles():
    grades = {d: i % 5 for i, d in enumerate(DOCS)}
    a = Assessor.from_grades(grades, seed=1)
    run = simulate("graded", DOCS, a, seed=3)
    assert run.result.grades == grades and run.judgments == len(DOCS)
    b = Assessor({d: float(i) for i, d in enumerate(DOCS)}, seed=1)
    quint = [b.true_grade(d) for d in DOCS]
    assert quint == [i * 5 // 30 for i in range(30)]
    noisy = Assessor.from_grades(grades, seed=2, flip=1.0)
    moved = [noisy.answer_grade(q).grade for q in _grade_questions()]
    assert all(abs(m - grades[d]) == 1 for m, d in zip(moved, DOCS, strict=True))


def _grade_questions():
    from labeling.protocol.types import GradeQuestion

    return [GradeQuestion(i, d) for i, d in enumerate(DOCS)]


def test_run_session_records_answers_and_times():
    a = Assessor({d: float(i) for i, d in enumerate(DOCS)}, seed=1)
    s = open_session("topk", DOCS, k=5, seed=1)
    run = run_session(s, a)
    assert run.judgments == run.result.judgments == len(run.seconds)
    assert run.total_seconds > 0
    assert open_session("topk", DOCS, k=5, seed=1, answers=run.answers).result() == run.result


def test_simulate_tasks_is_seeded_and_exact_without_noise():
    a = simulate_tasks(20, 5, 30, seed=9)
    assert a == simulate_tasks(20, 5, 30, seed=9)
    assert all(t.exact for t in a)
    noisy = simulate_tasks(20, 5, 30, seed=9, noise=0.3, ties=0.1)
    assert not all(t.exact for t in noisy)


def _cli():
    from app.cli import simulate as command

    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """Test root (forces subcommand parsing)."""

    app.add_typer(command.app)
    return app


def test_cli_json_keys_and_values():
    result = CliRunner().invoke(
        _cli(), ["simulate", "--n", "20", "--k", "5", "--trials", "50", "--json"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert {"n", "k", "trials", "judgments", "exact_rate", "kappa_ndcg"} <= set(out)
    assert {"mean", "min", "max"} <= set(out["judgments"]) and "mean" in out["kappa_ndcg"]
    assert (out["n"], out["k"], out["trials"]) == (20, 5, 50)
    assert out["exact_rate"] == 1.0 and out["kappa_ndcg"]["mean"] == pytest.approx(1.0)
    assert out["judgments"]["min"] <= out["judgments"]["mean"] <= out["judgments"]["max"]
    assert out["judgments"]["max"] <= out["worst_case_bound"]


def test_cli_noise_lowers_kappa_ndcg_and_no_cache_costs_more():
    runner = CliRunner()
    base = ["simulate", "--n", "30", "--k", "5", "--trials", "40", "--json"]
    clean = json.loads(runner.invoke(_cli(), base).output)
    paper = json.loads(runner.invoke(_cli(), [*base, "--no-pair-cache"]).output)
    noisy = json.loads(runner.invoke(_cli(), [*base, "--noise", "0.2", "--tie-rate", "0.1"]).output)
    assert paper["judgments"]["mean"] > clean["judgments"]["mean"]
    assert paper["cache"] is False and clean["cache"] is True
    assert noisy["kappa_ndcg"]["mean"] < 1.0 and noisy["exact_rate"] < 1.0


def test_cli_text_and_bad_input():
    runner = CliRunner()
    ok = runner.invoke(_cli(), ["simulate", "--n", "12", "--k", "3", "--trials", "5"])
    assert ok.exit_code == 0 and "judgments per query" in ok.output
    bad = runner.invoke(_cli(), ["simulate", "--noise", "1.5"])
    assert bad.exit_code != 0
    bad = runner.invoke(_cli(), ["simulate", "--k", "0"])
    assert bad.exit_code != 0


def test_cli_noise_models():
    runner = CliRunner()
    base = ["simulate", "--n", "30", "--k", "5", "--trials", "40", "--json"]
    out = json.loads(runner.invoke(_cli(), [*base, "--model", "thurstone", "--scale", "2"]).output)
    assert out["model"] == "thurstone" and out["exact_rate"] < 1.0
    assert 0.0 < out["kappa_ndcg"]["mean"] < 1.0
    assert runner.invoke(_cli(), [*base, "--model", "gauss"]).exit_code != 0


@pytest.mark.parametrize("model", ["thurstone", "bradley_terry"])
def test_noise_models_survive_far_apart_scores(model):
    """Regression: Bradley–Terry computed exp(-Δ/τ) directly and overflowed (OverflowError) once
    Δ/τ < -709, e.g. ranks 0..999 at τ = 1 or ranks 0..49 at τ = 0.05. Far-apart documents
    must simply never be confused; the logistic is evaluated in its stable form."""
    a = Assessor({"low": 0.0, "high": 1000.0}, seed=5, noise=model, scale=1.0)
    assert all(a.prefers("high", "low") for _ in range(200))
    assert not any(a.prefers("low", "high") for _ in range(200))


def test_cli_bradley_terry_with_a_small_scale():
    args = ["--n", "30", "--k", "5", "--trials", "3", "--model", "bradley_terry", "--scale", "0.02"]
    result = CliRunner().invoke(_cli(), ["simulate", *args, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["exact_rate"] == 1.0  # Δ ≥ 1 rank: virtually no confusion


def test_prior_order_has_the_stated_correlation():
    import numpy as np

    from labeling.study.simulation import SCENARIO_PRIOR_CORR, prior_order

    rng = random.Random(11)
    latent = {f"p{i:04d}": rng.random() for i in range(4000)}
    for corr in (SCENARIO_PRIOR_CORR, 0.5, 0.9):
        order = prior_order(latent, corr, rng)
        u = np.array([latent[d] for d in order])
        position = -np.arange(len(order), dtype=float)
        # The rank correlation of the fed order with u: for a uniform-plus-normal prior it is
        # within a few hundredths of the Pearson correlation R of p with u.
        assert stats.spearmanr(position, u).statistic == pytest.approx(corr, abs=0.04)
    assert prior_order(latent, 1.0, rng) == sorted(latent, key=lambda d: -latent[d])
    with pytest.raises(ConfigError, match="prior correlation"):
        prior_order(latent, 0.0, rng)


def test_scenario_assessors_flip_and_thurstone_rates():
    from labeling.study.simulation import SCENARIO_SIGMA, scenario_assessor

    rank = {f"r{i}": i for i in range(10)}
    flip = scenario_assessor("flip0.1", rank, 5)
    wrong = sum(not flip.prefers("r0", "r9") for _ in range(20000))  # re-asks: fresh draws
    assert stats.binomtest(wrong, 20000, 0.1).pvalue > 1e-4
    thurstone = scenario_assessor("thurstone", rank, 6)
    for gap in (1, 4):
        wrong = sum(not thurstone.prefers("r0", f"r{gap}") for _ in range(20000))
        expect = stats.norm.cdf(-gap / (SCENARIO_SIGMA * math.sqrt(2)))
        assert stats.binomtest(wrong, 20000, expect).pvalue > 1e-4
    assert all(scenario_assessor("random", rank, 1).prefers("r3", "r4") for _ in range(100))
    with pytest.raises(ConfigError, match="scenario"):
        scenario_assessor("gauss", rank, 1)


def test_cli_compare_json_rows_cover_every_strategy_and_scenario():
    from labeling.strategies.registry import lower_bound, strategy_names
    from labeling.study.assisted import MACHINE_SCENARIOS
    from labeling.study.simulation import SCENARIOS

    # (20, 5): at (12, 3) every question's stake is above the free share of max_loss, so the
    # machine, from a cold start in each of 20 studies, rarely earns an answer.
    args = ["simulate", "--compare", "--n", "20", "--k", "5", "--trials", "20", "--json"]
    result = CliRunner().invoke(_cli(), args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert (out["n"], out["k"], out["trials"]) == (20, 5, 20)
    assert out["lower_bound"] == lower_bound(20, 5)
    cells = [(r["strategy"], r["scenario"]) for r in out["rows"]]
    # +assist strategies have rows in the machine scenarios only (without a machine they ask
    # what their inner strategy asks).
    assert cells == [
        (s, c)
        for s in strategy_names()
        for c in (*SCENARIOS, *MACHINE_SCENARIOS)
        if c in MACHINE_SCENARIOS or "assist" not in s.split("+")
    ]
    assert {s for s, _ in cells} == set(strategy_names())
    for row in out["rows"]:
        assert set(row) == {
            "strategy",
            "scenario",
            "judgments",
            "human_judgments",
            "machine_answers",
            "exact_rate",
            "kappa_ndcg",
        }
        assert set(row["judgments"]) == {"mean", "p95"} and set(row["kappa_ndcg"]) == {"mean"}
        assert row["human_judgments"] == row["judgments"]  # judgments count people only
        assert set(row["machine_answers"]) == {"mean"}
        if "assist" not in row["strategy"]:
            assert row["machine_answers"]["mean"] == 0.0
        if row["scenario"] in ("random", "prior0.7"):  # a consistent assessor: always exact
            assert row["exact_rate"] == 1.0
            assert row["judgments"]["mean"] >= out["lower_bound"] - 12  # a mean, not a worst case
    helped = [r for r in out["rows"] if r["scenario"] == "machine0.8" and "assist" in r["strategy"]]
    assert max(r["machine_answers"]["mean"] for r in helped) > 0
    text = CliRunner().invoke(_cli(), args[:-1])
    assert text.exit_code == 0 and "heap+robust" in text.output and "flip0.1" in text.output


def test_cli_machine_accuracy_runs_one_cell():
    args = [
        "simulate",
        "--strategy",
        "insertion+assist",
        "--machine-accuracy",
        "0.8",
        "--n",
        "20",
        "--k",
        "5",
        "--trials",
        "100",  # from a cold start the machine earns its first answers after a few dozen
        "--json",
    ]
    result = CliRunner().invoke(_cli(), args)
    assert result.exit_code == 0, result.output
    row = json.loads(result.output)
    assert (row["scenario"], row["strategy"], row["machine_accuracy"]) == (
        "machine0.8",
        "insertion+assist",
        0.8,
    )
    assert row["machine_answers"]["mean"] > 0
    assert row["human_judgments"]["mean"] + row["machine_answers"]["mean"] > 0
    # A perfect machine's answers are all right: the result is exact.
    perfect = CliRunner().invoke(_cli(), [*args[:4], "1.0", *args[5:]])
    assert json.loads(perfect.output)["exact_rate"] == 1.0
    text = CliRunner().invoke(_cli(), [*args[:-1], "--noise", "0.1"])
    assert text.exit_code == 0 and "machine0.8+flip0.1" in text.output
    for bad in ("0.4", "0.5", "1.5"):
        assert CliRunner().invoke(_cli(), [*args[:4], bad, *args[5:]]).exit_code == 2


def test_cli_compare_jobs_gives_the_same_table():
    args = ["simulate", "--compare", "--n", "10", "--k", "3", "--trials", "15", "--json"]
    one = CliRunner().invoke(_cli(), args)
    two = CliRunner().invoke(_cli(), [*args, "--jobs", "2"])
    assert one.exit_code == 0 and two.exit_code == 0, (one.output, two.output)
    assert json.loads(one.output) == json.loads(two.output)
    assert len(json.loads(two.output)["rows"]) > 4


def test_cli_strategy_and_prior_corr():
    runner = CliRunner()
    base = ["simulate", "--n", "20", "--k", "4", "--trials", "20", "--json"]
    out = json.loads(runner.invoke(_cli(), [*base, "--strategy", "tournament+robust"]).output)
    assert out["strategy"] == "tournament+robust" and out["exact_rate"] == 1.0
    assert out["judgments"]["max"] <= out["worst_case_bound"]
    prior = json.loads(runner.invoke(_cli(), [*base, "--prior-corr", "0.9"]).output)
    plain = json.loads(runner.invoke(_cli(), base).output)
    assert prior["prior_corr"] == 0.9 and prior["exact_rate"] == 1.0
    assert prior["judgments"]["mean"] < plain["judgments"]["mean"]  # fewer replacements
    bad = runner.invoke(_cli(), [*base, "--strategy", "bubble"])
    assert bad.exit_code != 0 and "heap+robust" in bad.output
    assert runner.invoke(_cli(), [*base, "--prior-corr", "1.5"]).exit_code != 0
