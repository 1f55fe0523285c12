"""Value types shared by every judging protocol and by the service.

These are the contract between the pure labeling core and its adapters (REST API, web UI,
exports, simulation). A protocol *session* is rebuilt from ``(config, answers so far)`` by
replay; nothing else is state (docs/protocols.md, docs/architecture.md).

Orientation: a pairwise question is shown as ``(left, right)``. Which document is on the left
is decided per question from the task seed (recorded with the answer), so the protocol itself
only reasons about the unordered pair; outcomes are always expressed in display terms
(``"left"`` / ``"right"``) at this boundary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from labeling.errors import InvalidAnswer

Outcome = Literal["left", "right", "tie", "not_relevant"]
OUTCOMES: tuple[Outcome, ...] = ("left", "right", "tie", "not_relevant")

Method = Literal["topk", "graded"]
METHODS: tuple[Method, ...] = ("topk", "graded")

#: The five-grade scale of tool T2 (Bad..Perfect mapped to 0..4; docs/analysis.md#design).
GRADE_NAMES: tuple[str, ...] = ("Bad", "Fair", "Good", "Excellent", "Perfect")


@dataclass(frozen=True, slots=True)
class PairQuestion:
    """The pending pairwise question. ``seq`` = number of answers recorded before it."""

    seq: int
    left: str
    right: str


@dataclass(frozen=True, slots=True)
class GradeQuestion:
    """The pending five-grade question: grade one document."""

    seq: int
    doc_id: str


Question = PairQuestion | GradeQuestion


@dataclass(frozen=True, slots=True)
class PairAnswer:
    """One pairwise judgment as shown to the assessor."""

    left: str
    right: str
    outcome: Outcome


@dataclass(frozen=True, slots=True)
class GradeAnswer:
    """One five-grade judgment (grade in 0..4)."""

    doc_id: str
    grade: int


@dataclass(frozen=True, slots=True)
class BrokenAnswer:
    """The pending question's document ``doc_id`` cannot be judged (empty, unreadable, wrong
    language...): the answer outcome ``broken``, with the assessor's ``reason``.

    For a pair, ``left`` and ``right`` echo the pair as shown and ``doc_id`` is one of them;
    for a grade question both are None. What it does to the protocol:
    docs/protocols.md#broken-documents.
    """

    doc_id: str
    reason: str
    left: str | None = None
    right: str | None = None


Answer = PairAnswer | GradeAnswer | BrokenAnswer


@dataclass(frozen=True, slots=True)
class MachineAnswer:
    """A pairwise answer a machine gave (a ``+assist`` strategy,
    docs/machine-judges.md#assisted-strategies): the pair as the question showed it, the
    outcome, the machine's calibrated probability of being right and the version of the
    machine (judge and calibration) that gave it. It takes a ``seq`` in the log like a
    person's answer; replay takes it as given."""

    left: str
    right: str
    outcome: Literal["left", "right"]
    probability: float
    version: str = ""


#: One entry of a judgment log: a person's answer or a machine's.
LogEntry = Answer | MachineAnswer


def check_reason(reason: object, seq: int) -> str:
    """The reason of a broken-document answer, or InvalidAnswer: a non-blank string."""
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidAnswer(f"question {seq}: a broken document needs a reason (a short text)")
    return reason


@dataclass(frozen=True, slots=True)
class Progress:
    """How far a session is.

    ``judgments``: answers recorded so far. ``expected_remaining``: expected number of further
    answers (a float, for "about N left"). ``max_remaining``: an upper bound for a consistent
    assessor; the UI never promises fewer than the protocol can still need.
    """

    judgments: int
    expected_remaining: float
    max_remaining: int
    done: bool


@runtime_checkable
class JudgingSession(Protocol):
    """What the service needs from any protocol (heap top-k, five-grade, future strategies)."""

    @property
    def pending(self) -> Question | None: ...

    @property
    def done(self) -> bool: ...

    def submit(self, answer: Answer) -> None:
        """Record one answer to the pending question; raise a LabelingError and change nothing
        if it does not fit."""

    def progress(self) -> Progress: ...

    def result(self) -> object:
        """The protocol's result (``TopKResult`` or ``GradedResult``); ``NotFinished`` before."""
