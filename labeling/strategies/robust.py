"""Noise-robust judging: re-ask the comparisons a top-k result depends on, by what is at stake.

``robust(base)`` turns any pairwise strategy (:class:`labeling.strategies.heap.HeapTopK`, a
tournament, binary insertion, ...) into one that survives an assessor who sometimes answers wrongly.
The rule (docs/noise.md#the-robust-rule):

1. **Votes per unordered pair.** Every answer is a vote for one document of the pair, or for
   "tie". A pair's combined answer is the plurality of its votes; equal counts keep the
   earliest of the leading answers, so one dissenting repeat (1-1) does not change the path:
   only a real majority against the first answer (2-1) does. Its *lead* is its count minus
   the next largest count.
2. **Replay with the combined answers.** The base strategy is run from the start with every
   pair it asks answered by its combined answer; the first pair without votes is posed. When a
   repeat changes a pair's combined answer, the base is run again, so the corrected answer
   repairs the result and new questions appear where the path changed.
3. **Stakes.** A wrong "w beat l" costs what l misses: :func:`stake`, the expected κ-NDCG@k
   lost. If w is shown at position i of the result, l is taken to belong at i; otherwise l is
   the best of the ``m`` documents w is known to beat (directly or through others, by the
   combined answers), which among ``n`` random documents has rank j with probability
   ``C(n − j, m − 1) / C(n, m)``. The loss of a document of true rank j shown at position p is
   :func:`damage_table` (κ-NDCG's gain 2^(k+1−j) − 1 puts 65% of the ideal on position 1 at
   k = 10, and 1.5% on positions 6–10 together).
4. **Risk.** Under uniform flips with rate ``p`` (:data:`ASSUMED_FLIP`) and a uniform prior on
   the pair's order, a combined answer leading by ``L`` votes is wrong with probability
   ``ρ^L / (1 + ρ^L)``, ``ρ = p / (1 − p)`` (:func:`wrong_probability`); risk = stake × that.
   A pair with :data:`MAX_VOTES` votes has no risk left to remove (a close call).
5. **Early confirmation.** While the base runs, every answer whose provisional risk exceeds
   :data:`EAGER_RISK` / n is confirmed (to a lead of :data:`EAGER_LEAD`) once
   :data:`GAP` other questions have passed, before the base builds much on it: an overturned
   answer then re-runs only a short stretch of new path. The provisional stake treats the
   loser as sent to the rest, below the positions the base has already fixed
   (:meth:`~labeling.strategies.base.PairStrategy.fixed_positions`).
6. **Final confirmation.** When the base finishes, the result depends on its comparisons
   between two documents of ``top`` (their order) and on the last comparison of each document
   of ``rest`` (its loss edge): :func:`depends_on`. While the sum of their risks exceeds
   :data:`BUDGET`, the dependency of highest risk is asked again, preferring pairs last shown
   more than :data:`GAP` questions ago. The result is then settled with the stated confidence:
   expected κ-NDCG@k loss at most :data:`BUDGET` under the model.

Every re-ask is a :class:`Compare` with ``repeat=True``: the pair cache passes it through and
the session shows it with the sides swapped relative to the pair's previous showing.
Everything is a deterministic function of ``(order, k)`` and the answers, so replaying a log
rebuilds the same state and pending question. Outcomes: a tie is a vote for "tie" (the base
sees ``None``, "not preferred"); "not relevant" reaches the strategy as a win of the root and
counts as that vote.

Cost for a consistent assessor: the base strategy's questions with the pair cache plus the
confirmations of 5. and 6.; no re-run ever happens. :meth:`RobustStrategy.max_remaining` bounds
what such an assessor can still need.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Generator, Sequence
from functools import cache, lru_cache
from typing import ClassVar

from labeling.strategies.base import Compare, PairStrategy, Winner

#: Flip rate the risk model assumes for one answer.
ASSUMED_FLIP = 0.1
#: The stated confidence: the final confirmations stop when the dependencies' risks sum to at
#: most this expected κ-NDCG@k loss. Chosen on the flip0.1 scenario at (50, 10)
#: (docs/noise.md#measured): the model's risks are conservative, so the measured loss is
#: lower (about 0.045).
BUDGET = 0.15
#: An answer is confirmed while the base runs when its provisional risk exceeds this / n (so a
#: first-round loss, of risk ≈ 0.16 / n, is always confirmed).
EAGER_RISK = 0.05
#: Lead an early confirmation aims at.
EAGER_LEAD = 2
#: Votes after which a pair is left as it is (the assessor keeps calling it both ways: a close
#: call, where asking more would cost more than it can change).
MAX_VOTES = 5
#: Positions the stake model looks at (:func:`stake`).
DAMAGE_DEPTH = 40
#: Questions that should pass between two showings of one pair (memory helps less).
GAP = 3
Key = tuple[str, str]

_RATIO = ASSUMED_FLIP / (1.0 - ASSUMED_FLIP)


def pair_key(a: str, b: str) -> Key:
    """The unordered pair ``{a, b}`` as a sorted tuple."""
    return (a, b) if a < b else (b, a)


def combine(votes: Sequence[Winner]) -> tuple[Winner, int]:
    """The combined answer of a pair's ``votes`` (document ids or ``None`` for a tie, in the
    order given) and its lead: plurality, equal counts broken by the earliest of the leaders;
    ``lead`` = its count minus the next largest count."""
    counts: dict[Winner, int] = {}
    for vote in votes:
        counts[vote] = counts.get(vote, 0) + 1
    best = max(counts.values())
    winner = next(v for v in votes if counts[v] == best)
    second = max((c for v, c in counts.items() if v != winner), default=0)
    return winner, best - second


def wrong_probability(lead: int) -> float:
    """Probability that a combined answer leading by ``lead`` votes is wrong, under uniform
    flips with rate :data:`ASSUMED_FLIP` and a uniform prior on the pair's order:
    ``ρ^L / (1 + ρ^L)`` with ``ρ = p / (1 − p)`` (0.1 at L = 1, 0.012 at 2, 0.0014 at 3)."""
    odds = _RATIO**lead
    return odds / (1.0 + odds)


@lru_cache(maxsize=64)
def damage_table(k: int) -> tuple[tuple[float, ...], ...]:
    """``table[j][p]``: the κ-NDCG@k lost when the document of true rank ``j`` (1..k) is shown
    at position ``p`` (1..k, or k + 1 for "in the rest") and every other document keeps its
    true order (gain 2^y − 1, y = k + 1 − rank, discount 1 / log2(1 + position), as
    :func:`ranking.metrics.kappa_ndcg`). Row and column 0 are unused."""

    def dcg(labels: list[int]) -> float:
        return math.fsum((2**y - 1) / math.log2(i + 2) for i, y in enumerate(labels[:k]))

    ideal = [k - i for i in range(k)] + [0]
    best = dcg(ideal)
    rows: list[tuple[float, ...]] = [(0.0,) * (k + 2)]
    for j in range(1, k + 1):
        row = [0.0]
        for p in range(1, k + 2):
            labels = ideal[:]
            labels.insert(p - 1, labels.pop(j - 1))
            row.append(max(0.0, 1.0 - dcg(labels) / best))
        rows.append(tuple(row))
    return tuple(rows)


@lru_cache(maxsize=65536)
def stake(n: int, k: int, m: int, above: int, loser_pos: int) -> float:
    """What a wrong "w beat l" costs, in expected κ-NDCG@k: l is then the best of the ``m``
    documents w covers (w, l and everything w is known to beat); ``above`` documents are known
    to be better than all of them, and among the ``n − above`` others the best of ``m`` random
    ones has rank j with probability ``C(n − above − j, m − 1) / C(n − above, m)``. So l's true
    rank is ``above + j``, while it is shown at ``loser_pos`` (1-based; k + 1: in the rest):
    the loss is :func:`damage_table` ``[above + j][loser_pos]``."""
    # Gains halve per position, so ranks and positions past DAMAGE_DEPTH change the loss by
    # less than 2^-DAMAGE_DEPTH: the table stops there (a large k would cost O(k^3) to build
    # and overflow a float at 2^1024).
    depth = min(k, DAMAGE_DEPTH)
    table = damage_table(depth)
    loser_pos = min(loser_pos, depth + 1)
    pool = n - above
    m = max(1, min(m, pool))
    total = math.comb(pool, m)
    out = 0.0
    for j in range(1, min(depth - above, pool - m + 1) + 1):
        rank = above + j
        if rank < loser_pos:
            out += math.comb(pool - j, m - 1) / total * table[rank][loser_pos]
    return out


class RobustStrategy:
    """The robust modifier applied to :attr:`base` (build one with :func:`robust`).

    Readable while the generator is paused: ``votes`` (pair -> answers in order), ``state``
    (the current run of the base strategy), ``path`` (its comparisons so far),
    ``dependencies`` and ``stakes`` (once the base has finished), ``phase`` (the base's phase
    while it runs, then ``verify``, then ``done``) and ``reruns`` (how often a changed answer
    restarted it).
    """

    base: ClassVar[type[PairStrategy]]
    #: Its answers are confirmed already: a modifier is applied at most once per name.
    confirmation_share: ClassVar[float] = 0.0

    def __init__(self, order: Sequence[str], k: int) -> None:
        self.order = list(order)
        self.k = k
        self.state = self.base(self.order, k)  # validates k and the order
        self.phase: str = self.state.phase
        self.votes: dict[Key, list[Winner]] = {}
        # pair -> (combined answer, lead): kept with the votes, since replay reads it for
        # every comparison of every run.
        self.combined: dict[Key, tuple[Winner, int]] = {}
        self.shown: dict[Key, int] = {}  # pair -> number of this strategy's last showing
        self.asked = 0
        self.path: list[Compare] = []
        self.dependencies: list[Compare] | None = None
        self.stakes: dict[Key, float] = {}
        self.reruns = 0
        self._index = {doc: i for i, doc in enumerate(self.order)}

    def _record(self, key: Key, winner: Winner) -> None:
        votes = self.votes.setdefault(key, [])
        votes.append(winner)
        self.combined[key] = combine(votes)
        self.shown[key] = self.asked
        self.asked += 1

    def _risk(self, key: Key) -> float:
        """A dependency's risk: stake × P(its combined answer is wrong); 0 at MAX_VOTES."""
        if len(self.votes[key]) >= MAX_VOTES:
            return 0.0
        return self.stakes[key] * wrong_probability(self.combined[key][1])

    def _winner_loser(self, c: Compare) -> tuple[str, str]:
        """The pair of ``c`` as (winner, loser) by its combined answer; a tie lets ``c.b``
        advance ("not preferred"), as every base reads it."""
        return (c.a, c.b) if self.combined[pair_key(c.a, c.b)][0] == c.a else (c.b, c.a)

    def run(self) -> Generator[Compare, Winner, tuple[list[str], list[str]]]:
        """Run the base on combined answers with early confirmations, then confirm the
        dependencies until their risks fit :data:`BUDGET` (see the module docstring)."""
        combined, index = self.combined, self._index
        n, k = len(self.order), self.k
        eager_risk = EAGER_RISK / n
        while True:
            state = self.state
            path: list[Compare] = []
            self.path, self.dependencies = path, None
            gen = state.run()
            queue: dict[Key, Compare] = {}  # answers of this run awaiting an early confirmation
            reach = [0] * n  # per document: bit set of those it has beaten so far in this run
            changed = False
            try:
                question = next(gen)
                while True:
                    due = self._due(queue) if queue else None
                    while due is not None:
                        c = queue[due]
                        before = combined[due][0]
                        self.phase = state.phase
                        winner = yield Compare(c.a, c.b, c.challenger, repeat=True)
                        self._record(due, winner)
                        if combined[due][0] != before:
                            changed = True  # the path changes from this pair on
                            break
                        votes = len(self.votes[due])
                        if combined[due][1] >= EAGER_LEAD or votes >= MAX_VOTES:
                            del queue[due]
                        due = self._due(queue)
                    if changed:
                        break
                    key = pair_key(question.a, question.b)
                    known = combined.get(key)
                    if known is None:
                        self.phase = state.phase
                        winner = yield question
                        self._record(key, winner)
                        known = combined[key]
                    else:
                        winner = known[0]
                    if winner == question.a:
                        iw, il = index[question.a], index[question.b]
                    else:  # b won, or a tie let b advance
                        iw, il = index[question.b], index[question.a]
                    reach[iw] |= reach[il] | (1 << il)
                    if known[1] < EAGER_LEAD and len(self.votes[key]) < MAX_VOTES:
                        m = (reach[iw] | (1 << iw)).bit_count()
                        provisional = stake(n, k, m, state.fixed_positions(), k + 1)
                        if provisional * wrong_probability(known[1]) > eager_risk:
                            queue.setdefault(key, question)
                    path.append(question)
                    question = gen.send(winner)
            except StopIteration as stop:
                top, rest = stop.value
            if not changed:
                dependencies = self.dependencies = depends_on(path, top)
                self.stakes = self._stakes(path, dependencies, top)
                compares = {pair_key(c.a, c.b): c for c in dependencies}
                risks = {key: self._risk(key) for key in compares}
                while sum(risks.values()) > BUDGET:
                    key = self._choose(risks)
                    compare = compares[key]
                    before = combined[key][0]
                    self.phase = "verify"
                    winner = yield Compare(compare.a, compare.b, compare.challenger, repeat=True)
                    self._record(key, winner)
                    if combined[key][0] != before:
                        break  # the path changes from this pair on: run the base again
                    risks[key] = self._risk(key)
                else:
                    self.phase = "done"
                    return list(top), list(rest)
            self.reruns += 1
            self.state = self.base(self.order, self.k)

    def _due(self, queue: dict[Key, Compare]) -> Key | None:
        """The first queued pair last shown more than :data:`GAP` questions ago, if any."""
        for key in queue:
            if self.asked - self.shown[key] > GAP:
                return key
        return None

    def _stakes(
        self, path: Sequence[Compare], dependencies: Sequence[Compare], top: Sequence[str]
    ) -> dict[Key, float]:
        """:func:`stake` of every dependency, from the combined answers of the final run."""
        index = self._index
        n, k = len(self.order), self.k
        edges = [(index[w], index[loser]) for w, loser in map(self._winner_loser, path)]
        reach = _reach(n, edges)
        position = {doc: i + 1 for i, doc in enumerate(top)}
        out: dict[Key, float] = {}
        for c in dependencies:
            w, loser = self._winner_loser(c)
            above = position.get(w, 0) - 1
            if above >= 0:  # w is shown at position above + 1: a wrong answer swaps l into it
                out[pair_key(w, loser)] = stake(n, k, n - above, above, position.get(loser, k + 1))
            else:
                covered = (reach[index[w]] | (1 << index[w])).bit_count()
                out[pair_key(w, loser)] = stake(n, k, covered, 0, k + 1)
        return out

    def _choose(self, risks: dict[Key, float]) -> Key:
        """The dependency of highest risk among those last shown more than :data:`GAP`
        questions ago, else of highest risk; equal risks in path order."""
        # At most GAP pairs were shown in the last GAP questions: the best fresh one is among
        # the GAP + 1 largest risks.
        ranked = heapq.nlargest(GAP + 1, risks, key=risks.__getitem__)
        for key in ranked:
            if risks[key] > 0.0 and self.asked - self.shown[key] > GAP:
                return key
        return ranked[0]  # positive: the loop runs only while the risks sum above BUDGET

    def _owed(self) -> int:
        """Re-asks a consistent assessor still gives once the base has finished: the final
        confirmation loop played out with every vote agreeing (highest risk first)."""
        assert self.dependencies is not None
        leads: dict[Key, tuple[int, int]] = {}  # pair -> (lead, votes)
        for c in self.dependencies:
            key = pair_key(c.a, c.b)
            leads[key] = (self.combined[key][1], len(self.votes[key]))

        def risk(key: Key) -> float:
            lead, votes = leads[key]
            return 0.0 if votes >= MAX_VOTES else self.stakes[key] * wrong_probability(lead)

        owed = 0
        while sum(map(risk, leads)) > BUDGET:
            key = max(leads, key=risk)
            lead, votes = leads[key]
            leads[key] = (lead + 1, votes + 1)
            owed += 1
        return owed

    def fixed_positions(self) -> int:
        """0: a repeat that changes a combined answer runs the base again, so no top position
        is fixed for good before the end."""
        return 0

    def max_remaining(self) -> int:
        """Upper bound on the questions still to come (the pending one included) for an
        assessor who has answered consistently: each question the base can still pose
        (:meth:`max_remaining` of the base, structural) and each pair answered so far can get
        up to :data:`MAX_VOTES` votes. (Once the base has finished the final confirmations
        are :meth:`_owed` exactly, but the re-ask order prefers pairs not just shown, which
        may cost a few more; the bound stays on votes.)

        An inconsistent assessor can need more: a repeat that changes a combined answer runs
        the base again and may open new pairs.
        """
        if self.phase == "done":
            return 0
        if self.dependencies is not None:
            pairs = {pair_key(c.a, c.b) for c in self.dependencies}
            return sum(max(0, MAX_VOTES - len(self.votes[key])) for key in pairs)
        pairs = {pair_key(c.a, c.b) for c in self.path}
        owed = sum(max(0, MAX_VOTES - len(self.votes[key])) for key in pairs)
        return MAX_VOTES * self.state.max_remaining() + owed

    def expected_remaining(self, *, cache: bool = True) -> float:
        """Expected questions still to come for a consistent assessor: once the base has
        finished, :meth:`_owed`; before, the base's expected remaining questions (with the pair
        cache: votes are reused whatever ``cache`` says) each with its base's
        ``confirmation_share`` of confirmations, plus that share of the path so far
        still owed at most; capped by :meth:`max_remaining`."""
        bound = self.max_remaining()
        if bound == 0:
            return 0.0
        if self.dependencies is not None:
            return float(min(bound, max(1, self._owed())))
        share = self.base.confirmation_share
        model = getattr(self.state, "expected_remaining", None)
        base = float(self.state.max_remaining()) if model is None else model(cache=True)
        confirmed = sum(
            1 for key in {pair_key(c.a, c.b) for c in self.path} if len(self.votes[key]) > 1
        )
        owed = max(0.0, share * len(self.path) - confirmed)
        return min(float(bound), max(1.0, base * (1.0 + share) + owed))


