"""Machine judges: the Thurstone judge's stated accuracy and calibration, BM25 and feature-model
judges against their formulas, the LLM judge through a stand-in ``ask``."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from labeling.machine.calibration import calibration_report, position_bias
from labeling.machine.features import FEATURE_NAMES, FeatureExtractor
from labeling.machine.judges import (
    N_GRADES,
    Bm25Judge,
    CalibratedJudge,
    FeatureModelJudge,
    GradeJudge,
    JudgeQuery,
    LlmGrader,
    LlmJudge,
    PairJudge,
    ThurstoneJudge,
    logistic_preference,
    thurstone_sigma,
)
from labeling.machine.llm_prompts import (
    GRADED_V2,
    PAIRWISE_V1,
    PAIRWISE_V2,
    parse_pairwise,
    read_blocks,
)
from labeling.retrieval.bm25 import Bm25Index, Bm25Params
from labeling.retrieval.text import document_text

DOCS = [
    ("d1", "Heat transfer in plates", "The heat flow through a thin plate."),
    ("d2", "Buckling of plates", "Plates buckle under load."),
    ("d3", "Supersonic flow", "Shock waves in supersonic flow over wings."),
    ("d4", "Boundary layers", "Heat transfer in a laminar boundary layer."),
]
QUERY = JudgeQuery("q1", "heat transfer in plates")


def random_pairs(
    judge: ThurstoneJudge, queries: int, per_query: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    raw: list[float] = []
    truth: list[float] = []
    for q in range(queries):
        qid = f"r{seed}-{q}"
        pairs = [
            (f"d{a}", f"d{b}")
            for a, b in (rng.choice(40, 2, replace=False) for _ in range(per_query))
        ]
        raw += judge.prefer(JudgeQuery(qid, ""), pairs).tolist()
        truth += [float(judge.utility(qid, a) > judge.utility(qid, b)) for a, b in pairs]
    return np.array(raw), np.array(truth)


def test_thurstone_sigma_inverts_the_stated_accuracy() -> None:
    assert thurstone_sigma(0.8) == pytest.approx(0.7265425280)
    assert thurstone_sigma(1.0) == 0.0
    for a in (0.55, 0.7, 0.8, 0.95):
        s = thurstone_sigma(a)
        assert 0.5 + math.asin(1 / math.sqrt(1 + s * s)) / math.pi == pytest.approx(a)
    with pytest.raises(ValueError):
        thurstone_sigma(0.5)


@pytest.mark.parametrize("accuracy", [0.7, 0.8, 0.9])
def test_thurstone_accuracy_on_random_pairs_and_calibration(accuracy: float) -> None:
    judge = ThurstoneJudge(accuracy, seed=11)
    raw, truth = random_pairs(judge, 200, 25, seed=int(accuracy * 100))
    report = calibration_report(raw, truth)
    # 5,000 pairs: standard error about 0.006
    assert report.accuracy == pytest.approx(accuracy, abs=0.02)
    assert report.ece < 0.03  # the stated posterior is calibrated
    over = ThurstoneJudge(accuracy, seed=11, overconfidence=4.0)
    raw_over, truth_over = random_pairs(over, 200, 25, seed=int(accuracy * 100))
    assert np.array_equal(truth_over, truth)  # the same judge's utilities, only more sure
    assert calibration_report(raw_over, truth_over).ece > 0.05


def test_thurstone_is_deterministic_batch_free_and_antisymmetric() -> None:
    judge = ThurstoneJudge(0.8, seed=3)
    pairs = [("a", "b"), ("c", "a"), ("b", "d"), ("d", "c")]
    batch = judge.prefer(QUERY, pairs)
    single = np.concatenate([judge.prefer(QUERY, [p]) for p in pairs])
    assert np.array_equal(batch, single)
    assert np.array_equal(batch, ThurstoneJudge(0.8, seed=3).prefer(QUERY, pairs))
    flipped = judge.prefer(QUERY, [(b, a) for a, b in pairs])
    assert np.allclose(batch + flipped, 1.0)
    other = ThurstoneJudge(0.8, seed=4)
    assert other.version != judge.version
    assert not np.array_equal(other.prefer(QUERY, pairs), batch)
    perfect = ThurstoneJudge(1.0, seed=3)
    p = perfect.prefer(QUERY, pairs)
    truth = [perfect.utility("q1", a) > perfect.utility("q1", b) for a, b in pairs]
    assert p.tolist() == [1.0 if t else 0.0 for t in truth]


def test_thurstone_grades_are_calibrated_distributions() -> None:
    judge = ThurstoneJudge(0.8, seed=5)
    assert isinstance(judge, GradeJudge) and isinstance(judge, PairJudge)
    docs = [f"g{i}" for i in range(4000)]
    dist = judge.grades(QUERY, docs)
    assert dist.shape == (4000, N_GRADES)
    assert np.allclose(dist.sum(axis=1), 1.0)
    true = np.array([judge.true_grade("q1", d) for d in docs])
    assert np.allclose(np.bincount(true, minlength=5) / 4000, 0.2, atol=0.025)  # quintiles
    # a calibrated forecaster: E[p(true grade)] = E[Σ_g p_g²]
    assert dist[np.arange(4000), true].mean() == pytest.approx((dist**2).sum(1).mean(), abs=0.015)
    perfect = ThurstoneJudge(1.0, seed=5)
    one_hot = perfect.grades(QUERY, docs[:50])
    assert one_hot.argmax(1).tolist() == [perfect.true_grade("q1", d) for d in docs[:50]]
    assert np.array_equal(one_hot.max(1), np.ones(50))


def test_bm25_judge_is_the_logistic_of_the_score_difference() -> None:
    index = Bm25Index([(d, document_text(t, b)) for d, t, b in DOCS], Bm25Params(1.2, 0.75))
    judge = Bm25Judge(index, scale=2.0)
    assert isinstance(judge, PairJudge)
    scores = dict(zip(index.doc_ids, index.scores(QUERY.text), strict=True))
    pairs = [("d1", "d2"), ("d3", "d4"), ("d4", "d1")]
    want = [1 / (1 + math.exp(-(scores[a] - scores[b]) / 2.0)) for a, b in pairs]
    assert judge.prefer(QUERY, pairs) == pytest.approx(want, abs=1e-12)
    assert judge.version == "bm25/k1=1.2/b=0.75/scale=2"
    assert judge.describe()["documents"] == 4
    with pytest.raises(ValueError, match="not in the judge's collection"):
        judge.prefer(QUERY, [("d1", "nope")])
    assert logistic_preference(np.array([0.0]), np.array([0.0]), 1.0)[0] == 0.5


class OneFeature:
    """A linear scorer with weight 1 on one feature."""

    def __init__(self, name: str) -> None:
        self.j = FEATURE_NAMES.index(name)

    def predict(self, X: np.ndarray) -> np.ndarray:
        return X[:, self.j]


def test_feature_model_judge_uses_the_model_scores() -> None:
    fx = FeatureExtractor(DOCS)
    index = Bm25Index([(d, document_text(t, b)) for d, t, b in DOCS])
    raw = FeatureModelJudge(fx, OneFeature("whole.bm25"), name="model:7", normalize=False)
    pairs = [("d1", "d2"), ("d3", "d4"), ("d4", "d1"), ("d2", "d2")]
    assert np.allclose(raw.prefer(QUERY, pairs), Bm25Judge(index).prefer(QUERY, pairs))
    normed = FeatureModelJudge(fx, OneFeature("whole.bm25"), name="model:7", scale=0.5)
    s = index.scores(QUERY.text)
    x = (s - s.min()) / (s.max() - s.min())  # QueryLevelNorm over the collection
    want = 1 / (1 + np.exp(-(x[0] - x[1]) / 0.5))
    assert normed.prefer(QUERY, [("d1", "d2")])[0] == pytest.approx(want)
    assert normed.version.startswith("model:7/") and "norm=query" in normed.version
    assert normed.describe()["features"] == list(FEATURE_NAMES)


def test_feature_model_judge_takes_a_trained_ranker() -> None:
    from ranking.data.dataset import QueryDataset
    from ranking.estimators import RankNet

    fx = FeatureExtractor(DOCS)
    x = fx.matrix(QUERY.text)
    data = QueryDataset.from_arrays(x / (x.max(0) + 1e-9), [2, 1, 0, 1], ["q1"] * 4)
    model = RankNet(seed=0, epochs=20).fit(data)
    judge = FeatureModelJudge(fx, model, name="model:1")
    p = judge.prefer(QUERY, [("d1", "d3"), ("d3", "d1")])
    assert p.shape == (2,) and p[0] + p[1] == pytest.approx(1.0)


class StandIn:
    """A stand-in for a chat model: answers pairwise prompts from a hidden order of the
    documents, preferring the first-shown passage with probability ``bias`` whatever the
    truth; ``malformed`` replies come back for the listed (first shown, second) orders."""

    def __init__(self, better: list[str], bias: float, seed: int, malformed=()) -> None:
        self.rank = {d: i for i, d in enumerate(better)}
        self.bias = bias
        self.rng = np.random.default_rng(seed)
        self.malformed = set(malformed)
        self.prompts: list[tuple[str, str]] = []

    def __call__(self, batch: Sequence[list[dict[str, str]]]) -> list[str | None]:
        replies: list[str | None] = []
        for messages in batch:
            user = messages[1]["content"]
            blocks = read_blocks(user)  # the judge asks the fenced pairwise@v2
            a, b = blocks["passage_a"], blocks["passage_b"]
            self.prompts.append((a, b))
            if (a, b) in self.malformed:
                replies.append("I cannot decide." if len(replies) % 2 else None)
            elif self.rng.uniform() < self.bias:
                replies.append("A")
            else:
                replies.append("**A**" if self.rank[a] < self.rank[b] else "Passage B")
        return replies


def test_llm_judge_combines_both_orders() -> None:
    texts = {d: d for d in ("x", "y", "z")}
    truthful = LlmJudge(StandIn(["x", "y", "z"], 0.0, 0), texts, model="m")
    assert truthful.prefer(QUERY, [("x", "y"), ("z", "x")]).tolist() == [1.0, 0.0]
    assert truthful.version == f"llm/m/pairwise@v2/{PAIRWISE_V2.hash}"
    always_first = LlmJudge(StandIn(["x", "y", "z"], 1.0, 0), texts, model="m")
    assert always_first.prefer(QUERY, [("x", "y"), ("z", "x")]).tolist() == [0.5, 0.5]
    ask = StandIn(["x", "y", "z"], 0.0, 0, malformed=[("y", "x"), ("z", "y"), ("y", "z")])
    judge = LlmJudge(ask, texts, model="m")
    p = judge.prefer(QUERY, [("x", "y"), ("y", "z")])
    assert p[0] == 0.75  # one order says x; the other is no opinion (0.5)
    assert math.isnan(p[1]) and judge.malformed == 3
    assert ask.prompts == [("x", "y"), ("y", "x"), ("y", "z"), ("z", "y")]
    with pytest.raises(ValueError, match="no text"):
        judge.prefer(QUERY, [("x", "w")])


def test_llm_position_bias_cancels() -> None:
    """The stand-in prefers the first-shown passage 70% of the time (else it tells the truth):
    asked one order, it picks the first shown about 85% of the time; combined over both
    orders, the judge asked (a, b) and (b, a) prefers the first-listed document 50% of the
    time, within 3 standard errors of its noise (1,000 pairs: 0.5 ± 0.047)."""
    docs = [f"p{i}" for i in range(60)]
    ask = StandIn(docs, 0.7, seed=9)
    judge = LlmJudge(ask, {d: d for d in docs}, model="biased")
    rng = np.random.default_rng(2)
    pairs = [tuple(f"p{i}" for i in rng.choice(60, 2, replace=False)) for _ in range(1000)]
    forward = judge.prefer(QUERY, pairs)
    backward = judge.prefer(QUERY, [(b, a) for a, b in pairs])
    bias = position_bias(forward, backward)
    assert abs(bias.first_shown_rate - 0.5) < 3 * math.sqrt(0.25 / 1000)
    assert abs(bias.mean_shift) < 0.02
    # the raw single-order answers were biased: 0.7 + 0.3·0.5 first-shown
    replies = ask([PAIRWISE_V2.render("q", a, b) for a, b in pairs])
    single = [parse_pairwise(r) == "A" for r in replies]
    assert np.mean(single) == pytest.approx(0.85, abs=0.04)


def test_calibrated_judge_maps_raw_probabilities_and_names_its_state() -> None:
    from labeling.machine.calibration import Calibrator

    judge = ThurstoneJudge(0.8, seed=2, overconfidence=3.0)
    raw, truth = random_pairs(judge, 20, 20, seed=5)
    calibrator = Calibrator("platt")
    calibrated = CalibratedJudge(judge, calibrator)
    before = calibrated.version
    calibrator.update(raw, truth)
    assert calibrated.version != before and calibrated.version.endswith("answers=400")
    pairs = [("d1", "d2"), ("d3", "d1")]
    want = calibrator.probability(judge.prefer(QUERY, pairs))
    assert np.array_equal(calibrated.prefer(QUERY, pairs), want)
    assert calibrated.describe()["calibration"]["answers"] == 400
    restored = Calibrator.from_dict(calibrator.to_dict())
    assert np.array_equal(restored.probability(raw), calibrator.probability(raw))

    class Silent:
        version = "silent"

        def describe(self) -> dict[str, object]:
            return {}

        def prefer(self, query: JudgeQuery, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
            return np.array([np.nan, 0.9])

    p = CalibratedJudge(Silent(), calibrator).prefer(QUERY, pairs)
    assert math.isnan(p[0]) and p[1] == calibrator.probability([0.9])[0]


def test_the_llm_grader_reads_one_grade_per_document_and_no_opinion_as_nan() -> None:
    texts = {"a": "passage a", "b": "passage b", "c": "passage c", "d": "passage d"}
    replies = {"passage a": "3", "passage b": "**0**", "passage c": "maybe", "passage d": None}
    asked: list[list[dict[str, str]]] = []

    def ask(prompts: Sequence[list[dict[str, str]]]) -> list[str | None]:
        asked.extend(prompts)
        out = []
        for messages in prompts:
            passage = read_blocks(messages[-1]["content"])["passage"]
            out.append(replies[passage])
        return out

    grader = LlmGrader(ask, texts, model="m")
    assert isinstance(grader, GradeJudge)
    dist = grader.grades(QUERY, ["a", "b", "c", "d"])
    assert dist.shape == (4, N_GRADES)
    assert dist[0].tolist() == [0.0, 0.0, 0.0, 1.0, 0.0]
    assert dist[1].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert np.isnan(dist[2]).all() and np.isnan(dist[3]).all()
    assert grader.malformed == 1  # "maybe"; a failed call (None) is not a reply
    assert asked == [GRADED_V2.render(QUERY.text, texts[d]) for d in "abcd"]
    assert grader.version == f"llm/m/graded@v2/{GRADED_V2.hash}"
    with pytest.raises(ValueError, match="graded template"):
        LlmGrader(ask, texts, model="m", template=PAIRWISE_V1)
    with pytest.raises(ValueError, match="no text for document 'zz'"):
        grader.grades(QUERY, ["zz"])
