"""The field of systems of the campaign benchmark (:mod:`benchmarks.campaign`, whose
docstring says what it holds): Cranfield's and MQ2008's runs, their labels and their pools, and
the degraded copies of a run; split out so that each file stays one subject."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: Depth of the pool every budget is a share of.
DEPTH = 100

Qrels = dict[str, dict[str, int]]
Run = dict[str, list[str]]  # query → documents best first


@dataclass
class Campaign:
    """A collection's truth and its field of systems (each ranked to depth 100)."""

    name: str
    qrels: Qrels
    runs: dict[str, Run] = field(default_factory=dict)
    #: query → document → feature vector, for every pooled document (continuous active learning)
    features: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)

    def add(self, name: str, run: Run) -> None:
        self.runs[name] = {q: docs[:DEPTH] for q, docs in run.items()}

    def keep_features(self, matrices: Mapping[str, tuple[Sequence[str], np.ndarray]]) -> None:
        """Per query, the rows of ``matrices`` (document ids, their vectors) that the runs pool."""
        for q, (docs, x) in matrices.items():
            pooled = {d for run in self.runs.values() for d in run.get(q, ())}
            self.features[q] = {d: x[i] for i, d in enumerate(docs) if d in pooled}


def ranked(doc_ids: Sequence[str], scores: np.ndarray) -> list[str]:
    """``doc_ids`` by score descending, ties by document id descending (trec_eval's order)."""
    ids = np.asarray(doc_ids, dtype=object)
    tie = np.argsort(np.argsort(ids.astype(str))[::-1])  # rank of the id, descending
    order = np.lexsort((tie, -np.asarray(scores, dtype=np.float64)))
    return [str(ids[i]) for i in order]


# --------------------------------------------------------------------------- degraded copies


def shuffled_top(run: Run, n: int, seed: int) -> Run:
    """The top ``n`` of every query in a seeded random order."""
    rng = random.Random(seed)
    out = {}
    for q, docs in run.items():
        head = list(docs[:n])
        rng.shuffle(head)
        out[q] = head + list(docs[n:])
    return out


def diluted(run: Run, pool: Mapping[str, Sequence[str]], share: float, seed: int) -> Run:
    """Each rank replaced, with probability ``share``, by a random document of the query's
    candidates (a noisy system)."""
    rng = random.Random(seed)
    out = {}
    for q, docs in run.items():
        candidates = list(pool[q])
        new: list[str] = []
        for d in docs:
            new.append(rng.choice(candidates) if rng.random() < share else d)
        out[q] = list(dict.fromkeys(new))
    return out


def reversed_top(run: Run, n: int) -> Run:
    return {q: list(reversed(docs[:n])) + list(docs[n:]) for q, docs in run.items()}


# --------------------------------------------------------------------------- trained models


def _models(quick: bool) -> list[tuple[str, Callable[[], object], str]]:
    """(name, factory, feature subset name) of the trained systems."""
    from ranking.estimators import ListMLE, ListNet, RankNet, RankSVM

    models: list[tuple[str, Callable[[], object], str]] = [
        ("listnet", lambda: ListNet(seed=0, epochs=150), "all"),
        ("ranknet", lambda: RankNet(seed=0, epochs=150), "bm25+lm"),
        ("ranksvm", lambda: RankSVM(iterations=150), "all"),
        ("listmle", lambda: ListMLE(seed=0, epochs=150), "lm"),
    ]
    return models[:2] if quick else models


def cross_fitted(
    rows: Mapping[str, tuple[np.ndarray, np.ndarray, list[str]]],
    groups: Sequence[Sequence[str]],
    columns: np.ndarray,
    make: Callable[[], object],
) -> Run:
    """Each group of queries ranked by a model trained on the other groups' queries."""
    from ranking.data.dataset import QueryDataset

    def dataset(qids: Sequence[str]) -> QueryDataset:
        return QueryDataset.from_arrays(
            np.vstack([rows[q][0][:, columns] for q in qids]),
            np.concatenate([rows[q][1] for q in qids]),
            np.array([q for q in qids for _ in range(len(rows[q][1]))], dtype=object),
        )

    out: Run = {}
    for i, held_out in enumerate(groups):
        train = [q for j, g in enumerate(groups) if j != i for q in g if rows[q][1].size]
        model = make()
        model.fit(dataset(train))  # type: ignore[attr-defined]
        for q in held_out:
            scores = model.predict(rows[q][0][:, columns])  # type: ignore[attr-defined]
            out[q] = ranked(rows[q][2], scores)
    return out


# --------------------------------------------------------------------------- Cranfield