def _reach(n: int, edges: Sequence[tuple[int, int]]) -> list[int]:
    """Per document (by index), the bit set of documents it beats directly or through others,
    over ``edges`` (winner, loser): passes in reverse order until nothing changes (bases ask
    bottom-up, so two or three passes usually suffice; cycles from noisy answers only make
    the closure larger, and it is finite)."""
    reach = [0] * n
    changed = True
    while changed:
        changed = False
        for w, loser in reversed(edges):
            new = reach[w] | reach[loser] | (1 << loser)
            if new != reach[w]:
                reach[w] = new
                changed = True
    return reach


def depends_on(path: Sequence[Compare], top: Sequence[str]) -> list[Compare]:
    """The comparisons of a finished run that its result depends on, one per pair, in path
    order: those between two documents of ``top`` (their order), and the last comparison of
    every other document (the one that sent it to the rest: its loss edge)."""
    in_top = set(top)
    last: dict[str, int] = {}
    for i, c in enumerate(path):
        last[c.a] = i
        last[c.b] = i
    final = {i for doc, i in last.items() if doc not in in_top}
    seen: set[Key] = set()
    out: list[Compare] = []
    for i, c in enumerate(path):
        if (c.a in in_top and c.b in in_top) or i in final:
            key = pair_key(c.a, c.b)
            if key not in seen:
                seen.add(key)
                out.append(c)
    return out


@cache
def robust(base: type[PairStrategy]) -> type[PairStrategy]:
    """``base`` with noise-robust re-asks (the ``+robust`` modifier): see the module docstring.

    One class per base (cached), named ``Robust<Base>``.
    """
    return type(f"Robust{base.__name__}", (RobustStrategy,), {"base": base})
