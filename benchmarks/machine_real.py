"""Machine judges on real data: human judgments per query with and without ``+assist``
(docs/machine-judges.md#real-data). Prints tables; asserts nothing.

Every query is a top-10 study of its pool, driven by :func:`labeling.study.simulation.drive`
with a consistent person who answers from the truth (a total order: the graded labels, a
seeded order inside a grade) and, for ``+assist``, the machine as a
:class:`labeling.machine.opinion.JudgeOpinion` whose raw probabilities pass through the
study's :class:`labeling.machine.calibration.Calibrator` (isotonic, the default prior),
learned from the human answers of the study's earlier queries, as
:mod:`labeling.study.assisted` does. Every strategy gets the machine's order as its initial
order (the prior of ``prior``). κ-NDCG@10 is against the truth's top 10.

(a) **MQ2008** (LETOR 4.0, its partitions S1..S5 in ``letor4-mq2008`` under ``--data``): the
queries with more than 10 documents; the machine for the queries of partition S_i is a linear
ListNet trained on the LETOR fold whose test part is S_i (three partitions train, one
validates), judging through
:class:`labeling.machine.judges.FeatureModelJudge` on the stored (QueryLevelNorm) vectors.

(b) **Cranfield** (``cranfield`` under ``--data``): pools are the BM25 top 50, unjudged documents
grade 0. The machine is a linear ListNet trained on heapjudge's own text features (the
service's :func:`app.training.features.collection_extractor` and
:func:`app.training.features.normalized_matrix`: normalised per query over the collection, as
stored) of the first half of the queries (graded qrels, BM25 top 100), judging the second
half; and :class:`labeling.machine.judges.Bm25Judge` on the same queries.

(c) **Cranfield as the study proceeds**: all queries in order; before 20 are finished the machine
is BM25, then a ListNet trained on the finished queries' study results (their top 10 as
κ-labels, :func:`ranking.data.dataset.dataset_from_topk`), retrained every 20 finished
queries; at a retrain the study calibration is refitted on every earlier human answer with
the new model's raw probabilities. Per block of 20 queries: human judgments per query with
``tournament+assist`` (``--curve``), machine answers, κ-NDCG@10, and ``tournament`` alone on
the BM25 order.

    python benchmarks/machine_real.py [--data ../shared/data]   # everything
    python benchmarks/machine_real.py --only cranfield  # (b) and (c)
    python benchmarks/machine_real.py --queries 100     # the first 100 queries of each part
    python benchmarks/machine_real.py --cold-start --queries 40   # cold start, bad machines
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from app.training.features import collection_extractor, normalized_matrix  # noqa: E402
from benchmarks.machine_cold import cold_start_tables  # noqa: E402
from labeling.machine.calibration import Calibrator  # noqa: E402
from labeling.machine.features import FeatureExtractor  # noqa: E402
from labeling.machine.judges import (  # noqa: E402
    Bm25Judge,
    FeatureModelJudge,
    JudgeQuery,
    PairJudge,
)
from labeling.machine.opinion import JudgeOpinion  # noqa: E402
from labeling.machine.trust import AuditMonitor, StratumEvidence  # noqa: E402
from labeling.retrieval.bm25 import Bm25Index  # noqa: E402
from labeling.retrieval.text import document_text  # noqa: E402
from labeling.sources.smart import load_cranfield  # noqa: E402
from labeling.strategies.assist import AssistStrategy  # noqa: E402
from labeling.strategies.registry import resolve_strategy  # noqa: E402
from labeling.study.assisted import STUDY_ROUNDING  # noqa: E402
from labeling.study.simulation import Assessor, drive  # noqa: E402
from ranking.data.dataset import QueryDataset, dataset_from_topk  # noqa: E402
from ranking.data.folds import letor4_folds  # noqa: E402
from ranking.estimators import ListNet  # noqa: E402
from ranking.metrics import kappa_ndcg  # noqa: E402

K = 10
STRATEGIES = ("tournament", "prior", "insertion")
BLOCK = 20
DATA = [REPO.parent / "shared" / "data"]  # --data


@dataclass
class RealQuery:
    """One query's study: its pool, the true order (best first), the machine's order, and the
    judge that answers for it."""

    qid: str
    truth: list[str]
    order: list[str]
    judge: PairJudge
    query: JudgeQuery


@dataclass
class Outcome:
    humans: list[int] = field(default_factory=list)
    machines: list[int] = field(default_factory=list)
    kndcg: list[float] = field(default_factory=list)

    def row(self) -> tuple[float, float, float]:
        return (
            float(np.mean(self.humans)),
            float(np.mean(self.machines)),
            float(np.mean(self.kndcg)),
        )


def true_order(grades: dict[str, float], seed: str) -> list[str]:
    """Best first: by grade, a seeded random order inside a grade."""
    rng = random.Random(seed)
    ids = sorted(grades)
    rng.shuffle(ids)
    tie = {d: i for i, d in enumerate(ids)}
    return sorted(ids, key=lambda d: (-grades[d], tie[d]))


def kappa_ndcg10(truth: Sequence[str], produced: Sequence[str]) -> float:
    """κ-NDCG@10 of the produced order (top, then rest) against the truth's top 10."""
    label = {d: K - i for i, d in enumerate(truth[:K])}
    rank = {d: i for i, d in enumerate(produced)}
    labels = np.array([[label.get(d, 0) for d in truth]], dtype=float)
    scores = np.array([[len(truth) - rank[d] for d in truth]], dtype=float)
    return float(kappa_ndcg(labels, scores, at=K)[0])


