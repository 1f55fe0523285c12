"""What every pairwise top-k strategy shares: the question, the answer, the generator type,
the argument check and the :class:`PairStrategy` protocol (docs/protocols.md#adding-a-strategy).

A strategy is written as a generator that *asks* for comparisons (:class:`Compare`), receives
the winner (:data:`Winner`) and returns ``(top, rest)``; the session
(:mod:`labeling.protocol.session`), the pair cache and the modifiers
(:mod:`labeling.strategies.robust`) know strategies only through this module.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import ClassVar, NamedTuple, Protocol

from labeling.errors import ConfigError


class Compare(NamedTuple):
    """One question of the protocol: ``prefer(a, b)``, "is ``a`` strictly more relevant?".

    ``challenger`` is True only for the Step-2 root comparison, where ``a`` is the stream item
    ``r`` and ``b`` the current root; only then may an assessor call ``a`` "not relevant".
    ``repeat`` marks a deliberate second (third, ...) showing of a pair that a strategy asks to
    combine several answers (:mod:`labeling.strategies.robust`): the pair cache passes it through,
    and the session shows it with the sides swapped relative to the pair's previous showing. (A
    NamedTuple rather than a dataclass: it is created once per question, and replay speed matters.)
    """

    a: str
    b: str
    challenger: bool = False
    repeat: bool = False


#: What the assessor said: the preferred document id, or ``None`` for a tie.
Winner = str | None

#: A strategy's run: yields questions, receives winners, returns ``(top, rest)``. (Not named
#: ``Protocol``: that is :class:`typing.Protocol`.)
ComparisonGenerator = Generator[Compare, Winner, tuple[list[str], list[str]]]


def check_strategy_args(order: Sequence[str], k: int) -> None:
    """ConfigError unless ``k`` is an integer >= 1 and ``order`` has a document: the arguments
    every strategy's constructor takes (docs/protocols.md#adding-a-strategy)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"k must be an integer >= 1, got {k!r}")
    if len(order) == 0:
        raise ConfigError("the protocol needs at least one document")


class PairStrategy(Protocol):
    """What :class:`labeling.protocol.topk.TopKSession` and the modifiers need from a
    pairwise strategy (the extension point).

    The registry :mod:`labeling.strategies.registry` names the implementations a task may
    choose with the option ``strategy`` (Algorithm 1, :class:`labeling.strategies.heap.HeapTopK`,
    is the default). ``run()`` yields :class:`Compare` questions, receives the winner (``None``
    for a tie) and returns ``(top, rest)``: ``top`` the best ``min(k, n)`` documents best
    first, ``rest`` the others. It must be a pure function of ``(order, k)`` and the winners
    sent, so that replaying the log rebuilds it. ``phase`` names the current step (``"done"``
    at the end); a question with ``challenger=True`` is the only one where "not relevant" is
    offered (it refers to ``a``, and the session answers it as a win of ``b``).

    ``max_remaining()`` bounds the questions still to come (the pending one included) for any
    answers; ``expected_remaining(cache=...)`` is their expected number for a consistent
    assessor on a random order, with or without the pair cache. The service shows "about
    ⌈expected⌉ left", so it must never be below the questions certain to come.

    What a modifier reads (:mod:`labeling.strategies.robust`): ``fixed_positions()``, the top
    positions a paused run has already fixed for good (0 when its top list can change until it
    finishes), and ``confirmation_share``, the confirmations per question the robust modifier
    gives a consistent assessor on a random order (its progress model; measured at (50, 10),
    ``benchmarks/strategies.py`` prints the check). What the assist modifier reads
    (:mod:`labeling.strategies.assist`): ``places_loser_below_winner`` (optional, default
    False), True when a document that loses a comparison is placed just below its winner by
    the next questions (binary insertion), False when it waits out of play until its winner is
    placed (a tournament's loser, a heap's rejected challenger): the stake of a wrong answer
    depends on it.
    """

    phase: str
    confirmation_share: ClassVar[float]

    def __init__(self, order: Sequence[str], k: int) -> None: ...

    def run(self) -> Generator[Compare, Winner, tuple[list[str], list[str]]]: ...

    def max_remaining(self) -> int: ...

    def expected_remaining(self, *, cache: bool) -> float: ...

    def fixed_positions(self) -> int: ...