def cranfield(data: Path, quick: bool) -> Campaign:
    """Cranfield's field of systems (module docstring)."""
    from labeling.machine.features import FEATURE_NAMES, FeatureExtractor
    from labeling.retrieval.bm25 import Bm25Index, Bm25Params
    from labeling.retrieval.text import document_text
    from labeling.sources.smart import load_cranfield
    from ranking.data.dataset import normalize_per_query

    c = load_cranfield(data / "cranfield")
    qrels: Qrels = {}
    for e in c.qrels:
        qrels.setdefault(e.query_id, {})[e.doc_id] = e.grade
    camp = Campaign("Cranfield", qrels)
    topics = {t.query_id: t.title for t in c.topics}
    texts = [(d.doc_id, document_text(d.title, d.text)) for d in c.documents]
    settings = [(1.2, 0.75), (0.9, 0.4), (2.0, 0.75), (1.2, 0.3), (0.5, 1.0)]
    for k1, b in settings[:3] if quick else settings:
        index = Bm25Index(texts, Bm25Params(k1, b))
        camp.add(
            f"bm25 k1={k1} b={b}",
            {q: [h.doc_id for h in index.search(t, DEPTH)] for q, t in topics.items()},
        )
    fx = FeatureExtractor([(d.doc_id, d.title, d.text) for d in c.documents])
    single = [
        "title.bm25", "body.bm25", "whole.lm_dir", "whole.lm_jm", "whole.lm_abs",
        "title.lm_dir", "body.lm_jm", "body.lm_abs", "whole.tfidf_sum", "title.covered_ratio",
    ]  # fmt: skip
    if quick:
        single = single[:6]
    ids = list(fx.doc_ids)
    runs: dict[str, Run] = {name: {} for name in single}
    rows: dict[str, tuple[np.ndarray, np.ndarray, list[str]]] = {}
    normalised: dict[str, tuple[Sequence[str], np.ndarray]] = {}
    j_bm25 = FEATURE_NAMES.index("whole.bm25")
    for q, m in fx.extract(topics).items():
        # the service's stored text features: normalised per query over the collection
        # (app.training.features.normalized_matrix)
        whole = normalize_per_query(m.values, np.array([0, m.values.shape[0]]))
        normalised[q] = (ids, whole.astype(np.float32))
        for name in single:
            runs[name][q] = ranked(ids, m.values[:, FEATURE_NAMES.index(name)])[:DEPTH]
        bm25 = m.values[:, j_bm25]
        top = np.lexsort((np.arange(len(bm25)), -bm25))[:DEPTH]
        x = whole[top].astype(np.float64)
        grades = np.array([qrels.get(q, {}).get(ids[i], 0) for i in top], dtype=float)
        rows[q] = (x, grades, [ids[i] for i in top])
    for name in single:
        camp.add(name, runs[name])
    MODELS = ("bm25", "lm_dir", "lm_jm", "lm_abs")
    subsets = {
        "all": np.arange(len(FEATURE_NAMES)),
        "bm25+lm": np.array([i for i, n in enumerate(FEATURE_NAMES) if n.endswith(MODELS)]),
        "lm": np.array([i for i, n in enumerate(FEATURE_NAMES) if "lm_" in n]),
    }  # fmt: skip
    qids = list(rows)
    halves = (qids[::2], qids[1::2])
    for name, make, subset in _models(quick):
        camp.add(f"{name} ({subset})", cross_fitted(rows, halves, subsets[subset], make))
    bm25 = camp.runs["bm25 k1=1.2 b=0.75"]
    camp.add("bm25, top 10 shuffled", shuffled_top(bm25, 10, seed=1))
    candidates = {q: ids for q in topics}
    camp.add("bm25, 30% random", diluted(bm25, candidates, 0.3, seed=2))
    camp.add("lm_dir, top 20 reversed", reversed_top(camp.runs["whole.lm_dir"], 20))
    camp.keep_features(normalised)
    return camp


# --------------------------------------------------------------------------- MQ2008


def mq2008(data: Path, quick: bool) -> Campaign:
    """MQ2008's field of systems (module docstring)."""
    from ranking.io.letor import concat, read_letor

    parts = [read_letor(data / "letor4-mq2008" / f"S{i}.txt") for i in range(1, 6)]
    whole = concat(parts)
    qrels: Qrels = {}
    rows: dict[str, tuple[np.ndarray, np.ndarray, list[str]]] = {}
    off = whole.offsets
    for i in range(len(off) - 1):
        a, b = int(off[i]), int(off[i + 1])
        q = str(whole.qids[a])
        docs = [str(d) for d in whole.docids[a:b]]
        qrels[q] = {d: int(g) for d, g in zip(docs, whole.labels[a:b], strict=True)}
        rows[q] = (whole.features[a:b], whole.labels[a:b].astype(float), docs)
    camp = Campaign("MQ2008", qrels)
    # LETOR 4.0 numbering (1-based): 11-15 TF-IDF, 21-25 BM25, 26-30 LMIR.ABS, 31-35 LMIR.DIR,
    # 36-40 LMIR.JM (body, anchor, title, URL, whole document); 41 PageRank.
    single = {
        "tfidf body": 11, "tfidf whole": 15, "bm25 body": 21, "bm25 anchor": 22,
        "bm25 title": 23, "bm25 whole": 25, "lm.abs body": 26, "lm.abs whole": 30,
        "lm.dir body": 31, "lm.dir title": 33, "lm.dir whole": 35, "lm.jm body": 36,
        "lm.jm whole": 40, "pagerank": 41,
    }  # fmt: skip
    if quick:
        keep = (
            "tfidf body",
            "bm25 anchor",
            "bm25 whole",
            "lm.abs whole",
            "lm.dir body",
            "pagerank",
        )
        single = {name: single[name] for name in keep}
    for name, feature in single.items():
        camp.add(name, {q: ranked(docs, x[:, feature - 1]) for q, (x, _y, docs) in rows.items()})
    subsets = {
        "all": np.arange(46),
        "bm25+lm": np.arange(20, 40),
        "lm": np.arange(25, 40),
    }
    groups = [[str(q) for q in dict.fromkeys(p.qids)] for p in parts]
    for name, make, subset in _models(quick):
        camp.add(f"{name} ({subset})", cross_fitted(rows, groups, subsets[subset], make))
    base = camp.runs["bm25 whole"]
    camp.add("bm25 whole, top 10 shuffled", shuffled_top(base, 10, seed=1))
    camp.add("bm25 whole, 30% random", diluted(base, {q: r[2] for q, r in rows.items()}, 0.3, 2))
    camp.add("lm.dir body, top 20 reversed", reversed_top(camp.runs["lm.dir body"], 20))
    camp.keep_features({q: (docs, x) for q, (x, _y, docs) in rows.items()})
    return camp
