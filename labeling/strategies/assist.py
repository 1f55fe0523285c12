"""Machine-assisted judging: a machine answers the comparisons whose risk is small, people the
rest (the ``+assist`` modifier; docs/machine-judges.md#the-rule).

``assist(inner)`` wraps any pairwise strategy (a base, or a base with ``+robust``, see 6.). The
wrapped strategy asks exactly the questions ``inner`` asks; for the pending question the session
asks :meth:`AssistStrategy.machine_verdict` whether the machine may answer it. The rule:

1. **The machine's side.** An injected :class:`Machine` gives its P(first better); its
   raw probability ``p`` (``raw_probability`` when the opinion has one) names the side it
   would answer (first when ``p > 1/2``), a confidence bin of ``|p − 1/2|`` and, with the
   question's stake (3.), its **stratum** (:func:`labeling.machine.trust.stratum`: bin ×
   stake class).
2. **No answer without evidence.** P(wrong) is not a point estimate but ``U``, the
   Clopper–Pearson upper bound at level :data:`labeling.machine.trust.BOUND_ALPHA` on the
   error rate of the machine's side in that stratum, from every person's answer to a question
   of the stratum: the study's earlier ones (the opinion's ``stratum_evidence``, the service's
   stored answers of the study's other tasks) and this session's
   (:class:`labeling.machine.trust.StratumEvidence`). With no answer in the stratum ``U = 1``.
   The answer is logged with P(right) ``1 − U``; when ``U ≥ 1/2`` (little evidence, or a
   machine no better than a coin there) it claims only a coin's P(wrong), 1/2 (logged at
   P(right) 1/2, and its audit tests no claim), and only the rule's risk (4.) lets it answer:
   a question of small enough stake.
3. **Stake** (the ``+robust`` accounting, docs/noise.md#the-robust-rule): a wrong "w beat l"
   costs what l then misses, in κ-NDCG@k. ``a_w`` and ``a_l`` are the numbers of documents
   known (directly or through others, by the answers so far) to be better than w and l; if
   the answer is wrong, l's true rank lies between ``a_l + 1`` and ``a_w + 1``, taken uniform
   there, and l is taken to be shown just below w (:func:`wrong_stake`): w at its best
   possible position, ``a_w + 1``, when the base places a beaten document just below its
   winner (binary insertion: ``places_loser_below_winner``), at its worst, ``n − b_w`` (``b_w``
   the documents known to be worse than w), when the loser waits out of play until its winner
   is placed (a tournament, a heap).
4. **Risk** = stake × ``U`` (``U`` up to 1). The machine answers when the risk is at most the
   per-question tolerance ``max_loss · min(35 / n, 1/5)``
   (:func:`labeling.machine.trust.question_tolerance`) and the risks of all its answers so
   far plus this one stay within ``max_loss`` (the task option
   ``machine.max_loss``, default :data:`labeling.machine.trust.DEFAULT_MAX_LOSS`, 0.01: the
   expected κ-NDCG@k loss per query the machine may cost, by the stake model). A repeat
   (:attr:`Compare.repeat`) and a pair already answered always go to people.
5. **Audits that act.** A share of the questions the machine could answer is asked of people
   anyway (a hash of the seed and the pair below :func:`labeling.machine.trust.audit_share`
   of the stratum's evidence count: more audits while the stratum has few answers; the
   largest share, :data:`labeling.machine.trust.AUDIT_MAX`, in a stratum where a person of
   this session has contradicted the machine). Each audit tests
   the claim ``U`` sequentially (:class:`labeling.machine.trust.AuditMonitor`, started from the
   opinion's ``prior_audits``, the study's audits so far): once the test rejects the claim
   (false-alarm rate :data:`labeling.machine.trust.ALARM_ALPHA`), the machine answers nothing
   more in the session (:attr:`AssistStrategy.alarmed`) and the service stops it for the
   collection. Every person's answer to a question the machine has a side on is evidence of
   its stratum (2.; a ``+robust`` repeat is not: it is no question the machine could answer).
6. **Over** ``+robust`` (``X+assist+robust``, a person who sometimes answers wrongly): the
   robust rule's confirmations are decided with the machine as the second opinion, before the
   answer is used: the base ``X`` runs, and a person's answer is asked again
   (:attr:`Compare.repeat`, shown the other way round) while stake × P(wrong | the votes, the
   machine's opinion) exceeds :data:`CONFIRM_TOLERANCE` / n, up to :data:`CONFIRM_VOTES`
   votes (:meth:`AssistStrategy._confirmed_risk`: prior odds ``(1 − U)/U`` for the machine's
   side, each vote of lead multiplying them by (1 − f)/f, f the robust rule's assumed flip
   rate). Here ``U`` is the bound of the confidence bin over people's answers (the study's
   and this session's: :attr:`AssistStrategy.people_trust`), not of a stratum: a confirmed
   pair is one people answer, the population that evidence is drawn from. The base only ever
   sees the combined answer (the majority; equal counts: the machine's side), so nothing is
   re-run.

Machine answers are derived, not chosen: the session records each as a
:class:`labeling.protocol.types.MachineAnswer` (its P(right), ``1 − U``) in the log, and replay
takes a logged machine answer as given (:meth:`AssistStrategy.accept_machine`) and a logged
person's answer as a person's, so the log alone decides the state; only past the log's end is
the machine asked again. Undoing a person's answer drops the machine answers after it, and
they are derived anew.
"""

