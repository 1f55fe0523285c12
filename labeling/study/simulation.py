"""Simulated assessors, for tests, benchmarks and study budgeting (``heapjudge simulate``).

An :class:`Assessor` answers from hidden relevance scores:

* **consistent oracle** (default): a strict total order, score descending, equal scores broken
  by a seeded random order, so it is transitive and never ties unless asked to;
* **flip noise** ``flip = p``: each strict pairwise answer is reversed with probability p;
* **Thurstone** (Case V): ``P(a ≻ b) = Φ((s_a - s_b) / (σ√2))``, i.e. each judgment compares
  ``s + N(0, σ²)`` draws, so close documents are confused more often (Thurstone 1927);
* **Bradley–Terry**: ``P(a ≻ b) = 1 / (1 + exp(-(s_a - s_b) / τ))`` (Bradley & Terry 1952);
* **ties** ``tie = t``: answers "tie" with probability t when the task allows ties;
* **not relevant**: with ``not_relevant_below = x`` and the option on, a Step-2 challenger whose
  score is below x is called not relevant;
* **time model**: log-normal seconds per judgment with configurable means. Niu et al. (SIGIR
  2012, Table 1) report 13.87 s per five-grade judgment and a pair 2–3× faster; the defaults are
  13.87 s and 13.87/2.5 = 5.55 s.

Grades for the five-grade protocol are the given graded qrels, or (from scores) rank
quintiles: the best fifth gets 4, the worst fifth 0. ``flip`` moves a grade one step with
probability p.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from labeling.errors import ConfigError
from labeling.protocol.graded import MAX_GRADE, GradedSession
from labeling.protocol.groundtruth import GradedResult, TopKResult
from labeling.protocol.session import open_session
from labeling.protocol.spec import validate_options
from labeling.protocol.topk import TopKSession
from labeling.protocol.types import Answer, GradeAnswer, GradeQuestion, PairAnswer, PairQuestion
from labeling.strategies.assist import AssistStrategy, Machine
from labeling.strategies.base import PairStrategy
from labeling.strategies.registry import resolve_strategy

NoiseModel = Literal["none", "thurstone", "bradley_terry"]

#: Mean seconds per five-grade judgment reported by Niu et al. (SIGIR 2012, Table 1).
GRADE_SECONDS = 13.87
#: Mean seconds per pairwise judgment: "2-3x less" than a grade (Niu et al.); 2.5x is the midpoint.
PAIR_SECONDS = GRADE_SECONDS / 2.5


@dataclass(frozen=True)
class TimeModel:
    """Log-normal active seconds per judgment: ``exp(N(μ, σ²))`` with ``μ = ln(mean) - σ²/2``,
    so that the mean is exactly ``mean``."""

    pair_mean: float = PAIR_SECONDS
    grade_mean: float = GRADE_SECONDS
    sigma: float = 0.6

    def __post_init__(self) -> None:
        if not (self.pair_mean > 0 and self.grade_mean > 0 and self.sigma >= 0):
            raise ConfigError("time model means must be > 0 and sigma >= 0")

    def sample(self, rng: random.Random, kind: Literal["pair", "grade"]) -> float:
        """Seconds for one judgment of ``kind``."""
        mean = self.pair_mean if kind == "pair" else self.grade_mean
        return rng.lognormvariate(math.log(mean) - self.sigma**2 / 2, self.sigma)


def _logistic(x: float) -> float:
    """``1 / (1 + exp(-x))`` without overflow: ``exp`` only ever sees a non-positive argument
    (``exp(x) / (1 + exp(x))`` for x < 0), so far-apart scores give 0 or 1, not an error."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _probability(name: str, value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"{name} must be a probability in [0, 1], got {value!r}")
    return value


