"""The pair cache: a wrapper from comparison generator to comparison generator
(docs/protocols.md#pair-cache).

It drives an inner strategy's generator and answers some of its questions itself; the
questions it passes through are the ones the assessor sees. The strategy never knows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from labeling.strategies.base import Compare, ComparisonGenerator, Winner


def with_pair_cache(
    protocol: ComparisonGenerator,
    on_hit: Callable[[Compare, Winner], None] | None = None,
) -> ComparisonGenerator:
    """Answer a repeated pair (either orientation) from its first answer.

    The cache is keyed by the unordered pair and stores the winner (``None`` for a tie), which
    is orientation-free, so ``prefer(b, a)`` after ``prefer(a, b)`` is answered too. For a
    consistent assessor the result is unchanged; only the judgment count drops (≈10%).

    A question marked :attr:`Compare.repeat` is a deliberate repeat (a strategy that combines
    several answers per pair asks it): it is always passed through, and its answer does not
    replace the cached first answer.
    ``on_hit`` is told about every question answered from the cache (for the audit record).
    """
    # Key: the pair in sorted order (cheaper to build than a frozenset; same meaning).
    cache: dict[tuple[str, str], Winner] = {}
    try:
        question = next(protocol)
    except StopIteration as stop:
        return _result(stop)
    while True:
        a, b = question.a, question.b
        key = (a, b) if a < b else (b, a)
        if question.repeat:
            winner = yield question
        elif key in cache:
            winner = cache[key]
            if on_hit is not None:
                on_hit(question, winner)
        else:
            winner = yield question
            cache[key] = winner
        try:
            question = protocol.send(winner)
        except StopIteration as stop:
            return _result(stop)


def _result(stop: StopIteration) -> tuple[list[str], list[str]]:
    """The inner protocol's return value, (top-k, rest), carried by its ``StopIteration``
    (typed ``Any`` there; a :data:`labeling.strategies.base.ComparisonGenerator` returns this
    pair)."""
    result: tuple[list[str], list[str]] = stop.value
    return result


def with_memo(
    protocol: ComparisonGenerator,
    memo: dict[tuple[str, str], deque[tuple[Winner, bool]]],
    on_hit: Callable[[Compare, Winner, bool], None],
) -> ComparisonGenerator:
    """Answer questions from earlier answers: ``memo`` maps a pair (sorted) to the answers
    given to it, oldest first, as ``(winner, not_relevant)``; each is used once, in order.

    A rerun of a strategy over fewer documents (a broken document,
    docs/protocols.md#broken-documents) answers through this every comparison the judgment
    log already holds, so the assessor is never asked a pair twice, and poses only what is
    new. ``on_hit(question, winner, not_relevant)`` is told about every answered question.
    ``memo`` is consumed.
    """
    try:
        question = next(protocol)
    except StopIteration as stop:
        return _result(stop)
    while True:
        a, b = question.a, question.b
        answers = memo.get((a, b) if a < b else (b, a))
        if answers:
            winner, not_relevant = answers.popleft()
            on_hit(question, winner, not_relevant)
        else:
            winner = yield question
        try:
            question = protocol.send(winner)
        except StopIteration as stop:
            return _result(stop)
