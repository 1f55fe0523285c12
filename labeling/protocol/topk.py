"""Tool T1: a top-k pairwise strategy behind the judging-session interface (:class:`TopKSession`).

The shown estimate of the remaining questions (its rule, its keeping over the log and across
reads, the worst case of the re-asks) is :mod:`labeling.protocol.remaining`'s; the session
gives it the strategy's model after each entry (:meth:`TopKSession.model_progress`).

Decisions where the paper is silent (docs/protocols.md#conventions-shared-by-every-strategy):

* **Strategy** (default ``"heap"``, Algorithm 1). The option names an entry of
  :mod:`labeling.strategies` (``heap``, ``tournament``, ``insertion``, plus modifiers); the
  conventions below hold for every strategy (``docs/protocols.md``).
* **Initial order.** Steps 1 and 2 take documents in a seeded shuffle of ``doc_ids``
  (``random.Random(seed)``), or in ``initial_order`` (best first, e.g. a system ranking) when
  given; documents missing from ``initial_order`` follow it in seeded order. The option
  ``prior`` only records where that order came from (:mod:`labeling.protocol.prior_orders`); it
  never changes a question.
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
  plain protocol; :func:`labeling.protocol.spec.validate_options` fills in ``0.0`` like every
  other default, and a config stored before the option existed (no key) replays unchanged, since
  every replay re-validates it (:func:`labeling.protocol.session.open_session`).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from labeling.errors import Finished, InvalidAnswer, NotFinished, WrongQuestion
from labeling.protocol.groundtruth import PairJudgment, TopKResult
from labeling.protocol.pair_cache import with_memo, with_pair_cache
from labeling.protocol.remaining import EstimateMemo, Kept, next_kept, with_reasks
from labeling.protocol.seeding import REASK_GAP, Orientation, ReaskSchedule, starting_order
from labeling.protocol.types import (
    BrokenAnswer,
    LogEntry,
    MachineAnswer,
    Outcome,
    PairAnswer,
    PairQuestion,
    Progress,
    check_reason,
)
from labeling.strategies.assist import DEFAULT_MAX_LOSS, AssistStrategy, Machine
from labeling.strategies.base import Compare, ComparisonGenerator, PairStrategy, Winner
from labeling.strategies.registry import DEFAULT_STRATEGY, resolve_strategy

#: The estimates of the logs read lately (:meth:`TopKSession._estimate_key` names a task).
_ESTIMATES = EstimateMemo()


class _Reask(NamedTuple):
    """A queued re-ask: due at ``due``, repeating protocol question ``seq`` (``compare``), shown
    as (``left``, ``right``) = the original display swapped."""

    due: int
    seq: int
    compare: Compare
    left: str
    right: str


class TopKSession:
    """Tool T1: a top-k pairwise strategy (option ``strategy``, default Algorithm 1 of
    :mod:`labeling.strategies.heap`) behind the :class:`JudgingSession` interface.

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
        machine: Machine | None = None,
    ):
        self.doc_ids = doc_ids
        self.k = k
        self.seed = seed
        self.options = options
        self.allow_ties: bool = options["allow_ties"]
        self.pair_cache: bool = options["pair_cache"]
        self.not_relevant: bool = options["not_relevant"]
        self.reask_fraction: float = options["reask_fraction"]
        self.order = order = starting_order(doc_ids, seed, options["initial_order"])
        if strategy is None:
            strategy = resolve_strategy(options.get("strategy", DEFAULT_STRATEGY))
        self._strategy = strategy
        #: The machine a ``+assist`` strategy may let answer (docs/machine-judges.md).
        self.machine = machine
        self.state = self._new_state(order)
        self.answers: list[PairAnswer | BrokenAnswer | MachineAnswer] = []
        #: Seqs of the machine's answers (:class:`MachineAnswer`), in order.
        self.machine_seqs: list[int] = []
        # Pair (sorted) -> the probability of the machine's answer on it, and the pairs a rerun
        # after a broken document has answered from the log so far.
        self._machine_first: dict[tuple[str, str], float] = {}
        # Indices into _judged of the machine's answers.
        self._machine_judged: set[int] = set()
        self._memo_seen: set[tuple[str, str]] = set()
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
        # repeat (Compare.repeat, labeling.strategies.robust) is shown the other way round.
        self._shown_left: dict[tuple[str, str], str] = {}
        # Re-asks: None when off, so that f = 0 runs exactly the code it ran before the option.
        self._schedule = ReaskSchedule(seed, self.reask_fraction) if self.reask_fraction else None
        self._queue: deque[_Reask] = deque()
        self._reask: _Reask | None = None  # the pending question when it is a re-ask
        #: Answered re-asks: seq of the re-ask -> seq of the protocol question it repeats.
        self.reasks: dict[int, int] = {}
        #: Seqs of the answered deliberate repeats a strategy asked for (Compare.repeat, e.g.
        #: labeling.strategies.robust): protocol questions, but a second look at a pair, like a
        #: re-ask.
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
        # The estimate shown (labeling.protocol.remaining): (answers, estimate, bound) after
        # the last entry, kept up to date by submit once progress() was asked for (replays
        # that never read it, e.g. exports, do not pay for the model at every entry).
        self._estimate: Kept | None = None
        self._advance(None, first=True)

    def _new_state(self, order: list[str]) -> PairStrategy:
        state = self._strategy(order, self.k)
        if isinstance(state, AssistStrategy):
            machine_option = self.options.get("machine") or {}
            state.bind(self.machine, self.seed, machine_option.get("max_loss", DEFAULT_MAX_LOSS))
        return state

    def _cache_hit(self, question: Compare, winner: Winner) -> None:
        self._judged.append((question.a, question.b, winner, False, True))

    def _memo_hit(self, question: Compare, winner: Winner, not_relevant: bool) -> None:
        # Posed to the assessor (earlier in the log), so not a cached call.
        self._judged.append((question.a, question.b, winner, not_relevant, False))
        if self._machine_first and isinstance(self.state, AssistStrategy) and winner:
            # The machine's answer (always a pair's first) stays the machine's in the rerun.
            a, b = question.a, question.b
            key = (a, b) if a < b else (b, a)
            p = self._machine_first.get(key)
            if p is not None and key not in self._memo_seen:
                self.state.accept_machine(question, winner, p)
                self._machine_judged.add(len(self._judged) - 1)
            self._memo_seen.add(key)

    def _rerun_without_broken(self) -> None:
        """Run the strategy again from the start over the documents not marked broken,
        answering from the log whatever it already answered (the module docstring)."""
        broken = self.broken
        order = [doc for doc in self.order if doc not in broken]
        self.state = self._new_state(order)
        memo: dict[tuple[str, str], deque[tuple[Winner, bool]]] = {}
        self._memo_seen = set()
        self._machine_judged = set()
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
        flagged = self._machine_judged
        if not flagged:
            return [PairJudgment(*j) for j in self._judged]
        return [PairJudgment(*j, machine=i in flagged) for i, j in enumerate(self._judged)]

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
        (:attr:`Compare.repeat`, e.g. :mod:`labeling.strategies.robust`), not a configured re-ask:
        the question the service may route to a second assessor (docs/noise.md)."""
        return self._reask is None and self._compare is not None and self._compare.repeat

    @property
    def pending_is_reask(self) -> bool:
        """True when the pending question repeats an earlier one (for the record and the
        analysis, not for the UI: a re-ask must look like any other question)."""
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

    def submit(self, answer: LogEntry) -> None:
        """Record one answer to the pending question; on error raise and change nothing."""
        self._submit(answer)
        if self._estimate is not None:
            self._estimate = next_kept(self._estimate, len(self.answers), self.model_progress())

    def _submit(self, answer: LogEntry) -> None:
        reask = self._reask
        compare = self._compare if reask is None else reask.compare
        if compare is None:
            raise Finished("the session is finished; there is no pending question")
        left, right = self._left, self._right
        if isinstance(answer, BrokenAnswer):
            self._submit_broken(answer, left, right)
            return
        if not isinstance(answer, PairAnswer):
            if isinstance(answer, MachineAnswer):
                self._submit_machine(answer, compare, left, right)
                return
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

    def _submit_machine(
        self, answer: MachineAnswer, compare: Compare, left: str, right: str
    ) -> None:
        """Record a machine's answer (live from :meth:`let_machine_answer`, or from the log on
        replay, taken as given): only a ``+assist`` strategy's protocol question (a
        deliberate repeat too, not a re-ask), left or right, with a probability in [1/2, 1]."""
        self._check_shown(answer.left, answer.right, left, right)
        seq = len(self.answers)
        state = self.state
        if not isinstance(state, AssistStrategy) or self._reask is not None:
            raise WrongQuestion(
                f"question {seq} ({left!r}, {right!r}) is not one a machine may answer"
            )
        if answer.outcome not in ("left", "right") or not 0.5 <= answer.probability <= 1.0:
            raise InvalidAnswer(
                f"question {seq}: a machine answers left or right with a probability in "
                f"[0.5, 1], got {answer.outcome!r}, {answer.probability!r}"
            )
        winner = left if answer.outcome == "left" else right
        state.accept_machine(compare, winner, answer.probability)
        self.answers.append(answer)
        self.machine_seqs.append(seq)
        a, b = compare.a, compare.b
        self._machine_first[(a, b) if a < b else (b, a)] = answer.probability
        self._shown_left[(left, right) if left < right else (right, left)] = left
        self._machine_judged.add(len(self._judged))
        self._judged.append((compare.a, compare.b, winner, False, False))
        self._posed.append((compare.a, compare.b, winner, False))
        if compare.repeat:
            self.repeats.append(seq)
        self._advance(winner)

    def let_machine_answer(self) -> list[MachineAnswer]:
        """Let the machine answer every question it may, from the pending one on (a
        ``+assist`` strategy with a machine; docs/machine-judges.md#assisted-strategies): the
        new log entries, also appended to :attr:`answers`. The service stores them with the
        log and shows a person the question pending afterwards."""
        state = self.state
        if not isinstance(state, AssistStrategy) or state.machine is None:
            return []
        version = state.machine.version
        out: list[MachineAnswer] = []
        while self._reask is None and self._compare is not None:
            verdict = state.machine_verdict(self._compare)
            if verdict is None:
                break
            winner, p_right = verdict
            left, right = self._left, self._right
            outcome: Literal["left", "right"] = "left" if winner == left else "right"
            answer = MachineAnswer(left, right, outcome, p_right, version)
            self.submit(answer)
            out.append(answer)
        return out

    @property
    def human_judgments(self) -> int:
        """Answers people gave (the log's entries less the machine's)."""
        return len(self.answers) - len(self.machine_seqs)

    @property
    def pending_is_audit(self) -> bool:
        """True when the machine could answer the pending question but the seeded audit gives
        it to a person (for the service's records, never for the page: blind)."""
        state, compare = self.state, self._compare
        if not isinstance(state, AssistStrategy) or self._reask is not None or compare is None:
            return False
        return state.would_audit(compare)

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

    def progress(self) -> Progress:
        """Judgments so far, the estimate shown and the worst-case remaining questions
        (re-asks included): the strategy's model (:meth:`model_progress`) smoothed by the
        rule of :mod:`labeling.protocol.remaining`, a function of the log alone. The first
        read walks the log (:meth:`EstimateMemo.track`); the session keeps it from then on."""
        shown = self._estimate
        if shown is None:
            shown = self._estimate = _ESTIMATES.track(
                self._estimate_key(), self.answers, self._fresh
            )
        return Progress(len(self.answers), shown[1], shown[2], self.done)

    def _fresh(self) -> TopKSession:
        """A session of the same task with no answer (the machine's evidence shapes the
        state; replay never asks the machine)."""
        return TopKSession(
            self.doc_ids,
            k=self.k,
            seed=self.seed,
            options=self.options,
            strategy=self._strategy,
            machine=self.machine,
        )

    def _estimate_key(self) -> tuple[Any, ...] | None:
        """The task's config as a key of :data:`_ESTIMATES`; None with a machine (whose
        evidence shapes the state, and which the key cannot name)."""
        if self.machine is not None:
            return None
        options = json.dumps(self.options, sort_keys=True, default=repr)
        return (tuple(self.doc_ids), self.k, self.seed, options, self._strategy)

    def model_progress(self) -> Progress:
        """Judgments so far, the strategy's expected and worst-case remaining questions
        (re-asks included: :func:`labeling.protocol.remaining.with_reasks`), before the
        smoothing of :meth:`progress`."""
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
        dues = [r.due for r in self._queue]  # ascending: appended in seq order
        return with_reasks(
            len(self.answers), expected, bound, self._schedule, self.reask_fraction, dues
        )

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
