"""Judging pools: all, seeded samples, the top of a TREC run, dedupe by content."""

from __future__ import annotations

import random

import pytest

from labeling.errors import ConfigError
from labeling.sources.base import SourceError
from labeling.study.pools import build_pool, content_hash, parse_trec_run

DOCS = [f"d{i:02d}" for i in range(100)]


def test_all_keeps_collection_order() -> None:
    assert build_pool(DOCS).doc_ids == tuple(DOCS)


def test_sample_is_seeded_subset_in_collection_order() -> None:
    pool = build_pool(DOCS, mode="sample", n=50, seed=7)
    assert len(pool.doc_ids) == 50
    assert list(pool.doc_ids) == [d for d in DOCS if d in set(pool.doc_ids)]
    # Independent oracle: the same draw with random.Random.
    assert set(pool.doc_ids) == set(random.Random(7).sample(DOCS, 50))
    assert build_pool(DOCS, mode="sample", n=50, seed=7) == pool
    assert build_pool(DOCS, mode="sample", n=50, seed=8) != pool
    assert build_pool(DOCS[:30], mode="sample", n=50, seed=7).doc_ids == tuple(DOCS[:30])


RUN = """\
q1 Q0 d05 1 9.5 sys
q1 Q0 d03 2 7.0 sys
q1 Q0 d09 3 7.0 sys
q1 Q0 zz 4 6.0 sys
q1 Q0 d01 5 8.0 sys
q2 Q0 d02 1 1.0 sys
"""


def test_run_order_is_trec_eval_order() -> None:
    run = parse_trec_run(RUN)
    # score desc; the 7.0 tie broken by docno descending (d09 before d03), rank ignored.
    assert [e.doc_id for e in run["q1"]] == ["d05", "d01", "d09", "d03", "zz"]
    pool = build_pool(DOCS, mode="run", n=3, run=[e.doc_id for e in run["q1"]])
    assert pool.doc_ids == ("d05", "d01", "d09")
    assert pool.unknown == ("zz",)
    whole = build_pool(DOCS, mode="run", run=[e.doc_id for e in run["q1"]])
    assert whole.doc_ids == ("d05", "d01", "d09", "d03")


def test_dedupe_before_selection() -> None:
    texts = {d: f"text {i % 40}" for i, d in enumerate(DOCS)}  # d40 repeats d00, ...
    hashes = {d: content_hash("T", t) for d, t in texts.items()}
    pool = build_pool(DOCS, hashes=hashes)
    assert pool.doc_ids == tuple(DOCS[:40])
    assert pool.duplicates == tuple(DOCS[40:])
    sample = build_pool(DOCS, mode="sample", n=30, seed=1, hashes=hashes)
    assert len(sample.doc_ids) == 30 and set(sample.doc_ids) <= set(DOCS[:40])
    # A run that lists a duplicate early still yields n distinct documents.
    ranked = ["d00", "d40", "d01", "d02"]
    run_pool = build_pool(DOCS, mode="run", n=3, run=ranked, hashes=hashes)
    assert run_pool.doc_ids == ("d00", "d01", "d02")
    assert run_pool.duplicates == ("d40",)


def test_content_hash_normalisation() -> None:
    assert content_hash("Title", "Some   TEXT\n here") == content_hash("title", "some text here ")
    assert content_hash("a b", "") != content_hash("a", "b")
    assert content_hash(None, None, "<p>x</p>") == content_hash("", "<p>x</p>")
    assert len(content_hash("x")) == 64


def test_run_errors_have_line_numbers() -> None:
    bad = "q1 Q0 d1 1 2.0 s\nq1 Q0 d2 x 1.0 s\nq1 Q0 d3 3 abc s\nq1 Q0 d1 4 0.5 s\nshort line\n"
    with pytest.raises(SourceError) as info:
        parse_trec_run(bad, file="run.txt")
    assert [i.line for i in info.value.issues] == [2, 3, 4, 5]
    assert "first on line 1" in info.value.issues[2].message


@pytest.mark.parametrize(
    "kwargs",
    [{"mode": "sample"}, {"mode": "run"}, {"mode": "nope"}, {"mode": "sample", "n": 0}],
)
def test_bad_pool_config(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        build_pool(DOCS, **kwargs)
    with pytest.raises(ConfigError):
        build_pool(["a", "a"])
