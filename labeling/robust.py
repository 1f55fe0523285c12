"""Noise-robust judging: re-ask the comparisons a top-k result depends on, by what is at stake.

``robust(base)`` turns any pairwise strategy (:class:`labeling.heap.HeapTopK`, a tournament,
binary insertion, ...) into one that survives an assessor who sometimes answers wrongly. The
rule (docs/noise.md#the-robust-rule):

1. **Votes per unordered pair.** Every answer is a vote for one document of the pair, or for
   "tie". A pair's combined answer is the plurality of its votes; equal counts keep the
   earliest of the leading answers, so one dissenting repeat (1-1) does not change the path:
   only a real majority against the first answer (2-1) does.
2. **Replay with the combined answers.** The base strategy is run from the start with every
   pair it asks answered by its combined answer; the first pair without votes is posed. When a
   repeat changes a pair's combined answer, the base is run again, so the corrected answer
   repairs the result and new questions appear where the path changed.
3. **Dependencies.** When the base finishes, the result ``(top, rest)`` depends on the
   comparisons of the final run between two documents of ``top`` (their order) and on the last
   comparison of each document of ``rest`` (its loss edge: the one that put it there).
4. **Stakes.** Each dependency "w beat l" gets a stake: the κ-NDCG@k the result loses if the
   answer is wrong (l is better than w), :func:`stake`. If l is better than w, it is the best
   of the documents w is known to beat (directly or through others, by the combined answers of
   the final run), so its true rank is that of the best of ``m`` random documents of ``n``,
   ``P(rank j) = C(n − j, m − 1) / C(n, m)``, and it cannot be worse than w's position; the
   loss of a document of true rank j shown at position p is :func:`damage`.
5. **Confidence.** Under uniform flips with rate ``p`` (:data:`ASSUMED_FLIP`), a combined
   answer leading by ``L`` votes is wrong with probability ``ρ^L / (1 + ρ^L)``, ``ρ = p / (1 − p)``
   (a uniform prior on the pair's order). A dependency is *settled* when its risk, stake ×
   that probability, is at most :data:`TOLERANCE`, or after :data:`MAX_VOTES` votes (a pair
   the assessor keeps calling both ways is a close call). A high-stake pair (the order of the
   top two, the loss edge of a document that had beaten many) needs a lead of 3 or 4; a
   low-stake one (the order of positions 8 and 9) none beyond its first answer.
6. **Re-asks.** The open dependency of highest risk is asked again (marked
   :attr:`Compare.repeat`, so the pair cache passes it through and the session shows it with
   the sides swapped relative to the previous showing), preferring pairs last shown more than
   :data:`GAP` questions ago. The strategy stops when every dependency is settled: the sum of
   the risks left is at most :data:`TOLERANCE` per dependency.

Everything is a deterministic function of ``(order, k)`` and the answers, so replaying a log
rebuilds the same state and pending question. Outcomes: a tie is a vote for "tie" (the base
sees ``None``, "not preferred"); "not relevant" reaches the strategy as a win of the root and
counts as that vote.

Cost for a consistent assessor: the base strategy's questions with the pair cache, plus
:func:`lead_needed` − 1 confirmations per dependency (every vote agrees, so no re-run ever
happens). :meth:`RobustStrategy.max_remaining` bounds what such an assessor can still need.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from functools import cache, lru_cache
from typing import TYPE_CHECKING, ClassVar

from labeling.heap import Compare, Winner

if TYPE_CHECKING:
    from labeling.session import PairStrategy

#: Flip rate the confidence rule assumes for one answer.
ASSUMED_FLIP = 0.1
#: Largest risk (stake × probability that the combined answer is wrong) a dependency may keep.
TOLERANCE = 1e-3
#: Votes after which a pair counts as settled whatever they say.
MAX_VOTES = 5
#: Questions that should pass between two showings of one pair (memory helps less).
GAP = 3
#: Confirmations per base question a consistent assessor gives (the progress model): measured
#: for the heap at (50, 10), random order (``benchmarks/strategies.py`` prints the check).
DEPENDENCY_SHARE = 0.51

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
    flips with rate :data:`ASSUMED_FLIP` and a uniform prior: ``ρ^L / (1 + ρ^L)``."""
    odds = _RATIO**lead
    return odds / (1.0 + odds)


