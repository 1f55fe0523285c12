"""One build of campaign-wide continuous active learning (labeling.study.cal_build): the seed
without a model, which documents a build picks on a tiny example (checked by hand and against
the model assembled here), the budget counting the judged documents, determinism, and honesty
(the labels of unjudged documents are never read)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
import pytest

from labeling.errors import ConfigError
from labeling.study.cal_build import cal_campaign_build, query_state
from labeling.study.cal_pool import fit_logistic, pool_matrix
from labeling.study.campaign_pools import depth_pool

# Per query two runs: a and c are each a run's first document, b and d its second, so the fused
# order is a, c, b, d (ties by doc id) and a, c share their rank evidence, as do b, d.
RUNS = {"A": ["a", "b"], "B": ["c", "d"]}
RANKINGS = {"q1": RUNS, "q2": RUNS}
# One feature: q1's relevant document a is high, its non-relevant c low. Standardised per query:
# q1 b −0.88, d 0.88; q2 a −1.28, b −0.47, c 1.42, d 0.34.
FEATURES = {
    "q1": {"a": [1.0], "c": [0.0], "b": [0.1], "d": [0.9]},
    "q2": {"a": [0.0], "c": [1.0], "b": [0.3], "d": [0.6]},
}
LABELS = {"q1": {"a": True, "c": False}}


def test_without_a_model_the_seed_takes_the_queries_in_turn() -> None:
    seed = cal_campaign_build(RANKINGS, FEATURES, {}, 5)
    assert not seed.fitted
    # every query's first fused document, then the second of each, ...
    assert seed.order == (("q1", "a"), ("q2", "a"), ("q1", "c"), ("q2", "c"), ("q1", "b"))
    assert seed.picks == {"q1": ("a", "c", "b"), "q2": ("a", "c")}
    # one class only (nothing relevant): still the seed, after the judged documents
    blind = cal_campaign_build(RANKINGS, FEATURES, {"q1": {"a": False}}, 3)
    assert not blind.fitted
    assert blind.picks == {"q1": ("a", "c"), "q2": ("a",)}
    assert blind.order == (("q2", "a"), ("q1", "c"))


def test_a_build_picks_the_most_likely_relevant_over_all_queries() -> None:
    build = cal_campaign_build(RANKINGS, FEATURES, LABELS, 6)
    assert build.fitted and build.judged == 2 and build.total == 6
    # The model learnt "a high feature is relevant" (the rank evidence of a and c is equal, the
    # state of both queries is the same rate 1/2): the highest standardised features first,
    # over both queries — q2's c (1.42), q1's d (0.88), q2's d (0.34), q2's b (−0.47).
    assert build.order == (("q2", "c"), ("q1", "d"), ("q2", "d"), ("q2", "b"))
    assert build.picks == {"q1": ("a", "c", "d"), "q2": ("c", "d", "b")}
    # The same by assembling the model here: the rows, the training rows' leave-one-out state
    # (a: rate (1 + 1 − 1)/(2 + 2 − 1) = 1/3; c: 2/3; share (2 − 1)/4), the current state.
    rows = {q: pool_matrix(depth_pool(RUNS, 2), FEATURES[q], 2, 2) for q in RANKINGS}
    left_out = query_state(np.array([0.0, 1.0]), np.array([1.0, 1.0]), np.array([4.0, 4.0]))
    np.testing.assert_allclose(left_out[:, 0], [1 / 3, 2 / 3])
    np.testing.assert_allclose(left_out[:, 2], 0.25)
    w = fit_logistic(np.hstack([rows["q1"][:2], left_out]), np.array([1.0, 0.0]))
    now = {
        "q1": query_state(np.array([1.0]), np.array([2.0]), np.array([4.0])),
        "q2": query_state(np.array([0.0]), np.array([0.0]), np.array([4.0])),
    }
    scores = {
        (q, d): float(np.hstack([rows[q][i], now[q][0]]) @ w[:-1] + w[-1])
        for q in RANKINGS
        for i, d in enumerate("acbd")
        if (q, d) not in (("q1", "a"), ("q1", "c"))
    }
    assert list(build.order) == sorted(scores, key=lambda k: -scores[k])[:4]


def test_the_budget_counts_the_judged_documents() -> None:
    few = cal_campaign_build(RANKINGS, FEATURES, LABELS, 3)
    assert few.order == (("q2", "c"),) and few.total == 3
    # fewer than the judged: they stay, nothing is picked
    for budget in (0, 1, 2):
        kept = cal_campaign_build(RANKINGS, FEATURES, LABELS, budget)
        assert kept.order == () and kept.picks == {"q1": ("a", "c"), "q2": ()}
        assert kept.judged == 2
    # a judged document outside the pool neither counts nor is kept
    outside = {"q1": {**LABELS["q1"], "zz": True}}
    assert cal_campaign_build(RANKINGS, FEATURES, outside, 3) == few
    # a budget beyond the pools takes everything
    every = cal_campaign_build(RANKINGS, FEATURES, LABELS, 100)
    assert every.total == 8
    with pytest.raises(ConfigError, match="budget"):
        cal_campaign_build(RANKINGS, FEATURES, LABELS, -1)
    with pytest.raises(ConfigError, match="no feature vector"):
        cal_campaign_build(RANKINGS, {"q1": FEATURES["q1"]}, LABELS, 3)


def test_builds_are_deterministic() -> None:
    rng = np.random.default_rng(3)
    rankings = {
        f"q{i}": {r: [f"d{j}" for j in rng.permutation(12)[:8]] for r in "ABC"} for i in range(5)
    }
    features = {q: {f"d{j}": list(rng.normal(size=3)) for j in range(12)} for q in rankings}
    labels = {"q0": {"d1": True, "d2": False}, "q3": {"d4": False, "d5": True, "d6": False}}
    first = cal_campaign_build(rankings, features, labels, 20)
    assert first == cal_campaign_build(rankings, features, labels, 20)
    assert first.total == 20 and len(set(first.order)) == 15
    # a larger budget extends the same ranking (the model is the same within a build)
    more = cal_campaign_build(rankings, features, labels, 25)
    assert more.order[:15] == first.order


class _Guarded(Mapping[str, bool]):
    """One query's truth, showing only the judged documents: reading another's label fails."""

    def __init__(self, truth: Mapping[str, bool], judged: set[str]) -> None:
        self.truth, self.judged = truth, judged

    def __getitem__(self, doc: str) -> bool:
        assert doc in self.judged, f"read the label of unjudged {doc}"
        return self.truth[doc]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.judged))

    def __len__(self) -> int:
        return len(self.judged)

    def __contains__(self, doc: object) -> bool:
        return doc in self.judged


def test_the_labels_of_unjudged_documents_are_never_read() -> None:
    truth = {"a": True, "c": False, "b": True, "d": False}
    guarded = {"q1": _Guarded(truth, {"a", "c"}), "q2": _Guarded(truth, set())}
    build = cal_campaign_build(RANKINGS, FEATURES, guarded, 6)
    assert build == cal_campaign_build(RANKINGS, FEATURES, LABELS, 6)
    # whatever the truth of the unjudged documents, the build is the same
    flipped = {"q1": _Guarded({**truth, "b": False, "d": True}, {"a", "c"})}
    assert cal_campaign_build(RANKINGS, FEATURES, flipped, 6) == build
