"""Hand-checked worked values for every loss (docs/ranking.md), brute-force oracles for hinges."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ranking.losses import (
    LOSSES,
    Target,
    focused_net_loss,
    focused_svm_loss,
    get_loss,
    listmle_loss,
    listnet_permutation_loss,
    listnet_top_one_loss,
    ndcg_structural_hinge_loss,
    p_listmle_loss,
    rankboost_loss,
    ranknet_loss,
    ranksvm_loss,
    svm_map_loss,
    topk_listmle_loss,
    w_listmle_loss,
)

TOL = 1e-6  # the worked values carry six decimals
S3 = np.array([math.log(3.0), math.log(2.0), 0.0])
ABCD = np.array([1.0, 0.0, 0.5, -1.0])  # scores of a, b, c, d
KAPPA_ABCD = np.array([2.0, 1.0, 0.0, 0.0])  # T = (a ≻ b), F = {c, d}


def test_listmle_value_and_gradient() -> None:
    value, grad = listmle_loss(S3, [3, 2, 1])
    assert value == pytest.approx(math.log(3.0), abs=1e-12)
    np.testing.assert_allclose(grad, [-0.5, 0.0, 0.5], atol=1e-12)


def test_topk_listmle_values_and_shift_invariance() -> None:
    v1, g1 = topk_listmle_loss(S3, [3, 2, 1], k=1)
    assert v1 == pytest.approx(math.log(2.0), abs=1e-12)
    np.testing.assert_allclose(g1, [-0.5, 1 / 3, 1 / 6], atol=1e-12)
    v2, g2 = topk_listmle_loss(S3, [3, 2, 1], k=2)
    assert v2 == pytest.approx(math.log(3.0), abs=1e-12)
    for g in (g1, g2, listmle_loss(S3, [3, 2, 1])[1]):
        assert g.sum() == pytest.approx(0.0, abs=1e-12)


def test_topk_listmle_invariant_to_order_of_rest() -> None:
    v_cd, g_cd = topk_listmle_loss(ABCD, Target(KAPPA_ABCD, order=np.array([0, 1, 2, 3])), k=2)
    v_dc, g_dc = topk_listmle_loss(ABCD, Target(KAPPA_ABCD, order=np.array([0, 1, 3, 2])), k=2)
    assert v_cd == pytest.approx(1.850698, abs=TOL)
    assert v_dc == pytest.approx(v_cd, abs=1e-12)
    np.testing.assert_allclose(g_cd, g_dc, atol=1e-12)


F1 = np.log([4.0, 5.0, 3.0, 2.0, 1.0])
F2 = np.log([5.0, 4.0, 1.0, 2.0, 3.0])
GRADES = np.array([5.0, 4.0, 3.0, 2.0, 1.0])


def test_p_listmle_toy_example_of_004_both_alpha_settings() -> None:
    assert listmle_loss(F1, GRADES)[0] == pytest.approx(math.log(2970 / 120), abs=1e-12)
    assert listmle_loss(F1, GRADES)[0] == pytest.approx(3.208825, abs=TOL)
    assert listmle_loss(F2, GRADES)[0] == pytest.approx(4.722953, abs=TOL)
    # Lan et al.'s own α(i) = 2^{5−i} − 1 = (15, 7, 3, 1, 0) still prefers f1 (the lower loss).
    p1 = p_listmle_loss(F1, GRADES, alpha="paper")[0]
    p2 = p_listmle_loss(F2, GRADES, alpha="paper")[0]
    assert p1 == pytest.approx(27.830446, abs=TOL)
    assert p2 == pytest.approx(29.184789, abs=TOL)
    assert p1 < p2
    assert p_listmle_loss(F1, GRADES, alpha=np.array([15.0, 7, 3, 1, 0]))[0] == pytest.approx(p1)
    assert p1 - p2 == pytest.approx(
        (15 - 7 - 1) * math.log(5)
        - (15 - 7) * math.log(4)
        - (3 - 1) * math.log(3)
        + 7 * (math.log(11) - math.log(10)),
        abs=1e-9,
    )
    assert p1 - p2 == pytest.approx(-1.354343, abs=TOL)
    # A steeper α = (100, 1, 0.5, 0.1, 0) prefers f2 as intended.
    steep = np.array([100.0, 1.0, 0.5, 0.1, 0.0])
    q1 = p_listmle_loss(F1, GRADES, alpha=steep)[0]
    q2 = p_listmle_loss(F2, GRADES, alpha=steep)[0]
    assert q1 == pytest.approx(133.351161, abs=TOL)
    assert q2 == pytest.approx(111.765028, abs=TOL)
    # The normalised α̃ = α/(2^{n−1} − 1) is the same loss divided by 15.
    assert p_listmle_loss(F1, GRADES)[0] * 15 == pytest.approx(p1, abs=1e-9)


def test_p_listmle_normalised_alpha_does_not_overflow_for_long_lists() -> None:
    rng = np.random.default_rng(0)
    s = rng.normal(size=1500)
    value, grad = p_listmle_loss(s, np.arange(1500, 0, -1.0))
    assert np.isfinite(value) and np.all(np.isfinite(grad))


def test_w_listmle_weights_by_gain_and_discount() -> None:
    labels = np.array([2.0, 0.0, 1.0])
    s = np.array([0.3, -0.2, 0.9])
    # truth order (0, 2, 1): weights G(2)·D(1) = 3, G(1)·D(2) = 1/log2(3); label-0 term weight 0.
    expected = 3.0 * (-0.3 + np.log(np.exp(s).sum())) + (1 / np.log2(3)) * (
        -0.9 + np.log(np.exp(0.9) + np.exp(-0.2))
    )
    assert w_listmle_loss(s, labels)[0] == pytest.approx(expected, abs=1e-12)
    assert w_listmle_loss(s, labels, cutoff=1)[0] == pytest.approx(
        3.0 * (-0.3 + np.log(np.exp(s).sum())), abs=1e-12
    )


def test_focused_net_worked_example() -> None:
    expected = {0.0: 0.472086, 0.5: 0.527145, 1.0: 0.582203}
    for beta, value in expected.items():
        assert focused_net_loss(ABCD, KAPPA_ABCD, beta=beta)[0] == pytest.approx(value, abs=TOL)
    assert focused_net_loss(ABCD, KAPPA_ABCD, beta=0.5, normalization="none")[0] == (
        pytest.approx(1.235273, abs=TOL)
    )
    _, grad = focused_net_loss(ABCD, KAPPA_ABCD, beta=0.5)
    np.testing.assert_allclose(grad, [-0.062093, -0.111425, 0.125, 0.048518], atol=TOL)
    # List part alone: entropy of P_y with zero gradient (P_s = P_y).
    _, g_list = focused_net_loss(ABCD, KAPPA_ABCD, beta=1.0)
    np.testing.assert_allclose(g_list, 0.0, atol=1e-12)
    # Pair part alone, unnormalised: RankNet over the four focused pairs.
    pair_sum = ranknet_loss(ABCD, KAPPA_ABCD, pairs="focused", normalization="none")[0]
    assert pair_sum == pytest.approx(1.888344, abs=TOL)


def test_focused_net_init_normalisation_divides_by_scales() -> None:
    v = focused_net_loss(
        ABCD, KAPPA_ABCD, beta=0.5, normalization="init", list_scale=2.0, pair_scale=4.0
    )[0]
    assert v == pytest.approx(0.5 * 0.582203 / 2 + 0.5 * 0.472086 / 4, abs=TOL)


def test_listnet_forms() -> None:
    labels = np.array([3.0, 2.0, 1.0])
    assert listnet_top_one_loss(np.zeros(3), labels)[0] == pytest.approx(math.log(3), abs=1e-12)
    assert listnet_permutation_loss(np.zeros(3), labels)[0] == pytest.approx(math.log(6), abs=1e-12)
    s2, y2 = np.array([0.3, -1.2]), np.array([2.0, 1.0])
    assert listnet_top_one_loss(s2, y2)[0] == pytest.approx(listnet_permutation_loss(s2, y2)[0])
    with pytest.raises(ValueError, match="limited to 6"):
        listnet_permutation_loss(np.zeros(7), np.arange(7.0))


def test_focused_net_permutation_form_equals_top_one_for_two_items() -> None:
    a = focused_net_loss(ABCD, KAPPA_ABCD, beta=0.7, list_form="permutation")
    b = focused_net_loss(ABCD, KAPPA_ABCD, beta=0.7)
    assert a[0] == pytest.approx(b[0], abs=1e-12)
    np.testing.assert_allclose(a[1], b[1], atol=1e-12)


def test_pair_losses_per_pair_values() -> None:
    # pairs (a,c), (a,d), (b,c), (b,d): differences 0.5, 2, −0.5, 1
    hinge = [
        ranksvm_loss(np.array([d, 0.0]), [1, 0], normalization="none")[0]
        for d in (0.5, 2.0, -0.5, 1.0)
    ]
    np.testing.assert_allclose(hinge, [0.5, 0.0, 1.5, 0.0], atol=1e-12)
    expo = [rankboost_loss(np.array([d, 0.0]), [1, 0])[0] for d in (0.5, 2.0, -0.5, 1.0)]
    np.testing.assert_allclose(expo, [0.606531, 0.135335, 1.648721, 0.367879], atol=TOL)
    total = ranksvm_loss(ABCD, KAPPA_ABCD, pairs="focused", normalization="none")[0]
    assert total == pytest.approx(2.0)


def test_focused_svm_option_a_worked_example() -> None:
    s = np.array([0.2, 0.5, 0.1])
    labels = np.array([3.0, 2.0, 1.0])
    value, grad = ndcg_structural_hinge_loss(s, labels)
    assert value == pytest.approx(0.338436, abs=TOL)
    assert value == pytest.approx(0.240808 + 0.663093 - 0.565465, abs=TOL)
    disc = 1 / np.log2([2.0, 3.0, 4.0])
    # ẑ = (b, c, a), y = (a, b, c)
    np.testing.assert_allclose(grad, [disc[2] - disc[0], disc[0] - disc[1], disc[1] - disc[2]])
    assert value == pytest.approx(_brute_force_ndcg_hinge(s, labels), abs=1e-12)
    # With F empty FocusedSVM at β = 1 is the list hinge itself.
    assert focused_svm_loss(s, labels, beta=1.0)[0] == pytest.approx(value, abs=1e-12)


def _brute_force_ndcg_hinge(s: np.ndarray, labels: np.ndarray) -> float:
    n = s.size
    disc = 1 / np.log2(np.arange(2, n + 2))
    gain = 2.0**labels - 1
    ideal = np.sort(gain)[::-1] @ disc
    truth = np.argsort(-labels, kind="stable")
    best = -np.inf
    for z in itertools.permutations(range(n)):
        z = np.array(z)
        best = max(best, 1 - gain[z] @ disc / ideal + s[z] @ disc - s[truth] @ disc)
    return max(best, 0.0)


def test_ndcg_hinge_matches_brute_force_on_random_queries() -> None:
    rng = np.random.default_rng(1)
    for _ in range(60):
        n = int(rng.integers(2, 6))
        s = rng.normal(size=n)
        labels = rng.permutation(np.arange(n, 0, -1.0))
        assert ndcg_structural_hinge_loss(s, labels)[0] == pytest.approx(
            _brute_force_ndcg_hinge(s, labels), abs=1e-12
        )


def _brute_force_svm_map(s: np.ndarray, rel: np.ndarray) -> float:
    pos, neg = np.flatnonzero(rel), np.flatnonzero(~rel)
    p, n = pos.size, neg.size
    if p == 0 or n == 0:
        return 0.0

    def psi(order: np.ndarray) -> float:
        rank = np.empty(len(order), dtype=int)
        rank[order] = np.arange(len(order))
        total = 0.0
        for i in pos:
            for j in neg:
                total += (1 if rank[i] < rank[j] else -1) * (s[i] - s[j])
        return total / (p * n)

    def ap(order: np.ndarray) -> float:
        hits, total = 0, 0.0
        for r, d in enumerate(order, start=1):
            if rel[d]:
                hits += 1
                total += hits / r
        return total / p

    ideal = np.concatenate([pos, neg])
    best = -np.inf
    for y in itertools.permutations(range(len(s))):
        y = np.array(y)
        best = max(best, 1 - ap(y) + psi(y) - psi(ideal))
    return max(best, 0.0)


def test_svm_map_greedy_matches_brute_force_over_all_orderings() -> None:
    rng = np.random.default_rng(2)
    for _ in range(40):
        n = int(rng.integers(2, 7))
        s = rng.normal(size=n)
        labels = rng.integers(0, 3, size=n).astype(float)
        value, _ = svm_map_loss(s, labels)
        assert value == pytest.approx(_brute_force_svm_map(s, labels > 0), abs=1e-12)


def test_svm_map_padded_batch_equals_per_query() -> None:
    rng = np.random.default_rng(3)
    q, length = 5, 7
    s = rng.normal(size=(q, length))
    labels = rng.integers(0, 3, size=(q, length)).astype(float)
    mask = np.arange(length)[None, :] < rng.integers(1, length + 1, size=q)[:, None]
    value, grad = svm_map_loss(s, labels, mask, reduction="sum")
    per = [svm_map_loss(s[i, mask[i]], labels[i, mask[i]]) for i in range(q)]
    assert value == pytest.approx(sum(v for v, _ in per), abs=1e-12)
    for i in range(q):
        np.testing.assert_allclose(grad[i, mask[i]], per[i][1], atol=1e-12)
        assert np.all(grad[i, ~mask[i]] == 0)


def test_mapping_is_explicit_and_complete() -> None:
    assert set(LOSSES) >= {
        "listmle",
        "topk_listmle",
        "p_listmle",
        "w_listmle",
        "ranknet",
        "ranksvm",
        "listnet",
        "listnet_permutation",
        "svm_map",
        "focused_net",
        "focused_svm",
    }
    with pytest.raises(ValueError, match="unknown loss"):
        get_loss("lambdamart")


def test_bad_input_is_rejected_clearly() -> None:
    with pytest.raises(ValueError, match="shape"):
        listmle_loss(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="NaN"):
        ranknet_loss(np.array([np.nan, 0.0]), [1, 0])
    with pytest.raises(ValueError, match="beta"):
        focused_net_loss(ABCD, KAPPA_ABCD, beta=1.5)
