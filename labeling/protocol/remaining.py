"""The remaining-work estimate a person reads ("about N left"): a strategy's model, smoothed
by one rule so that it never jumps (docs/protocols.md#the-remaining-estimate).

A strategy's model (``expected_remaining``) is a function of its state alone, so it can rise
after an answer (a heap's sift that went one level less deep than its mean puts the mean cost
of the next one back) or fall by more than half (a tournament replay that turned out short).
The estimate shown is a running value ``d`` over the log, updated after every entry (a
person's answer, a machine's, a broken document) from the model ``r`` and the worst-case
bound ``B`` (``max_remaining``) after that entry, and the bound ``B'`` before it:

* growth ``g = max(0, B − B')``: the plan grew when the worst case rose (a broken document
  restarting the strategy, a re-ask queued, a confirmation owed);
* ``high = min(B, d' + g)``: it never rises unless the plan grew, and then by at most the
  growth, and it never promises more than the protocol can still need;
* ``low = min(high, max(1, d'/2))``: it never falls below half of what was shown, unless the
  bound itself is lower (the protocol then proves it needs at most that);
* ``d = min(high, max(low, r))``, and ``0`` once done; the first value is ``r`` within
  ``[1, B]`` (the start-of-task model, unchanged).

So ``d`` follows the model whenever the model moves by less than these limits, and
converges to it geometrically (at most halving per entry) when the model drops below; it is
always within ``[1, B]`` while not done. It is a function of the log alone (the same on
replay), of each entry's content, not of who gave it (blind: the same with a machine on or
off for the same entries, docs/machine-judges.md#blind). Undo replays the shorter log, so it
shows the estimate of that prefix again, which may be higher.

Keeping it: a session computes the estimate only once it is read (replays that never read it,
e.g. exports, do not pay for the model at every entry), by walking its log once in a fresh
session with the model (:meth:`EstimateMemo.track`), then after each entry it takes
(:func:`next_kept`). :class:`EstimateMemo` keeps the last estimate of each of the tasks read
lately with a digest of its log, so a longer log of the same task walks only its new entries
(the progress pages replay every open task on each request). :func:`reask_bound` is the worst
case of a schedule of re-asks, the bound the model is capped by when re-asks are on.
"""

from __future__ import annotations

import hashlib
import threading
from bisect import bisect_left
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Protocol

from labeling.protocol.seeding import REASK_GAP, ReaskSchedule
from labeling.protocol.types import LogEntry, Progress

#: How many tasks' estimates an :class:`EstimateMemo` keeps (least recently read dropped first).
ESTIMATES_KEPT = 4096
#: The estimate kept over a log: (entries read, estimate shown, worst-case bound) after the last.
Kept = tuple[int, float, int]


def first_estimate(model: float, bound: int, done: bool) -> float:
    """The estimate before any step of the rule: ``model`` within ``[1, bound]``, 0 when done."""
    if done:
        return 0.0
    return min(float(bound), max(1.0, model))


def next_estimate(shown: float, bound_before: int, model: float, bound: int, done: bool) -> float:
    """The estimate after one log entry (module docstring): ``shown`` and ``bound_before``
    before it, the strategy's ``model`` and the worst-case ``bound`` after it."""
    if done:
        return 0.0
    high = min(float(bound), shown + max(0, bound - bound_before))
    low = min(high, max(1.0, shown / 2.0))
    return min(high, max(low, model))


def first_kept(model: Progress) -> Kept:
    """The kept estimate of an empty log, from the strategy's ``model`` at the start."""
    return (
        0,
        first_estimate(model.expected_remaining, model.max_remaining, model.done),
        model.max_remaining,
    )


def next_kept(kept: Kept, entries: int, model: Progress) -> Kept:
    """The kept estimate after one more entry (``entries`` in all), from the strategy's
    ``model`` after it."""
    shown = next_estimate(
        kept[1], kept[2], model.expected_remaining, model.max_remaining, model.done
    )
    return (entries, shown, model.max_remaining)


class Replay(Protocol):
    """What the keeping reads of a fresh session of the task: it takes the log's entries one
    by one, and says the strategy's model after each."""

    def submit(self, answer: LogEntry) -> None: ...

    def model_progress(self) -> Progress: ...


