"""The κ-NDCG@k a task's machine answers may have cost its result, with an interval
(docs/machine-judges.md#the-uncertainty-the-machine-leaves).

A ``+assist`` task's log holds each machine answer with its calibrated probability ``p_i`` of
being right (:class:`labeling.protocol.types.MachineAnswer`). The people-only result is the
one the strategy would have reached had every machine answer been the truth. Taking the
machine's answer ``i`` to be wrong independently with probability ``1 − p_i``, a draw of the
truth on the machine's pairs is a flip pattern ``F ⊆ {1..M}``; the strategy run again on the
same documents in the same order, with

* the machine's pairs answered as logged, those in ``F`` the other way,
* the pairs a person answered as the person did (people are taken as right),
* a pair nobody answered (a flip sends the strategy down a path the log never took) by a
  reference ranking (:func:`reference_ranking`): the logged result (the top by position, then
  the rest in its discard order) with each flipped answer's loser moved above its winner, to
  a place drawn uniformly between the documents answers put above it and the winner (the
  assist rule's stake model),

gives the result ``R_F`` the task would have had. Its loss is

    L(F) = 1 − κ-NDCG@k(logged ranking; κ-labels of R_F)

(Niu et al. 2012 §3.3, :func:`ranking.metrics.kappa_ndcg`: the logged result scored against
``R_F`` as if it were the truth). :func:`estimate_loss` draws ``replays`` flip patterns
(seeded Monte Carlo, vectorised: one uniform matrix; distinct patterns run once, the empty
pattern costs nothing since ``L(∅) = 0``) and reports the mean of ``L`` and its
``(1 − level)/2`` and ``(1 + level)/2`` quantiles (numpy's default linear interpolation).
:func:`exact_loss` enumerates all ``2^M`` patterns with their probabilities
``Π_{i∈F}(1 − p_i) Π_{i∉F} p_i`` (small ``M``; the oracle of the tests).

**Audited calibration.** A machine's stated ``p_i`` is often too confident on exactly the
pairs it answers (they are the pairs a strategy reaches, not the random pairs a calibration
learns from; docs/machine-judges.md#coverage measures it). The audits (questions the machine
could have answered, given to people at random) are a sample of those very pairs. Given the
audited pairs as ``(stated p, machine right?)``, the error probability is taken per bin of
stated ``p`` (:data:`AUDIT_BINS`): each draw first draws every bin's error rate from its Beta
posterior, ``e_b ~ Beta(W_b + w₀ s_b, R_b + w₀ (1 − s_b))`` (``W_b``/``R_b`` the audited
wrong/right answers in the bin, ``s_b`` the mean stated error of the log's answers in it,
``w₀`` = :data:`AUDIT_PRIOR_WEIGHT` pseudo-answers trusting the statement), then flips each
machine answer of the bin with probability ``e_b``. Few audits give a wide interval; many give
the measured error rates. The audits measure how often the answers of a bin are wrong, not
which: a machine's errors fall mostly on pairs of nearly equal documents, where a wrong answer
costs little, so flipping the bin's answers at random overstates the loss, while the stated
rates understate it (both measured in docs/machine-judges.md#coverage). With audits the
reported mean is the audited one (the conservative figure) and the interval spans both: from
the lower of the two ``(1 − level)/2`` quantiles to the higher of the two ``(1 + level)/2``
ones. Without audits the stated ``p_i`` are taken as they are.

What it assumes: the error probabilities above and independent errors; people are right;
the pairs nobody answered follow the reference ranking. It measures what the machine's answers
may have cost, not what people's own errors cost.
"""

from __future__ import annotations

import itertools
import random
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from labeling.errors import ConfigError
from labeling.protocol.topk import TopKSession
from labeling.protocol.types import MachineAnswer
from labeling.strategies.base import PairStrategy, Winner
from labeling.strategies.registry import SEPARATOR, STRATEGIES
from ranking.metrics import kappa_ndcg

#: Monte Carlo draws per task by default.
DEFAULT_REPLAYS = 200
#: Coverage of the reported interval by default.
DEFAULT_LEVEL = 0.90
#: :func:`exact_loss` enumerates at most 2^this patterns.
EXACT_MAX = 16
#: Upper edges of the bins of stated P(right) the audits are counted in (the last closed).
AUDIT_BINS = (0.9, 0.99, 1.0)
#: Pseudo-answers of each bin's prior, which trusts the stated error rate.
AUDIT_PRIOR_WEIGHT = 2.0

