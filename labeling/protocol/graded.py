"""The five-grade protocol (tool T2; docs/analysis.md#design).

The query's documents are shown one at a time in the session's (seeded random) order and each
gets one grade on 0..4 (Bad, Fair, Good, Excellent, Perfect). Written as a generator like the
heap protocol: it yields the document to grade and receives the grade, so it replays the same
way (state = f(order, grades so far)).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

from labeling.errors import ConfigError, Finished, InvalidAnswer, NotFinished, WrongQuestion
from labeling.protocol.groundtruth import GradedResult
from labeling.protocol.seeding import seeded_order
from labeling.protocol.types import (
    GRADE_NAMES,
    Answer,
    BrokenAnswer,
    GradeAnswer,
    GradeQuestion,
    Progress,
    check_reason,
)

#: Highest grade of the five-grade scale (Perfect).
MAX_GRADE = len(GRADE_NAMES) - 1

#: Yields documents, receives grades (None: skipped as broken), returns the grades.
GradedProtocol = Generator[str, int | None, dict[str, int]]


def check_grade(grade: object) -> int:
    """Return ``grade`` if it is an integer in 0..4, else raise :class:`InvalidAnswer`."""
    if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= MAX_GRADE:
        raise InvalidAnswer(f"grade must be an integer in 0..{MAX_GRADE}, got {grade!r}")
    return grade


def five_grade(order: Sequence[str]) -> GradedProtocol:
    """Ask for one grade per document, in ``order``; return ``{doc: grade}``.

    ``None`` sent for a document skips it (a broken document: docs/protocols.md#broken-documents),
    so it gets no grade."""
    if len(order) == 0:
        raise ConfigError("the protocol needs at least one document")
    grades: dict[str, int] = {}
    for doc in order:
        grade = yield doc
        if grade is not None:
            grades[doc] = grade
    return grades


class GradedSession:
    """Tool T2: one grade per document in seeded random order (:func:`five_grade`)."""

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