@dataclass
class Assessor:
    """A simulated assessor with hidden relevance ``scores`` (higher is more relevant)."""

    scores: Mapping[str, float]
    seed: int = 0
    flip: float = 0.0
    noise: NoiseModel = "none"
    scale: float = 1.0
    tie: float = 0.0
    not_relevant_below: float | None = None
    grades: Mapping[str, int] | None = None
    time: TimeModel = field(default_factory=TimeModel)
    rank: dict[str, int] = field(init=False, repr=False)
    rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _probability("flip", self.flip)
        _probability("tie", self.tie)
        if self.noise not in ("none", "thurstone", "bradley_terry"):
            raise ConfigError(f"unknown noise model {self.noise!r}")
        if not self.scale > 0:
            raise ConfigError(f"noise scale must be > 0, got {self.scale!r}")
        self.rng = random.Random(self.seed)
        # Seeded tie-break: equal scores are ordered by a random permutation of the ids.
        ids = sorted(self.scores)
        self.rng.shuffle(ids)
        tiebreak = {doc: i for i, doc in enumerate(ids)}
        order = sorted(ids, key=lambda d: (-self.scores[d], tiebreak[d]))
        self.rank = {doc: i for i, doc in enumerate(order)}

    @classmethod
    def from_grades(cls, grades: Mapping[str, int], **kwargs: Any) -> Assessor:
        """A consistent oracle from graded qrels; equal grades are broken by the seed."""
        return cls({d: float(g) for d, g in grades.items()}, grades=dict(grades), **kwargs)

    # -- the truth -------------------------------------------------------------------------
    def true_order(self) -> list[str]:
        """All documents best first (the consistent oracle's total order)."""
        return sorted(self.rank, key=self.rank.__getitem__)

    def true_topk(self, k: int, doc_ids: Sequence[str] | None = None) -> list[str]:
        """The true top k (of ``doc_ids`` if given), best first."""
        docs = self.true_order() if doc_ids is None else sorted(doc_ids, key=self.rank.__getitem__)
        return docs[:k]

    def true_grade(self, doc: str) -> int:
        """The graded qrel, or the rank quintile (4 for the best fifth) without qrels."""
        if self.grades is not None:
            return self.grades[doc]
        n = len(self.rank)
        return MAX_GRADE - (self.rank[doc] * (MAX_GRADE + 1)) // n

    # -- answering ---------------------------------------------------------------------------
    def prefers(self, a: str, b: str) -> bool:
        """One (possibly noisy) strict judgment: is ``a`` more relevant than ``b``?"""
        if self.noise == "none":
            better = self.rank[a] < self.rank[b]
        else:
            diff = self.scores[a] - self.scores[b]
            if self.noise == "thurstone":
                p = 0.5 * math.erfc(-diff / (self.scale * 2.0))  # Φ(diff / (σ√2))
            else:
                p = _logistic(diff / self.scale)
            better = self.rng.random() < p
        if self.flip and self.rng.random() < self.flip:
            better = not better
        return better

    def answer_pair(
        self,
        question: PairQuestion,
        allowed: Sequence[str] = ("left", "right"),
        challenger: str | None = None,
    ) -> PairAnswer:
        """Answer a pair question; uses "tie" / "not_relevant" only when ``allowed``."""
        left, right = question.left, question.right
        if (
            challenger is not None
            and "not_relevant" in allowed
            and self.not_relevant_below is not None
            and self.scores[challenger] < self.not_relevant_below
        ):
            return PairAnswer(left, right, "not_relevant")
        if self.tie and "tie" in allowed and self.rng.random() < self.tie:
            return PairAnswer(left, right, "tie")
        return PairAnswer(left, right, "left" if self.prefers(left, right) else "right")

    def answer_grade(self, question: GradeQuestion) -> GradeAnswer:
        """Grade one document (true grade, moved one step with probability ``flip``)."""
        grade = self.true_grade(question.doc_id)
        if self.flip and self.rng.random() < self.flip:
            step = self.rng.choice((-1, 1))
            # At the ends of the scale the only neighbour is on the other side.
            grade = grade + step if 0 <= grade + step <= MAX_GRADE else grade - step
        return GradeAnswer(question.doc_id, grade)

    def answer(self, session: TopKSession | GradedSession) -> Answer:
        """Answer the session's pending question."""
        q = session.pending
        if isinstance(q, PairQuestion) and isinstance(session, TopKSession):
            return self.answer_pair(q, session.allowed_outcomes, session.pending_challenger)
        if isinstance(q, GradeQuestion):
            return self.answer_grade(q)
        raise ConfigError("the session has no pending question")

    def seconds(self, kind: Literal["pair", "grade"]) -> float:
        """Active seconds for one judgment (the time model)."""
        return self.time.sample(self.rng, kind)