class Study:
    """One study: queries in order, the person answering from the truth, the machine (for
    ``+assist`` names) through the study's calibrator, learned query by query."""

    def __init__(self, strategy: str, seed: int = 0) -> None:
        self.cls = resolve_strategy(strategy)
        self.assist = "+assist" in strategy
        self.seed = seed
        self.calibrator = Calibrator("isotonic")
        #: The study's audit test, carried from query to query (the service's alarm).
        self.audits = AuditMonitor()
        #: The evidence of the assist rule's bound per stratum, carried from query to query.
        self.strata = StratumEvidence()
        #: Audits seen when the alarm was raised (None: never).
        self.alarm_at: int | None = None
        #: Every human answer on a pair the machine had an opinion on: (query, a, b, a won).
        self.evidence: list[tuple[JudgeQuery, str, str, bool]] = []
        self.outcome = Outcome()

    def run(self, q: RealQuery) -> list[str]:
        """Study query ``q``; returns the produced order (top, then rest)."""
        n = len(q.truth)
        person = Assessor({d: float(n - i) for i, d in enumerate(q.truth)}, seed=self.seed)
        opinion = (
            JudgeOpinion(
                q.judge,
                q.query,
                self.calibrator,
                prior_audits=self.audits,
                stratum_evidence=self.strata,
            )
            if self.assist
            else None
        )
        rng = random.Random(f"{self.seed}:{q.qid}")
        top, rest, humans, machines, state = drive(
            self.cls, q.order, K, person, machine=opinion, seed=rng.getrandbits(32)
        )
        if isinstance(state, AssistStrategy) and opinion is not None:
            self.audits = state.monitor
            self.strata = state.trust
            if self.audits.alarmed and self.alarm_at is None:
                self.alarm_at = self.audits.audits
        if opinion is not None and isinstance(state, AssistStrategy) and state.evidence:
            raw = [round(opinion.raw[(a, b)], STUDY_ROUNDING) for a, b, _, _ in state.evidence]
            self.calibrator.update(raw, [won for _, _, _, won in state.evidence])
            self.evidence += [(q.query, a, b, won) for a, b, _, won in state.evidence]
        produced = [*top, *rest]
        self.outcome.humans.append(humans)
        self.outcome.machines.append(machines)
        self.outcome.kndcg.append(kappa_ndcg10(q.truth, produced))
        return produced

    def recalibrate(self, judge: PairJudge) -> None:
        """A new judge: refit the calibration on every earlier answer with its raw
        probabilities; the bound's evidence starts afresh (the strata's stakes are not
        stored)."""
        self.calibrator = Calibrator("isotonic")
        self.strata = StratumEvidence()
        if self.evidence:
            raw = [
                round(float(judge.prefer(jq, [(a, b)])[0]), STUDY_ROUNDING)
                for jq, a, b, _ in self.evidence
            ]
            self.calibrator.update(raw, [won for *_, won in self.evidence])


def print_table(title: str, rows: list[tuple[str, ...]], header: tuple[str, ...]) -> None:
    print(f"\n{title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")


def strategy_rows(queries: list[RealQuery], label: str) -> list[tuple[str, ...]]:
    rows = []
    for base in STRATEGIES:
        for name in (base, f"{base}+assist"):
            study = Study(name)
            for q in queries:
                study.run(q)
            h, m, kn = study.outcome.row()
            rows.append((label, name, f"{h:.1f}", f"{m:.1f}", f"{kn:.4f}"))
    return rows