def settled(votes: Sequence[Winner], stake: float) -> bool:
    """True when the pair's risk ``stake × P(wrong | lead)`` is at most :data:`TOLERANCE` or
    it has :data:`MAX_VOTES` votes."""
    return len(votes) >= MAX_VOTES or stake * wrong_probability(combine(votes)[1]) <= TOLERANCE


@lru_cache(maxsize=4096)
def lead_needed(stake: float) -> int:
    """The smallest lead (≥ 1) whose risk at this ``stake`` is within :data:`TOLERANCE`, capped
    at :data:`MAX_VOTES`: the votes a consistent assessor gives the pair."""
    lead = 1
    while lead < MAX_VOTES and stake * wrong_probability(lead) > TOLERANCE:
        lead += 1
    return lead


#: Votes any pair can need from a consistent assessor (the stake is at most 1).
MAX_LEAD = lead_needed(1.0)


def votes_needed(votes: Sequence[Winner], stake: float = 1.0) -> int:
    """Votes a pair still needs if every further vote agrees with its combined answer."""
    if len(votes) >= MAX_VOTES:
        return 0
    lead = combine(votes)[1]
    return max(0, min(lead_needed(stake) - lead, MAX_VOTES - len(votes)))


@lru_cache(maxsize=64)
def damage_table(k: int) -> tuple[tuple[float, ...], ...]:
    """``table[j][p]``: the κ-NDCG@k lost when the document of true rank ``j`` (1..k) is shown
    at position ``p`` (1..k, or k + 1 for "in the rest") and every other document keeps its
    true order (gain 2^y − 1, y = k + 1 − rank, discount 1 / log2(1 + position), as
    :func:`ranking.metrics.kappa_ndcg`). Row and column 0 are unused."""

    def dcg(labels: list[int]) -> float:
        return sum((2**y - 1) / math.log2(i + 2) for i, y in enumerate(labels[:k]))

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
def stake(n: int, k: int, m: int, winner_pos: int, loser_pos: int) -> float:
    """What a wrong "w beat l" costs: l is then the best of the ``m`` documents w covers (w, l
    and everything w is known to beat), whose rank among ``n`` random documents is j with
    probability ``C(n − j, m − 1) / C(n, m)``, and at least as good as w's position
    ``winner_pos``; l is shown at ``loser_pos`` (k + 1: in the rest). Positions are 1-based;
    the expected :func:`damage_table` loss."""
    table = damage_table(k)
    m = max(1, min(m, n))
    total = math.comb(n, m)
    out = 0.0
    for j in range(1, min(k, n - m + 1) + 1):
        rank = min(j, winner_pos)
        if rank < loser_pos:
            out += math.comb(n - j, m - 1) / total * table[rank][loser_pos]
    # Ranks beyond k are clipped to the winner's position when it is in the top.
    if winner_pos <= k and winner_pos < loser_pos:
        beyond = sum(math.comb(n - j, m - 1) for j in range(k + 1, n - m + 2)) / total
        out += beyond * table[winner_pos][loser_pos]
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
        votes = self.votes[key]
        if len(votes) >= MAX_VOTES:
            return 0.0
        risk = self.stakes[key] * wrong_probability(self.combined[key][1])
        return risk if risk > TOLERANCE else 0.0

    def run(self) -> Generator[Compare, Winner, tuple[list[str], list[str]]]:
        """Run the base on combined answers, then re-ask risky dependencies (see above)."""
        combined = self.combined
        while True:
            state = self.state
            path: list[Compare] = []
            self.path, self.dependencies = path, None
            gen = state.run()
            try:
                question = next(gen)
                while True:
                    key = pair_key(question.a, question.b)
                    known = combined.get(key)
                    if known is None:
                        self.phase = state.phase
                        winner = yield question
                        self._record(key, winner)
                    else:
                        winner = known[0]
                    path.append(question)
                    question = gen.send(winner)
            except StopIteration as stop:
                top, rest = stop.value
            dependencies = self.dependencies = depends_on(path, top)
            self.stakes = self._stakes(path, dependencies, top)
            open_ = [c for c in dependencies if self._risk(pair_key(c.a, c.b)) > 0.0]
            while open_:
                compare = self._choose(open_)
                key = pair_key(compare.a, compare.b)
                before = combined[key][0]
                self.phase = "verify"
                winner = yield Compare(compare.a, compare.b, compare.challenger, repeat=True)
                self._record(key, winner)
                if combined[key][0] != before:
                    break  # the path changes from this pair on: run the base again
                if self._risk(key) == 0.0:
                    open_.remove(compare)
            else:
                self.phase = "done"
                return list(top), list(rest)
            self.reruns += 1
            self.state = self.base(self.order, self.k)

    def _stakes(
        self, path: Sequence[Compare], dependencies: Sequence[Compare], top: Sequence[str]
    ) -> dict[Key, float]:
        """:func:`stake` of every dependency, from the combined answers of the final run."""
        index = self._index
        edges: list[tuple[int, int]] = []  # (winner, loser) by order index, path order
        for c in path:
            winner = self.combined[pair_key(c.a, c.b)][0]
            # A tie lets b advance ("not preferred"), as every base reads it.
            w, loser = (c.a, c.b) if winner == c.a else (c.b, c.a)
            edges.append((index[w], index[loser]))
        reach = _reach(len(self.order), edges)
        position = {doc: i + 1 for i, doc in enumerate(top)}
        n, k = len(self.order), self.k
        out: dict[Key, float] = {}
        for c in dependencies:
            key = pair_key(c.a, c.b)
            winner = self.combined[key][0]
            w, loser = (c.a, c.b) if winner == c.a else (c.b, c.a)
            covered = (reach[index[w]] | (1 << index[w])).bit_count()
            out[key] = stake(n, k, covered, position.get(w, k + 1), position.get(loser, k + 1))
        return out

    def _choose(self, open_: list[Compare]) -> Compare:
        """The open dependency of highest risk last shown more than :data:`GAP` questions ago
        (else of highest risk); equal risks in path order."""
        best: Compare | None = None
        best_risk = -1.0
        for compare in open_:
            key = pair_key(compare.a, compare.b)
            if self.asked - self.shown[key] > GAP:
                risk = self._risk(key)
                if risk > best_risk:
                    best, best_risk = compare, risk
        if best is not None:
            return best
        return max(open_, key=lambda c: self._risk(pair_key(c.a, c.b)))

    def _open_need(self) -> int:
        """Votes the pairs answered so far still need from a consistent assessor: every pair of
        the path at the largest stake while the base runs (which become dependencies is not
        known yet), the dependencies at their stakes once it has finished."""
        if self.dependencies is None:
            keys = {pair_key(c.a, c.b) for c in self.path}
            return sum(votes_needed(self.votes[key]) for key in keys)
        return sum(
            votes_needed(self.votes[key], self.stakes[key])
            for key in {pair_key(c.a, c.b) for c in self.dependencies}
        )

    def max_remaining(self) -> int:
        """Upper bound on the questions still to come (the pending one included) for an
        assessor who has answered consistently: each question the base can still pose
        (:meth:`max_remaining` of the base, structural) costs at most :data:`MAX_LEAD` votes,
        and every pair answered so far needs :func:`votes_needed` more.

        An inconsistent assessor can need more: a repeat that changes a combined answer runs
        the base again and may open new pairs.
        """
        if self.phase == "done":
            return 0
        base = 0 if self.dependencies is not None else self.state.max_remaining()
        return MAX_LEAD * base + self._open_need()

    def expected_remaining(self, *, cache: bool = True) -> float:
        """Expected questions still to come for a consistent assessor: the base's expected
        remaining questions (with the pair cache: votes are reused whatever ``cache`` says),
        plus :data:`DEPENDENCY_SHARE` confirmations for each, plus those still owed, capped by
        :meth:`max_remaining`."""
        bound = self.max_remaining()
        if bound == 0:
            return 0.0
        if self.dependencies is not None:
            return float(self._open_need())
        model = getattr(self.state, "expected_remaining", None)
        base = float(self.state.max_remaining()) if model is None else model(cache=True)
        owed = DEPENDENCY_SHARE * len(self.path)
        return min(float(bound), max(1.0, base * (1.0 + DEPENDENCY_SHARE) + owed))


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
