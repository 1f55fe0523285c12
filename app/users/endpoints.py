"""REST API v1: users (creating users is admin-only)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from app.http.deps import CurrentUser, DbDep, require_admin
from app.http.openapi import declare_errors
from app.users import service as users
from app.users.schemas import UserCreate, UserOut

router = APIRouter(tags=["users"])
admin = APIRouter(dependencies=[Depends(require_admin)])


@router.get("/users/me", response_model=UserOut)
def me(user: CurrentUser) -> UserOut:
    """The authenticated user."""
    return UserOut.model_validate(user)


@admin.post("/users", response_model=UserOut, status_code=201)
def create_user(body: UserCreate, db: DbDep) -> UserOut:
    """Create a user (admin)."""
    user = users.create_user(db=db, username=body.username, password=body.password, role=body.role)
    return UserOut.model_validate(user)


@admin.get("/users", response_model=list[UserOut])
def list_users(db: DbDep) -> list[UserOut]:
    """Every user (admin)."""
    return [UserOut.model_validate(u) for u in users.list_users(db=db)]


router.include_router(admin)
declare_errors(router)
