"""RBO and compatibility on hand-computed cases, and against loop oracles written here.

The loop oracles follow the published algorithm of compatibility (a prefix-overlap loop with
weights p^{d−1}, divided by the sum of the weights) to the two depths in use: ir-measures'
``Compat`` sums to ``max(len(run), len(ideal))``, the authors' ``compatibility.py`` to a fixed
depth 1000. Both break ties within a grade in the run's favour. Hand cases use p = 0.5 so the
sums can be checked on paper.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ranking.metrics import rbo

GRADES = {"a": 2.0, "b": 1.0, "c": 1.0}


def _loop(run: list[str], ideal: list[str], p: float, depth: int) -> float:
    seen_run: set[str] = set()
    seen_ideal: set[str] = set()
    score = norm = 0.0
    weight = 1.0
    for i in range(depth):
        if i < len(run):
            seen_run.add(run[i])
        if i < len(ideal):
            seen_ideal.add(ideal[i])
        score += weight * len(seen_run & seen_ideal) / (i + 1)
        norm += weight
        weight *= p
    return score / norm


def _oracle(run: list[str], grades: dict[str, float], p: float, *, fixed_depth: bool) -> float:
    ideal = rbo.ideal_ranking(grades, run)
    depth = 1000 if fixed_depth else max(len(run), len(ideal))
    best = _loop(ideal, ideal, p, depth)
    return _loop(run, ideal, p, depth) / best if best > 0 else 0.0


def test_ideal_breaks_ties_in_the_runs_favour() -> None:
    assert rbo.ideal_ranking(GRADES, ["c", "x", "b"]) == ["a", "c", "b"]
    assert rbo.ideal_ranking(GRADES, ["b"]) == ["a", "b", "c"]
    assert rbo.ideal_ranking({"z": 1, "y": 1, "w": 0, "v": -1}, ["y"]) == ["y", "z"]


def test_compatibility_hand_computed_cases() -> None:
    p = 0.5
    # ideal [a, b, c] (self: X = 1, 2, 3 → S = 1 + 0.5 + 0.25 = 1.75)
    # run [a, b, c]: the ideal itself
    assert rbo.compatibility(["a", "b", "c"], GRADES, p) == pytest.approx(1.0)
    # run [b, x, c]: tie b/c broken by the run → ideal [a, b, c]; X = 0, 1, 2;
    # S = 0.5·1/2 + 0.25·2/3 = 5/12 → 5/12 / 7/4 = 5/21 (the other tie order gives X_2 = 0)
    assert rbo.compatibility(["b", "x", "c"], GRADES, p) == pytest.approx(5 / 21)
    # run [c, b, a]: ideal [a, c, b]; X = 0, 1, 3; S = 0.25 + 0.25 = 0.5 → 2/7
    assert rbo.compatibility(["c", "b", "a"], GRADES, p) == pytest.approx(2 / 7)
    # run shorter than the ideal, [b]: D = 3, X = 0, 1, 1; S = 0.25 + 0.25/3 = 1/3 → 4/21
    assert rbo.compatibility(["b"], GRADES, p) == pytest.approx(4 / 21)
    # run longer than the ideal: [a, x, y] against {a}: X = 1, 1, 1, S = 1 + 1/4 + 1/12 = 4/3;
    # normalised by the ideal's own 4/3 → 1; unnormalised 4/3 / 1.75 = 16/21
    assert rbo.compatibility(["a", "x", "y"], {"a": 1}, p) == pytest.approx(1.0)
    assert rbo.compatibility(["a", "x", "y"], {"a": 1}, p, normalize=False) == pytest.approx(
        16 / 21
    )
    # no relevant document, or an empty run
    assert rbo.compatibility(["a"], {"a": 0}, p) == 0.0
    assert rbo.compatibility([], GRADES, p) == 0.0


def test_extrapolated_compatibility_hand_computed() -> None:
    # run [b] against ideal [a, b, c] at p = 0.5, summed to infinity with X frozen at D = 3:
    # T_3 = Σ_{d>3} 0.5^{d−1}/d = 2(ln 2 − 0.5 − 0.125 − 0.125/3)
    tail = 2 * (math.log(2) - 0.5 - 0.125 - 0.125 / 3)
    expected = (1 / 3 + 1 * tail) / (1.75 + 3 * tail)
    assert rbo.compatibility(["b"], GRADES, 0.5, extrapolate=True) == pytest.approx(expected)
    assert expected == pytest.approx(0.2023667, abs=1e-7)
    assert rbo.compatibility(["b"], GRADES, 0.5) == pytest.approx(0.1904762, abs=1e-7)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("p", [0.5, 0.8, 0.95])
def test_compatibility_matches_the_loop_oracles(seed: int, p: float) -> None:
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(30)]
    grades = {d: float(rng.integers(0, 4)) for d in rng.choice(docs, 15, replace=False)}
    run = [str(d) for d in rng.choice(docs, int(rng.integers(1, 25)), replace=False)]
    assert rbo.compatibility(run, grades, p) == pytest.approx(
        _oracle(run, grades, p, fixed_depth=False), rel=1e-12
    )
    assert rbo.compatibility(run, grades, p, extrapolate=True) == pytest.approx(
        _oracle(run, grades, p, fixed_depth=True), rel=1e-9
    )
    ideal = rbo.ideal_ranking(grades, run)
    if ideal:
        depth = max(len(run), len(ideal))
        assert rbo.compatibility(run, grades, p, normalize=False) == pytest.approx(
            _loop(run, ideal, p, depth), rel=1e-12
        )


def test_compatibility_from_a_topk_truth() -> None:
    p = 0.5
    run = ["r1", "t1"]
    # top [t1] only: ideal [t1], D = 2, X = 0, 1 → S = 0.25; self 1 + 0.25 → 0.2
    assert rbo.compatibility_topk(run, ["t1"], ["r1", "r2"], p) == pytest.approx(0.2)
    # rest as one tied group below: ideal [t1, r1, r2] (r1 first, as the run has it);
    # X = 0, 2, 2 → S = 0.5 + 0.25·2/3 = 2/3; self 1.75 → 8/21
    assert rbo.compatibility_topk(run, ["t1"], ["r1", "r2"], p, include_rest=True) == pytest.approx(
        8 / 21
    )
    # the top keeps its order: grades k, k−1, …
    assert rbo.compatibility_topk(["t2", "t1"], ["t1", "t2"], p=p) == rbo.compatibility(
        ["t2", "t1"], {"t1": 2, "t2": 1}, p
    )


def test_compatibility_per_query_skips_as_ir_measures() -> None:
    qrels = {"q1": {"a": 1.0}, "q2": {"b": 0.0}, "q3": {"c": 2.0}}
    runs = {"q1": ["a"], "q2": ["b"]}
    assert rbo.compatibility_per_query(runs, qrels) == {"q1": 1.0}
    assert rbo.compatibility_per_query(runs, qrels, missing_run_zero=True) == {
        "q1": 1.0,
        "q3": 0.0,
    }


def test_rbo_ext_hand_computed() -> None:
    # equal lengths (eq. 30), p = 0.5: [a, b] vs [a, c]: X = 1, 1;
    # (1 − p)/p (1·0.5 + 1/2·0.25) + 1/2·0.25 = 0.625 + 0.125 = 0.75
    assert rbo.rbo_ext(["a", "b"], ["a", "c"], 0.5) == pytest.approx(0.75)
    # uneven (eq. 32): S = [a, b], L = [b, c, a]: X = 0, 1, 2, X_s = 1;
    # agreement 0, 1/2, (2 + 1/2)/3 = 5/6, then 5/6 onwards:
    # 0.5 (0.5·0.5 + 0.25·5/6 + (5/6)·0.25) = 1/3
    assert rbo.rbo_ext(["a", "b"], ["b", "c", "a"], 0.5) == pytest.approx(1 / 3)
    assert rbo.rbo_ext(["b", "c", "a"], ["a", "b"], 0.5) == pytest.approx(1 / 3)
    assert rbo.rbo_ext(list("abcde"), list("abcde"), 0.9) == pytest.approx(1.0)
    assert rbo.rbo_ext(list("abc"), list("xyz"), 0.9) == 0.0
    assert rbo.rbo_ext(list("abc"), list("abcdefg"), 0.9) == pytest.approx(1.0)


def test_rbo_min_is_the_long_sum_with_frozen_overlap() -> None:
    s, t, p = list("abcdef"), list("bxaeyz"), 0.9
    x = rbo.overlaps(s, t)
    assert x.tolist() == [0, 1, 2, 2, 3, 3]
    long_sum = sum(p ** (d - 1) * x[min(d, 6) - 1] / d for d in range(1, 3000))
    assert rbo.rbo_min(s, t, p) == pytest.approx((1 - p) * long_sum, rel=1e-12)
    # Webber et al. eq. 11 for equal lengths k: (1−p)/p (Σ (X_d − X_k) p^d/d − X_k ln(1−p))
    eq11 = (
        (1 - p)
        / p
        * (sum((x[d - 1] - x[-1]) * p**d / d for d in range(1, 7)) - x[-1] * math.log(1 - p))
    )
    assert rbo.rbo_min(s, t, p) == pytest.approx(eq11, rel=1e-12)
    assert rbo.rbo_min(s, t, p) <= rbo.rbo_ext(s, t, p)


def test_rankings_with_repeats_or_bad_p_are_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        rbo.rbo_ext(["a", "a"], ["a"])
    with pytest.raises(ValueError, match="persistence"):
        rbo.compatibility(["a"], {"a": 1}, p=1.0)


@pytest.mark.parametrize("seed", range(3))
def test_compatibility_matches_ir_measures_when_installed(seed: int) -> None:
    """ir-measures itself (not a dependency; skipped when absent): ``Compat(p, normalize)``."""
    ir_measures = pytest.importorskip("ir_measures")
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(30)]
    for _ in range(20):
        grades = {str(d): int(rng.integers(0, 4)) for d in rng.choice(docs, 12, replace=False)}
        run = [str(d) for d in rng.choice(docs, int(rng.integers(1, 25)), replace=False)]
        qrels = [ir_measures.Qrel("q", d, g) for d, g in grades.items()]
        scored = [ir_measures.ScoredDoc("q", d, float(100 - i)) for i, d in enumerate(run)]
        for normalize in (True, False):
            measure = ir_measures.Compat(p=0.95, normalize=normalize)
            theirs = [m.value for m in ir_measures.iter_calc([measure], qrels, scored)]
            mine = rbo.compatibility(run, grades, 0.95, normalize=normalize)
            assert theirs == [pytest.approx(mine, abs=1e-12)]