Key = tuple[str, str]


def _key(a: str, b: str) -> Key:
    return (a, b) if a < b else (b, a)


@dataclass(frozen=True, slots=True)
class MachineLog:
    """What the estimate needs of a finished or running top-k log: the base strategy (the
    questions ``+assist`` passes through), the documents in the strategy's order (broken ones
    left out), k, the pairs people answered (winner, None for a tie), the machine's answers
    ``(a, b, winner, p_right)`` and the logged ranking (``top`` best first, then ``rest``)."""

    strategy: type[PairStrategy]
    order: tuple[str, ...]
    k: int
    human: dict[Key, Winner]
    machine: tuple[tuple[str, str, str, float], ...]
    top: tuple[str, ...]
    rest: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LossEstimate:
    """Estimated κ-NDCG@k loss of a result from its machine answers (module docstring):
    ``mean`` and the ``level`` interval ``[low, high]`` over ``replays`` draws."""

    machine_answers: int
    mean: float
    low: float
    high: float
    level: float
    replays: int

    def to_json(self) -> dict[str, float | int | list[float]]:
        """The ``machine`` block of the exports and the progress report."""
        return {
            "machine_answers": self.machine_answers,
            "estimated_loss": round(self.mean, 6),
            "interval": [round(self.low, 6), round(self.high, 6)],
            "level": self.level,
            "replays": self.replays,
        }


def none_estimate(level: float = DEFAULT_LEVEL) -> LossEstimate:
    """The estimate of a result no machine answered: no loss, interval (0, 0)."""
    return LossEstimate(0, 0.0, 0.0, 0.0, level, 0)


def base_strategy(name: str) -> type[PairStrategy]:
    """The base strategy of a strategy name (``tournament+assist+robust`` -> tournament):
    the questions the assisted strategy asks, all answered consistently here, so the
    modifiers' repeats change nothing."""
    head = name.split(SEPARATOR)[0]
    if head not in STRATEGIES:
        raise ConfigError(f"unknown strategy {name!r}")
    return STRATEGIES[head]


def machine_log(session: TopKSession) -> MachineLog:
    """The :class:`MachineLog` of a replayed top-k session (finished or not: an unfinished
    one is ranked as far as it got, the pending strategy's result taken from a finished run
    of the logged answers with the pairs still open answered in the initial order)."""
    machine: dict[Key, tuple[str, str, str, float]] = {}
    for answer in session.answers:
        if isinstance(answer, MachineAnswer):
            winner = answer.left if answer.outcome == "left" else answer.right
            key = _key(answer.left, answer.right)
            machine.setdefault(key, (*key, winner, float(answer.probability)))
    human: dict[Key, Winner] = {}
    for j in session.judged:
        key = _key(j.a, j.b)
        if not j.cached and not j.machine and key not in machine:
            human.setdefault(key, j.winner)
    strategy = base_strategy(str(session.options.get("strategy") or "heap"))
    order = tuple(d for d in session.order if d not in session.broken)
    if session.done:
        result = session.result()
        top, rest = tuple(result.top), tuple(result.rest)
    else:
        # Not finished: the result the log points to, the open pairs taken in order.
        rank = {d: i for i, d in enumerate(order)}
        answers = {**human, **{k: w for k, (_a, _b, w, _p) in machine.items()}}
        top_l, rest_l = _run(strategy, order, session.k, answers, rank)
        top, rest = tuple(top_l), tuple(rest_l)
    return MachineLog(strategy, order, session.k, human, tuple(machine.values()), top, rest)


def _run(
    strategy: type[PairStrategy],
    order: Sequence[str],
    k: int,
    answers: dict[Key, Winner],
    rank: dict[str, int],
) -> tuple[list[str], list[str]]:
    """Run ``strategy`` answering from ``answers``, and a pair it lacks by ``rank`` (lower
    wins): the result ``(top, rest)``."""
    gen = strategy(order, k).run()
    try:
        question = next(gen)
        while True:
            a, b = question.a, question.b
            key = (a, b) if a < b else (b, a)
            # A pair nobody answered: the lower rank wins.
            winner = answers[key] if key in answers else (a if rank[a] < rank[b] else b)
            question = gen.send(winner)
    except StopIteration as stop:
        top, rest = stop.value
    return list(top), list(rest)


