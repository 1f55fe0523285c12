"""Golden vectors computed by hand and by the reference tools, and the conventions' edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ranking import metrics
from ranking.io.topk import kappa_labels
from ranking.padding import pad_groups


def _dict_batch(
    qrels: dict[str, dict[str, float]], run: dict[str, dict[str, float]]
) -> tuple[np.ndarray, ...]:
    """Tiny independent builder: padded labels/scores/docids of the run, plus qrels labels."""
    qids = sorted(qrels)
    width = max(len(run[q]) for q in qids)
    iw = max(len(qrels[q]) for q in qids)
    lab = np.zeros((len(qids), width))
    sco = np.zeros((len(qids), width))
    msk = np.zeros((len(qids), width), bool)
    docs = np.full((len(qids), width), "", dtype=object)
    ilab = np.zeros((len(qids), iw))
    imsk = np.zeros((len(qids), iw), bool)
    for i, q in enumerate(qids):
        for j, (d, s) in enumerate(run[q].items()):
            lab[i, j] = qrels[q].get(d, 0)
            sco[i, j] = s
            msk[i, j] = True
            docs[i, j] = d
        for j, r in enumerate(qrels[q].values()):
            ilab[i, j] = r
            imsk[i, j] = True
    return lab, sco, msk, docs, ilab, imsk


def test_pytrec_eval_readme() -> None:
    qrels = {"q1": {"d1": 0, "d2": 1, "d3": 0}, "q2": {"d2": 1, "d3": 1}}
    run = {"q1": {"d1": 1.0, "d2": 0.0, "d3": 1.5}, "q2": {"d1": 1.5, "d2": 0.2, "d3": 0.5}}
    lab, sco, msk, docs, ilab, imsk = _dict_batch(qrels, run)
    kw = {"ideal_labels": ilab, "ideal_mask": imsk, "ties": "docid", "docids": docs}
    nd = metrics.ndcg(lab, sco, msk, gain="linear", **kw)
    assert nd[0] == pytest.approx(0.5, abs=1e-12)
    assert nd[1] == pytest.approx(0.6934264036172708, abs=1e-12)
    ap = metrics.average_precision(lab, sco, msk, **kw)
    assert ap == pytest.approx([1 / 3, 7 / 12], abs=1e-12)
    assert round(ap[0], 4) == 0.3333 and round(ap[1], 4) == 0.5833
    via = metrics.compute(
        "ndcg",
        lab,
        sco,
        msk,
        conventions="trec_eval",
        ideal_labels=ilab,
        ideal_mask=imsk,
        docids=docs,
    )
    assert via == pytest.approx(nd, abs=1e-15)


RANX_QRELS = {"q_1": {"d_12": 5, "d_25": 3}, "q_2": {"d_11": 6, "d_22": 1}}
RANX_RUN = {
    "q_1": {"d_12": 0.9, "d_23": 0.8, "d_25": 0.7, "d_36": 0.6, "d_32": 0.5, "d_35": 0.4},
    "q_2": {"d_12": 0.9, "d_11": 0.8, "d_25": 0.7, "d_36": 0.6, "d_22": 0.5, "d_35": 0.4},
}


@pytest.mark.parametrize(
    ("gain", "per_query", "mean4"),
    [("linear", (0.94301, 0.62924), 0.7861), ("exp", (0.97412, 0.63075), 0.8024)],
)
def test_ranx_readme_ndcg(gain: str, per_query: tuple[float, float], mean4: float) -> None:
    lab, sco, msk, _docs, ilab, imsk = _dict_batch(RANX_QRELS, RANX_RUN)
    v = metrics.ndcg(lab, sco, msk, at=5, gain=gain, ideal_labels=ilab, ideal_mask=imsk)
    assert v == pytest.approx(per_query, abs=5e-6)
    assert round(metrics.mean(v), 4) == mean4


def test_ranx_readme_map_mrr() -> None:
    lab, sco, msk, _docs, ilab, imsk = _dict_batch(RANX_QRELS, RANX_RUN)
    ap = metrics.average_precision(lab, sco, msk, at=5, ideal_labels=ilab, ideal_mask=imsk)
    # AP q_1 = (1 + 2/3)/2, q_2 = (1/2 + 2/5)/2; the README prints 0.6416 (0.641666... cut)
    assert metrics.mean(ap) == pytest.approx((5 / 6 + 0.45) / 2, abs=1e-12)
    assert math.floor(metrics.mean(ap) * 1e4) / 1e4 == 0.6416
    rr = metrics.reciprocal_rank(lab, sco, msk)
    assert metrics.mean(rr) == pytest.approx(0.75, abs=1e-12)


def test_trec_eval_docno_tie_case() -> None:
    # usnistgov/trec_eval#22: qrels a=0, b=1, c=0; both runs tie at 1.0.
    qrels = {"1": {"a": 0, "b": 1, "c": 0}}
    for run, expected in (({"b": 1.0, "a": 1.0}, 1.0), ({"b": 1.0, "c": 1.0}, 1 / math.log2(3))):
        lab, sco, msk, docs, ilab, imsk = _dict_batch(qrels, {"1": run})
        v = metrics.ndcg(
            lab,
            sco,
            msk,
            gain="linear",
            ties="docid",
            docids=docs,
            ideal_labels=ilab,
            ideal_mask=imsk,
        )
        assert v[0] == pytest.approx(expected, abs=1e-12)
    assert round(1 / math.log2(3), 4) == 0.6309
    # input-order ties give 1.0 to both runs
    lab, sco, msk, *_ = _dict_batch(qrels, {"1": {"b": 1.0, "c": 1.0}})
    assert metrics.ndcg(lab, sco, msk, ties="stable")[0] == pytest.approx(1.0)


def test_trec_eval_compares_scores_in_single_precision() -> None:
    # trec_eval keeps a run's scores as C float (DOCNO_INFO.sim): 0.5 + 1e-9 and 0.5 are one
    # tie there, broken by docno descending, so the relevant "b" ranks first (pytrec_eval
    # gives ndcg 1.0). In double precision "a" would rank first (0.6309).
    lab = np.array([[0.0, 1.0]])
    sco = np.array([[0.5 + 1e-9, 0.5]])
    docs = np.array([["a", "b"]])
    trec = metrics.compute("ndcg", lab, sco, conventions="trec_eval", docids=docs)
    assert trec[0] == pytest.approx(1.0, abs=1e-12)
    double = metrics.preset("trec_eval").replace(score_precision="double")
    assert metrics.compute("ndcg", lab, sco, conventions=double, docids=docs)[0] == (
        pytest.approx(1 / math.log2(3), abs=1e-12)
    )
    # every other preset compares the scores as given
    assert metrics.compute("ndcg", lab, sco, conventions="gdeval", docids=docs)[0] == (
        pytest.approx(1 / math.log2(3), abs=1e-12)
    )


KAPPA_TOY = {  # ranking -> (exp gain, linear gain) κ-NDCG@3 with a=3, b=2, c=1, others 0
    "abc": (1.0, 1.0),
    "bac": (0.8428, 0.9225),
    "dab": (0.6299, 0.6075),
    "cba": (0.6806, 0.7900),
    "dae": (0.4702, 0.3975),
    "bcd": (0.3866, 0.5525),
}


@pytest.mark.parametrize("ranking", list(KAPPA_TOY))
def test_kappa_ndcg3_toy(ranking: str) -> None:
    truth = kappa_labels(["a", "b", "c"], ["d", "e", "f"], 3)
    docs = ranking + "".join(d for d in "abcdef" if d not in ranking)
    lab = np.array([truth[d] for d in docs], dtype=float)
    s = -np.arange(lab.size, dtype=float)
    exp_v, lin_v = KAPPA_TOY[ranking]
    assert round(float(metrics.kappa_ndcg(lab, s, at=3)[0]), 4) == exp_v
    assert round(float(metrics.kappa_ndcg(lab, s, at=3, gain="linear")[0]), 4) == lin_v


def test_gain_choice_reverses_order() -> None:
    truth = {"a": 3, "b": 2, "c": 1}
    dae = np.array([truth.get(d, 0) for d in "daebcf"], float)
    bcd = np.array([truth.get(d, 0) for d in "bcdaef"], float)
    s = -np.arange(6.0)
    assert metrics.kappa_ndcg(dae, s, at=3)[0] > metrics.kappa_ndcg(bcd, s, at=3)[0]
    lin = {"gain": "linear", "at": 3}
    assert metrics.kappa_ndcg(dae, s, **lin)[0] < metrics.kappa_ndcg(bcd, s, **lin)[0]


# ----------------------------------------------------------------- conventions


def test_empty_policy() -> None:
    lab = np.array([[0, 0, 0], [1, 0, 2]], float)
    s = np.array([[3, 2, 1], [3, 2, 1]], float)
    assert metrics.ndcg(lab, s)[0] == 0.0
    assert metrics.ndcg(lab, s, empty=1)[0] == 1.0
    skipped = metrics.ndcg(lab, s, empty="skip")
    assert math.isnan(skipped[0]) and not math.isnan(skipped[1])
    assert metrics.mean(skipped) == pytest.approx(skipped[1])
    assert metrics.err(lab, s)[0] == 0.0
    assert math.isnan(metrics.average_precision(lab, s, empty="skip")[0])
    with pytest.raises(ValueError, match="empty"):
        metrics.ndcg(lab, s, empty=True)  # type: ignore[arg-type]


def test_letor_discount_and_k_beyond() -> None:
    lab, s = np.array([0.0, 1, 2]), np.array([3.0, 2, 1])
    # discount 1 at positions 1-2, then 1/log2(3)
    assert metrics.dcg(lab, s, discount="letor")[0] == pytest.approx(1 + 3 / math.log2(3))
    assert metrics.ndcg(lab, s, at=5, k_beyond="zero")[0] == 0.0
    # at = 3 = list length: scored normally, exp gain 2^r − 1 and log2(1 + i) discount:
    # DCG = 0 + 1/log2(3) + 3/2, ideal = 3 + 1/log2(3) + 0.
    hand = (1 / math.log2(3) + 3 / 2) / (3 + 1 / math.log2(3))
    assert metrics.ndcg(lab, s, at=3, k_beyond="zero")[0] == pytest.approx(hand, abs=1e-12)


def test_padding_is_ignored_wherever_it_is() -> None:
    lab = np.array([[2.0, 9, 0, 1]])
    s = np.array([[0.5, 99.0, 0.7, 0.1]])
    m = np.array([[True, False, True, True]])
    expected = metrics.ndcg([2.0, 0, 1], [0.5, 0.7, 0.1])
    assert metrics.ndcg(lab, s, m) == pytest.approx(expected)
    assert metrics.err(lab, s, m) == pytest.approx(metrics.err([2.0, 0, 1], [0.5, 0.7, 0.1]))


def test_pad_groups_round_trip() -> None:
    from ranking.padding import offsets_from_qids, unpad

    vals = np.arange(7.0)
    off = offsets_from_qids(np.array([3, 3, 1, 1, 1, 8, 8]))
    assert off.tolist() == [0, 2, 5, 7]
    padded, mask = pad_groups(vals, off, fill=-1.0)
    assert padded.tolist() == [[0, 1, -1], [2, 3, 4], [5, 6, -1]]
    back, off2 = unpad(padded, mask)
    assert back.tolist() == vals.tolist() and off2.tolist() == off.tolist()
    with pytest.raises(ValueError, match="more than one block"):
        offsets_from_qids(np.array([1, 2, 1]))
    with pytest.raises(ValueError, match="offsets"):
        pad_groups(vals, [0, 3, 6])


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="NaN"):
        metrics.ndcg([1.0, 0], [np.nan, 1.0])
    with pytest.raises(ValueError, match="shape"):
        metrics.ndcg([1.0, 0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="docids"):
        metrics.ndcg([1.0, 0], [1.0, 1.0], ties="docid")
    with pytest.raises(ValueError, match="average"):
        metrics.err([1.0, 0], [1.0, 1.0], ties="average")
    with pytest.raises(ValueError, match="r_max"):
        metrics.err([5.0, 0], [1.0, 0.0], r_max=4)
    with pytest.raises(ValueError, match="twice"):
        kappa_labels(["a", "a"], [], 3)
    with pytest.raises(ValueError, match="both top and rest"):
        kappa_labels(["a"], ["a"], 3)
    with pytest.raises(ValueError, match="unknown metric"):
        metrics.parse_metric("nddcg@10")
    assert metrics.parse_metric("kappa-ndcg@10") == ("kappa-ndcg", 10)
    assert metrics.parse_metric("P_5") == ("p", 5)
    assert metrics.parse_metric("ndcg_cut.10") == ("ndcg", 10)


@pytest.mark.parametrize("shape", [(0, 5), (3, 0), (0, 0)])
def test_empty_shapes(shape: tuple[int, int]) -> None:
    z = np.zeros(shape)
    for fn in (
        metrics.ndcg,
        metrics.err,
        metrics.average_precision,
        metrics.reciprocal_rank,
        metrics.kappa_err,
        metrics.kappa_ndcg,
    ):
        out = fn(z, z)
        assert out.shape == (shape[0],) and (out == 0).all()
    assert metrics.precision(z, z, at=3).shape == (shape[0],)
    assert math.isnan(metrics.mean([]))
