"""Judging sessions: a protocol rebuilt from ``(task config, answers so far)``.

```python
opts = validate_options("topk", {"allow_ties": True})
s = open_session("topk", doc_ids, k=10, seed=7, options=opts, answers=log)
s.pending        # PairQuestion(seq, left, right) | GradeQuestion(seq, doc_id) | None
s.submit(PairAnswer(q.left, q.right, "left"))
s.progress()     # Progress(judgments, expected_remaining, max_remaining, done)
s.result()       # TopKResult | GradedResult
```

The judgment log is the only state (docs/protocols.md): undo is ``open_session(..., answers[:-1])``.

Decisions where the paper is silent (docs/protocols.md#conventions-shared-by-every-strategy):

* **Strategy** (default ``"heap"``, Algorithm 1). The option names an entry of
  :mod:`labeling.strategies` (``heap``, ``tournament``, ``insertion``, plus modifiers); the
  conventions below hold for every strategy (``docs/protocols.md``).
* **Initial order.** Steps 1 and 2 take documents in a seeded shuffle of ``doc_ids``
  (``random.Random(seed)``), or in ``initial_order`` (best first, e.g. a system ranking) when
  given; documents missing from ``initial_order`` follow it in seeded order. The option
  ``prior`` only records where that order came from (:mod:`labeling.priors`); it never
  changes a question.
* **Orientation.** Which document is on the left is a hash of ``(seed, seq)``: deterministic,
  independent of the answers' content, and balanced. The protocol only sees the pair.
* **Pair cache** (default on). A repeated pair, in either orientation, is answered from the
  earlier answer and never posed, so ``seq`` counts posed questions only. Off reproduces the
  paper's counts.
* **Ties** (default off). ``"tie"`` counts as "not preferred" both ways: no replacement, no swap.
  When ties are off, ``"tie"`` is :class:`InvalidAnswer`.
* **Not relevant** (default off). Offered only at a Step-2 root comparison, and it refers to the
  *challenger* (the stream item compared with the root): the challenger goes straight to the
  rest, exactly like a lost root comparison, and the answer is recorded as ``"not_relevant"``.
  In the build and sort phases both documents are already in the top k, so the answer is
  :class:`InvalidAnswer` there (see :attr:`TopKSession.allowed_outcomes`).
* **Broken documents** (docs/protocols.md#broken-documents). A :class:`BrokenAnswer` names
  one document of the pending question (with a reason) and takes its ``seq``. Top-k: the
  document leaves the pool and the strategy runs again from the start over the remaining
  documents, every comparison it makes that the log already answered (a protocol answer, not
  a re-ask, about two remaining documents) answered from the log (:func:`with_memo`), so no
  pair is posed twice; queued re-asks of pairs with the document are dropped. Five-grade: the
  document is skipped. Replay and undo stay exact because this is a function of the log.
* **Re-asks** (``reask_fraction`` f in [0, 0.5], default 0). After the protocol question with
  ``seq = s`` is answered, it is re-asked iff ``mix64(mix64(mix64(seed) ^ salt) + s) < f·2^64``
  (:class:`ReaskSchedule`): a function of ``(seed, s)`` only, never of the answers, so replay
  stays pure. The re-ask shows the SAME pair with the sides SWAPPED as an ordinary
  :class:`PairQuestion` with its own ``seq``, :data:`REASK_GAP` questions later (``seq = s +
  REASK_GAP + 1``, so the assessor is less likely to answer from memory), or at once when the
  protocol has no question left (re-asks are never lost). Two re-asks never fall due together
  (their due ``seq`` differ), so each is posed exactly when due until the protocol ends. The
  answer is recorded in the log like any other but never reaches the protocol (the heap keeps
  the first answer, and the pair cache neither answers nor stores re-asks); re-asks are never
  re-asked. A re-ask accepts the outcomes of the question it repeats (``not_relevant`` for the
  same challenger). With f = 0 nothing of this runs, so judgment counts are those of the
  plain protocol; :func:`validate_options` fills in ``0.0`` like every other default, and a
  config stored before the option existed (no key) replays unchanged, since every replay
  re-validates it (:func:`open_session`).
"""

from __future__ import annotations

import math
import random
import typing
from bisect import bisect_left
from collections import deque
from collections.abc import Generator, Mapping, Sequence
from typing import Any, Literal, NamedTuple, TypeGuard, overload