@dataclass(frozen=True)
class SimulatedRun:
    """What a simulated session produced: the result, the answer log and active seconds."""

    result: TopKResult | GradedResult
    answers: list[Answer]
    seconds: list[float]

    @property
    def judgments(self) -> int:
        return len(self.answers)

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds)


def run_session(
    session: TopKSession | GradedSession, assessor: Assessor, *, timed: bool = True
) -> SimulatedRun:
    """Answer ``session`` with ``assessor`` until it is done, letting the session's machine
    answer first where it may (``+assist``); ``answers`` holds the person's answers only."""
    answers: list[Answer] = []
    seconds: list[float] = []
    kind: Literal["pair", "grade"] = "pair" if isinstance(session, TopKSession) else "grade"
    while not session.done:
        if isinstance(session, TopKSession) and session.let_machine_answer() and session.done:
            break  # the machine answered the rest (a +assist strategy with a machine)
        answer = assessor.answer(session)
        session.submit(answer)
        answers.append(answer)
        if timed:
            seconds.append(assessor.seconds(kind))
    return SimulatedRun(session.result(), answers, seconds)


def simulate(
    method: str,
    doc_ids: Sequence[str],
    assessor: Assessor,
    *,
    k: int = 10,
    seed: int = 0,
    options: Mapping[str, Any] | None = None,
    timed: bool = True,
) -> SimulatedRun:
    """Open a fresh session (:func:`labeling.protocol.session.open_session`) and run it to the end
    against ``assessor``."""
    session = open_session(method, doc_ids, k=k, seed=seed, options=options)
    return run_session(session, assessor, timed=timed)


@dataclass(frozen=True)
class StudyTrial:
    """One simulated (assessor, query) session of :func:`simulate_tasks`."""

    judgments: int
    calls: int
    exact: bool
    seconds: float
    truth_labels: list[int]  # κ-labels of the true top-k, by document index
    produced_rank: list[int]  # position of each document in the produced ranking (0 = best)
    machine_answers: int = 0  # answers a machine gave (judgments counts people's only)


def simulate_tasks(
    n: int,
    k: int,
    trials: int,
    *,
    noise: float = 0.0,
    ties: float = 0.0,
    cache: bool = True,
    seed: int = 0,
    model: NoiseModel = "none",
    scale: float = 1.0,
    time: TimeModel | None = None,
    strategy: str = "heap",
    prior_corr: float | None = None,
) -> list[StudyTrial]:
    """Budget a top-k study: ``trials`` sessions of ``n`` documents against simulated assessors.

    Each trial draws distinct latent scores (a random permutation), a session seed and an
    assessor seed from ``random.Random(seed)``; the assessor flips answers with probability
    ``noise`` and says "tie" with probability ``ties`` (ties are enabled iff ``ties > 0``).
    ``model`` adds Thurstone or Bradley–Terry noise of ``scale`` on the latent scores, which
    are the ranks 0..n-1 (so ``scale = 1`` confuses neighbours often, distant documents rarely).
    ``strategy`` is the task option of that name; with ``prior_corr`` = R the session takes the
    documents in the order of a prior correlated ≈ R with the truth (:func:`prior_order`, as the
    task option ``initial_order``) instead of the seeded shuffle.
    """
    if n < 1 or k < 1 or trials < 1:
        raise ConfigError(f"n, k and trials must be >= 1, got n={n}, k={k}, trials={trials}")
    _probability("noise", noise)
    _probability("ties", ties)
    master = random.Random(seed)
    docs = [f"d{i:04d}" for i in range(n)]
    options: dict[str, Any] = {
        "pair_cache": cache,
        "allow_ties": ties > 0,
        "strategy": strategy,
    }
    validate_options("topk", options)  # an unknown strategy fails here, before any trial
    time = time or TimeModel()
    out: list[StudyTrial] = []
    for _ in range(trials):
        values = list(range(n))
        master.shuffle(values)
        scores = dict(zip(docs, map(float, values), strict=True))
        if prior_corr is not None:
            # Uniform latent values in the order of the scores: u has the ranks' order.
            latent = {d: (v + 0.5) / n for d, v in scores.items()}
            options["initial_order"] = prior_order(latent, prior_corr, master)
        assessor = Assessor(
            scores,
            seed=master.getrandbits(32),
            flip=noise,
            tie=ties,
            noise=model,
            scale=scale,
            time=time,
        )
        run = simulate("topk", docs, assessor, k=k, seed=master.getrandbits(32), options=options)
        result = run.result
        assert isinstance(result, TopKResult)
        truth = assessor.true_topk(k)
        truth_label = {d: k - i for i, d in enumerate(truth)}
        position = {d: i for i, d in enumerate(result.ranking())}
        out.append(
            StudyTrial(
                judgments=result.judgments,
                calls=result.calls,
                exact=result.top == truth,
                seconds=run.total_seconds,
                truth_labels=[truth_label.get(d, 0) for d in docs],
                produced_rank=[position[d] for d in docs],
            )
        )
    return out


