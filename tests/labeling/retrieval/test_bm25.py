"""labeling.retrieval.text and labeling.retrieval.bm25: the analyser, and BM25 scores against a
brute-force
implementation of the formula in labeling/retrieval/bm25.py."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest

from labeling.errors import ConfigError
from labeling.retrieval.bm25 import Bm25Index, Bm25Params, write_trec_run
from labeling.retrieval.text import document_text, strip_html, term_spans, tokenize
from ranking.io.trec import read_run

DOCS = {
    "d1": "Flutter of a wing at supersonic speeds",
    "d2": "The wings and the wing flutter problem, flutter again",
    "d3": "Heat transfer in a boundary layer",
    "d4": "",
    "d10": "boundary layers and wings",
}


def brute_force(docs: dict[str, str], query: str, k1: float, b: float) -> dict[str, float]:
    """BM25 (Lucene variant) written out from the formula, one document at a time."""
    terms = {d: tokenize(t) for d, t in docs.items()}
    n = len(docs)
    avgdl = sum(len(t) for t in terms.values()) / n
    query_terms = tokenize(query)
    df = {q: sum(1 for other in terms.values() if q in other) for q in set(query_terms)}
    out = {}
    for d, t in terms.items():
        tf = Counter(t)
        score = 0.0
        for q in query_terms:
            if not tf[q]:
                continue
            idf = math.log(1 + (n - df[q] + 0.5) / (df[q] + 0.5))
            score += idf * tf[q] / (tf[q] + k1 * (1 - b + b * len(t) / avgdl))
        out[d] = score
    return out


def test_tokenize_stopwords_stems_and_html() -> None:
    assert tokenize("The Wings of a flying Aircraft, and flutter!") == [
        "wing",
        "fli",
        "aircraft",
        "flutter",
    ]
    assert tokenize("a an the of") == [] and tokenize("x y") == []  # one-letter tokens dropped
    html = "<html><head><title>t</title><style>p{}</style></head><body><p>Flutter &amp; wings"
    html += "<script>var wing = 1;</script></p></body></html>"
    assert strip_html(html) == "Flutter & wings"
    assert document_text("Title", None, html) == "Title\nFlutter & wings"
    assert document_text("Title", "text", "<p>ignored</p>") == "Title\ntext"
    spans = term_spans("The flutter of wings")
    assert spans == [(4, 11, "flutter"), (15, 20, "wing")]


@pytest.mark.parametrize(("k1", "b"), [(1.2, 0.75), (0.9, 0.4), (2.0, 1.0), (1.2, 0.0)])
def test_scores_match_the_formula(k1: float, b: float) -> None:
    index = Bm25Index(DOCS.items(), Bm25Params(k1=k1, b=b))
    for query in ("wing flutter", "boundary layer heat", "flutter flutter", "nothing here"):
        expected = brute_force(DOCS, query, k1, b)
        got = dict(zip(index.doc_ids, index.scores(query).tolist(), strict=True))
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-12), query


def trec_order(scores: dict[str, float]) -> list[str]:
    """trec_eval's order: score descending, ties by document id descending."""
    by_id = sorted(scores, reverse=True)
    return sorted(by_id, key=lambda d: -scores[d])


def test_search_order_ties_and_depth() -> None:
    # d1 and d2 share the text: equal scores, so the tie goes to the larger id (trec_eval).
    index = Bm25Index([("d1", "wing"), ("d2", "wing"), ("d10", "wing wing body"), ("x", "tail")])
    hits = index.search("wing", depth=None)
    scores = {h.doc_id: h.score for h in hits}
    assert scores["d1"] == scores["d2"] and "x" not in scores  # no shared term: not listed
    ranked = [h.doc_id for h in hits]
    assert ranked == trec_order(scores) and ranked.index("d2") == ranked.index("d1") - 1
    assert len(index.search("wing", depth=2)) == 2
    # order(): every given document, unmatched ones last by id descending
    assert index.order("wing", ["x", "d1", "d2"]) == ["d2", "d1", "x"]
    with pytest.raises(ConfigError, match="not in the index"):
        index.order("wing", ["nope"])
    with pytest.raises(ConfigError, match="depth"):
        index.search("wing", depth=0)


