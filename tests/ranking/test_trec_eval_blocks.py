"""The measures computed block by block (``ranking.trec_eval.evaluate.CHUNK`` queries at a
time, docs/trec-eval.md#speed) give every value the whole batch gives: a query's values
depend on its own row only, whatever block it falls in."""

from __future__ import annotations

import numpy as np
import pytest

from ranking.trec_eval import evaluate
from ranking.trec_eval.merge import PAD, make_batch
from ranking.trec_eval.registry import Context
from ranking.trec_eval.select import select


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_blocks_give_the_values_of_the_whole_batch(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    rng = np.random.default_rng(11)
    n, depth = 150, 30
    num_ret = rng.integers(0, depth + 1, n).astype(np.int64)
    rel = np.where(
        np.arange(depth)[None, :] < num_ret[:, None], rng.integers(-2, 4, (n, depth)), PAD
    ).astype(np.int64)
    levels = rng.integers(0, 4, (n, 4)).astype(np.int64)
    requested = select(["all_trec", "ndcg.1=3,2=-1", "rbp.p=0.7"])
    whole = evaluate.compute(make_batch(rel, num_ret, levels, 1), requested, Context())
    monkeypatch.setattr(evaluate, "CHUNK", chunk)
    blocks = evaluate.compute(make_batch(rel, num_ret, levels, 1), requested, Context())
    for a, b in zip(whole.values, blocks.values, strict=True):
        assert a.shape == b.shape
        assert a.tobytes() == b.tobytes()
