"""REST API v1, admin console: users, ``GET /admin/users/workload``,
``POST /admin/users/{name}/password``, ``POST /admin/users/{name}/disable`` and ``/enable``
(role admin).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from pydantic import Field

from app.http.deps import (
    AdminUser,
    DbDep,
    require_admin,
)
from app.http.openapi import declare_errors
from app.http.schemas import StrictModel
from app.users import manage as users_manage
from app.users import service as users
from app.users.schemas import PasswordResetOut, UserStateOut, WorkloadOut

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[Depends(require_admin)])


class PasswordIn(StrictModel):
    password: str = Field(
        min_length=1,
        max_length=1024,
        description="The password policy applies (docs/security.md#password-policy).",
    )


@router.get("/users/workload", response_model=list[WorkloadOut])
def workload(db: DbDep) -> list[dict[str, Any]]:
    """Every user's tasks by status, judgments, active time and last activity."""
    return [w.as_dict() for w in users_manage.workloads(db=db)]


@router.post("/users/{username}/password", response_model=PasswordResetOut)
def reset_password(username: str, body: PasswordIn, db: DbDep) -> dict[str, Any]:
    """Set a new password; the user's sessions and API tokens stop working at once."""
    user = users_manage.reset_password(db=db, username=username, password=body.password)
    return {"username": user.username, "sessions_revoked": True}


@router.post("/users/{username}/disable", response_model=UserStateOut)
def disable_user(username: str, db: DbDep, admin: AdminUser) -> dict[str, Any]:
    """Disable a user: their sessions and tokens stop working at once. 409 for the caller's
    own account and for the last active admin."""
    user = users.set_disabled(db=db, username=username, disabled=True, actor=admin.username)
    return {"username": user.username, "disabled": True}


@router.post("/users/{username}/enable", response_model=UserStateOut)
def enable_user(username: str, db: DbDep) -> dict[str, Any]:
    """Re-enable a disabled user (they log in again)."""
    user = users.set_disabled(db=db, username=username, disabled=False)
    return {"username": user.username, "disabled": False}


declare_errors(router)