# --------------------------------------------------------------------------- (a) MQ2008


class StoredVectors:
    """One query's stored LETOR vectors, read the way :class:`FeatureModelJudge` reads an
    extractor (``doc_ids``, ``names``, ``matrix(text)``)."""

    def __init__(self, doc_ids: Sequence[str], x: np.ndarray) -> None:
        self.doc_ids = tuple(doc_ids)
        self.names = tuple(f"f{i + 1}" for i in range(x.shape[1]))
        self.x = x

    def matrix(self, _text: str) -> np.ndarray:
        return self.x


def mq2008_queries(limit: int | None) -> list[RealQuery]:
    root = DATA[0] / "letor4-mq2008"
    parts = {f"S{i}": QueryDataset.read(root / f"S{i}.txt") for i in range(1, 6)}
    out: list[RealQuery] = []
    for fold in letor4_folds():
        train = QueryDataset.concat([parts[p] for p in fold.train])
        model = ListNet(seed=0, patience=100).fit(train, parts[fold.vali[0]])
        test = parts[fold.test[0]]
        for a, b in pairwise(test.offsets):
            if b - a <= K:
                continue
            qid = str(test.qid[a])
            docs = [f"{qid}:{j}" for j in range(b - a)]
            grades = dict(zip(docs, test.labels[a:b].tolist(), strict=True))
            x = test.X[a:b]
            judge = FeatureModelJudge(
                StoredVectors(docs, x),  # type: ignore[arg-type]
                model,
                name=f"model:mq2008-{fold.name}",
                normalize=False,
            )
            scores = model.predict(x)
            order = [docs[j] for j in np.lexsort((np.arange(len(docs)), -scores))]
            out.append(RealQuery(qid, true_order(grades, qid), order, judge, JudgeQuery(qid, "")))
    out.sort(key=lambda q: q.qid)
    return out[:limit] if limit else out


# --------------------------------------------------------------------------- (b), (c) Cranfield


@dataclass
class Cranfield:
    topics: dict[str, str]
    qrels: dict[str, dict[str, int]]
    index: Bm25Index
    extractor: FeatureExtractor
    features: dict[str, np.ndarray]  # per query: normalised features of every document

    def pool(self, qid: str, depth: int) -> list[str]:
        return [h.doc_id for h in self.index.search(self.topics[qid], depth)]

    def grades(self, qid: str, docs: Sequence[str]) -> dict[str, float]:
        return {d: float(self.qrels.get(qid, {}).get(d, 0)) for d in docs}

    def rows(self, qid: str, docs: Sequence[str]) -> np.ndarray:
        pos = {d: i for i, d in enumerate(self.extractor.doc_ids)}
        return self.features[qid][[pos[d] for d in docs]]


def load_cranfield_data() -> Cranfield:
    c = load_cranfield(DATA[0] / "cranfield")
    docs = [(d.doc_id, d.title, d.text, None) for d in c.documents]
    extractor = collection_extractor(docs)  # the service's extractor over the texts
    index = Bm25Index([(d.doc_id, document_text(d.title, d.text)) for d in c.documents])
    topics = {t.query_id: t.title for t in c.topics}
    qrels: dict[str, dict[str, int]] = {}
    for e in c.qrels:
        qrels.setdefault(e.query_id, {})[e.doc_id] = e.grade
    features = {q: normalized_matrix(extractor, text) for q, text in topics.items()}
    return Cranfield(topics, qrels, index, extractor, features)


def graded_model(data: Cranfield, qids: Sequence[str]) -> ListNet:
    """ListNet on the graded qrels over each query's BM25 top 100."""
    x, y, q = [], [], []
    for qid in qids:
        docs = data.pool(qid, 100)
        x.append(data.rows(qid, docs))
        y += [data.grades(qid, docs)[d] for d in docs]
        q += [qid] * len(docs)
    return ListNet(seed=0).fit(QueryDataset.from_arrays(np.vstack(x), y, np.array(q, dtype=object)))


def cranfield_query(data: Cranfield, qid: str, judge: PairJudge) -> RealQuery:
    """The BM25 top 50, in the machine's order: a model's scores (ties in BM25 order), or
    BM25's own."""
    docs = data.pool(qid, 50)
    jq = JudgeQuery(qid, data.topics[qid])
    order = docs
    if isinstance(judge, FeatureModelJudge):
        pos = {d: i for i, d in enumerate(data.extractor.doc_ids)}
        scores = judge.scores(jq.text)[[pos[d] for d in docs]]
        order = [docs[j] for j in np.lexsort((np.arange(len(docs)), -scores))]
    return RealQuery(qid, true_order(data.grades(qid, docs), qid), order, judge, jq)


