"""Machine-assisted judging: a machine answers the comparisons whose risk is small, people the
rest (the ``+assist`` modifier; docs/machine-judges.md#assisted-strategies).

``assist(inner)`` wraps any pairwise strategy (a base, or a base with ``+robust``, see 5.). The
wrapped strategy asks exactly the questions ``inner`` asks; for the pending question the session
asks :meth:`AssistStrategy.machine_verdict` whether the machine may answer it. The rule:

1. **The machine's opinion.** An injected :class:`MachineOpinion` gives ``p``, its P(first
   better), already calibrated on the study's earlier answers by the service (``None``: no
   opinion, or not ready). A per-session :class:`labeling.machine.calibration.Calibrator`
   (isotonic, prior trust 1 in ``p``, weight :data:`SESSION_PRIOR_WEIGHT`) corrects ``p`` with
   this session's human answers: ``g(p)``. The machine's answer is the first document when
   ``g(p) > 1/2``; it is wrong with probability ``max(1 − max(g, 1 − g), MIN_WRONG)``.
2. **Stake** (the ``+robust`` accounting, docs/noise.md#the-robust-rule): a wrong "w beat l"
   costs what l then misses, in κ-NDCG@k. ``a_w`` and ``a_l`` are the numbers of documents
   known (directly or through others, by the answers so far) to be better than w and l; if
   the answer is wrong, l's true rank lies between ``a_l + 1`` and ``a_w + 1``, taken uniform
   there, and l is taken to be shown in the rest: :func:`wrong_stake`.
3. **Risk** = stake × P(wrong). The machine answers when the risk is at most
   :data:`TOLERANCE` / n and the risks of all its answers so far plus this one stay within
   :data:`BUDGET`, the stated expected κ-NDCG@k loss the machine may cost the result. A
   repeat (:attr:`Compare.repeat`) and a pair already answered always go to people.
4. **Audit.** A seeded share :data:`AUDIT_SHARE` of the questions the machine could answer
   is asked of people anyway (a hash of the seed and the pair, never of the answers), so the
   calibration sees the machine's confident answers too. Every human answer on a pair the
   machine has an opinion on feeds the session calibration. A machine that is wrong on every
   such pair loses all confidence (``g = 1/2`` everywhere) after ``SESSION_PRIOR_WEIGHT / 2``
   of them (docs/machine-judges.md#assisted-strategies), so it stops answering by then.
5. **Over** ``+robust`` (``X+assist+robust``, a person who sometimes answers wrongly): the
   robust rule's confirmations are decided with the machine as the second opinion, before the
   answer is used: the base ``X`` runs, and a person's answer is asked again
   (:attr:`Compare.repeat`, shown the other way round) while stake × P(wrong | the votes, the
   machine's opinion) exceeds :data:`CONFIRM_TOLERANCE` / n, up to :data:`CONFIRM_VOTES`
   votes (:meth:`AssistStrategy._confirmed_risk`: prior odds from the calibrated machine,
   each vote of lead multiplying them by (1 − f)/f, f the robust rule's assumed flip rate).
   The base only ever sees the combined answer (the majority; equal counts: the machine's
   side), so nothing is re-run; a person who agrees with a confident machine is not asked
   again, one who contradicts it is.

Machine answers are derived, not chosen: the session records each as a
:class:`labeling.protocol.types.MachineAnswer` (its probability of being right) in the log,
and replay takes a logged machine answer as given (:meth:`AssistStrategy.accept_machine`) and
a logged person's answer as a person's, so the log alone decides the state; only past the
log's end is the machine asked again. Undoing a person's answer drops the machine answers
after it, and they are derived anew.
"""

from __future__ import annotations

import hashlib
from collections.abc import Generator, Sequence
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from labeling.strategies.base import Compare, PairStrategy, Winner
from labeling.strategies.robust import ASSUMED_FLIP, DAMAGE_DEPTH, RobustStrategy, damage_table

if TYPE_CHECKING:
    from labeling.machine.calibration import Calibrator

