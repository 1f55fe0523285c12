"""The LLM-grades job (queue ``grades``, :mod:`app.kernel.queue`): the grades of the ``llm``
prior, asked on a worker (:func:`app.machine.grades.grade_documents`).

Per-job prompt cap: one job sends at most ``llm_job_max_prompts`` prompts (whole queries,
counting each query's documents not graded yet; a single query over the cap goes alone). The
queries left over are queued again as a new job at the back of the queue, so a request for
every document of a large collection runs in slices, and the grades requested after it are
not held back until it ends. A job asked twice costs its requests once (the replies are
cached).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.kernel import queue
from app.kernel.db import Database
from app.kernel.settings import Settings
from app.machine.grades import grade_documents, grade_status

#: The job's name on its queue.
GRADES_TASK = "heapjudge.llm_grades"


def _grades(collection_id: int, query_ids: list[str] | None) -> None:
    run_grades_job(queue.worker_database(), collection_id, query_ids)


GRADES = queue.register("grades", GRADES_TASK, _grades)


def enqueue_grades(settings: Settings, collection_id: int, query_ids: list[str] | None) -> None:
    """Put the LLM grades of the collection's queries (all when None) on the queue."""
    GRADES.enqueue(settings, collection_id, query_ids)


def first_slice(per_query: Sequence[dict[str, Any]], cap: int) -> tuple[list[str], list[str]]:
    """The queries one job grades (in order, while their missing documents sum to at most
    ``cap``; at least one), and the rest (with something missing)."""
    todo = [(q["query_id"], int(q["missing"])) for q in per_query if int(q["missing"]) > 0]
    taken: list[str] = []
    total = 0
    for qid, missing in todo:
        if taken and total + missing > cap:
            break
        taken.append(qid)
        total += missing
    return taken, [qid for qid, _ in todo[len(taken) :]]


def run_grades_job(db: Database, collection_id: int, query_ids: list[str] | None) -> dict[str, Any]:
    """One slice of a grades request (module docstring): grade it, queue the rest again;
    the slice's :func:`app.machine.grades.grade_status`, with ``queued_again``: the queries
    left for the next job."""
    status = grade_status(db, collection_id, query_ids)
    taken, rest = first_slice(status["queries"], db.settings.llm_job_max_prompts)
    done = grade_documents(db, collection_id, taken) if taken else status
    if rest:
        GRADES.enqueue(db.settings, collection_id, rest)
    return {**done, "queued_again": rest}
