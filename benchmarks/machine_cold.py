"""The cold-start and bad-machine tables of ``benchmarks/machine_real.py --cold-start``
(docs/machine-judges.md#cold-start). Prints; asserts nothing.

Each study starts from an empty calibration and no audits and takes the queries in collection
order, as a team runs one: the pure equivalent of the service path (the service freezes the
study's earlier human answers as the task's calibration, whose answers are the assist rule's
evidence, and carries the audit test from task to task). Per machine and strategy: mean
κ-NDCG@10 of ``X+assist`` against the person-only result (with the consistent person the truth's
top 10, which ``X`` alone recovers exactly), its per-query minimum, the same over the first 10
queries, and the human judgments as a share of ``X`` alone on the same queries and order.
On Cranfield also with the machine trained as the study proceeds (BM25 first, then a ListNet
on the finished queries' results).

Bad machines, on Cranfield with BM25's pool order: BM25 reversed (P(first better) 1 − p),
a random machine (a seeded uniform p per pair) and one right on every pair except those with a
document of the true top 10, where it is wrong (confidence 0.95 either way). For them, the
audits seen when the alarm was raised (— when it never was).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from types import ModuleType
from typing import Any

import numpy as np

from labeling.machine.judges import Bm25Judge, JudgeQuery, PairJudge

BASES = ("tournament", "insertion")
FIRST = 10


class Reversed:
    """A judge's opinion turned around."""

    def __init__(self, judge: PairJudge) -> None:
        self.judge = judge
        self.version = f"reversed/{judge.version}"

    def prefer(self, query: JudgeQuery, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        return 1.0 - np.asarray(self.judge.prefer(query, pairs), dtype=float)


class RandomJudge:
    """A seeded uniform P(first better) per unordered pair (consistent in both orders)."""

    version = "random/seed=0"

    def prefer(self, query: JudgeQuery, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        out = []
        for a, b in pairs:
            x, y = sorted((a, b))
            h = hashlib.blake2b(f"{query.query_id}/{x}/{y}".encode(), digest_size=8).digest()
            u = int.from_bytes(h, "big") / 2.0**64
            out.append(u if a == x else 1.0 - u)
        return np.asarray(out, dtype=float)


class TopWrong:
    """Right on every pair (confidence 0.95) except those with a document of the true top k,
    where it names the other side."""

    version = "topwrong/0.95"

    def __init__(self, truth: dict[str, list[str]], k: int) -> None:
        self.rank = {q: {d: i for i, d in enumerate(order)} for q, order in truth.items()}
        self.k = k

    def prefer(self, query: JudgeQuery, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        rank = self.rank[query.query_id]
        out = []
        for a, b in pairs:
            first_better = rank[a] < rank[b]
            if min(rank[a], rank[b]) < self.k:
                first_better = not first_better
            out.append(0.95 if first_better else 0.05)
        return np.asarray(out, dtype=float)


def _row(
    mr: ModuleType, label: str, base: str, queries: Sequence[Any]
) -> tuple[tuple[str, ...], int | None]:
    alone, helped = mr.Study(base), mr.Study(f"{base}+assist")
    for q in queries:
        alone.run(q)
        helped.run(q)
    return _summary(label, base, alone, helped, len(queries)), helped.alarm_at


def _proceeding_row(mr: ModuleType, data: Any, qids: Sequence[str], base: str) -> tuple[str, ...]:
    """Cranfield with the machine trained as the study proceeds (``machine_real.py``'s (c),
    from a cold start): BM25 until ``mr.BLOCK`` queries are finished, then a ListNet trained
    on the finished queries' results, retrained every ``mr.BLOCK``; at a retrain the study's
    calibration is refitted and the bound's evidence starts afresh (a new judge version, as in
    the service). ``X`` alone runs on the same orders."""
    alone, helped = mr.Study(base), mr.Study(f"{base}+assist")
    judge: Any = Bm25Judge(data.index)
    finished: dict[str, tuple[list[str], list[str]]] = {}
    for i, qid in enumerate(qids):
        if i and i % mr.BLOCK == 0:
            features = {
                q: dict(zip([*top, *rest], data.rows(q, [*top, *rest]), strict=True))
                for q, (top, rest) in finished.items()
            }
            model = mr.ListNet(seed=0).fit(mr.dataset_from_topk(features, finished, mr.K))
            judge = mr.FeatureModelJudge(data.extractor, model, name=f"model:study-{i}")
            helped.recalibrate(judge)
        q = mr.cranfield_query(data, qid, judge)
        alone.run(q)
        produced = helped.run(q)
        finished[qid] = (produced[: mr.K], produced[mr.K :])
    label = f"Cranfield ({len(qids)}): BM25, then ListNet on the finished queries"
    return _summary(label, base, alone, helped, len(qids))


def _summary(label: str, base: str, alone: Any, helped: Any, count: int) -> tuple[str, ...]:
    kn = np.asarray(helped.outcome.kndcg)
    h, h0 = np.asarray(helped.outcome.humans), np.asarray(alone.outcome.humans)
    m = np.asarray(helped.outcome.machines)
    first = slice(0, min(FIRST, count))
    return (
        label,
        f"{base}+assist",
        f"{kn.mean():.4f}",
        f"{kn.min():.3f}",
        f"{kn[first].mean():.4f}",
        f"{h0.mean():.1f}",
        f"{h.mean():.1f}",
        f"{m.mean():.1f}",
        f"{100 * h.sum() / h0.sum():.0f}%",
        f"{100 * h[first].sum() / h0[first].sum():.0f}%",
        str(helped.audits.audits),
        "—" if helped.alarm_at is None else str(helped.alarm_at),
    )


HEADER = (
    "machine",
    "strategy",
    "κ-NDCG@10 mean",
    "min",
    "first 10",
    "humans alone",
    "humans +assist",
    "machine",
    "humans %",
    "first 10 %",
    "audits",
    "alarm at audit",
)


def cold_start_tables(
    data: Any, mq: Sequence[Any] | None, limit: int | None, mr: ModuleType
) -> None:
    """Print the cold-start table and the bad-machine table."""
    rows: list[tuple[str, ...]] = []
    bad: list[tuple[str, ...]] = []
    if mq:
        for base in BASES:
            rows.append(_row(mr, f"MQ2008 ({len(mq)}): ListNet, other folds", base, mq)[0])
    if data is not None:
        qids = list(data.topics)[:limit] if limit else list(data.topics)
        bm25 = Bm25Judge(data.index)
        queries = [mr.cranfield_query(data, q, bm25) for q in qids]
        for base in BASES:
            rows.append(_row(mr, f"Cranfield ({len(qids)}): BM25", base, queries)[0])
        for base in BASES:
            rows.append(_proceeding_row(mr, data, qids, base))
        truth = {q.qid: q.truth for q in queries}
        machines: dict[str, Any] = {
            "BM25 reversed": Reversed(bm25),
            "random": RandomJudge(),
            "wrong on top-10 pairs": TopWrong(truth, mr.K),
        }
        for label, judge in machines.items():
            badq = [replace(q, judge=judge) for q in queries]
            for base in BASES:
                bad.append(_row(mr, f"Cranfield ({len(qids)}): {label}", base, badq)[0])
    mr.print_table("Cold start: an empty calibration, queries in collection order", rows, HEADER)
    if bad:
        mr.print_table("Bad machines, cold start (Cranfield, BM25's pool order)", bad, HEADER)
