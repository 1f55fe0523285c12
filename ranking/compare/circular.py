"""A guard against circular evaluation: scoring a run against labels a machine helped make
(docs/metrics.md#labels-a-machine-helped-make).

A machine judge that answered some of a study's questions may favour the systems built like it
(C. Clarke and L. Dietz, "LLM-based relevance assessment still can't replace human relevance
assessment", 2024). So when a top-k truth carries machine answers, the evaluation says so,
scores the run on the **human-decided part** as well, and checks whether the run orders the
documents as the judge does.

* **Provenance** of a top-k JSONL line (keys the service's export writes beside ``top`` and
  ``rest``): ``"machine_answers"`` (int, how many of the query's answers the machine gave),
  ``"judge"`` (the judge's version, or null) and ``"human_decided"`` (the documents whose
  place people decided). A line without ``machine_answers`` is taken as all human.
* **The human-decided part** of a truth (:func:`human_decided_truth`): the truth restricted to
  the human-decided documents: ``top`` keeps those of its documents in their order (so their
  κ-labels are renumbered ``k + 1 − pos`` among them) and ``rest`` those of the rest; every
  other document is unjudged (label 0, like any document the truth does not list). A query
  without machine answers keeps its whole truth.
* **The judge's order** (:func:`judge_correlation`): per query, Kendall's τ-b between the run's
  scores and the judge's scores over the documents both score (and, when a truth is given, that
  the truth lists for the query); the mean over queries with at least two such documents and a
  defined τ. Above the threshold (:data:`CIRCULAR_TAU`, 0.9 by default) the run may be the
  judge, or built like it, and its figure against hybrid labels is not to be trusted.

Pure: imports nothing from the service.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ranking.compare.correlation import kendall_tau_b
from ranking.io.topk import TopKTruth

__all__ = [
    "CIRCULAR_TAU",
    "JudgeCorrelation",
    "Provenance",
    "human_decided_truth",
    "judge_correlation",
    "topk_provenance",
]

#: Default threshold of the mean Kendall τ above which the run may be the judge.
CIRCULAR_TAU = 0.9


@dataclass(frozen=True, slots=True)
class Provenance:
    """Who decided a top-k truth: machine answers in total, how many queries had any, and
    the judges named."""

    queries: int
    machine_answers: int
    machine_queries: int
    judges: tuple[str, ...]

    @property
    def machine_helped(self) -> bool:
        return self.machine_answers > 0


def _machine_answers(truth: TopKTruth) -> int:
    value = truth.extra.get("machine_answers", 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f'query {truth.query_id}: "machine_answers" must be a non-negative integer, '
            f"got {value!r}"
        )
    return value


def _human_decided(truth: TopKTruth) -> set[str]:
    value = truth.extra.get("human_decided")
    if value is None:
        raise ValueError(
            f"query {truth.query_id}: {_machine_answers(truth)} machine answers but no "
            '"human_decided" list, so its human-decided part is unknown'
        )
    if not isinstance(value, list) or not all(isinstance(d, str) for d in value):
        raise ValueError(f'query {truth.query_id}: "human_decided" must be a list of document ids')
    return set(value)


def topk_provenance(truths: Iterable[TopKTruth]) -> Provenance:
    """The provenance of a top-k truth (module docstring); ValueError names the query of a
    malformed field."""
    rows = list(truths)
    counts = [_machine_answers(t) for t in rows]
    judges = set()
    for t, n in zip(rows, counts, strict=True):
        judge = t.extra.get("judge")
        if judge is not None and not isinstance(judge, str):
            raise ValueError(f'query {t.query_id}: "judge" must be a string or null')
        if n and judge:
            judges.add(judge)
        if n:
            _human_decided(t)  # checked up front: the human-decided part needs it
    return Provenance(len(rows), sum(counts), sum(1 for n in counts if n), tuple(sorted(judges)))


def human_decided_truth(truth: TopKTruth) -> TopKTruth:
    """The truth restricted to its human-decided documents (module docstring)."""
    if _machine_answers(truth) == 0:
        return truth
    people = _human_decided(truth)
    return TopKTruth(
        truth.query_id,
        truth.k,
        tuple(d for d in truth.top if d in people),
        tuple(d for d in truth.rest if d in people),
        truth.extra,
    )


@dataclass(frozen=True, slots=True)
class JudgeCorrelation:
    """Kendall's τ-b between a run's and a judge's scores, per query and its mean."""

    per_query: Mapping[str, float]
    threshold: float

    @property
    def queries(self) -> int:
        return len(self.per_query)

    @property
    def mean_tau(self) -> float:
        values = list(self.per_query.values())
        return sum(values) / len(values) if values else math.nan

    @property
    def run_may_be_the_judge(self) -> bool:
        return self.queries > 0 and self.mean_tau > self.threshold


def judge_correlation(
    run: Mapping[str, Mapping[str, float]],
    judge: Mapping[str, Mapping[str, float]],
    *,
    documents: Mapping[str, Sequence[str]] | None = None,
    threshold: float = CIRCULAR_TAU,
) -> JudgeCorrelation:
    """Per query in both, τ-b of the run's scores against the judge's over the documents both
    score (restricted to ``documents[query]`` when given and the query is there); queries with
    fewer than two such documents, or a τ that is undefined (constant scores), are left out."""
    if not -1.0 <= threshold <= 1.0:
        raise ValueError(f"the τ threshold must be in [-1, 1], got {threshold}")
    per_query: dict[str, float] = {}
    for qid, scores in run.items():
        theirs = judge.get(qid)
        if not theirs:
            continue
        common = [d for d in scores if d in theirs]
        if documents is not None and qid in documents:
            listed = set(documents[qid])
            common = [d for d in common if d in listed]
        if len(common) < 2:
            continue
        tau = kendall_tau_b([scores[d] for d in common], [theirs[d] for d in common])
        if not math.isnan(tau):
            per_query[qid] = tau
    return JudgeCorrelation(per_query, threshold)
