"""Use case: a task's ground truth (top-k list or grades), rebuilt from its live log."""

from __future__ import annotations

from app.judging.loop import Payload, replay_task
from app.judging.repository import live_judgments
from app.kernel.db import Database
from app.kernel.models import Query, User
from app.tasks.service import load_task_for


def task_result(*, db: Database, user: User, task_id: int) -> Payload:
    """The task's ground truth; NotFinished (409) while a question is pending."""
    with db.read() as s:
        task = load_task_for(s, user, task_id)
        rows = live_judgments(s, task.id)
        session = replay_task(task, rows)
        result = session.result()
        query = s.get(Query, task.query_id)
        body: Payload = {
            "task_id": task.id,
            "method": task.method,
            "query_id": query.external_id if query else "",
            "judgments": len(rows),
            "active_ms": sum(r.active_ms for r in rows),
            "broken": dict(result.broken),
        }
        if task.method == "topk":
            body |= {
                "k": result.k,
                "top": list(result.top),
                "rest": list(result.rest),
                "kappa_labels": dict(result.kappa_labels),
            }
        else:
            body["grades"] = dict(result.grades)
        return body
