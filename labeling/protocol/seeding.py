"""What a task's seed decides: the document order (and a top-k task's starting order), which
side each question shows first, and which answered questions are re-asked.

Each is a deterministic function of ``(seed, seq)`` (never of the answers), so replaying the
log rebuilds the same questions (docs/protocols.md#conventions-shared-by-every-strategy).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from labeling.errors import ConfigError

#: Questions shown between a pair and its swapped re-ask (:mod:`labeling.protocol.topk`).
REASK_GAP = 3

_MASK = (1 << 64) - 1
#: Separates the re-ask stream from the orientation stream of the same seed ("reask!").
_REASK_SALT = 0x7265_6173_6B21


def _mix64(x: int) -> int:
    """SplitMix64 finaliser: a fast, well-mixed 64-bit hash (Steele et al. 2014)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


class Orientation:
    """Which side each question shows first: bit ``seq % 64`` of ``mix64(mix64(seed) + seq // 64)``.

    A deterministic function of ``(seed, seq)`` only (not of the answers, nor of n), balanced,
    and independent of the document shuffle. One hash gives the bits of 64 questions.
    """

    __slots__ = ("_base", "blocks")

    def __init__(self, seed: int) -> None:
        self._base = _mix64(seed & _MASK)
        self.blocks: list[int] = []

    def bits(self, block: int) -> int:
        """The 64 orientation bits of questions ``64·block`` … ``64·block + 63``."""
        return _mix64((self._base + block) & _MASK)

    def swapped(self, seq: int) -> bool:
        """True if question ``seq`` shows the protocol's pair ``(a, b)`` as ``(b, a)``."""
        blocks = self.blocks
        while len(blocks) <= seq >> 6:
            blocks.append(self.bits(len(blocks)))
        return (blocks[seq >> 6] >> (seq & 63)) & 1 == 1


def shows_swapped(seed: int, seq: int) -> bool:
    """Whether question ``seq`` of a task with ``seed`` shows the protocol's pair as (b, a)."""
    return Orientation(seed).swapped(seq)


class ReaskSchedule:
    """Which answered protocol questions are re-asked: question ``seq`` is iff
    ``mix64(base + seq) < ⌊f·2^64⌋`` with ``base = mix64(mix64(seed) ^ salt)``.

    A deterministic function of ``(seed, seq)`` for a given fraction ``f`` (probability f per
    question, independent of the orientation bits and of the answers).
    """

    __slots__ = ("base", "threshold")

    def __init__(self, seed: int, fraction: float) -> None:
        self.base = _mix64(_mix64(seed & _MASK) ^ _REASK_SALT)
        # Exact: f ≤ 1/2 times a power of two is representable, and int() truncates.
        self.threshold = int(fraction * 2.0**64)

    def triggered(self, seq: int) -> bool:
        """True if the protocol question answered at ``seq`` is to be re-asked."""
        return _mix64((self.base + seq) & _MASK) < self.threshold

    def triggered_in(self, lo: int, hi: int) -> list[int]:
        """The seqs in ``[lo, hi)`` that :meth:`triggered` accepts, ascending (vectorised:
        progress() needs a few thousand of them per call)."""
        import numpy as np  # only with re-asks on: keeps importing the session module light

        with np.errstate(over="ignore"):  # uint64 arithmetic is mod 2^64, as in _mix64
            x = np.arange(lo, hi, dtype=np.uint64) + np.uint64(self.base)
            x += np.uint64(0x9E3779B97F4A7C15)
            x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            x ^= x >> np.uint64(31)
        return (np.flatnonzero(x < np.uint64(self.threshold)) + lo).tolist()


def reask_triggered(seed: int, fraction: float, seq: int) -> bool:
    """Whether a protocol question answered at ``seq`` is re-asked (see :class:`ReaskSchedule`)."""
    return ReaskSchedule(seed, fraction).triggered(seq)


def seeded_order(doc_ids: Sequence[str], seed: int) -> list[str]:
    """The task's random document order (uniform, stable across runs and Python versions).

    Sorting by i.i.d. keys from ``random.Random(seed).random()`` is a uniform shuffle (ties
    have probability ~0 and fall back to the id); it is several times cheaper than
    ``random.shuffle`` in CPython, and the order is rebuilt on every replay. (``random.Random``
    seeds with ``|seed|``, so ``seed`` and ``-seed`` give the same order, though not the same
    orientations; the service only draws seeds ≥ 0. Changing this would change the questions
    of every stored task, so it stays.)
    """
    draw = random.Random(seed).random
    return [doc for _, doc in sorted([(draw(), doc) for doc in doc_ids])]


def starting_order(doc_ids: Sequence[str], seed: int, initial: Sequence[str] | None) -> list[str]:
    """The order a top-k strategy starts from: ``initial`` (the option ``initial_order``, a
    prior's), the documents it leaves out after it in the seeded order; the seeded order
    without it. ConfigError for a document of ``initial`` that is not one of ``doc_ids``."""
    if initial is None:
        return seeded_order(doc_ids, seed)
    known = set(doc_ids)
    for pos, doc in enumerate(initial):
        if doc not in known:
            raise ConfigError(f"initial_order[{pos}]: {doc!r} is not one of the documents")
    listed = set(initial)
    return list(initial) + seeded_order([d for d in doc_ids if d not in listed], seed)
