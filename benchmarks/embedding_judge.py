"""The ``embedding`` judge against BM25 on Cranfield (docs/machine-judges.md#the-embedding-judge).
Prints tables; asserts nothing.

(a) **As a judge of pairs.** Every query's BM25 top 30 (the service's BM25), every pair of
documents whose graded qrels differ (grade = the qrels' grade, unjudged 0): pairwise accuracy
(the judge's raw P(first better) on the side of the better grade) and Cohen's κ between the
judge's preference and the qrels' preference, each pair shown in a seeded random orientation
(so chance agreement is about 1/2 and κ ≈ 2·accuracy − 1). Judges: BM25, the embedding's cosine
alone, the ``embedding`` judge (both, standardised and summed), a linear ListNet on
heapjudge's 48 text features and the same with the cosine as a 49th feature (trained on one
half of the queries, scored on the other, then swapped).

(b) **In a study.** The second half of the queries, pools of the BM25 top 50, a consistent
person answering from the truth, the machine calibrated on the study's earlier answers (as
``benchmarks/machine_real.py`` (b) does): human judgments per query, machine answers and
κ-NDCG@10 against the truth's top 10 for ``tournament+assist`` and ``insertion+assist`` with
BM25 and with the ``embedding`` judge, and each strategy without a machine.

    python benchmarks/embedding_judge.py [--data ../shared/data] [--queries 60]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import machine_real  # noqa: E402

from labeling.machine.embedding_judge import EmbeddingJudge  # noqa: E402
from labeling.machine.judges import Bm25Judge, PairJudge  # noqa: E402
from labeling.retrieval.embedding import (  # noqa: E402
    EmbeddingIndex,
    embedding_available,
    load_embedder,
    standardize,
)
from labeling.retrieval.text import document_text  # noqa: E402
from labeling.sources.smart import load_cranfield  # noqa: E402
from ranking.data.dataset import QueryDataset  # noqa: E402
from ranking.estimators import ListNet  # noqa: E402

TOP = 30


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's κ of two binary label vectors: (p_o − p_e) / (1 − p_e)."""
    po = float(np.mean(a == b))
    pa, pb = float(np.mean(a)), float(np.mean(b))
    pe = pa * pb + (1 - pa) * (1 - pb)
    return (po - pe) / (1 - pe)


def pair_table(
    data: machine_real.Cranfield, cosine: dict[str, np.ndarray]
) -> list[tuple[str, ...]]:
    """(a): accuracy and κ per judge over the pairs of different grade among the BM25 top 30."""
    pos = {d: i for i, d in enumerate(data.extractor.doc_ids)}
    qids = list(data.topics)
    halves = (qids[::2], qids[1::2])
    held: dict[str, dict[str, np.ndarray]] = {q: {} for q in qids}
    for with_cos in (False, True):
        name = "ListNet, 48 features + cosine" if with_cos else "ListNet, 48 features"
        for train, test in ((0, 1), (1, 0)):
            x, y, g = [], [], []
            for q in halves[train]:
                docs = data.pool(q, 100)
                rows = data.rows(q, docs)
                if with_cos:
                    c = cosine[q][[pos[d] for d in docs]]
                    rows = np.hstack([rows, standardize(c)[:, None]])
                x.append(rows)
                y += [data.grades(q, docs)[d] for d in docs]
                g += [q] * len(docs)
            model = ListNet(seed=0).fit(
                QueryDataset.from_arrays(np.vstack(x), y, np.array(g, dtype=object))
            )
            for q in halves[test]:
                docs = data.pool(q, 100)[:TOP]
                rows = data.rows(q, docs)
                if with_cos:
                    c = cosine[q][[pos[d] for d in docs]]
                    rows = np.hstack([rows, standardize(c)[:, None]])
                held[q][name] = np.asarray(model.predict(rows), dtype=float)
    agree: dict[str, list[bool]] = {}
    truth_side: list[bool] = []
    rng = random.Random(0)
    for q in qids:
        docs = data.pool(q, TOP)
        grades = data.grades(q, docs)
        ix = [pos[d] for d in docs]
        bm_pos = _bm_pos(data)
        bm = data.index.scores(data.topics[q])
        cos_all = cosine[q]  # in the extractor's order
        bm_all = bm[[bm_pos[d] for d in data.extractor.doc_ids]]
        hybrid = standardize(bm_all) + standardize(cos_all)
        scores = {
            "BM25": bm_all[ix],
            "cosine alone": cos_all[ix],
            "embedding (BM25 + cosine)": hybrid[ix],
            **held[q],
        }
        for i, j in combinations(range(len(docs)), 2):
            gi, gj = grades[docs[i]], grades[docs[j]]
            if gi == gj:
                continue
            if rng.random() < 0.5:
                i, j, gi, gj = j, i, gj, gi
            truth_side.append(gi > gj)
            for name, s in scores.items():
                agree.setdefault(name, []).append(bool(s[i] > s[j]))
    truth = np.array(truth_side)
    rows = []
    for name, said in agree.items():
        s = np.array(said)
        rows.append((name, f"{np.mean(s == truth):.4f}", f"{cohen_kappa(s, truth):.4f}"))
    rows.append(("pairs", str(len(truth)), ""))
    return rows