from labeling.errors import (
    ConfigError,
    Finished,
    InvalidAnswer,
    LabelingError,
    NotFinished,
    WrongQuestion,
)
from labeling.graded import check_grade, five_grade
from labeling.groundtruth import GradedResult, PairJudgment, TopKResult
from labeling.heap import Compare, ComparisonGenerator, Winner
from labeling.pair_cache import with_memo, with_pair_cache
from labeling.priors import check_prior, check_prior_matches_order
from labeling.strategies import DEFAULT_STRATEGY, check_strategy_name, resolve_strategy
from labeling.types import (
    METHODS,
    Answer,
    BrokenAnswer,
    GradeAnswer,
    GradeQuestion,
    Outcome,
    PairAnswer,
    PairQuestion,
    Progress,
)

#: Options of each method and their defaults (all recorded in the task config).
DEFAULT_OPTIONS: dict[str, dict[str, Any]] = {
    "topk": {
        "allow_ties": False,
        "pair_cache": True,
        "not_relevant": False,
        "initial_order": None,
        "reask_fraction": 0.0,
        "strategy": DEFAULT_STRATEGY,
        "prior": None,
        "second_assessor": None,
        "second_opinion_timeout_s": 600,
    },
    "graded": {},
}

#: Options the protocol never reads: where the service routes a strategy's deliberate repeats
#: (docs/noise.md#routing-re-asks-to-a-second-assessor). Recorded with the config like every
#: option, so a task's routing is part of what was assigned; replay ignores them.
ROUTING_OPTIONS = ("second_assessor", "second_opinion_timeout_s")

#: Bounds of ``second_opinion_timeout_s`` (seconds): at least a minute, so a second assessor
#: who opens the question has time to answer it; at most a day, so a first assessor is never
#: kept waiting longer than that for a routed question.
MIN_SECOND_OPINION_TIMEOUT = 60
MAX_SECOND_OPINION_TIMEOUT = 86_400

#: Largest allowed ``reask_fraction``: at a half, re-asks already add 50% to the judgments
#: that build the ranking; more would measure the assessor rather than label the query.
MAX_REASK_FRACTION = 0.5

#: Questions shown between a pair and its swapped re-ask (see the module docstring).
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


class _Reask(NamedTuple):
    """A queued re-ask: due at ``due``, repeating protocol question ``seq`` (``compare``), shown
    as (``left``, ``right``) = the original display swapped."""

    due: int
    seq: int
    compare: Compare
    left: str
    right: str


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


def check_reason(reason: object, seq: int) -> str:
    """The reason of a broken-document answer, or InvalidAnswer: a non-blank string."""
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidAnswer(f"question {seq}: a broken document needs a reason (a short text)")
    return reason


def _check_method(method: object) -> str:
    if method not in METHODS:
        raise ConfigError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
    return str(method)