#: Per-question risk tolerance, times 1/n: the machine answers a question only when stake ×
#: P(wrong) ≤ TOLERANCE / n. Chosen on the machine0.8 scenario at (50, 10)
#: (docs/machine-judges.md#measured).
TOLERANCE = 0.35
#: The stated expected κ-NDCG@k loss the machine's answers may cost a result in total, by
#: the model (which is conservative: measured, the loss is about a tenth of it).
BUDGET = 0.1
#: Share of the questions the machine could answer that are asked of people anyway.
AUDIT_SHARE = 0.05
#: Weight of the session calibration's prior (pseudo-answers that trust the given ``p``).
SESSION_PRIOR_WEIGHT = 10.0
#: Least probability that a machine answer is wrong, whatever the calibration says.
MIN_WRONG = 0.001
#: Over ``+robust``: a person's answer is asked again while stake × P(wrong) > this / n.
CONFIRM_TOLERANCE = 0.5
#: Over ``+robust``: most votes per pair.
CONFIRM_VOTES = 5

Key = tuple[str, str]


@runtime_checkable
class MachineOpinion(Protocol):
    """The machine of one task, as the assisted strategy sees it: a judge behind the
    calibrator frozen for the task, deterministic for a given version (docs/glossary.md)."""

    @property
    def version(self) -> str:
        """Names the judge, its calibration and every parameter that changes its answers."""
        ...

    def probability(self, first: str, second: str) -> float | None:
        """Calibrated P(``first`` better than ``second``); ``None``: no opinion (or not
        ready: a person is asked)."""
        ...


def _key(a: str, b: str) -> Key:
    return (a, b) if a < b else (b, a)


@lru_cache(maxsize=4096)
def wrong_stake(k: int, above_winner: int, above_loser: int) -> float:
    """Expected κ-NDCG@k lost when "w beat l" is wrong: l's true rank uniform over
    ``above_loser + 1 … above_winner + 1`` (its best possible rank up to w's best possible
    rank; just w's when ``above_loser ≥ above_winner``) and l shown in the rest
    (:func:`labeling.strategies.robust.damage_table`)."""
    depth = min(k, DAMAGE_DEPTH)
    table = damage_table(depth)
    high = above_winner + 1
    low = min(above_loser + 1, high)
    ranks = range(low, high + 1)
    return sum(table[r][depth + 1] for r in ranks if r <= depth) / len(ranks)