# -- judging strategies compared under noise (heapjudge simulate --compare) --------------------

#: The scenarios of ``heapjudge simulate --compare`` (docs/noise.md#scenarios): a consistent
#: assessor on a random order, the same on the order of a prior correlated ≈ 0.7 with the
#: truth, 10% uniform answer flips, and Thurstone noise of σ = 2 ranks.
SCENARIOS: tuple[str, ...] = ("random", "prior0.7", "flip0.1", "thurstone")
#: Flip rate of the ``flip0.1`` scenario.
SCENARIO_FLIP = 0.1
#: σ of the ``thurstone`` scenario, in ranks.
SCENARIO_SIGMA = 2.0
#: Correlation of the ``prior0.7`` scenario's prior with the truth: 1/√2, i.e. noise of the
#: same standard deviation as the latent values.
SCENARIO_PRIOR_CORR = 1.0 / math.sqrt(2.0)
#: Standard deviation of U(0, 1), the latent values' distribution.
_UNIFORM_SD = 1.0 / math.sqrt(12.0)


def prior_sigma(corr: float) -> float:
    """σ of the prior's noise ``N(0, σ²)`` for correlation ``corr`` with ``u ~ U(0, 1)``.

    The correlation of ``p = u + N(0, σ²)`` with ``u`` is ``sd(u) / √(sd(u)² + σ²)``, so
    ``σ = sd(u)·√(1/R² − 1)`` with ``sd(u) = 1/√12`` gives correlation R (R = 1/√2: σ = sd(u);
    R = 1: σ = 0, the true order).
    """
    if not 0.0 < corr <= 1.0:
        raise ConfigError(f"prior correlation must be in (0, 1], got {corr!r}")
    return _UNIFORM_SD * math.sqrt(1.0 / corr**2 - 1.0)


def prior_order(latent: Mapping[str, float], corr: float, rng: random.Random) -> list[str]:
    """Documents in decreasing order of a noisy prior ``p_i = u_i + N(0, σ²)``, σ from
    :func:`prior_sigma` (correlation ≈ ``corr`` with the latent values ``u ~ U(0, 1)``)."""
    sigma = prior_sigma(corr)
    noisy = {doc: u + rng.gauss(0.0, sigma) for doc, u in latent.items()}
    return sorted(noisy, key=lambda doc: (-noisy[doc], doc))


def scenario_assessor(scenario: str, rank: Mapping[str, int], seed: int) -> Assessor:
    """The simulated assessor of a ``--compare`` scenario for documents with true ``rank``
    (0 = best): consistent, flipping each answer with p = 0.1 (every re-ask an independent
    draw), or Thurstone with fresh ``N(0, σ²)`` noise on both ranks per comparison."""
    n = len(rank)
    scores = {doc: float(n - 1 - r) for doc, r in rank.items()}  # higher is better
    if scenario in ("random", "prior0.7"):
        return Assessor(scores, seed=seed)
    if scenario == "flip0.1":
        return Assessor(scores, seed=seed, flip=SCENARIO_FLIP)
    if scenario == "thurstone":
        return Assessor(scores, seed=seed, noise="thurstone", scale=SCENARIO_SIGMA)
    raise ConfigError(f"unknown scenario {scenario!r}; expected one of {', '.join(SCENARIOS)}")