@pytest.mark.parametrize("texts", [["the"], ["t", "!!"], ["the", "of and"]])
def test_documents_without_indexable_terms(texts: list[str]) -> None:
    # Stop words, one-letter words and punctuation index to nothing: every score is 0, no
    # document matches, and the order is the tie order (document id descending).
    index = Bm25Index((f"d{i}", t) for i, t in enumerate(texts))
    assert index.scores("the cat").tolist() == [0.0] * len(texts)
    assert index.search("the cat") == []
    assert index.order("cat") == [f"d{i}" for i in reversed(range(len(texts)))]
    assert index.run({"q1": "cat"}) == {"q1": []}


def test_some_documents_without_indexable_terms() -> None:
    index = Bm25Index([("a", "the"), ("b", "cats run")])
    assert [h.doc_id for h in index.search("cats")] == ["b"]
    assert index.order("cats") == ["b", "a"]


def test_bad_input() -> None:
    with pytest.raises(ConfigError, match="no documents"):
        Bm25Index([])
    with pytest.raises(ConfigError, match="twice"):
        Bm25Index([("a", "x"), ("a", "y")])
    with pytest.raises(ConfigError, match="b must be"):
        Bm25Params(b=1.5)
    with pytest.raises(ConfigError, match="k1"):
        Bm25Params(k1=float("nan"))


def test_written_run_reads_back_in_the_same_order(tmp_path: Path) -> None:
    index = Bm25Index(DOCS.items())
    run = index.run({"q1": "wing flutter", "q2": "boundary", "q3": "zzz"}, depth=10)
    assert run["q3"] == []
    path = tmp_path / "run.txt"
    path.write_text(write_trec_run(run, tag="t"))
    back = read_run(path)
    assert list(back) == ["q1", "q2"]
    for qid in back:
        assert back[qid] == {h.doc_id: h.score for h in run[qid]}  # scores exact
    lines = path.read_text().splitlines()
    assert lines[0].split()[3] == "1" and lines[0].split()[5] == "t"


def test_cranfield_index_is_complete(shared_data: Path) -> None:
    from labeling.sources.smart import load_cranfield

    cran = load_cranfield(shared_data / "cranfield")
    index = Bm25Index((d.doc_id, document_text(d.title, d.text)) for d in cran.documents)
    assert len(index) == 1400
    # Query 1 ("what similarity laws must be obeyed when constructing aeroelastic models of
    # heated high speed aircraft"): brute force over all 1,400 documents agrees on the top 10.
    texts = {d.doc_id: document_text(d.title, d.text) for d in cran.documents}
    expected = brute_force(texts, cran.topics[0].title, 1.2, 0.75)
    top = trec_order(expected)[:10]
    hits = index.search(cran.topics[0].title, depth=10)
    assert [h.doc_id for h in hits] == top
    assert [h.score for h in hits] == pytest.approx([expected[d] for d in top], rel=1e-12)


def test_stopwords_are_lucenes_as_bm25s_ships_them() -> None:
    """labeling.retrieval.text spells the stop set out (so tokenising does not import bm25s); it
    must
    stay the set bm25s uses for Lucene-style BM25."""
    from bm25s.tokenization import STOPWORDS_EN

    from labeling.retrieval.text import STOPWORDS

    assert frozenset(STOPWORDS_EN) == STOPWORDS and len(STOPWORDS) == 33


def test_importing_the_app_does_not_load_bm25s() -> None:
    """bm25s (numba, scipy) is loaded only when an index is built, not by the web app."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from app.main import create_app\n"
        "from app.kernel.settings import Settings\n"
        "create_app(Settings(dev=True, database_url='sqlite:///' + sys.argv[1]))\n"
        "print('bm25s' in sys.modules, 'numba' in sys.modules)\n"
    )
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [sys.executable, "-c", code, f"{tmp}/app.kernel.db"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    assert out == ["False", "False"]
