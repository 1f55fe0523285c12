"""Continuous active learning over a pool (Cormack, Grossman, SIGIR 2014; Rahman, Kutlu,
Elsayed, Lease, ICTIR 2020): the logistic fit, which document is judged next after given
judgments, the seed, honesty (no label is seen before its document is judged), determinism,
and one model over a campaign."""

from __future__ import annotations

import numpy as np
import pytest

from labeling.errors import ConfigError
from labeling.study.cal_pool import (
    ActiveLearning,
    cal_campaign_order,
    fit_logistic,
    pool_matrix,
    shared_scores,
)
from labeling.study.campaign_pools import depth_pool, select_pool, simulate_pooling

# Two runs: a and c are each a run's first document, b and d its second, so a and c have the
# same rank evidence (fused score, runs, best rank), and so do b and d; the fused order is
# a, c, b, d (ties by doc id). One feature tells them apart.
RUNS = {"A": ["a", "b"], "B": ["c", "d"]}
FEATURES = {"a": [1.0], "b": [0.1], "c": [0.0], "d": [0.9]}


def _order(pooler: ActiveLearning, relevant: set[str]) -> list[str]:
    out = []
    while (doc := pooler.next_document()) is not None:
        pooler.record(doc, doc in relevant)
        out.append(doc)
    return out


def test_the_fit_is_the_regularised_maximum_likelihood() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    y = (x @ [1.5, -1.0, 0.0] + rng.normal(size=60) > 0).astype(float)
    w = fit_logistic(x, y, l2=2.0)
    p = 1.0 / (1.0 + np.exp(-(x @ w[:-1] + w[-1])))
    # first-order conditions: X'(p − y) + λw = 0 for the weights, Σ(p − y) = 0 (no penalty)
    np.testing.assert_allclose(x.T @ (p - y) + 2.0 * w[:-1], 0.0, atol=1e-8)
    assert abs(float((p - y).sum())) < 1e-8
    sklearn = pytest.importorskip("sklearn.linear_model")
    ref = sklearn.LogisticRegression(C=1 / 2.0, tol=1e-12, max_iter=10_000).fit(x, y)
    np.testing.assert_allclose(w[:-1], ref.coef_[0], atol=1e-5)
    np.testing.assert_allclose(w[-1], ref.intercept_[0], atol=1e-5)


def test_rows_standardise_the_features_and_add_the_rank_evidence() -> None:
    pool = depth_pool(RUNS, 100)
    assert [d.doc_id for d in pool] == ["a", "c", "b", "d"]
    x = pool_matrix(pool, FEATURES, runs=2, depth=100)
    f = np.array([1.0, 0.0, 0.1, 0.9])
    np.testing.assert_allclose(x[:, 0], (f - f.mean()) / f.std())
    np.testing.assert_allclose(x[:, 1], [1.0, 1.0, 61 / 62, 61 / 62])  # fused / the largest
    np.testing.assert_allclose(x[:, 2], 0.5)  # one run of two
    second = 1 - np.log(2) / np.log(100)  # 1 − ln(best rank)/ln(depth)
    np.testing.assert_allclose(x[:, 3], [1.0, 1.0, second, second])
    with pytest.raises(ConfigError, match="no feature vector for 1 pooled"):
        pool_matrix(pool, {"a": [1.0], "b": [0.0], "c": [0.0]}, runs=2, depth=100)
    with pytest.raises(ConfigError, match="differ in length"):
        pool_matrix(pool, {**FEATURES, "d": [0.9, 1.0]}, runs=2, depth=100)
    with pytest.raises(ConfigError, match="not finite"):
        pool_matrix(pool, {**FEATURES, "d": [float("nan")]}, runs=2, depth=100)


def test_judged_next_follows_the_model_not_the_fused_order() -> None:
    # Seed: the fused order, a then c, until both classes are judged. a relevant (feature 1.0),
    # c not (0.0): the model's weight on the feature is positive and the rank evidence of a and
    # c is the same, so d (0.9) comes before b (0.1), where the fused order takes b.
    assert _order(ActiveLearning(RUNS, FEATURES), {"a"}) == ["a", "c", "d", "b"]
    # c relevant and a not: the weight turns negative and b (0.1) comes first.
    assert _order(ActiveLearning(RUNS, FEATURES), {"c"}) == ["a", "c", "b", "d"]
    # a and c relevant: one class, no model; the fused order goes on.
    assert _order(ActiveLearning(RUNS, FEATURES), {"a", "c"}) == ["a", "c", "b", "d"]


