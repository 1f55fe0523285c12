"""Plain records of a labeling study, the input of the analysis modules.

The analysis (:mod:`labeling.analysis.agreement`, :mod:`labeling.analysis.timing`,
:mod:`labeling.analysis.consistency`) works on these frozen dataclasses rather than on ORM rows, so
it stays pure and quick to test; the service converts its database rows into them
(``app/analysis/records.py``).

One judgment log serves both tools (contracts C4): a T1 judgment carries ``left``, ``right``
and ``outcome`` as shown to the assessor; a T2 judgment carries ``doc_id`` and ``grade``.
Undone judgments stay in the log with ``undone=True``: they are ignored by agreement and
timing, and used by self-consistency (an undone pair that was judged again).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from labeling.protocol.types import Method, Outcome


@dataclass(frozen=True, slots=True)
class JudgmentRecord:
    """One row of the judgment log of a task (one answer of one assessor).

    ``seq`` is the index of the answer in its task's log; ``active_ms`` the active (unpaused)
    time the assessor spent on it; ``created_at`` when it was stored (optional in tests).
    """

    task_id: int | str
    assessor: str
    query_id: str
    method: Method
    left: str | None = None
    right: str | None = None
    outcome: Outcome | None = None
    doc_id: str | None = None
    grade: int | None = None
    active_ms: int = 0
    created_at: datetime | None = None
    undone: bool = False
    seq: int = 0

    @property
    def is_pair(self) -> bool:
        """True for a pairwise (T1) judgment with both documents set."""
        return self.left is not None and self.right is not None and self.outcome is not None

    @property
    def is_grade(self) -> bool:
        """True for a five-grade (T2) judgment."""
        return self.doc_id is not None and self.grade is not None


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """One task (one assessor, one query, one method) and, when finished, its result.

    For ``topk`` tasks ``top`` (best first) and ``rest`` hold the top-k ground truth; for
    ``graded`` tasks ``grades`` maps each judged document to 0..4. ``doc_ids`` is the pool.
    """

    task_id: int | str
    assessor: str
    query_id: str
    method: Method
    k: int = 10
    doc_ids: tuple[str, ...] = ()
    finished: bool = False
    top: tuple[str, ...] | None = None
    rest: tuple[str, ...] | None = None
    grades: dict[str, int] = field(default_factory=dict)


def live(records: Iterable[JudgmentRecord]) -> list[JudgmentRecord]:
    """The judgments that count (not undone), in log order (task, seq)."""
    return sorted((r for r in records if not r.undone), key=_log_order)


def in_log_order(records: Iterable[JudgmentRecord]) -> list[JudgmentRecord]:
    """All judgments, undone included, task by task, each task's in the order they were made.

    Within a task: by ``created_at`` when every record has one (an undone answer was made
    before the answer that replaced it at the same ``seq``), else by ``seq`` with undone rows
    first. Tasks follow each other in ``str(task_id)`` order.
    """
    rows = list(records)
    if rows and all(r.created_at is not None for r in rows):
        return sorted(rows, key=lambda r: (str(r.task_id), r.created_at, r.seq, not r.undone))
    return sorted(rows, key=lambda r: (str(r.task_id), r.seq, not r.undone))


def _log_order(r: JudgmentRecord) -> tuple[str, int]:
    return (str(r.task_id), r.seq)


#: ``(task_id, seq)`` of the configured re-ask answers of a study (task option
#: ``reask_fraction``; ``TopKSession.reasks`` of each task's replay). Only the task config can
#: tell a re-ask from another repeat, so the service computes them and passes them in.
ReaskKeys = Collection[tuple[int | str, int]]


def is_reask(record: JudgmentRecord, reasks: ReaskKeys) -> bool:
    """True if ``record`` is the answer to a configured re-ask (its ``(task_id, seq)`` is in
    ``reasks``); re-asks never reached the protocol, so the analysis counts them apart."""
    return bool(reasks) and (record.task_id, record.seq) in reasks