class EstimateMemo:
    """The estimate of the logs read lately, per task config (a key that names everything the
    estimate depends on but the log): (log length, digest of the log's entries, estimate,
    bound). A longer log of the same task walks only its new entries with the model; a log
    that is not a continuation walks from the start. Thread-safe."""

    def __init__(self, kept: int = ESTIMATES_KEPT) -> None:
        self.kept = kept
        self._logs: OrderedDict[Hashable, tuple[int, bytes, float, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._logs)

    def track(
        self, key: Hashable | None, answers: Sequence[LogEntry], fresh: Callable[[], Replay]
    ) -> Kept:
        """The estimate after ``answers``: walked in ``fresh()`` from the first entry, or from
        where this memo last left ``key``'s log (the replay up to there needs no model).
        ``key`` None: nothing is remembered (a task whose key cannot name its state)."""
        hasher = hashlib.blake2b(digest_size=16)
        start, known = 0, None
        if key is not None:
            with self._lock:
                known = self._logs.get(key)
            if known is not None and known[0] <= len(answers):
                for answer in answers[: known[0]]:
                    hasher.update(repr(answer).encode())
                if hasher.digest() == known[1]:
                    start = known[0]
                else:  # another log of the same task: from the start
                    hasher = hashlib.blake2b(digest_size=16)
        if start and known is not None and start == len(answers):  # nothing to walk
            return (start, known[2], known[3])
        session = fresh()
        for answer in answers[:start]:
            session.submit(answer)  # not kept yet: no model
        if start and known is not None:
            kept: Kept = (start, known[2], known[3])
        else:
            kept = first_kept(session.model_progress())
        for entries, answer in enumerate(answers[start:], start=start + 1):
            hasher.update(repr(answer).encode())
            session.submit(answer)
            kept = next_kept(kept, entries, session.model_progress())
        if key is not None:
            with self._lock:
                self._logs[key] = (len(answers), hasher.digest(), kept[1], kept[2])
                self._logs.move_to_end(key)
                while len(self._logs) > self.kept:
                    self._logs.popitem(last=False)
        return kept


def with_reasks(
    entries: int,
    expected: float,
    bound: int,
    schedule: ReaskSchedule,
    fraction: float,
    dues: Sequence[int],
) -> Progress:
    """The model after ``entries`` entries with re-asks on: the protocol's ``expected`` and
    worst-case ``bound`` questions, the re-asks queued due at ``dues`` (ascending). Every
    remaining protocol question is re-asked with probability ``fraction`` f, so ``expected =
    (1 + f)·E[protocol] + queued re-asks``, capped by the worst case (:func:`reask_bound`)."""
    total = reask_bound(schedule, entries, dues, bound)
    expected = min(float(total), expected * (1.0 + fraction) + len(dues))
    return Progress(entries, max(1.0, expected), total, False)


def reask_bound(
    schedule: ReaskSchedule, start: int, dues: Iterable[int], protocol_bound: int
) -> int:
    """Most questions still to come after ``start`` entries, re-asks included, if the protocol
    poses at most ``protocol_bound`` more and the re-asks queued fall due at ``dues``
    (ascending): the deterministic schedule is walked forward.

    Exact for that many protocol questions, and monotone in their number (with fewer, the
    schedule is the same up to the protocol's end and triggers a subset of the re-asks),
    so it is an upper bound whenever ``protocol_bound`` is.
    """
    gap = REASK_GAP + 1
    seq = start
    due = deque(dues)
    # Every seq the walk can reach: each protocol question adds at most one re-ask.
    triggers = schedule.triggered_in(start, start + 2 * protocol_bound + len(due) + 1)
    triggers.append(-1)  # sentinel: the scan below stops at the end without a length test
    i, end, posed = 0, len(triggers) - 1, 0
    while posed < protocol_bound:
        if due and due[0] <= seq:  # a due re-ask takes this seq
            due.popleft()
            seq += 1
            continue
        # seq … stop-1 are all protocol questions: up to the next due re-ask, which a
        # trigger inside the run may bring forward when none was queued.
        stop = seq + protocol_bound - posed
        if due and due[0] < stop:
            stop = due[0]
        i = bisect_left(triggers, seq, i, end)  # skip the seqs that re-asks took
        t = triggers[i]
        while seq <= t < stop:
            if not due and t + gap < stop:
                stop = t + gap
            due.append(t + gap)
            i += 1
            t = triggers[i]
        posed += stop - seq
        seq = stop
    # The protocol has posed its last question: the queued re-asks follow at once.
    return seq - start + len(due)