def test_judgments_from_elsewhere_train_the_model() -> None:
    pooler = ActiveLearning(RUNS, FEATURES)
    pooler.record("c", False)  # say, from a finished task
    assert pooler.next_document() == "a"
    pooler.record("a", True)
    assert pooler.next_document() == "d" and pooler.fits == 1
    # select_pool with the feedback: the same picks, the known ones counted
    chosen = select_pool(
        RUNS, "cal", None, 3, {"a": True, "c": False}, pooler=ActiveLearning(RUNS, FEATURES)
    )
    assert chosen.picks == ("a", "c", "d") and chosen.known == 2


def test_cal_needs_features() -> None:
    with pytest.raises(ConfigError, match="feature vectors"):
        simulate_pooling({"A": {"q": ["a"]}}, {"q": {"a": 1}}, "cal")
    with pytest.raises(ConfigError, match="no feature vector"):
        ActiveLearning(RUNS, {"a": [1.0]})
    assert ActiveLearning({"A": []}, {}).next_document() is None  # nothing pooled


def _campaign() -> tuple[dict[str, dict[str, list[str]]], dict[str, dict[str, int]], dict]:
    rng = np.random.default_rng(3)
    runs: dict[str, dict[str, list[str]]] = {"r1": {}, "r2": {}, "r3": {}}
    qrels: dict[str, dict[str, int]] = {}
    features: dict[str, dict[str, np.ndarray]] = {}
    for q in range(6):
        docs = [f"q{q}d{i}" for i in range(30)]
        signal = rng.normal(size=30)
        rich = q < 3  # three queries hold relevant documents, three hold almost none
        qrels[f"q{q}"] = {
            d: int(s > (0.0 if rich else 2.0)) for d, s in zip(docs, signal, strict=True)
        }
        features[f"q{q}"] = {
            d: np.array([s + rng.normal(scale=0.5), rng.normal()])
            for d, s in zip(docs, signal, strict=True)
        }
        for j, run in enumerate(runs.values()):
            noisy = signal + rng.normal(scale=1.0 + j, size=30)
            run[f"q{q}"] = [docs[i] for i in np.argsort(-noisy)]
    return runs, qrels, features


def test_campaign_seed_then_the_model_and_determinism() -> None:
    runs, qrels, features = _campaign()
    order = cal_campaign_order(runs, qrels, features, depth=100)
    again = cal_campaign_order(runs, qrels, features, depth=100)
    assert order.order == again.order  # no randomness: the same order every time
    fused = {q: depth_pool({r: runs[r][q] for r in runs}, 100)[0].doc_id for q in qrels}
    assert [(q, d) for q, d, _ in order.order[:6]] == list(fused.items())
    assert len(order.order) == 180 and len({(q, d) for q, d, _ in order.order}) == 180
    # The model moves the budget to the queries with relevant documents: within the first
    # 60 judgments, most of the relevant documents are found.
    found = sum(r for _, _, r in order.order[:60])
    assert found >= 0.8 * sum(order.relevant_in_pool.values())


def test_no_label_is_seen_before_its_document_is_judged() -> None:
    runs, qrels, features = _campaign()
    order = cal_campaign_order(runs, qrels, features, depth=100)
    # Flip the label of a document judged late: every judgment before it stays the same.
    q, doc, relevant = order.order[120]
    flipped = {k: dict(v) for k, v in qrels.items()}
    flipped[q][doc] = int(not relevant)
    other = cal_campaign_order(runs, flipped, features, depth=100)
    assert other.order[:120] == order.order[:120]
    assert other.order[120] == (q, doc, not relevant)
    # the same per query
    rankings = {r: runs[r][q] for r in runs}
    first = _order(ActiveLearning(rankings, features[q]), {d for d, g in qrels[q].items() if g})
    late = first[20]
    rel = {d for d, g in qrels[q].items() if g} ^ {late}
    second = _order(ActiveLearning(rankings, features[q]), rel)
    assert second[:21] == first[:21]


