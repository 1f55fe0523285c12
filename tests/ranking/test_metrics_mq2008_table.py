"""docs/metrics.md: the same MQ2008 ranking (BM25, feature 25) under each convention.

The anchor computed these with its own numpy script; reproducing all of them to the printed 4
digits checks the gain, empty-query, tie, LETOR-discount and k-beyond-list conventions and the
presets on real data at once.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ranking import metrics
from ranking.io.letor import concat, read_letor

TABLE = [  # (conventions, NDCG@1, @3, @5, @10)
    ({"empty": 1}, (0.5374, 0.5693, 0.6100, 0.6791)),
    ({"empty": 0}, (0.2568, 0.2887, 0.3293, 0.3985)),
    ({"empty": "skip"}, (0.3570, 0.4013, 0.4578, 0.5540)),
    ({"empty": 0, "gain": "linear"}, (0.2698, 0.2984, 0.3361, 0.4052)),
    ({"empty": 1, "ties": "pessimistic"}, (0.5187, 0.5398, 0.5507, 0.6331)),
    ({"empty": 1, "ties": "optimistic"}, (0.5812, 0.6441, 0.7007, 0.7541)),
    ({"discount": "letor", "k_beyond": "zero", "empty": 0}, (0.2568, 0.2994, 0.3400, 0.1623)),
]


@pytest.fixture(scope="module")
def bm25(shared_data: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = shared_data / "letor4-mq2008"
    data = concat([read_letor(d / f"S{i}.txt") for i in range(1, 6)])
    labels, mask = data.padded()
    scores, _ = data.padded(data.features[:, 24])  # feature 25 = BM25 whole document
    assert int((labels.max(axis=1) == 0).sum()) == 220
    return labels, scores, mask


@pytest.mark.parametrize(("conv", "expected"), TABLE)
def test_anchor_table(bm25: tuple, conv: dict, expected: tuple) -> None:
    labels, scores, mask = bm25
    got = [
        round(metrics.mean(metrics.ndcg(labels, scores, mask, at=a, **conv)), 4)
        for a in (1, 3, 5, 10)
    ]
    assert got == list(expected)


def test_presets_on_the_table(bm25: tuple) -> None:
    labels, scores, mask = bm25
    lgb = metrics.compute("ndcg@10", labels, scores, mask, conventions="lightgbm")
    assert round(metrics.mean(lgb), 4) == 0.6791
    letor = metrics.compute("ndcg@10", labels, scores, mask, conventions="letor4")
    assert round(metrics.mean(letor), 4) == 0.1623


def test_err_scale_maximum(bm25: tuple) -> None:
    labels, scores, mask = bm25
    assert round(metrics.mean(metrics.err(labels, scores, mask, at=10, r_max=2)), 4) == 0.2382
    assert round(metrics.mean(metrics.err(labels, scores, mask, at=10, r_max=4)), 4) == 0.0740
