"""The five-grade protocol (tool T2; docs/analysis.md#design).

The query's documents are shown one at a time in the session's (seeded random) order and each
gets one grade on 0..4 (Bad, Fair, Good, Excellent, Perfect). Written as a generator like the
heap protocol: it yields the document to grade and receives the grade, so it replays the same
way (state = f(order, grades so far)).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence

from labeling.errors import ConfigError, InvalidAnswer
from labeling.types import GRADE_NAMES

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