from __future__ import annotations

import hashlib
from collections.abc import Generator, Sequence
from functools import cache, lru_cache
from typing import Any, ClassVar, Protocol, runtime_checkable

from labeling.machine.trust import (
    AUDIT_MAX,
    AuditMonitor,
    ErrorEvidence,
    StratumEvidence,
    audit_share,
    question_tolerance,
    stratum,
)

# Re-exported: the option machine.max_loss's default and bound (its check: the task spec).
from labeling.machine.trust import (
    DEFAULT_MAX_LOSS as DEFAULT_MAX_LOSS,
)
from labeling.machine.trust import (
    MAX_MAX_LOSS as MAX_MAX_LOSS,
)
from labeling.strategies.base import Compare, PairStrategy, Winner
from labeling.strategies.robust import ASSUMED_FLIP, DAMAGE_DEPTH, RobustStrategy, damage_table

#: Largest share of the questions the machine could answer that are asked of people anyway
#: (the share itself adapts: :func:`labeling.machine.trust.audit_share`).
AUDIT_SHARE = AUDIT_MAX
#: Least probability that a machine answer is wrong, whatever the evidence says.
MIN_WRONG = 0.001
#: The most a machine answer claims of its P(wrong): an answer whose bound is above it (a
#: question of small stake, rule 2 of the module docstring) claims a coin's and is logged at
#: P(right) 1 − MAX_CLAIM = 1/2.
MAX_CLAIM = 0.5
#: Over ``+robust``: a person's answer is asked again while stake × P(wrong) > this / n.
CONFIRM_TOLERANCE = 0.5
#: Over ``+robust``: most votes per pair.
CONFIRM_VOTES = 5

Key = tuple[str, str]


@runtime_checkable
class Machine(Protocol):
    """A machine judge for one task, as the assisted strategy sees it: deterministic for a
    given version. It may also have ``raw_probability(first, second)`` (the judge's raw
    probability, whose confidence bin the evidence is counted in; default: ``probability``),
    ``stratum_evidence`` (:class:`labeling.machine.trust.StratumEvidence`, the study's
    people's answers per stratum) and ``prior_audits``
    (:class:`labeling.machine.trust.AuditMonitor`, the study's audits)."""

    @property
    def version(self) -> str:
        """Names the judge, its evidence and every parameter that changes its answers."""
        ...

    def probability(self, first: str, second: str) -> float | None:
        """P(``first`` better than ``second``); ``None``: no opinion (or not ready: a person
        is asked)."""
        ...


def _key(a: str, b: str) -> Key:
    return (a, b) if a < b else (b, a)


