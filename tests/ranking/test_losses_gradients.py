"""Finite-difference gradient checks for every loss on random padded queries."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ranking.losses import DIFFERENTIABLE, LOSSES, Target

Q, L = 4, 6
PARAMS: dict[str, dict[str, object]] = {
    "topk_listmle": {"k": 2},
    "p_listmle": {"alpha": "normalized"},
    "focused_net": {"beta": 0.3},
    "focused_svm": {"beta": 0.6},
    "ranknet": {"pairs": "graded"},
}
PIECEWISE_LINEAR = ("ranksvm", "svm_map", "ndcg_hinge", "focused_svm")


def _batch(seed: int, kappa: bool) -> tuple[np.ndarray, Target]:
    rng = np.random.default_rng(seed)
    sizes = np.array([L, 2, 5, 4])
    mask = np.arange(L)[None, :] < sizes[:, None]
    labels = np.zeros((Q, L))
    for q, n in enumerate(sizes):
        if kappa:  # top-k truth with k = 3 as κ-labels, random positions
            k = min(3, n)
            cols = rng.permutation(n)[:k]
            labels[q, cols] = np.arange(3, 3 - k, -1)
        else:
            labels[q, :n] = rng.integers(0, 3, size=n)
    scores = rng.normal(size=(Q, L)) * np.where(mask, 1.0, 0.0)
    order = None
    if not kappa:  # a random total order consistent with the grades (ties shuffled)
        key = np.where(mask, -labels + rng.uniform(0, 0.5, size=(Q, L)), np.inf)
        order = np.argsort(key, axis=1, kind="stable")
    return scores, Target(labels, mask, order=order)


def _numeric_grad(fn, scores: np.ndarray, mask: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(scores)
    for q, j in zip(*np.nonzero(mask), strict=True):
        up, down = scores.copy(), scores.copy()
        up[q, j] += eps
        down[q, j] -= eps
        grad[q, j] = (fn(up)[0] - fn(down)[0]) / (2 * eps)
    return grad


@pytest.mark.parametrize("kappa", [True, False], ids=["topk-truth", "graded-truth"])
@pytest.mark.parametrize("name", sorted(set(DIFFERENTIABLE) - {"listnet_permutation"}))
def test_gradient_matches_finite_differences(name: str, kappa: bool) -> None:
    for seed in range(3):
        scores, target = _batch(seed, kappa)
        fn = LOSSES[name]
        params = PARAMS.get(name, {})
        value, grad = fn(scores, target, **params)
        numeric = _numeric_grad(
            lambda s, fn=fn, t=target, p=params: fn(s, t, **p), scores, target.mask
        )
        np.testing.assert_allclose(grad, numeric, atol=1e-6, rtol=1e-5)
        assert np.all(grad[~target.mask] == 0.0)
        # Padding never changes the value.
        noisy = scores + np.where(target.mask, 0.0, 100.0)
        assert fn(noisy, target, **params)[0] == pytest.approx(value, abs=1e-12)


def test_permutation_listnet_gradient() -> None:
    scores, target = _batch(7, kappa=False)
    value, grad = LOSSES["listnet_permutation"](scores, target)
    numeric = _numeric_grad(lambda s: LOSSES["listnet_permutation"](s, target), scores, target.mask)
    np.testing.assert_allclose(grad, numeric, atol=1e-6, rtol=1e-5)
    # Brute force: L_q = −Σ_π P_y(π) log P_s(π) over every ordering π of the query's documents,
    # Plackett–Luce P_v(π) = Π_j exp(v_π(j)) / Σ_{l≥j} exp(v_π(l)); the value is the mean over q.

    def plackett_luce(v: np.ndarray, perm: tuple[int, ...]) -> float:
        return math.prod(
            math.exp(v[perm[j]]) / sum(math.exp(v[i]) for i in perm[j:]) for j in range(len(perm))
        )

    per_query = []
    for q in range(Q):
        docs = np.flatnonzero(target.mask[q])
        y, s = target.labels[q], scores[q]
        per_query.append(
            -sum(
                plackett_luce(y, perm) * math.log(plackett_luce(s, perm))
                for perm in itertools.permutations(docs.tolist())
            )
        )
    assert value == pytest.approx(float(np.mean(per_query)), abs=1e-9)


@pytest.mark.parametrize("name", PIECEWISE_LINEAR)
def test_subgradient_matches_finite_differences_away_from_kinks(name: str) -> None:
    # Piecewise-linear hinges: at random points (almost surely off a kink) the subgradient is
    # the gradient.
    for seed in range(3):
        scores, target = _batch(seed + 10, kappa=True)
        fn = LOSSES[name]
        params = PARAMS.get(name, {})
        _, grad = fn(scores, target, **params)
        numeric = _numeric_grad(
            lambda s, fn=fn, t=target, p=params: fn(s, t, **p), scores, target.mask, eps=1e-7
        )
        np.testing.assert_allclose(grad, numeric, atol=1e-5)


def test_focused_net_permutation_list_form_gradient() -> None:
    scores, target = _batch(4, kappa=True)
    fn = LOSSES["focused_net"]
    _, grad = fn(scores, target, beta=0.4, list_form="permutation")
    numeric = _numeric_grad(
        lambda s: fn(s, target, beta=0.4, list_form="permutation"), scores, target.mask
    )
    np.testing.assert_allclose(grad, numeric, atol=1e-6, rtol=1e-5)


def test_batched_value_is_mean_of_single_queries() -> None:
    scores, target = _batch(5, kappa=True)
    for name in ("focused_net", "topk_listmle", "ranknet", "listnet", "focused_svm"):
        fn = LOSSES[name]
        batch = fn(scores, target, **PARAMS.get(name, {}))[0]
        singles = [
            fn(scores[q, target.mask[q]], target.labels[q, target.mask[q]], **PARAMS.get(name, {}))[
                0
            ]
            for q in range(Q)
        ]
        assert batch == pytest.approx(np.mean(singles), abs=1e-12), name
