"""Text features (docs/features.md) on a hand-counted two-document example, plus oracles:
the service's BM25, a brute-force MinCover window, determinism."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from labeling.machine.features import (
    FEATURE_NAMES,
    FIELD_FEATURES,
    FIELDS,
    FeatureExtractor,
    FeatureParams,
)
from labeling.retrieval.bm25 import Bm25Index
from labeling.retrieval.text import document_text, tokenize

DOCS = [
    ("A", "Heat transfer", "heat flow in a plate, heat"),
    ("B", "Plate theory", "buckling of plates"),
]
QUERY = "heat plates heat zebra"
# Counted by hand from the analyser's terms (checked in the first test):
#   A title [heat, transfer]          body [heat, flow, plate, heat]
#   B title [plate, theori]           body [buckl, plate]
#   whole = title + body; query [heat, plate, heat, zebra]: c = heat 2, plate 1, zebra 1.
C = {"heat": 2, "plate": 1, "zebra": 1}
COUNTS = {  # field -> (tf per doc and term, |d|, u(d), df, cf, |C|, window per doc)
    "title": (
        {"A": {"heat": 1, "plate": 0, "zebra": 0}, "B": {"heat": 0, "plate": 1, "zebra": 0}},
        {"A": 2, "B": 2},
        {"A": 2, "B": 2},
        {"heat": 1, "plate": 1, "zebra": 0},
        {"heat": 1, "plate": 1, "zebra": 0},
        4,
        {"A": 1, "B": 1},
    ),
    "body": (
        {"A": {"heat": 2, "plate": 1, "zebra": 0}, "B": {"heat": 0, "plate": 1, "zebra": 0}},
        {"A": 4, "B": 2},
        {"A": 3, "B": 2},
        {"heat": 1, "plate": 2, "zebra": 0},
        {"heat": 2, "plate": 2, "zebra": 0},
        6,
        {"A": 2, "B": 1},  # A: "plate heat" at positions 2-3
    ),
    "whole": (
        {"A": {"heat": 3, "plate": 1, "zebra": 0}, "B": {"heat": 0, "plate": 2, "zebra": 0}},
        {"A": 6, "B": 4},
        {"A": 4, "B": 3},
        {"heat": 1, "plate": 2, "zebra": 0},
        {"heat": 3, "plate": 3, "zebra": 0},
        10,
        {"A": 2, "B": 1},  # A: heat transfer heat flow [plate heat]
    ),
}


def expected_features(field: str, doc: str, p: FeatureParams) -> dict[str, float]:
    """Every feature of docs/features.md by its plain formula, from the hand counts."""
    tfs, dls, uniq, df, cf, total, window = COUNTS[field]
    tf, dl, n = tfs[doc], dls[doc], 2
    avgdl = sum(dls.values()) / n
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in C}
    covered = sum(1 for t in C if tf[t] > 0)
    lm_terms = [t for t in C if cf[t] > 0]
    pc = {t: cf[t] / total for t in C}
    return {
        "covered": covered,
        "covered_ratio": covered / 3,
        "tf_sum": sum(C[t] * tf[t] for t in C),
        "tf_min": min(tf.values()),
        "tf_max": max(tf.values()),
        "tf_mean": sum(tf.values()) / 3,
        "ntf_sum": sum(C[t] * tf[t] for t in C) / dl,
        "idf_sum": sum(C[t] * idf[t] for t in C),
        "tfidf_sum": sum(C[t] * tf[t] * idf[t] for t in C),
        "dl": dl,
        "bm25": sum(
            C[t] * idf[t] * tf[t] / (tf[t] + p.k1 * (1 - p.b + p.b * dl / avgdl)) for t in C
        ),
        "lm_dir": sum(C[t] * math.log((tf[t] + p.mu * pc[t]) / (dl + p.mu)) for t in lm_terms),
        "lm_jm": sum(C[t] * math.log((1 - p.lam) * tf[t] / dl + p.lam * pc[t]) for t in lm_terms),
        "lm_abs": sum(
            C[t] * math.log(max(tf[t] - p.delta, 0) / dl + p.delta * uniq[doc] / dl * pc[t])
            for t in lm_terms
        ),
        "min_window": window[doc],
        "window_density": covered / window[doc],
    }


def test_the_hand_counts_are_the_analysers_terms() -> None:
    assert tokenize(DOCS[0][1]) == ["heat", "transfer"]
    assert tokenize(DOCS[0][2]) == ["heat", "flow", "plate", "heat"]
    assert tokenize(DOCS[1][1]) == ["plate", "theori"]
    assert tokenize(DOCS[1][2]) == ["buckl", "plate"]
    assert tokenize(QUERY) == ["heat", "plate", "heat", "zebra"]


@pytest.mark.parametrize("params", [FeatureParams(), FeatureParams(1.5, 0.3, 10.0, 0.5, 0.2)])
def test_two_document_example_matches_every_formula(params: FeatureParams) -> None:
    fx = FeatureExtractor(DOCS, params)
    values = fx.matrix(QUERY)
    assert values.shape == (2, 48) and fx.names == FEATURE_NAMES
    for row, doc in enumerate(("A", "B")):
        for field in FIELDS:
            want = expected_features(field, doc, params)
            for name in FIELD_FEATURES:
                got = values[row, FEATURE_NAMES.index(f"{field}.{name}")]
                assert got == pytest.approx(want[name], rel=1e-12, abs=1e-12), (
                    doc,
                    field,
                    name,
                )


def test_empty_field_and_empty_query_conventions() -> None:
    fx = FeatureExtractor([("A", "heat", None), ("B", "plate", "heat heat")])
    v = fx.matrix("heat")
    col = {n: v[0, i] for i, n in enumerate(FEATURE_NAMES)}
    p, pc = FeatureParams(), 2 / 2  # body: cf(heat) = 2, |C| = 2
    assert col["body.dl"] == 0 and col["body.ntf_sum"] == 0 and col["body.min_window"] == 0
    assert col["body.lm_dir"] == pytest.approx(math.log(pc))
    assert col["body.lm_jm"] == pytest.approx(math.log(p.lam * pc))
    assert col["body.lm_abs"] == pytest.approx(math.log(pc))
    assert not fx.matrix("the and of").any()  # only stop words: no terms, all zero


def test_extract_names_rows_and_is_deterministic() -> None:
    fx = FeatureExtractor(DOCS)
    out = fx.extract({"q1": QUERY, "q2": "plate"})
    assert list(out) == ["q1", "q2"]
    assert out["q1"].doc_ids == ("A", "B") and out["q1"].names == FEATURE_NAMES
    again = FeatureExtractor(DOCS).extract({"q1": QUERY})
    assert np.array_equal(out["q1"].values, again["q1"].values)


def test_whole_bm25_is_the_services_bm25() -> None:
    rng = random.Random(7)
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "theta",
        "kappa",
        "lambda",
        "sigma",
        "omega",
    ]
    docs = [
        (
            f"d{i}",
            " ".join(rng.choices(words, k=rng.randint(0, 4))),
            " ".join(rng.choices(words, k=rng.randint(0, 30))),
        )
        for i in range(40)
    ]
    fx = FeatureExtractor(docs)
    index = Bm25Index([(d, document_text(t, b)) for d, t, b in docs])
    j = FEATURE_NAMES.index("whole.bm25")
    for _ in range(20):
        query = " ".join(rng.choices([*words, "unknown"], k=rng.randint(1, 6)))
        assert np.allclose(fx.matrix(query)[:, j], index.scores(query), atol=1e-12)


def brute_window(tokens: list[str], terms: set[str]) -> int:
    held = terms & set(tokens)
    if not held:
        return 0
    return min(
        j - i + 1
        for i in range(len(tokens))
        for j in range(i, len(tokens))
        if held <= set(tokens[i : j + 1])
    )


def test_min_window_matches_brute_force() -> None:
    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    docs = [
        (
            f"d{i}",
            " ".join(rng.choices(words, k=rng.randint(0, 5))),
            " ".join(rng.choices(words, k=rng.randint(0, 25))),
        )
        for i in range(60)
    ]
    fx = FeatureExtractor(docs)
    for _ in range(15):
        query = " ".join(rng.sample(words, rng.randint(1, 4)))
        terms = set(tokenize(query))
        v = fx.matrix(query)
        for field, pick in (
            ("title", lambda d: tokenize(d[1])),
            ("body", lambda d: tokenize(d[2])),
            ("whole", lambda d: tokenize(d[1]) + tokenize(d[2])),
        ):
            col = v[:, FEATURE_NAMES.index(f"{field}.min_window")]
            want = [brute_window(pick(d), terms) for d in docs]
            assert col.tolist() == want, (query, field)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="unique"):
        FeatureExtractor([("A", "x", "y"), ("A", "z", "w")])
    with pytest.raises(ValueError, match="no documents"):
        FeatureExtractor([])
    with pytest.raises(ValueError, match="feature parameters"):
        FeatureParams(mu=0)


def test_a_collection_without_terms_gives_zero_counts() -> None:
    fx = FeatureExtractor([("A", "", None), ("B", "the of", "a")])
    v = fx.matrix("heat")
    col = {n: v[:, i] for i, n in enumerate(FEATURE_NAMES)}
    assert not col["whole.tf_sum"].any() and not col["whole.dl"].any()
    assert not col["whole.lm_dir"].any()  # cf = 0: left out of the sums


def test_documented_parameters() -> None:
    # docs/features.md states these values; the service's BM25 uses the same k1 and b
    p = FeatureParams()
    assert (p.k1, p.b, p.mu, p.lam, p.delta) == (1.2, 0.75, 2000.0, 0.1, 0.7)
    assert len(FEATURE_NAMES) == 48 and FEATURE_NAMES[0] == "title.covered"
    assert FEATURE_NAMES[-1] == "whole.window_density"
