"""Expected judgments of a top-k strategy by simulation, for planning a study
(``docs/strategies-in-practice.md#planning``).

A strategy's own model (``expected_remaining``) assumes documents in random order. A prior
changes the count (insertion and ``prior`` profit most), so a plan with a prior is estimated by
simulation instead:

* latent relevance ``u_i ~ U(0, 1)`` for the ``n`` pool documents, the true order by ``u``;
* a consistent assessor (:class:`labeling.study.simulation.Assessor`, no noise, no ties);
* documents in the order of a prior ``p_i = u_i + N(0, σ²)`` whose Pearson correlation with
  ``u`` is ``correlation`` (:func:`labeling.study.simulation.prior_order`), or in random order
  when ``correlation`` is None;
* the strategy driven to its end (:func:`labeling.study.simulation.run_strategy`), ``trials``
  times with seeds ``(seed, t)`` (common random numbers across strategies).

The mean and the 95th percentile (nearest rank) of the judgments are returned. Results are
cached per argument tuple, so a preview that shows every strategy side by side simulates each
(strategy, n, k) once per process.

:data:`ASSUMED_PRIOR_CORRELATION` is the correlation assumed for a real prior (BM25, a run, a
feature): 0.2 reproduces the counts measured with a BM25 prior on Cranfield's BM25 pools of 30
at k = 10 (``docs/strategies-in-practice.md#real-data``: heap 90.2, tournament 62.5, insertion
74.0, prior 65.2 measured; 87.3, 62.6, 72.3, 64.8 simulated). Graded truths have many ties
(most pool documents are not relevant), which no prior can order, so a real prior is far from
the synthetic ``prior0.7`` scenario.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from labeling.errors import ConfigError
from labeling.strategies.registry import resolve_strategy
from labeling.study.assisted import compare_assisted, parse_machine_scenario
from labeling.study.simulation import prior_order, run_strategy, scenario_assessor
from ranking.metrics import kappa_ndcg

#: The correlation with the truth assumed for a prior order (see the module docstring).
ASSUMED_PRIOR_CORRELATION = 0.2

#: Simulated runs per estimate for small pools; fewer for large ones (``trials_for``).
MAX_TRIALS = 200
#: At least this many runs per estimate.
MIN_TRIALS = 20
#: About this many documents in all the runs of one estimate (bounds its time).
DOCUMENT_BUDGET = 6000


@dataclass(frozen=True, slots=True)
class Estimate:
    """Judgments of one task: ``mean`` and ``p95`` (nearest-rank 95th percentile) over
    ``trials`` simulated runs."""

    mean: float
    p95: float
    trials: int


def trials_for(n: int) -> int:
    """Runs for a pool of ``n``: ``DOCUMENT_BUDGET / n`` within [MIN_TRIALS, MAX_TRIALS]
    (200 at n = 30, 60 at n = 100, 20 from n = 300 on)."""
    return max(MIN_TRIALS, min(MAX_TRIALS, DOCUMENT_BUDGET // max(n, 1)))


def percentile(values: list[int], q: float) -> float:
    """Nearest-rank percentile: the ``⌈q·m⌉``-th smallest of the ``m`` values."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return float(ordered[rank - 1])


@lru_cache(maxsize=4096)
def simulated_judgments(
    strategy: str,
    n: int,
    k: int,
    correlation: float | None,
    *,
    cache: bool = True,
    seed: int = 0,
) -> Estimate:
    """Mean and p95 judgments of ``strategy`` on ``n`` documents at ``k`` (module docstring):
    documents in a prior's order of correlation ``correlation`` with the truth, or random
    (None); ``cache`` is the task option ``pair_cache``."""
    if n < 1 or k < 1:
        raise ConfigError(f"n and k must be >= 1, got n={n}, k={k}")
    cls = resolve_strategy(strategy)
    docs = [f"d{i:05d}" for i in range(n)]
    trials = trials_for(n)
    counts: list[int] = []
    for t in range(trials):
        rng = random.Random(f"{seed}:{t}")
        latent = {doc: rng.random() for doc in docs}
        truth = sorted(docs, key=lambda doc: -latent[doc])
        if correlation is None:
            order = docs[:]
            rng.shuffle(order)
        else:
            order = prior_order(latent, correlation, rng)
        person = scenario_assessor(
            "random", {d: r for r, d in enumerate(truth)}, rng.getrandbits(32)
        )
        counts.append(run_strategy(cls, order, k, person, cache=cache)[2])
    return Estimate(sum(counts) / trials, percentile(counts, 0.95), trials)


@dataclass(frozen=True, slots=True)
class AssistedEstimate:
    """A ``+assist`` task with a machine judge: people's judgments (``human_mean``,
    ``human_p95``), the machine's answers (``machine_mean``) and the κ-NDCG@k loss of the
    result against the person-only one (``loss_mean``: the mean of ``1 − κ-NDCG@k``; the
    consistent person's person-only result is the truth's top k) over ``trials`` simulated
    queries of one study."""

    human_mean: float
    human_p95: float
    machine_mean: float
    trials: int
    loss_mean: float = 0.0


#: At most this many simulated queries per assisted estimate (each runs the strategy with a
#: machine and a calibration learned from the earlier ones).
MAX_ASSISTED_TRIALS = 60


@lru_cache(maxsize=1024)
def assisted_judgments(
    strategy: str,
    n: int,
    k: int,
    accuracy: float,
    correlation: float | None = None,
    *,
    seed: int = 0,
    max_loss: float | None = None,
) -> AssistedEstimate:
    """People's judgments and the machine's answers of ``strategy`` (a ``+assist`` strategy)
    on ``n`` documents at ``k`` with a machine of pairwise accuracy ``accuracy`` on random
    pairs, by :func:`labeling.study.assisted.compare_assisted`: a Thurstone machine
    (``σ = tan(π(1 − A))`` on the normal scale), the documents in the order of a prior of
    ``correlation`` with the truth or random (None) as in :func:`simulated_judgments` (the
    same order the strategy without the machine is estimated on), a consistent person, the
    calibration learned from the earlier simulated queries' human answers (isotonic, the
    default prior), ``min(trials_for(n), MAX_ASSISTED_TRIALS)`` queries, the machine answering
    within ``max_loss`` (the option ``machine.max_loss``; None: its default). The p95 is the
    nearest-rank 95th percentile; ``loss_mean`` the mean of ``1 − κ-NDCG@k`` (Niu et al.,
    SIGIR 2012, §3.3; :func:`ranking.metrics.kappa_ndcg`) of each query's result against its
    true top k."""
    if n < 1 or k < 1:
        raise ConfigError(f"n and k must be >= 1, got n={n}, k={k}")
    scenario = f"machine{accuracy:g}"
    parse_machine_scenario(scenario)  # refuses an accuracy outside (1/2, 1]
    trials = min(trials_for(n), MAX_ASSISTED_TRIALS)
    runs = compare_assisted(
        strategy, scenario, n, k, trials, seed=seed, order=correlation, max_loss=max_loss
    )
    humans = [r.judgments for r in runs]
    labels = np.array([r.truth_labels for r in runs], dtype=float)
    scores = -np.array([r.produced_rank for r in runs], dtype=float)  # position 0 scores highest
    losses = 1.0 - kappa_ndcg(labels, scores, at=k, empty=1)
    return AssistedEstimate(
        sum(humans) / trials,
        percentile(humans, 0.95),
        sum(r.machine_answers for r in runs) / trials,
        trials,
        float(np.mean(losses)),
    )