@lru_cache(maxsize=4096)
def wrong_stake(k: int, above_winner: int, above_loser: int, winner_at: int | None = None) -> float:
    """Expected κ-NDCG@k lost when "w beat l" is wrong: l's true rank ``r`` uniform over
    ``above_loser + 1 … above_winner + 1`` (its best possible rank up to w's best possible
    rank; just w's when ``above_loser ≥ above_winner``) and l shown just below w, w taken at
    position ``winner_at`` (default ``above_winner + 1``, its best possible one): l at
    ``max(r, winner_at + 1)`` (k + 1: in the rest), every other document in its true order
    (:func:`labeling.strategies.robust.damage_table`). A strategy whose loser waits out of
    play until its winner is placed passes w's worst possible position (rule 3 of the module
    docstring)."""
    depth = min(k, DAMAGE_DEPTH)
    table = damage_table(depth)
    high = above_winner + 1
    low = min(above_loser + 1, high)
    ranks = range(low, high + 1)
    at = high if winner_at is None else max(winner_at, high)
    shown = min(at + 1, depth + 1)
    return sum(table[r][max(shown, r)] for r in ranks if r <= depth) / len(ranks)


def audit_draw(seed: int, a: str, b: str) -> float:
    """A uniform number in [0, 1) from the task seed and the unordered pair (the audit)."""
    x, y = _key(a, b)
    digest = hashlib.blake2b(f"{seed}\x1f{x}\x1f{y}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


class AssistStrategy:
    """The assist modifier applied to :attr:`inner` (build one with :func:`assist`).

    Readable while paused: ``machine_answers``, ``person_answers``, ``audits`` (questions the
    machine could have answered, asked of people), ``spent`` (the risks of the machine's
    answers), ``trust`` (the error evidence per stratum: the study's plus this session's),
    ``evidence_records`` (this session's people's answers as evidence: stratum, contradicted,
    the claim when an audit), ``monitor`` (the audit test, the study's audits plus this session's),
    ``audit_records`` (this session's audits: ``(claimed P(wrong), wrong)``) and
    ``evidence`` (every human answer on a pair the machine had an opinion on:
    ``(a, b, raw p, a_won)``).
    """

    inner: ClassVar[type[PairStrategy]]
    confirmation_share: ClassVar[float] = 0.0

    def __init__(self, order: Sequence[str], k: int) -> None:
        inner = self.inner
        #: Over ``+robust``: the robust rule's confirmations, decided with the machine's
        #: opinion (rule 6 of the module docstring), on the robust strategy's base.
        self.confirming = issubclass(inner, RobustStrategy)
        if issubclass(inner, RobustStrategy):
            inner = inner.base
        self.state = inner(order, k)  # validates k and the order
        #: Whether the base places a beaten document just below its winner (rule 3).
        self._placed_below = bool(getattr(inner, "places_loser_below_winner", False))
        self.confirmations = 0
        self.order = list(order)
        self.k = k
        self.n = len(self.order)
        self.phase: str = self.state.phase
        self.machine: Machine | None = None
        self.seed = 0
        self.max_loss = DEFAULT_MAX_LOSS
        self.tolerance = question_tolerance(self.max_loss, self.n)
        self.trust = StratumEvidence()
        self.people_trust = ErrorEvidence()
        self.monitor = AuditMonitor()
        self.audit_records: list[tuple[float, bool]] = []
        #: This session's people's answers as evidence: ``(stratum, contradicted the machine,
        #: the claimed P(wrong) when the answer was an audit, else None)``.
        self.evidence_records: list[tuple[int, bool, float | None]] = []
        self.machine_answers = 0
        self.person_answers = 0
        self.audits = 0
        self.spent = 0.0
        self.evidence: list[tuple[str, str, float, bool]] = []
        self._index = {doc: i for i, doc in enumerate(self.order)}
        self._above = [0] * self.n  # per document: bit set of those known to be better
        self._below = [0] * self.n  # per document: bit set of those known to be worse
        self._answered: set[Key] = set()
        #: Strata in which a person contradicted the machine in this session: their audit
        #: share is the largest (rule 5).
        self._contradicted: set[int] = set()
        self._turn: tuple[Key, float] | None = None  # a machine answer to the pending question

    def bind(self, machine: Machine | None, seed: int, max_loss: float = DEFAULT_MAX_LOSS) -> None:
        """Give the strategy its machine, the task seed and the stated loss (before the first
        answer): the study's evidence per stratum (the machine's ``stratum_evidence``) and
        audits are copied from the machine."""
        self.machine = machine
        self.seed = seed
        self.max_loss = max_loss
        self.tolerance = question_tolerance(max_loss, self.n)
        evidence = getattr(machine, "stratum_evidence", None)
        self.trust = evidence.copy() if isinstance(evidence, StratumEvidence) else StratumEvidence()
        answered = getattr(machine, "evidence", None)
        self.people_trust = (
            answered.copy() if isinstance(answered, ErrorEvidence) else ErrorEvidence()
        )
        audits = getattr(machine, "prior_audits", None)
        self.monitor = audits.copy() if isinstance(audits, AuditMonitor) else AuditMonitor()

    @property
    def alarmed(self) -> bool:
        """Whether the audits have shown the machine worse than it claims (it answers no more)."""
        return self.monitor.alarmed

    # -- the decision ----------------------------------------------------------------------
    def _raw(self, a: str, b: str) -> float | None:
        """The machine's raw P(a better than b), None without an opinion."""
        machine = self.machine
        if machine is None:
            return None
        raw = getattr(machine, "raw_probability", None)
        p = machine.probability(a, b) if raw is None else raw(a, b)
        if p is None or not 0.0 <= p <= 1.0:  # NaN fails the test too: no opinion
            return None
        return float(p)

    def _stake(self, winner: str, loser: str) -> float:
        index = self._index
        w = index[winner]
        above_w = self._above[w].bit_count()
        above_l = self._above[index[loser]].bit_count()
        if self._placed_below:
            return wrong_stake(self.k, above_w, above_l)
        # The loser waits until w is placed, and w may be as low as its worst possible
        # position (every document not known to be worse is above it).
        return wrong_stake(self.k, above_w, above_l, self.n - self._below[w].bit_count())

    def _risk(self, winner: str, loser: str, p_right: float) -> float:
        """The risk a machine answer spends: stake × its bound. An answer logged at P(right)
        1/2 may have had any bound from 1/2 to 1, so that is read again from the evidence,
        which replay rebuilds as it was."""
        wrong = 1.0 - p_right
        if wrong >= MAX_CLAIM:
            side = self._side(winner, loser)
            if side is not None:
                wrong = max(wrong, self.trust.upper(side[3]))
        return self._stake(winner, loser) * max(wrong, MIN_WRONG)

    def _side(self, a: str, b: str) -> tuple[str, str, float, int] | None:
        """The machine's side on (a, b) in the current state: ``(winner, loser, stake,
        stratum)``, None without an opinion or a side."""
        p = self._raw(a, b)
        if p is None or p == 0.5:
            return None
        winner, loser = (a, b) if p > 0.5 else (b, a)
        stake = self._stake(winner, loser)
        s = stratum(p, stake)
        if s is None:
            return None
        return winner, loser, stake, s

    def _bound(self, a: str, b: str) -> float:
        """``U`` of the machine's side on (a, b) in its stratum now (1 without a side)."""
        side = self._side(a, b)
        return 1.0 if side is None else self.trust.upper(side[3])

    def machine_verdict(self, question: Compare) -> tuple[str, float] | None:
        """``(winner, P(right))`` if the machine may answer ``question`` (the module
        docstring's rule), else ``None`` (a person answers). No state changes."""
        verdict = self._candidate(question)
        if verdict is None or self._audited(question):
            return None
        return verdict

    def machine_verdict_unaudited(self, question: Compare) -> tuple[str, float] | None:
        """``(winner, P(right))`` the machine would claim on ``question`` before the audit
        (an audit's claim), else ``None``. No state changes."""
        return self._candidate(question)

    def _audited(self, question: Compare) -> bool:
        side = self._side(question.a, question.b)
        if side is None:
            return False
        s = side[3]
        share = AUDIT_MAX if s in self._contradicted else audit_share(self.trust.count(s))
        return audit_draw(self.seed, question.a, question.b) < share

    def would_audit(self, question: Compare) -> bool:
        """True when the machine could answer ``question`` but the audit gives it to people."""
        return self._candidate(question) is not None and self._audited(question)

    def _candidate(self, question: Compare) -> tuple[str, float] | None:
        """Rules 1–4 of the module docstring: ``(winner, P(right) = 1 − U)`` when the machine's
        risk on ``question`` is small enough, before the audit."""
        a, b = question.a, question.b
        if self.machine is None or question.repeat or _key(a, b) in self._answered:
            return None
        if self.monitor.alarmed:
            return None
        side = self._side(a, b)
        if side is None:
            return None
        winner, _loser, stake, s = side
        bound = self.trust.upper(s)
        risk = stake * max(bound, MIN_WRONG)
        if risk > self.tolerance or self.spent + risk > self.max_loss:
            return None
        # With a bound of 1/2 or more the answer claims no better than a coin (rule 2).
        return winner, 1.0 - min(bound, MAX_CLAIM)

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
        p = self._raw(a, b)
        if p is not None and p != 0.5 and self.people_trust.upper(p) < 0.5:
            return a if p > 0.5 else b
        return next(v for v in votes if v is not None)

    def _confirmed_risk(self, winner: str, loser: str, votes: Sequence[Winner]) -> float:
        """stake × P(the combined answer is wrong | the votes, the machine's opinion): prior
        odds ``(1 − U)/U`` for the machine's side (``U`` the bound on its error, clipped to
        ``[MIN_WRONG, 1/2]``; 1 without an opinion) times ``((1 − f)/f)^L``, L the winner's
        lead in votes and f the flip rate the robust rule assumes
        (docs/noise.md#the-robust-rule)."""
        lead = sum(1 for v in votes if v == winner) - sum(1 for v in votes if v == loser)
        odds = ((1.0 - ASSUMED_FLIP) / ASSUMED_FLIP) ** lead
        p = self._raw(winner, loser)
        if p is not None and p != 0.5:
            # The pair is one people answer, so the evidence is people's answers per bin
            # (the population the per-bin bound holds on), not the strata of what the
            # machine answers.
            u = min(max(self.people_trust.upper(p), MIN_WRONG), 0.5)
            odds *= (1.0 - u) / u if p > 0.5 else u / (1.0 - u)
        return self._stake(winner, loser) / (1.0 + odds)

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
            claimed = None if question.repeat else self._audit(question, winner)
            p = self._raw(a, b)
            if p is not None and winner is not None:
                self.evidence.append((a, b, p, winner == a))
                self.people_trust.add(p, winner == a)
            side = None if question.repeat else self._side(a, b)
            if side is not None and winner is not None:
                # The evidence of the question's stratum, counted before the answer is
                # settled (the stake as it was asked); a repeat (+robust) is no question the
                # machine could answer.
                wrong = winner != side[0]
                self.trust.add(side[3], wrong)
                self.evidence_records.append((side[3], wrong, claimed))
                if wrong:
                    self._contradicted.add(side[3])
            return True
        return False  # a pair-cache hit

    def _audit(self, question: Compare, winner: Winner) -> float | None:
        """A person's answer to a question the audit took from the machine: test the claim
        (rule 5 of the module docstring), before the answer becomes evidence; the claimed
        P(wrong) when it was a tested audit."""
        verdict = self._candidate(question)
        if verdict is None or not self._audited(question):
            return None
        self.audits += 1
        if winner is None:  # a tie says nothing about the machine's side
            return None
        claimed, wrong = 1.0 - verdict[1], winner != verdict[0]
        if claimed >= MAX_CLAIM:
            # A coin's claim (rule 2): nothing better than a coin to test; the answer is
            # evidence of its stratum like any other.
            return None
        self.monitor.record(claimed, wrong)
        self.audit_records.append((claimed, wrong))
        return claimed

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
        """The inner strategy's expectation, as people alone would see it (blind: the
        estimate an assessor reads does not shrink with the machine's answers); at least 1
        while not done."""
        bound = self.max_remaining()
        if bound == 0:
            return 0.0
        model: Any = getattr(self.state, "expected_remaining", None)
        inner = float(bound) if model is None else float(model(cache=cache))
        return min(float(bound), max(1.0, inner))


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