def test_one_model_for_many_queries_fixed_for_a_round() -> None:
    # Query p is the example above; query r the mirror image with feature 1 − x. The labels of
    # p alone (a relevant, c not) fit the model; r's documents are scored by it as well.
    mirror = {d: [1.0 - v[0]] for d, v in FEATURES.items()}
    rankings = {"p": RUNS, "r": RUNS}
    scores = shared_scores(rankings, {"p": FEATURES, "r": mirror}, {"p": {"a": True, "c": False}})
    assert scores is not None
    assert sorted(scores["p"], key=lambda d: -scores["p"][d]) == ["a", "d", "b", "c"]
    assert sorted(scores["r"], key=lambda d: -scores["r"][d]) == ["c", "b", "d", "a"]
    # A pooler with fixed scores proposes in their order; its judgments re-fit nothing.
    pooler = ActiveLearning(RUNS, FEATURES, scores=scores["p"])
    assert _order(pooler, {"b", "c"}) == ["a", "d", "b", "c"] and pooler.fits == 0
    # No relevant (or no non-relevant) judgment anywhere: no model.
    assert shared_scores(rankings, {"p": FEATURES, "r": mirror}, {"p": {"a": True}}) is None
    with pytest.raises(ConfigError, match="no score for 1"):
        ActiveLearning(RUNS, FEATURES, scores={"a": 1.0, "b": 0.0, "c": 0.0})


def _campaign_by_hand(
    runs: dict[str, dict[str, list[str]]], qrels: dict[str, dict[str, int]], features: dict
) -> list[tuple[str, str, bool]]:
    """The campaign order written out slowly: every score of every open document recomputed
    from scratch before each pick (the weights fitted at the batch boundaries, each query's
    state as it is at that moment), the pick the highest score, ties to the earlier query and
    then the fused order."""
    queries = list(qrels)
    pools = {q: depth_pool({r: runs[r][q] for r in runs}, 100) for q in queries}
    blocks = {q: pool_matrix(pools[q], features[q], len(runs), 100) for q in queries}
    found = dict.fromkeys(queries, 0)
    count = dict.fromkeys(queries, 0)
    rows: list[np.ndarray] = []
    labels: list[float] = []
    order: list[tuple[str, str, bool]] = []

    def state(q: str) -> list[float]:
        rate = (1 + found[q]) / (2 + count[q])
        return [rate, float(np.log(rate / (1 - rate))), count[q] / len(pools[q])]

    def judge(q: str, i: int) -> None:
        doc = pools[q][i].doc_id
        relevant = qrels[q].get(doc, 0) >= 1
        rows.append(np.concatenate([blocks[q][i], state(q)]))
        labels.append(float(relevant))
        found[q] += relevant
        count[q] += 1
        order.append((q, doc, relevant))

    for q in queries:
        judge(q, 0)
    total, batch = sum(len(p) for p in pools.values()), 1
    while len(order) < total:
        y = np.array(labels)
        w = fit_logistic(np.array(rows), y) if 0 < y.sum() < y.size else None
        for _ in range(min(batch, total - len(order))):
            done = {(q, d) for q, d, _ in order}
            best: tuple[float, int, int] | None = None
            for qi, q in enumerate(queries):
                for i, d in enumerate(pools[q]):
                    if (q, d.doc_id) in done:
                        continue
                    if w is None:
                        score = -float(i)
                    else:
                        score = float(np.concatenate([blocks[q][i], state(q)]) @ w[:-1] + w[-1])
                    if best is None or score > best[0]:
                        best = (score, qi, i)
            assert best is not None
            judge(queries[best[1]], best[2])
        batch += -(-batch // 10)  # ⌈batch/10⌉
    return order


def test_campaign_state_is_updated_after_every_judgment() -> None:
    runs, qrels, features = _campaign()
    assert cal_campaign_order(runs, qrels, features, depth=100).order == tuple(
        _campaign_by_hand(runs, qrels, features)
    )
