"""Noise-robust judging: re-ask the comparisons a top-k result depends on, combine the answers.

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
   comparison of each document of ``rest`` (its loss edge: the one that put it there). A
   comparison between a top document and one that later left the top is neither: the result
   no longer rests on it.
4. **Confidence.** A pair is *settled* when its combined answer leads every other answer by
   :data:`LEAD` = 2 votes (2-0, 3-1, 4-2), or after :data:`MAX_VOTES` = 5 votes. Under uniform
   flips with rate p, a lead of 2 is wrong with probability ``p² / (p² + (1-p)²)`` (gambler's
   ruin with barriers ±2): 1.2% at p = 0.1 against 10% for one answer, at an expected
   ``2 / (p² + (1-p)²)`` = 2.44 votes per pair from scratch (1.44 more after the first).
5. **Re-asks.** The first unsettled dependency in path order is asked again (marked
   :attr:`Compare.repeat`, so the pair cache passes it through and the session shows it with
   the sides swapped relative to the previous showing), preferring pairs last shown more than
   :data:`GAP` questions ago. The strategy stops when every dependency is settled.

Everything is a deterministic function of ``(order, k)`` and the answers, so replaying a log
rebuilds the same state and pending question. Outcomes: a tie is a vote for "tie" (the base
sees ``None``, "not preferred"); "not relevant" reaches the strategy as a win of the root and
counts as that vote.

Cost for a consistent assessor: the base strategy's questions with the pair cache, plus one
confirmation per dependency (every vote agrees, so no re-run ever happens).
:meth:`RobustStrategy.max_remaining` bounds what such an assessor can still need.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from functools import cache
from typing import TYPE_CHECKING, ClassVar

from labeling.heap import Compare, Winner

if TYPE_CHECKING:
    from labeling.session import PairStrategy

#: Votes the combined answer must lead by before a pair is settled.
LEAD = 2
#: Votes after which a pair counts as settled whatever they say (a pair the assessor keeps
#: calling both ways is a close call; asking more would cost more than it can change).
MAX_VOTES = 5
#: Questions that should pass between two showings of one pair (memory helps less).
GAP = 3
#: Share of the base strategy's remaining questions that end up as dependencies, i.e. get one
#: confirmation each from a consistent assessor: measured for the heap at (50, 10), random
#: order (``benchmarks/strategies.py`` prints the expected-vs-actual check).
DEPENDENCY_SHARE = 0.51

Key = tuple[str, str]


def pair_key(a: str, b: str) -> Key:
    """The unordered pair ``{a, b}`` as a sorted tuple."""
    return (a, b) if a < b else (b, a)


def combine(votes: Sequence[Winner]) -> tuple[Winner, int]:
    """The combined answer of a pair's ``votes`` (document ids or ``None`` for a tie, in the
    order given) and its lead: plurality, equal counts broken by the most recent of the
    leaders; ``lead`` = its count minus the next largest count."""
    counts: dict[Winner, int] = {}
    for vote in votes:
        counts[vote] = counts.get(vote, 0) + 1
    best = max(counts.values())
    winner = next(v for v in votes if counts[v] == best)
    second = max((c for v, c in counts.items() if v != winner), default=0)
    return winner, best - second


def settled(votes: Sequence[Winner]) -> bool:
    """True when the combined answer leads by :data:`LEAD` votes or the pair has
    :data:`MAX_VOTES` votes."""
    return len(votes) >= MAX_VOTES or combine(votes)[1] >= LEAD


def votes_needed(votes: Sequence[Winner]) -> int:
    """Votes a pair still needs if every further vote agrees with its combined answer."""
    if len(votes) >= MAX_VOTES:
        return 0
    return max(0, min(LEAD - combine(votes)[1], MAX_VOTES - len(votes)))


class RobustStrategy:
    """The robust modifier applied to :attr:`base` (build one with :func:`robust`).

    Readable while the generator is paused: ``votes`` (pair -> answers in order), ``state``
    (the current run of the base strategy), ``path`` (its comparisons so far),
    ``dependencies`` (once the base has finished), ``phase`` (the base's phase while it runs,
    then ``verify``, then ``done``) and ``reruns`` (how often a changed answer restarted it).
    """

    base: ClassVar[type[PairStrategy]]

    def __init__(self, order: Sequence[str], k: int) -> None:
        self.order = list(order)
        self.k = k
        self.state = self.base(self.order, k)  # validates k and the order
        self.phase: str = self.state.phase
        self.votes: dict[Key, list[Winner]] = {}
        # pair -> (combined answer, settled): kept with the votes, since replay reads it for
        # every comparison of every run.
        self.combined: dict[Key, tuple[Winner, bool]] = {}
        self.shown: dict[Key, int] = {}  # pair -> number of this strategy's last showing
        self.asked = 0
        self.path: list[Compare] = []
        self.dependencies: list[Compare] | None = None
        self.reruns = 0

    def _record(self, key: Key, winner: Winner) -> None:
        votes = self.votes.setdefault(key, [])
        votes.append(winner)
        combined, lead = combine(votes)
        self.combined[key] = (combined, lead >= LEAD or len(votes) >= MAX_VOTES)
        self.shown[key] = self.asked
        self.asked += 1

    def run(self) -> Generator[Compare, Winner, tuple[list[str], list[str]]]:
        """Run the base on combined answers, then re-ask unsettled dependencies (see above)."""
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
            open_ = [c for c in dependencies if not combined[pair_key(c.a, c.b)][1]]
            while open_:
                compare = self._choose(open_)
                key = pair_key(compare.a, compare.b)
                before = combined[key][0]
                self.phase = "verify"
                winner = yield Compare(compare.a, compare.b, compare.challenger, repeat=True)
                self._record(key, winner)
                after, done = combined[key]
                if after != before:
                    break  # the path changes from this pair on: run the base again
                if done:
                    open_.remove(compare)
            else:
                self.phase = "done"
                return list(top), list(rest)
            self.reruns += 1
            self.state = self.base(self.order, self.k)

    def _choose(self, open_: list[Compare]) -> Compare:
        """The first open dependency (path order: an early correction changes the most) last
        shown more than :data:`GAP` questions ago, else the first one."""
        for compare in open_:
            if self.asked - self.shown[pair_key(compare.a, compare.b)] > GAP:
                return compare
        return open_[0]

    def _open_need(self) -> int:
        """Votes the pairs answered so far still need from a consistent assessor: every pair of
        the path while the base runs (which become dependencies is not known yet), the
        dependencies once it has finished."""
        pairs = self.path if self.dependencies is None else self.dependencies
        keys = {pair_key(c.a, c.b) for c in pairs}
        return sum(votes_needed(self.votes[key]) for key in keys)

    def max_remaining(self) -> int:
        """Upper bound on the questions still to come (the pending one included) for an
        assessor who has answered consistently: each question the base can still pose
        (:meth:`max_remaining` of the base, structural) costs at most 2 (the answer and one
        confirmation), and every pair answered so far needs :func:`votes_needed` more.

        An inconsistent assessor can need more: a repeat that changes a combined answer runs
        the base again and may open new pairs.
        """
        if self.phase == "done":
            return 0
        base = 0 if self.dependencies is not None else self.state.max_remaining()
        return 2 * base + self._open_need()

    def expected_remaining(self, *, cache: bool = True) -> float:
        """Expected questions still to come for a consistent assessor: the base's expected
        remaining questions (with the pair cache: votes are reused whatever ``cache`` says),
        each confirmed with probability :data:`DEPENDENCY_SHARE`, plus the confirmations still
        owed, capped by :meth:`max_remaining`."""
        bound = self.max_remaining()
        if bound == 0:
            return 0.0
        if self.dependencies is not None:
            return float(self._open_need())
        model = getattr(self.state, "expected_remaining", None)
        base = float(self.state.max_remaining()) if model is None else model(cache=True)
        owed = DEPENDENCY_SHARE * self._open_need()
        return min(float(bound), max(1.0, base * (1.0 + DEPENDENCY_SHARE) + owed))


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