def run_strategy(
    strategy: type[Any], order: Sequence[str], k: int, assessor: Assessor, *, cache: bool = True
) -> tuple[list[str], list[str], int]:
    """Drive a pairwise strategy with ``assessor`` directly (no session): ``(top, rest,
    judgments)``. The fast path of :func:`compare_strategies` (:func:`drive` without a
    machine).

    Equivalent to a :class:`TopKSession` with the same order for assessors whose answers do not
    depend on the display orientation (all of :data:`SCENARIOS`): a repeated pair is answered
    from its first answer when ``cache`` is on, except deliberate repeats
    (:attr:`labeling.strategies.base.Compare.repeat`), which are always posed.
    """
    top, rest, humans, _machines, _state = drive(strategy, order, k, assessor, cache=cache)
    return top, rest, humans


def drive(
    strategy: type[PairStrategy],
    order: Sequence[str],
    k: int,
    person: Assessor,
    *,
    machine: Machine | None = None,
    seed: int = 0,
    cache: bool = True,
    max_loss: float | None = None,
) -> tuple[list[str], list[str], int, int, PairStrategy]:
    """Drive a strategy with a person and (for ``+assist`` strategies given a ``machine``) a
    machine, without a session: ``(top, rest, human judgments, machine answers, final
    state)``. The machine answers where :meth:`AssistStrategy.machine_verdict` lets it, as
    :meth:`labeling.protocol.topk.TopKSession.let_machine_answer` does, within the stated
    ``max_loss`` (the option ``machine.max_loss``; None: its default); the pair cache as in
    :func:`run_strategy`."""
    state = strategy(order, k)
    assisted = state if isinstance(state, AssistStrategy) else None
    if assisted is not None:
        if max_loss is None:
            assisted.bind(machine, seed)
        else:
            assisted.bind(machine, seed, max_loss)
    gen = state.run()
    prefers = person.prefers
    answered: dict[tuple[str, str], str] = {}
    humans = machines = 0
    try:
        question = next(gen)
        while True:
            a, b = question.a, question.b
            key = (a, b) if a < b else (b, a)
            winner = answered.get(key) if cache and not question.repeat else None
            if winner is None:
                verdict = None if assisted is None else assisted.machine_verdict(question)
                if verdict is not None and assisted is not None:
                    winner, p_right = verdict
                    assisted.accept_machine(question, winner, p_right)
                    machines += 1
                else:
                    winner = a if prefers(a, b) else b
                    humans += 1
                if not question.repeat:
                    answered.setdefault(key, winner)
            question = gen.send(winner)
    except StopIteration as stop:
        top, rest = stop.value
    return top, rest, humans, machines, state


def compare_strategies(
    strategy: str, scenario: str, n: int, k: int, trials: int, *, seed: int = 0
) -> list[StudyTrial]:
    """``trials`` runs of ``strategy`` (a name the task option accepts) in ``scenario``.

    Latent values ``u_i ~ U(0, 1)``; the true top k is the k largest. Trial ``t`` draws its
    latent values, document order and assessor seed from ``random.Random((seed, t))`` alone,
    so every strategy meets the same documents, orders and noise seeds (common random numbers).
    """
    if n < 1 or k < 1 or trials < 1:
        raise ConfigError(f"n, k and trials must be >= 1, got n={n}, k={k}, trials={trials}")
    cls = resolve_strategy(strategy)
    if scenario not in SCENARIOS:
        raise ConfigError(f"unknown scenario {scenario!r}; expected one of {', '.join(SCENARIOS)}")
    docs = [f"d{i:04d}" for i in range(n)]
    out: list[StudyTrial] = []
    for t in range(trials):
        rng = random.Random(f"{seed}:{t}")
        latent = {doc: rng.random() for doc in docs}
        truth = sorted(docs, key=lambda doc: -latent[doc])
        rank = {doc: r for r, doc in enumerate(truth)}
        if scenario == "prior0.7":
            order = prior_order(latent, SCENARIO_PRIOR_CORR, rng)
        else:
            order = docs[:]
            rng.shuffle(order)
        assessor = scenario_assessor(scenario, rank, rng.getrandbits(32))
        top, rest, judgments = run_strategy(cls, order, k, assessor)
        position = {doc: i for i, doc in enumerate([*top, *rest])}
        label = {doc: k - i for i, doc in enumerate(truth[:k])}
        out.append(
            StudyTrial(
                judgments=judgments,
                calls=judgments,
                exact=top == truth[:k],
                seconds=0.0,
                truth_labels=[label.get(doc, 0) for doc in docs],
                produced_rank=[position[doc] for doc in docs],
            )
        )
    return out