def _answers(log: MachineLog) -> dict[Key, Winner]:
    """Every answered pair's winner as logged (people's and the machine's)."""
    base: dict[Key, Winner] = dict(log.human)
    for a, b, winner, _p in log.machine:
        base[(a, b)] = winner
    return base


def _replayed_tops(log: MachineLog, patterns: np.ndarray) -> list[list[str]]:
    """The top of the strategy run again for each flip pattern (a row of booleans over the
    machine answers), the pairs nobody answered by :func:`reference_ranking`."""
    base = _answers(log)
    tops = []
    for row in patterns:
        answers = dict(base)
        for i in np.flatnonzero(row):
            a, b, winner, _p = log.machine[int(i)]
            answers[(a, b)] = b if winner == a else a
        rank = reference_ranking(log, row)
        tops.append(_run(log.strategy, log.order, log.k, answers, rank)[0])
    return tops


def reference_ranking(log: MachineLog, row: np.ndarray) -> dict[str, int]:
    """The ranking (document -> place, 0 best) a replay with the flip pattern ``row`` answers
    the pairs nobody answered by: the logged one, each flipped answer "l beat w" in turn moving
    l (when below w) to a place drawn uniformly from just below the lowest document an answer
    put above l (and above w's place) up to just above w, the assist rule's stake model (l's
    true rank uniform between what is known above it and w's). The draw is seeded by the
    pattern, so a pattern always gives the same reference."""
    beaten_by: dict[str, list[str]] = {}
    for (a, b), winner in _answers(log).items():
        if winner is not None:
            beaten_by.setdefault(b if winner == a else a, []).append(winner)
    row = np.asarray(row, dtype=bool)
    rng = random.Random(zlib.crc32(np.packbits(row).tobytes()))
    reference = [*log.top, *log.rest]
    for i in np.flatnonzero(row):
        a, b, winner, _p = log.machine[int(i)]
        loser = b if winner == a else a
        at, target = reference.index(loser), reference.index(winner)
        if at <= target:
            continue
        above = [reference.index(d) for d in beaten_by.get(loser, ()) if d != winner]
        low = max((p for p in above if p < target), default=-1) + 1
        reference.pop(at)
        reference.insert(rng.randint(low, target), loser)
    return {d: r for r, d in enumerate(reference)}


def _losses(log: MachineLog, tops: Sequence[Sequence[str]]) -> np.ndarray:
    """``1 − κ-NDCG@k`` of the logged ranking against each replayed top, shape (len(tops),)."""
    if not tops:
        return np.zeros(0)
    docs = list(log.order)
    index = {d: i for i, d in enumerate(docs)}
    n, k = len(docs), log.k
    labels = np.zeros((len(tops), n))
    for row, top in enumerate(tops):
        for pos, d in enumerate(top):
            labels[row, index[d]] = k - pos
    position = {d: i for i, d in enumerate((*log.top, *log.rest))}
    scores = np.array([n - position[d] for d in docs], dtype=float)
    values = kappa_ndcg(labels, np.broadcast_to(scores, labels.shape), at=k, empty=1)
    return np.clip(1.0 - np.asarray(values, dtype=float), 0.0, 1.0)


def pattern_losses(log: MachineLog, patterns: np.ndarray) -> np.ndarray:
    """The loss ``L(F)`` of each flip pattern (rows of booleans, shape (R, M)): distinct
    non-empty patterns are replayed once each; the empty one is 0."""
    patterns = np.asarray(patterns, dtype=bool).reshape(len(patterns), len(log.machine))
    out = np.zeros(len(patterns))
    flipped = patterns.any(axis=1)
    if not flipped.any():
        return out
    unique, inverse = np.unique(patterns[flipped], axis=0, return_inverse=True)
    losses = _losses(log, _replayed_tops(log, unique))
    out[flipped] = losses[np.ravel(inverse)]
    return out


def _check(replays: int, level: float) -> None:
    if isinstance(replays, bool) or not isinstance(replays, int) or replays < 1:
        raise ConfigError(f"replays must be an integer >= 1, got {replays!r}")
    if not 0.0 < level < 1.0:
        raise ConfigError(f"level must be in (0, 1), got {level!r}")


def _bin_of(p: np.ndarray) -> np.ndarray:
    return np.minimum(np.searchsorted(AUDIT_BINS, p, side="right"), len(AUDIT_BINS) - 1)