_BM_POS: dict[int, dict[str, int]] = {}


def _bm_pos(data: machine_real.Cranfield) -> dict[str, int]:
    key = id(data.index)
    if key not in _BM_POS:
        _BM_POS[key] = {d: i for i, d in enumerate(data.index.doc_ids)}
    return _BM_POS[key]


def study_table(
    data: machine_real.Cranfield, judge: EmbeddingJudge, limit: int | None
) -> list[tuple[str, ...]]:
    """(b): human judgments per query with each machine on the second half of the queries."""
    qids = list(data.topics)
    held = qids[len(qids) // 2 :]
    held = held[:limit] if limit else held
    judges: dict[str, PairJudge] = {"BM25": Bm25Judge(data.index), "embedding": judge}
    rows = []
    for base in ("tournament", "insertion"):
        for label, j in (("none", judges["BM25"]), *judges.items()):
            name = base if label == "none" else f"{base}+assist"
            study = machine_real.Study(name)
            for q in held:
                study.run(machine_real.cranfield_query(data, q, j))
            h, m, kn = study.outcome.row()
            worst = min(study.outcome.kndcg)
            rows.append((name, label, f"{h:.1f}", f"{m:.1f}", f"{kn:.4f}", f"{worst:.4f}"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=machine_real.DATA[0])
    parser.add_argument("--queries", type=int, default=None, help="(b): at most this many")
    args = parser.parse_args()
    machine_real.DATA[0] = args.data
    if not (args.data / "cranfield").is_dir():
        print(f"no Cranfield under {args.data}; nothing to measure")
        return
    if not embedding_available():
        print("wordllama is not installed (pip install 'heapjudge[semantic]'); nothing to measure")
        return
    started = time.perf_counter()
    data = machine_real.load_cranfield_data()
    c = load_cranfield(args.data / "cranfield")
    texts = {d.doc_id: document_text(d.title, d.text) for d in c.documents}
    t0 = time.perf_counter()
    emb = EmbeddingIndex(((d, texts[d]) for d in data.index.doc_ids), load_embedder())
    print(f"embedded {len(emb)} documents in {time.perf_counter() - t0:.1f} s")
    judge = EmbeddingJudge(data.index, emb)
    epos = {d: i for i, d in enumerate(emb.doc_ids)}
    order = [epos[d] for d in data.extractor.doc_ids]
    cosine = {q: emb.scores(t)[order] for q, t in data.topics.items()}
    machine_real.print_table(
        f"(a) Cranfield, pairs of different grade among each query's BM25 top {TOP}",
        pair_table(data, cosine),
        ("judge", "pairwise accuracy", "κ with the qrels"),
    )
    machine_real.print_table(
        "(b) Cranfield, second half of the queries, pools of the BM25 top 50",
        study_table(data, judge, args.queries),
        ("strategy", "machine", "human / query", "machine / query", "κ-NDCG@10", "worst query"),
    )
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