def audit_draw(seed: int, a: str, b: str) -> float:
    """A uniform number in [0, 1) from the task seed and the unordered pair (the audit)."""
    x, y = _key(a, b)
    digest = hashlib.blake2b(f"{seed}\x1f{x}\x1f{y}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


class AssistStrategy:
    """The assist modifier applied to :attr:`inner` (build one with :func:`assist`).

    Readable while paused: ``machine_answers``, ``person_answers``, ``audits`` (questions the
    machine could have answered, asked of people), ``spent`` (the risks of the machine's
    answers), ``calibrator`` (the session calibration) and ``evidence`` (every human answer on
    a pair the machine had an opinion on: ``(a, b, p, a_won)``).
    """

    inner: ClassVar[type[PairStrategy]]
    confirmation_share: ClassVar[float] = 0.0

    def __init__(self, order: Sequence[str], k: int) -> None:
        inner = self.inner
        #: Over ``+robust``: the robust rule's confirmations, decided with the machine's
        #: opinion (rule 5 of the module docstring), on the robust strategy's base.
        self.confirming = issubclass(inner, RobustStrategy)
        if issubclass(inner, RobustStrategy):
            inner = inner.base
        self.state = inner(order, k)  # validates k and the order
        self.confirmations = 0
        self.order = list(order)
        self.k = k
        self.n = len(self.order)
        self.phase: str = self.state.phase
        self.machine: MachineOpinion | None = None
        self.seed = 0
        #: The session calibration, made when a machine is bound (:meth:`bind`).
        self.calibrator: Calibrator | None = None
        self.machine_answers = 0
        self.person_answers = 0
        self.audits = 0
        self.spent = 0.0
        self.evidence: list[tuple[str, str, float, bool]] = []
        self._index = {doc: i for i, doc in enumerate(self.order)}
        self._above = [0] * self.n  # per document: bit set of those known to be better
        self._below = [0] * self.n  # per document: bit set of those known to be worse
        self._answered: set[Key] = set()
        self._turn: tuple[Key, float] | None = None  # a machine answer to the pending question

    def bind(self, machine: MachineOpinion | None, seed: int) -> None:
        """Give the strategy its machine and the task seed (before the first answer)."""
        self.machine = machine
        self.seed = seed
        if machine is not None and self.calibrator is None:
            # Imported here: the calibration needs numpy, which the protocol core does not
            # load for the tasks without a machine (no import cycle is involved).
            from labeling.machine.calibration import Calibrator

            self.calibrator = Calibrator("isotonic", SESSION_PRIOR_WEIGHT, 1.0)

    # -- the decision ----------------------------------------------------------------------
    def _opinion(self, a: str, b: str) -> float | None:
        if self.machine is None:
            return None
        p = self.machine.probability(a, b)
        if p is None or not 0.0 <= p <= 1.0:  # NaN fails the test too: no opinion
            return None
        return p

    def _calibration(self) -> Calibrator:
        assert self.calibrator is not None, "bind a machine first"
        return self.calibrator

    def _calibrated(self, p: float) -> float:
        """``g(p)``: the session calibration of the machine's ``p``."""
        return float(self._calibration().probability(p))

    def _risk(self, winner: str, loser: str, p_right: float) -> float:
        index = self._index
        above_w = self._above[index[winner]].bit_count()
        above_l = self._above[index[loser]].bit_count()
        return wrong_stake(self.k, above_w, above_l) * max(1.0 - p_right, MIN_WRONG)

    def machine_verdict(self, question: Compare) -> tuple[str, float] | None:
        """``(winner, P(right))`` if the machine may answer ``question`` (the module
        docstring's rule), else ``None`` (a person answers). No state changes."""
        verdict = self._candidate(question)
        if verdict is None or audit_draw(self.seed, question.a, question.b) < AUDIT_SHARE:
            return None
        return verdict

    def would_audit(self, question: Compare) -> bool:
        """True when the machine could answer ``question`` but the audit gives it to people."""
        return (
            self._candidate(question) is not None
            and audit_draw(self.seed, question.a, question.b) < AUDIT_SHARE
        )

    def _candidate(self, question: Compare) -> tuple[str, float] | None:
        """Rules 1–3 of the module docstring: ``(winner, P(right))`` when the machine's risk
        on ``question`` is small enough, before the audit."""
        a, b = question.a, question.b
        if question.repeat or _key(a, b) in self._answered:
            return None
        p = self._opinion(a, b)
        if p is None:
            return None
        g = self._calibrated(p)
        if abs(g - 0.5) < 1e-9:  # no confidence either way
            return None
        winner, loser, p_right = (a, b, g) if g > 0.5 else (b, a, 1.0 - g)
        risk = self._risk(winner, loser, p_right)
        if risk > TOLERANCE / self.n or self.spent + risk > BUDGET:
            return None
        return winner, p_right

    def accept_machine(self, question: Compare, winner: str, p_right: float) -> None:
        """The next answer to ``question`` is the machine's (live or from the log), right
        with probability ``p_right``: its risk is spent when the answer arrives."""
        loser = question.b if winner == question.a else question.a
        self._turn = (_key(question.a, question.b), self._risk(winner, loser, p_right))

    # -- the run ---------------------------------------------------------------------------
    def run(self) -> Generator[Compare, Winner, tuple[list[str], list[str]]]:
        """The inner strategy's questions, passed through; every answer is recorded (who gave
        it, what it proves, what it teaches the calibration)."""
        state = self.state
        gen = state.run()
        try:
            question = next(gen)
            while True:
                self.phase = state.phase
                winner = yield question
                by_person = self._learn(question, winner)
                if self.confirming and by_person and winner is not None:
                    winner = yield from self._confirm(question, winner)
                self._settle(question, winner)
                question = gen.send(winner)
        except StopIteration as stop:
            top, rest = stop.value
        self.phase = "done"
        return list(top), list(rest)

    def _confirm(self, question: Compare, first: str) -> Generator[Compare, Winner, Winner]:
        """Ask a person's answer again while its risk is above :data:`CONFIRM_TOLERANCE` / n
        (rule 5 of the module docstring); the combined answer."""
        a, b = question.a, question.b
        votes: list[Winner] = [first]
        winner = first
        while len(votes) < CONFIRM_VOTES:
            loser = b if winner == a else a
            if self._confirmed_risk(winner, loser, votes) <= CONFIRM_TOLERANCE / self.n:
                break
            self.confirmations += 1
            vote = yield Compare(a, b, question.challenger, repeat=True)
            self._learn(question._replace(repeat=True), vote)
            votes.append(vote)
            winner = self._combine(a, b, votes)
        return winner

    def _combine(self, a: str, b: str, votes: Sequence[Winner]) -> str:
        """The side with more votes; equal counts: the machine's side, else the first vote."""
        count_a = sum(1 for v in votes if v == a)
        count_b = sum(1 for v in votes if v == b)
        if count_a != count_b:
            return a if count_a > count_b else b
        p = self._opinion(a, b)
        if p is not None:
            g = self._calibrated(p)
            if abs(g - 0.5) >= 1e-9:
                return a if g > 0.5 else b
        return next(v for v in votes if v is not None)

    def _confirmed_risk(self, winner: str, loser: str, votes: Sequence[Winner]) -> float:
        """stake × P(the combined answer is wrong | the votes, the machine's opinion): prior
        odds ``g/(1 − g)`` for the winner's side (1 without an opinion; ``g`` clipped to
        ``[MIN_WRONG, 1 − MIN_WRONG]``) times ``((1 − f)/f)^L``, L the winner's lead in votes
        and f the flip rate the robust rule assumes (docs/noise.md#the-robust-rule)."""
        lead = sum(1 for v in votes if v == winner) - sum(1 for v in votes if v == loser)
        odds = ((1.0 - ASSUMED_FLIP) / ASSUMED_FLIP) ** lead
        p = self._opinion(winner, loser)
        if p is not None:
            g = min(max(self._calibrated(p), MIN_WRONG), 1.0 - MIN_WRONG)
            odds *= g / (1.0 - g)
        index = self._index
        stake = wrong_stake(
            self.k,
            self._above[index[winner]].bit_count(),
            self._above[index[loser]].bit_count(),
        )
        return stake / (1.0 + odds)

    def _learn(self, question: Compare, winner: Winner) -> bool:
        """Count an answer and learn from it: True when a person gave it."""
        a, b = question.a, question.b
        key = _key(a, b)
        turn, self._turn = self._turn, None
        if turn is not None and turn[0] == key and winner is not None:
            self.machine_answers += 1
            self.spent += turn[1]
            return False
        if question.repeat or key not in self._answered:
            # A person's answer (a pair answered before and asked without ``repeat`` is a
            # pair-cache hit: no new evidence).
            self.person_answers += 1
            if not question.repeat and self.would_audit(question):
                self.audits += 1
            p = self._opinion(a, b)
            if p is not None and winner is not None:
                self._calibration().update(p, winner == a)
                self.evidence.append((a, b, p, winner == a))
            return True
        return False  # a pair-cache hit

    def _settle(self, question: Compare, winner: Winner) -> None:
        """The answer the inner strategy gets: what it proves."""
        a, b = question.a, question.b
        self._answered.add(_key(a, b))
        w, loser = (a, b) if winner == a else (b, a)  # a tie lets b advance, as bases read it
        self._edge(self._index[w], self._index[loser])

    def _edge(self, w: int, loser: int) -> None:
        """Record "w beat loser" in the known-better sets (transitively)."""
        above, below = self._above, self._below
        ups = above[w] | (1 << w)
        downs = below[loser] | (1 << loser)
        for i in _bits(ups):
            below[i] |= downs
        for i in _bits(downs):
            above[i] |= ups

    # -- what the session and the modifiers read -------------------------------------------
    def fixed_positions(self) -> int:
        """The inner strategy's."""
        return self.state.fixed_positions()

    def max_remaining(self) -> int:
        """The inner strategy's bound (the machine only takes questions from people, and the
        inner bound holds for any answers), times :data:`CONFIRM_VOTES` when confirming."""
        bound = self.state.max_remaining()
        return bound * CONFIRM_VOTES if self.confirming else bound

    def expected_remaining(self, *, cache: bool) -> float:
        """The inner strategy's expectation times the share of questions people have
        answered so far (Laplace's rule: (person + 1) / (all + 2)); at least 1 while not
        done."""
        bound = self.max_remaining()
        if bound == 0:
            return 0.0
        model: Any = getattr(self.state, "expected_remaining", None)
        inner = float(bound) if model is None else float(model(cache=cache))
        share = (self.person_answers + 1) / (self.person_answers + self.machine_answers + 2)
        return min(float(bound), max(1.0, inner * share))


def _bits(mask: int) -> Sequence[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


@cache
def assist(inner: type[PairStrategy]) -> type[PairStrategy]:
    """``inner`` with machine answers (the ``+assist`` modifier): see the module docstring.
    One class per inner strategy (cached), named ``Assist<Inner>``."""
    return type(f"Assist{inner.__name__}", (AssistStrategy,), {"inner": inner})
