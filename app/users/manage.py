"""Use cases of the admin console on users: reset a password, the assessors' workload."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from app.auth import passwords, sessions
from app.kernel.db import Database
from app.kernel.errors import NotFound
from app.kernel.models import TASK_STATUSES, Judgment, Task, User
from app.users.service import check_new_password


def reset_password(*, db: Database, username: str, password: str) -> User:
    """Set a new password (the password policy applies) and end the user's sessions and API
    tokens at once."""
    check_new_password(password, username=username)
    with db.write() as s:
        user = s.scalar(select(User).where(User.username == username))
        if user is None:
            raise NotFound(f"no user named {username!r}")
        user.password_hash = passwords.hash_password(password)
    sessions.revoke_user_credentials(db, user.id)
    return user


@dataclass(frozen=True, slots=True)
class Workload:
    username: str
    role: str
    disabled: bool
    tasks: dict[str, int]
    judgments: int
    active_ms: int
    last_activity: datetime | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "username": self.username,
            "role": self.role,
            "disabled": self.disabled,
            "tasks": self.tasks,
            "judgments": self.judgments,
            "active_ms": self.active_ms,
            "last_activity": self.last_activity.isoformat() if self.last_activity else None,
        }


def workloads(*, db: Database) -> list[Workload]:
    """Every user with tasks by status (all collections), live judgments, active time and the
    time of their last judgment. A judgment counts for whoever gave it: a second opinion
    (``judgment.answered_by``, docs/noise.md) for its second assessor, not the task's; a
    machine's answer for nobody (docs/machine-judges.md#the-service)."""
    answerer = func.coalesce(Judgment.answered_by, Task.assessor_id)
    with db.read() as s:
        users = list(s.scalars(select(User).order_by(User.username)))
        tasks: dict[int, dict[str, int]] = {u.id: dict.fromkeys(TASK_STATUSES, 0) for u in users}
        for uid, status, n in s.execute(
            select(Task.assessor_id, Task.status, func.count()).group_by(
                Task.assessor_id, Task.status
            )
        ):
            tasks.setdefault(uid, dict.fromkeys(TASK_STATUSES, 0))[status] = n
        activity = {
            uid: (n, ms, last)
            for uid, n, ms, last in s.execute(
                select(
                    answerer,
                    func.count(Judgment.id),
                    func.coalesce(func.sum(Judgment.active_ms), 0),
                    func.max(Judgment.created_at),
                )
                .join(Task, Task.id == Judgment.task_id)
                .where(Judgment.undone.is_(False), Judgment.source == "person")
                .group_by(answerer)
            )
        }
    out = []
    for u in users:
        n, ms, last = activity.get(u.id, (0, 0, None))
        if isinstance(last, str):  # SQLite aggregate over the UTC column comes back as text
            last = datetime.fromisoformat(last)
        out.append(
            Workload(u.username, u.role, u.disabled, tasks[u.id], int(n), int(ms or 0), last)
        )
    return out