def cranfield_tables(data: Cranfield, limit: int | None) -> list[tuple[str, ...]]:
    qids = list(data.topics)
    half = len(qids) // 2
    model = graded_model(data, qids[:half])
    judges: dict[str, PairJudge] = {
        "ListNet (first half)": FeatureModelJudge(data.extractor, model, name="model:first-half"),
        "BM25": Bm25Judge(data.index),
    }
    held = qids[half:][:limit] if limit else qids[half:]
    rows = []
    for label, judge in judges.items():
        queries = [cranfield_query(data, q, judge) for q in held]
        rows += strategy_rows(queries, label)
    return rows


def curve(data: Cranfield, limit: int | None, strategy: str) -> list[tuple[str, ...]]:
    qids = list(data.topics)[:limit] if limit else list(data.topics)
    bm25 = Bm25Judge(data.index)
    assisted, alone = Study(f"{strategy}+assist"), Study(strategy)
    judge: PairJudge = bm25
    name = "BM25"
    finished: dict[str, tuple[list[str], list[str]]] = {}
    rows = []
    for start in range(0, len(qids), BLOCK):
        block = qids[start : start + BLOCK]
        for qid in block:
            q = cranfield_query(data, qid, judge)
            produced = assisted.run(q)
            alone.run(cranfield_query(data, qid, bm25))
            finished[qid] = (produced[:K], produced[K:])
        n = len(block)
        done = assisted.outcome
        h, m, kn = (np.mean(v[-n:]) for v in (done.humans, done.machines, done.kndcg))
        rows.append(
            (
                f"{start + 1}–{start + n}",
                name,
                f"{np.mean(alone.outcome.humans[-n:]):.1f}",
                f"{h:.1f}",
                f"{m:.1f}",
                f"{kn:.4f}",
            )
        )
        features = {
            q: dict(zip([*top, *rest], data.rows(q, [*top, *rest]), strict=True))
            for q, (top, rest) in finished.items()
        }
        model = ListNet(seed=0).fit(dataset_from_topk(features, finished, K))
        name = f"ListNet on {len(finished)} finished"
        judge = FeatureModelJudge(data.extractor, model, name=f"model:study-{len(finished)}")
        assisted.recalibrate(judge)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=("mq2008", "cranfield"), default=None)
    parser.add_argument("--queries", type=int, default=None, help="at most this many per part")
    parser.add_argument("--data", type=Path, default=DATA[0])
    parser.add_argument("--curve", choices=STRATEGIES, default="tournament", help="for (c)")
    parser.add_argument(
        "--cold-start",
        action="store_true",
        help="the cold-start and bad-machine tables (docs/machine-judges.md#cold-start)",
    )
    args = parser.parse_args()
    DATA[0] = args.data
    if not args.data.is_dir():
        print(f"no data under {args.data}; nothing to measure")
        return
    if args.cold_start:
        started = time.perf_counter()
        data = load_cranfield_data() if args.only in (None, "cranfield") else None
        mq = mq2008_queries(args.queries) if args.only in (None, "mq2008") else None
        cold_start_tables(data, mq, args.queries, sys.modules[__name__])
        print(f"\n{time.perf_counter() - started:.0f} s")
        return
    header = ("machine", "strategy", "human / query", "machine / query", "κ-NDCG@10")
    started = time.perf_counter()
    if args.only in (None, "mq2008"):
        queries = mq2008_queries(args.queries)
        sizes = [len(q.truth) for q in queries]
        print_table(
            f"(a) MQ2008: {len(queries)} queries with more than {K} documents "
            f"({min(sizes)}–{max(sizes)}, mean {np.mean(sizes):.1f}); machine: ListNet of the "
            "other folds",
            strategy_rows(queries, "ListNet (other folds)"),
            header,
        )
    if args.only in (None, "cranfield"):
        data = load_cranfield_data()
        print_table(
            "(b) Cranfield, second half of the queries, pools of the BM25 top 50",
            cranfield_tables(data, args.queries),
            header,
        )
        print_table(
            f"(c) Cranfield as the study proceeds ({args.curve}+assist; the model retrained "
            f"every {BLOCK} finished queries)",
            curve(data, args.queries, args.curve),
            (
                "queries",
                "machine",
                f"{args.curve} alone, human / query",
                f"{args.curve}+assist, human / query",
                "machine / query",
                "κ-NDCG@10",
            ),
        )
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