def audited_wrong(
    stated: np.ndarray,
    audits: Sequence[tuple[float, bool]],
    replays: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Per draw and machine answer, its probability of being wrong from the audits (module
    docstring, "Audited calibration"): shape (replays, len(stated))."""
    bins = _bin_of(stated)
    b = len(AUDIT_BINS)
    a_p = np.array([p for p, _ in audits], dtype=float).reshape(-1)
    a_right = np.array([r for _, r in audits], dtype=bool).reshape(-1)
    a_bins = _bin_of(a_p)
    wrong_n = np.bincount(a_bins[~a_right], minlength=b).astype(float)
    right_n = np.bincount(a_bins[a_right], minlength=b).astype(float)
    sums = np.bincount(bins, weights=1.0 - stated, minlength=b)
    counts = np.bincount(bins, minlength=b)
    mids = 1.0 - (np.array((0.5, *AUDIT_BINS[:-1])) + np.array(AUDIT_BINS)) / 2.0
    s = np.where(counts > 0, sums / np.maximum(counts, 1), mids)
    s = np.clip(s, 1e-6, 1.0 - 1e-6)
    alpha = wrong_n + AUDIT_PRIOR_WEIGHT * s
    beta = right_n + AUDIT_PRIOR_WEIGHT * (1.0 - s)
    rates = rng.beta(alpha, beta, size=(replays, b))
    out: np.ndarray = rates[:, bins]
    return out


def estimate_loss(
    log: MachineLog,
    *,
    replays: int = DEFAULT_REPLAYS,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
    audits: Sequence[tuple[float, bool]] | None = None,
) -> LossEstimate:
    """The Monte Carlo estimate of the module docstring: ``replays`` flip patterns drawn with
    ``numpy.random.default_rng(seed)``, the mean loss and its ``level`` quantile interval.
    ``audits``: audited pairs as (stated P(right), the machine was right), which set the error
    rates ("Audited calibration": the interval then spans the stated and the audited
    replays); None: the stated probabilities only. No machine answers: :func:`none_estimate`."""
    _check(replays, level)
    m = len(log.machine)
    if m == 0:
        return none_estimate(level)
    stated = np.array([p for *_rest, p in log.machine])
    rng = np.random.default_rng(seed)
    q = [(1.0 - level) / 2.0, (1.0 + level) / 2.0]
    losses = pattern_losses(log, rng.random((replays, m)) < 1.0 - stated)
    low, high = np.quantile(losses, q)
    mean = float(losses.mean())
    if audits is not None:
        wrong = audited_wrong(stated, audits, replays, rng)
        audited = pattern_losses(log, rng.random((replays, m)) < wrong)
        a_low, a_high = np.quantile(audited, q)
        low, high, mean = min(low, a_low), max(high, a_high), float(audited.mean())
    return LossEstimate(m, mean, float(low), float(high), level, replays)


def exact_loss(log: MachineLog) -> float:
    """``E[L(F)] = Σ_F P(F) L(F)`` over all ``2^M`` flip patterns (M ≤ :data:`EXACT_MAX`)."""
    m = len(log.machine)
    if m > EXACT_MAX:
        raise ConfigError(f"exact_loss enumerates 2^M patterns; M = {m} > {EXACT_MAX}")
    if m == 0:
        return 0.0
    p = np.array([q for *_rest, q in log.machine])
    patterns = np.array(list(itertools.product((False, True), repeat=m)), dtype=bool)
    weights = np.prod(np.where(patterns, 1.0 - p, p), axis=1)
    return float(weights @ pattern_losses(log, patterns))


@dataclass(frozen=True, slots=True)
class LossTotal:
    """Estimates summed over tasks (a query, an assessor, a collection): the machine answers,
    the tasks with any, the summed expected loss and the summed interval ends (the sum of
    per-task quantiles: a conservative interval for the sum, no independence assumed)."""

    machine_answers: int
    tasks: int
    estimated_loss: float
    low: float
    high: float

    def to_json(self) -> dict[str, float | int | list[float]]:
        return {
            "machine_answers": self.machine_answers,
            "tasks": self.tasks,
            "estimated_loss": round(self.estimated_loss, 6),
            "interval": [round(self.low, 6), round(self.high, 6)],
        }


def total(estimates: Iterable[LossEstimate]) -> LossTotal:
    """The :class:`LossTotal` of ``estimates``."""
    items = [e for e in estimates if e.machine_answers]
    return LossTotal(
        sum(e.machine_answers for e in items),
        len(items),
        sum(e.mean for e in items),
        sum(e.low for e in items),
        sum(e.high for e in items),
    )