def validate_options(method: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Return the complete options of ``method`` (defaults filled in); ConfigError on bad input.

    Idempotent: ``validate_options(m, validate_options(m, o)) == validate_options(m, o)``, and
    a config missing options added later (``reask_fraction``) validates to the same result as
    one that spells their defaults out.
    """
    method = _check_method(method)
    if options is None:
        options = {}
    if not isinstance(options, Mapping):
        raise ConfigError(f"options must be a mapping, got {type(options).__name__}")
    defaults = DEFAULT_OPTIONS[method]
    unknown = sorted(str(key) for key in options if key not in defaults)
    if unknown:
        known = ", ".join(defaults) or "none"
        raise ConfigError(f"unknown option(s) for {method}: {', '.join(unknown)} (known: {known})")
    out = dict(defaults)
    for key, value in options.items():
        if key == "initial_order":
            out[key] = _check_initial_order(value)
        elif key == "reask_fraction":
            out[key] = _check_reask_fraction(value)
        elif key == "strategy":
            out[key] = check_strategy_name(value)
        elif key == "prior":
            out[key] = check_prior(value)
        elif key == "second_assessor":
            out[key] = _check_second_assessor(value)
        elif key == "second_opinion_timeout_s":
            out[key] = _check_second_opinion_timeout(value)
        else:
            if not isinstance(value, bool):
                raise ConfigError(f"option {key} must be true or false, got {value!r}")
            out[key] = value
    if method == "topk" and out["prior"] is not None:
        check_prior_matches_order(out["prior"], out["initial_order"])
    if (
        method == "topk"
        and out["second_assessor"] is not None
        and not makes_repeats(out["strategy"])
    ):
        raise ConfigError(
            "option second_assessor routes a strategy's repeated comparisons; strategy "
            f"{out['strategy']!r} repeats none (use a +robust strategy, e.g. tournament+robust)"
        )
    return out


def makes_repeats(strategy: str) -> bool:
    """Whether a strategy name asks deliberate repeats (:attr:`Compare.repeat`): the modifier
    ``robust`` (:mod:`labeling.robust`) is the one that does."""
    return "robust" in strategy.split("+")[1:]


def _check_second_assessor(value: object) -> list[str] | None:
    """None, or the usernames of the second assessors as a list (a single name is a list of
    one): distinct non-empty strings. Whether they exist is the service's check."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if isinstance(value, bytes) or not isinstance(value, Sequence) or not value:
        raise ConfigError(
            "option second_assessor must be null, a username or a non-empty list of usernames"
        )
    return _unique_ids(value, "second_assessor", "user {doc!r} is listed twice")


def _check_second_opinion_timeout(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(
            f"option second_opinion_timeout_s must be a whole number of seconds, got {value!r}"
        )
    if not MIN_SECOND_OPINION_TIMEOUT <= value <= MAX_SECOND_OPINION_TIMEOUT:
        raise ConfigError(
            "option second_opinion_timeout_s must be in "
            f"[{MIN_SECOND_OPINION_TIMEOUT}, {MAX_SECOND_OPINION_TIMEOUT}], got {value!r}"
        )
    return value


def _check_reask_fraction(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"option reask_fraction must be a number in [0, 0.5], got {value!r}")
    if not (math.isfinite(value) and 0.0 <= value <= MAX_REASK_FRACTION):
        raise ConfigError(
            f"option reask_fraction must be in [0, {MAX_REASK_FRACTION}], got {value!r}"
        )
    return float(value)


def _check_initial_order(value: object) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ConfigError("option initial_order must be null or a list of document ids")
    return _unique_ids(value, "initial_order", "document {doc!r} is listed twice")


def _check_doc_ids(doc_ids: object) -> list[str]:
    if isinstance(doc_ids, str | bytes) or not isinstance(doc_ids, Sequence):
        raise ConfigError("doc_ids must be a list of document ids")
    if len(doc_ids) == 0:
        raise ConfigError("a session needs at least one document (doc_ids is empty)")
    return _unique_ids(doc_ids, "doc_ids", "duplicate document id {doc!r}")


def _unique_ids(ids: Sequence[object], name: str, duplicate: str) -> list[str]:
    """``ids`` as a list if they are distinct non-empty strings; else ConfigError naming the
    first bad position (``name[pos]``), with ``duplicate`` formatted for a repeated id."""
    # Fast path (replay runs on every request); the loop below only locates the error.
    try:
        unique = set(ids)
    except TypeError:  # an unhashable entry (a list from JSON, ...): the loop names it
        unique = set()
    if _distinct_names(ids, unique):
        return list(ids)
    checked: list[str] = []
    seen: set[str] = set()
    for pos, doc in enumerate(ids):
        if not isinstance(doc, str) or not doc:
            raise ConfigError(f"{name}[{pos}] must be a non-empty string, got {doc!r}")
        if doc in seen:
            raise ConfigError(f"{name}[{pos}]: " + duplicate.format(doc=doc))
        seen.add(doc)
        checked.append(doc)
    return checked  # not reached: the fast path accepts ids that pass every check


def _distinct_names(ids: Sequence[object], unique: set[object]) -> TypeGuard[Sequence[str]]:
    """True when ``unique`` (the set of ``ids``) shows distinct, non-empty strings."""
    return len(unique) == len(ids) and set(map(type, unique)) <= {str} and "" not in unique


def _check_seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"seed must be an integer, got {seed!r}")
    return seed


class PairStrategy(typing.Protocol):
    """What :class:`TopKSession` needs from a pairwise strategy (the extension point).

    The registry :mod:`labeling.strategies` names the implementations a task may choose with
    the option ``strategy`` (Algorithm 1, :class:`labeling.heap.HeapTopK`, is the default).
    ``run()`` yields :class:`Compare` questions, receives the winner (``None`` for a tie) and
    returns ``(top, rest)``: ``top`` the best ``min(k, n)`` documents best first, ``rest`` the
    others. It must be a pure function of ``(order, k)`` and the winners sent, so that replaying
    the log rebuilds it. ``phase`` names the current step (``"done"`` at the end); a question
    with ``challenger=True`` is the only one where "not relevant" is offered (it refers to
    ``a``, and the session answers it as a win of ``b``).

    ``max_remaining()`` bounds the questions still to come (the pending one included) for any
    answers; ``expected_remaining(cache=...)`` is their expected number for a consistent
    assessor on a random order, with or without the pair cache. The service shows "about
    ⌈expected⌉ left", so it must never be below the questions certain to come.
    """

    phase: str

    def __init__(self, order: Sequence[str], k: int) -> None: ...

    def run(self) -> Generator[Compare, Winner, tuple[list[str], list[str]]]: ...

    def max_remaining(self) -> int: ...

    def expected_remaining(self, *, cache: bool) -> float: ...


class TopKSession:
    """Tool T1: a top-k pairwise strategy (option ``strategy``, default Algorithm 1 of
    :mod:`labeling.heap`) behind the :class:`JudgingSession` interface.

    ``strategy=`` overrides the option with a class (for strategies outside the registry).

    With ``reask_fraction > 0`` some answered questions are posed again later with the sides
    swapped (see the module docstring); those answers are logged but never reach the protocol.
    """

    method = "topk"

    def __init__(
        self,
        doc_ids: Sequence[str],
        *,
        k: int,
        seed: int,
        options: dict[str, Any],
        strategy: type[PairStrategy] | None = None,
    ):
        self.doc_ids = doc_ids
        self.k = k
        self.seed = seed
        self.options = options
        self.allow_ties: bool = options["allow_ties"]
        self.pair_cache: bool = options["pair_cache"]
        self.not_relevant: bool = options["not_relevant"]
        self.reask_fraction: float = options["reask_fraction"]
        initial = options["initial_order"]
        if initial is None:
            order = seeded_order(doc_ids, seed)
        else:
            known = set(doc_ids)
            for pos, doc in enumerate(initial):
                if doc not in known:
                    raise ConfigError(f"initial_order[{pos}]: {doc!r} is not one of the documents")
            listed = set(initial)
            order = list(initial) + seeded_order([d for d in doc_ids if d not in listed], seed)
        self.order = order
        if strategy is None:
            strategy = resolve_strategy(options.get("strategy", DEFAULT_STRATEGY))
        self._strategy = strategy
        self.state = strategy(order, k)
        self.answers: list[PairAnswer | BrokenAnswer] = []
        #: Documents marked broken, id -> reason, in the order marked.
        self.broken: dict[str, str] = {}
        # Every answered protocol question (not re-asks, not broken answers) as (a, b, winner,
        # not_relevant), in log order: the memo a rerun after a broken document answers from.
        self._posed: list[tuple[str, str, Winner, bool]] = []
        # Protocol comparisons as plain tuples (a, b, winner, not_relevant, cached); turned into
        # PairJudgment records only for the result, because replay speed matters.
        self._judged: list[tuple[str, str, Winner, bool, bool]] = []
        self._orientation = Orientation(seed)
        # Pair (sorted) -> the document shown on the left at its last showing: a deliberate
        # repeat (Compare.repeat, labeling.robust) is shown the other way round.
        self._shown_left: dict[tuple[str, str], str] = {}
        # Re-asks: None when off, so that f = 0 runs exactly the code it ran before the option.
        self._schedule = ReaskSchedule(seed, self.reask_fraction) if self.reask_fraction else None
        self._queue: deque[_Reask] = deque()
        self._reask: _Reask | None = None  # the pending question when it is a re-ask
        #: Answered re-asks: seq of the re-ask -> seq of the protocol question it repeats.
        self.reasks: dict[int, int] = {}
        #: Seqs of the answered deliberate repeats a strategy asked for (Compare.repeat, e.g.
        #: labeling.robust): protocol questions, but a second look at a pair, like a re-ask.
        self.repeats: list[int] = []
        self._reasked: list[tuple[str, str, Winner, bool, bool]] = []
        self._outcome: tuple[list[str], list[str]] | None = None
        gen = self.state.run()
        if self.pair_cache:
            gen = with_pair_cache(gen, self._cache_hit)
        self._gen: ComparisonGenerator = gen
        self._compare: Compare | None = None
        self._left = self._right = ""
        self._question: PairQuestion | None = None
        self._result: TopKResult | None = None
        self._advance(None, first=True)

    def _cache_hit(self, question: Compare, winner: Winner) -> None:
        self._judged.append((question.a, question.b, winner, False, True))

    def _memo_hit(self, question: Compare, winner: Winner, not_relevant: bool) -> None:
        # Posed to the assessor (earlier in the log), so not a cached call.
        self._judged.append((question.a, question.b, winner, not_relevant, False))

    def _rerun_without_broken(self) -> None:
        """Run the strategy again from the start over the documents not marked broken,
        answering from the log whatever it already answered (the module docstring)."""
        broken = self.broken
        order = [doc for doc in self.order if doc not in broken]
        self.state = self._strategy(order, self.k)
        memo: dict[tuple[str, str], deque[tuple[Winner, bool]]] = {}
        for a, b, winner, not_relevant in self._posed:
            if a in broken or b in broken:
                continue
            memo.setdefault((a, b) if a < b else (b, a), deque()).append((winner, not_relevant))
        gen: ComparisonGenerator = self.state.run()
        if self.pair_cache:
            gen = with_pair_cache(gen, self._cache_hit)
        self._gen = with_memo(gen, memo, self._memo_hit)
        self._judged = []
        self._outcome = None
        self._result = None
        # Re-asks of a pair with a broken document are not asked (queued) or not counted.
        self._queue = deque(r for r in self._queue if not self._has_broken(r.compare))
        self._reasked = [j for j in self._reasked if j[0] not in broken and j[1] not in broken]
        self._reask = None
        self._advance(None, first=True)

    def _has_broken(self, compare: Compare) -> bool:
        return compare.a in self.broken or compare.b in self.broken

    def _advance(self, winner: Winner, *, first: bool = False) -> None:
        """Send the winner to the protocol and orient its next question (the replay hot path)."""
        self._question = None
        try:
            compare = next(self._gen) if first else self._gen.send(winner)
        except StopIteration as stop:
            self._compare = None
            self._outcome = stop.value  # (top, rest); the result record is built on demand
            if self._schedule is not None:
                self._settle()
            return
        self._compare = compare
        if self._schedule is not None:
            self._settle()
        else:
            self._orient(compare, len(self.answers))

    def _orient(self, compare: Compare, seq: int) -> None:
        """Show the protocol's ``prefer(a, b)`` at ``seq`` as (left, right): swapped iff
        :meth:`Orientation.swapped` (inlined here, because this runs once per replayed answer);
        a deliberate repeat (:attr:`Compare.repeat`) the other way round from its last
        showing."""
        if compare.repeat:
            a, b = compare.a, compare.b
            last_left = self._shown_left.get((a, b) if a < b else (b, a))
            if last_left is not None:
                self._left, self._right = (b, a) if last_left == a else (a, b)
                return
        blocks = self._orientation.blocks
        if seq >> 6 >= len(blocks):
            blocks.append(self._orientation.bits(len(blocks)))
        if (blocks[seq >> 6] >> (seq & 63)) & 1:
            self._left, self._right = compare.b, compare.a
        else:
            self._left, self._right = compare.a, compare.b

    def _settle(self) -> None:
        """Choose the question at ``seq = len(answers)`` when re-asks are on: the due re-ask
        (or any queued one once the protocol has finished), else the protocol's question,
        oriented for the seq at which it is actually shown."""
        self._question = None
        seq = len(self.answers)
        queue = self._queue
        if queue and (queue[0].due <= seq or self._compare is None):
            reask = queue[0]
            self._reask = reask
            self._left, self._right = reask.left, reask.right
            return
        self._reask = None
        if self._compare is not None:
            self._orient(self._compare, seq)

    @property
    def judged(self) -> list[PairJudgment]:
        """Every protocol comparison so far, posed or answered from the cache, in order."""
        return [PairJudgment(*j) for j in self._judged]

    @property
    def reasked(self) -> list[PairJudgment]:
        """Every answered re-ask, in order, as ``prefer(a, b)`` of the question it repeats."""
        return [PairJudgment(*j) for j in self._reasked]

    @property
    def pending(self) -> PairQuestion | None:
        """The question to show, or None when done (built on demand: replay never needs it)."""
        if self._compare is None and self._reask is None:
            return None
        if self._question is None:
            self._question = PairQuestion(len(self.answers), self._left, self._right)
        return self._question

    @property
    def pending_is_repeat(self) -> bool:
        """True when the pending question is a strategy's deliberate repeat of a pair
        (:attr:`Compare.repeat`, e.g. :mod:`labeling.robust`), not a configured re-ask: the
        question the service may route to a second assessor (docs/noise.md)."""
        return self._reask is None and self._compare is not None and self._compare.repeat

    @property
    def pending_is_reask(self) -> bool:
        """True when the pending question repeats an earlier one (for audits, not for the UI:
        a re-ask must look like any other question)."""
        return self._reask is not None

    @property
    def done(self) -> bool:
        return self._compare is None and self._reask is None

    @property
    def phase(self) -> str:
        """``build`` / ``stream`` / ``sort`` / ``done`` (Steps 1, 2, 3 of Algorithm 1).

        The protocol's phase: it may be ``done`` while queued re-asks are still pending.
        """
        return self.state.phase

    def _pending_compare(self) -> Compare | None:
        return self._reask.compare if self._reask is not None else self._compare

    @property
    def pending_challenger(self) -> str | None:
        """The stream item of a pending Step-2 root comparison ("not relevant" refers to it)."""
        c = self._pending_compare()
        return c.a if c is not None and c.challenger else None

    @property
    def allowed_outcomes(self) -> tuple[Outcome, ...]:
        """The outcomes :meth:`submit` accepts for the pending question (empty when done)."""
        compare = self._pending_compare()
        if compare is None:
            return ()
        out: list[Outcome] = ["left", "right"]
        if self.allow_ties:
            out.append("tie")
        if self.not_relevant and compare.challenger:
            out.append("not_relevant")
        return tuple(out)

    def submit(self, answer: Answer) -> None:
        """Record one answer to the pending question; on error raise and change nothing."""
        reask = self._reask
        compare = self._compare if reask is None else reask.compare
        if compare is None:
            raise Finished("the session is finished; there is no pending question")
        left, right = self._left, self._right
        if isinstance(answer, BrokenAnswer):
            self._submit_broken(answer, left, right)
            return
        if not isinstance(answer, PairAnswer):
            raise WrongQuestion(
                f"question {len(self.answers)} is a pair ({left!r}, {right!r}); "
                f"got {type(answer).__name__}"
            )
        self._check_shown(answer.left, answer.right, left, right)
        outcome = answer.outcome
        seq = len(self.answers)
        not_relevant = False
        if outcome == "left":
            winner: Winner = left
        elif outcome == "right":
            winner = right
        elif outcome == "tie":
            if not self.allow_ties:
                raise InvalidAnswer(f"question {seq} ({left!r}, {right!r}): ties are not enabled")
            winner = None
        elif outcome == "not_relevant":
            if not self.not_relevant:
                raise InvalidAnswer(
                    f"question {seq} ({left!r}, {right!r}): the not-relevant answer is not "
                    "enabled for this task"
                )
            if not compare.challenger:
                raise InvalidAnswer(
                    f"question {seq} ({left!r}, {right!r}): not_relevant applies only to a "
                    f"challenger in Step 2 (phase {self.state.phase!r} compares two top-k "
                    "documents)"
                )
            winner = compare.b  # the challenger loses its root comparison
            not_relevant = True
        else:
            raise InvalidAnswer(
                f"question {seq} ({left!r}, {right!r}): unknown outcome {outcome!r}; expected "
                f"one of {', '.join(self.allowed_outcomes)}"
            )
        self.answers.append(answer)
        self._shown_left[(left, right) if left < right else (right, left)] = left
        if reask is not None:
            # Logged, never sent to the protocol (nor to the pair cache): the heap keeps the
            # first answer, and the re-ask only measures self-consistency.
            self._queue.popleft()
            self.reasks[seq] = reask.seq
            self._reasked.append((compare.a, compare.b, winner, not_relevant, False))
            self._settle()
            return
        self._judged.append((compare.a, compare.b, winner, not_relevant, False))
        self._posed.append((compare.a, compare.b, winner, not_relevant))
        if compare.repeat:
            self.repeats.append(seq)
        schedule = self._schedule
        if schedule is not None and schedule.triggered(seq):
            self._queue.append(_Reask(seq + REASK_GAP + 1, seq, compare, right, left))
        self._advance(winner)

    def _check_shown(self, a_left: str | None, a_right: str | None, left: str, right: str) -> None:
        """WrongQuestion unless the answer echoes the pending pair as shown."""
        if a_left == left and a_right == right:
            return
        seq = len(self.answers)
        if a_left == right and a_right == left:
            raise WrongQuestion(
                f"question {seq} shows ({left!r}, {right!r}); the answer has "
                "the pair in swapped orientation (echo left/right as shown)"
            )
        raise WrongQuestion(
            f"question {seq} is ({left!r}, {right!r}), not ({a_left!r}, {a_right!r})"
        )

    def _submit_broken(self, answer: BrokenAnswer, left: str, right: str) -> None:
        """Mark one document of the pending pair broken (module docstring); on error raise and
        change nothing."""
        self._check_shown(answer.left, answer.right, left, right)
        seq = len(self.answers)
        if answer.doc_id not in (left, right):
            raise InvalidAnswer(
                f"question {seq} ({left!r}, {right!r}): the broken document must be one of "
                f"the two shown, not {answer.doc_id!r}"
            )
        reason = check_reason(answer.reason, seq)
        self.answers.append(answer)
        self.broken[answer.doc_id] = reason
        self.repeats = [s for s in self.repeats if not self._broken_at(s)]
        self._rerun_without_broken()

    def _broken_at(self, seq: int) -> bool:
        answer = self.answers[seq]
        return answer.left in self.broken or answer.right in self.broken

    def _reask_bound(self, protocol_bound: int) -> int:
        """Most questions still to come, re-asks included, if the protocol poses at most
        ``protocol_bound`` more: the deterministic schedule is walked forward.

        Exact for that many protocol questions, and monotone in their number (with fewer, the
        schedule is the same up to the protocol's end and triggers a subset of the re-asks),
        so it is an upper bound whenever ``protocol_bound`` is.
        """
        schedule = self._schedule
        assert schedule is not None
        gap = REASK_GAP + 1
        start = seq = len(self.answers)
        dues = deque(r.due for r in self._queue)  # ascending: appended in seq order
        # Every seq the walk can reach: each protocol question adds at most one re-ask.
        triggers = schedule.triggered_in(start, start + 2 * protocol_bound + len(dues) + 1)
        triggers.append(-1)  # sentinel: the scan below stops at the end without a length test
        i, end, posed = 0, len(triggers) - 1, 0
        while posed < protocol_bound:
            if dues and dues[0] <= seq:  # a due re-ask takes this seq
                dues.popleft()
                seq += 1
                continue
            # seq … stop-1 are all protocol questions: up to the next due re-ask, which a
            # trigger inside the run may bring forward when none was queued.
            stop = seq + protocol_bound - posed
            if dues and dues[0] < stop:
                stop = dues[0]
            i = bisect_left(triggers, seq, i, end)  # skip the seqs that re-asks took
            t = triggers[i]
            while seq <= t < stop:
                if not dues and t + gap < stop:
                    stop = t + gap
                dues.append(t + gap)
                i += 1
                t = triggers[i]
            posed += stop - seq
            seq = stop
        # The protocol has posed its last question: the queued re-asks follow at once.
        return seq - start + len(dues)

    def progress(self) -> Progress:
        """Judgments so far, expected and worst-case remaining questions (re-asks included).

        With re-asks, every remaining protocol question is re-asked with probability f, so
        ``expected = (1 + f)·E[protocol] + queued re-asks``, capped by the worst case.
        """
        if self.done:
            return Progress(len(self.answers), 0.0, 0, True)
        if self._compare is None:  # only queued re-asks are left
            bound, expected = 0, 0.0
        else:
            state = self.state
            bound = state.max_remaining()
            # A strategy class passed as ``strategy=`` may predate expected_remaining: without
            # a model of its mean cost, its bound is the honest estimate.
            model = getattr(state, "expected_remaining", None)
            expected = float(bound)
            if model is not None:
                expected = min(expected, model(cache=self.pair_cache))
        if self._schedule is None:
            return Progress(len(self.answers), max(1.0, expected), bound, False)
        total = self._reask_bound(bound)
        expected = min(float(total), expected * (1.0 + self.reask_fraction) + len(self._queue))
        return Progress(len(self.answers), max(1.0, expected), total, False)

    def result(self) -> TopKResult:
        """The top-k ground truth (:class:`TopKResult`); NotFinished while a question is pending."""
        if self._outcome is None or self._reask is not None:
            raise NotFinished(f"{len(self.answers)} judgments so far; the session is not finished")
        if self._result is None:
            top, rest = self._outcome
            self._result = TopKResult.build(
                self.k,
                top,
                rest,
                self.judged,
                self.reasked,
                judgments=len(self.answers),
                broken=self.broken,
            )
        return self._result


class GradedSession:
    """Tool T2: one grade per document in seeded random order (:mod:`labeling.graded`)."""

    method = "graded"

    def __init__(self, doc_ids: Sequence[str], *, seed: int) -> None:
        self.doc_ids = doc_ids
        self.seed = seed
        self.options: dict[str, Any] = {}
        self.order = seeded_order(doc_ids, seed)
        self.answers: list[GradeAnswer | BrokenAnswer] = []
        #: Documents marked broken (skipped, no grade), id -> reason.
        self.broken: dict[str, str] = {}
        self._gen = five_grade(self.order)
        self._pending: GradeQuestion | None = GradeQuestion(0, next(self._gen))
        self._result: GradedResult | None = None

    @property
    def pending(self) -> GradeQuestion | None:
        return self._pending

    @property
    def done(self) -> bool:
        return self._pending is None

    @property
    def allowed_outcomes(self) -> tuple[int, ...]:
        """The grades :meth:`submit` accepts (empty when done)."""
        return () if self._pending is None else (0, 1, 2, 3, 4)

    def submit(self, answer: Answer) -> None:
        """Record one grade for the pending document; on error raise and change nothing."""
        q = self._pending
        if q is None:
            raise Finished("the session is finished; there is no pending question")
        if not isinstance(answer, GradeAnswer | BrokenAnswer):
            raise WrongQuestion(
                f"question {q.seq} grades {q.doc_id!r}; got {type(answer).__name__}"
            )
        if answer.doc_id != q.doc_id:
            raise WrongQuestion(f"question {q.seq} grades {q.doc_id!r}, not {answer.doc_id!r}")
        grade: int | None = None
        if isinstance(answer, BrokenAnswer):
            if answer.left is not None or answer.right is not None:
                raise InvalidAnswer(
                    f"question {q.seq} ({q.doc_id}): a broken document of a graded task names "
                    "no pair"
                )
            reason = check_reason(answer.reason, q.seq)
            self.broken[q.doc_id] = reason
        else:
            try:
                grade = check_grade(answer.grade)
            except InvalidAnswer as err:
                raise InvalidAnswer(f"question {q.seq} ({q.doc_id}): {err}") from None
        self.answers.append(answer)
        try:
            self._pending = GradeQuestion(len(self.answers), self._gen.send(grade))
        except StopIteration as stop:
            self._pending = None
            self._result = GradedResult(
                stop.value, len(self.answers), tuple(self.order), dict(self.broken)
            )

    def progress(self) -> Progress:
        """``done / n``: exactly ``n - judgments`` remain."""
        left = len(self.order) - len(self.answers)
        return Progress(len(self.answers), float(left), left, left == 0)

    def result(self) -> GradedResult:
        if self._result is None:
            raise NotFinished(f"{len(self.answers)} of {len(self.order)} documents graded so far")
        return self._result


AnySession = TopKSession | GradedSession


@overload
def open_session(
    method: Literal["topk"],
    doc_ids: Sequence[str],
    *,
    k: int = 10,
    seed: int,
    options: Mapping[str, Any] | None = None,
    answers: Sequence[Answer] = (),
) -> TopKSession: ...


@overload
def open_session(
    method: Literal["graded"],
    doc_ids: Sequence[str],
    *,
    k: int = 10,
    seed: int,
    options: Mapping[str, Any] | None = None,
    answers: Sequence[Answer] = (),
) -> GradedSession: ...


@overload
def open_session(
    method: str,
    doc_ids: Sequence[str],
    *,
    k: int = 10,
    seed: int,
    options: Mapping[str, Any] | None = None,
    answers: Sequence[Answer] = (),
) -> AnySession: ...


def open_session(
    method: str,
    doc_ids: Sequence[str],
    *,
    k: int = 10,
    seed: int,
    options: Mapping[str, Any] | None = None,
    answers: Sequence[Answer] = (),
) -> AnySession:
    """Rebuild a session from its config and replay ``answers`` in order.

    Raises :class:`ConfigError` for a bad config and, if the log does not replay, the
    :class:`LabelingError` of the first answer that does not fit (its index in the message).
    """
    method = _check_method(method)
    opts = validate_options(method, options)
    ids = _check_doc_ids(doc_ids)
    seed = _check_seed(seed)
    session: AnySession
    if method == "topk":
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError(f"k must be an integer >= 1, got {k!r}")
        session = TopKSession(ids, k=k, seed=seed, options=opts)
    else:
        session = GradedSession(ids, seed=seed)
    replay(session, answers)
    return session


def replay(session: AnySession, answers: Sequence[Answer]) -> AnySession:
    """Submit ``answers`` in order; a failure names the answer index."""
    for index, answer in enumerate(answers):
        try:
            session.submit(answer)
        except LabelingError as err:
            raise type(err)(f"answer {index} does not replay: {err}") from err
    return session
