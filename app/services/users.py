"""Use cases: users (create, look up, list, enable/disable)."""

from __future__ import annotations

import re

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from app import security
from app.db import Database
from app.errors import Conflict, Invalid, NotFound
from app.models import ROLES, User

USERNAME_RE = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
MIN_PASSWORD_LENGTH = 8


def create_user(*, db: Database, username: str, password: str, role: str = "assessor") -> User:
    """Create a user with an Argon2 password hash. 422 on a bad name/password/role, 409 if the
    username is taken (decided by the unique constraint, not a pre-check)."""
    if not USERNAME_RE.fullmatch(username or ""):
        raise Invalid(
            f"invalid username {username!r}: 1-64 characters from letters, digits and _.@-"
        )
    if role not in ROLES:
        raise Invalid(f"invalid role {role!r}; expected one of {', '.join(ROLES)}")
    if len(password) < MIN_PASSWORD_LENGTH:
        raise Invalid(f"password too short: at least {MIN_PASSWORD_LENGTH} characters")
    user = User(username=username, password_hash=security.hash_password(password), role=role)
    try:
        with db.write() as s:
            s.add(user)
            s.flush()
    except IntegrityError as exc:
        raise Conflict(f"username {username!r} is already taken") from exc
    return user


def get_user(*, db: Database, username: str) -> User:
    """The user called ``username`` (404 otherwise)."""
    with db.read() as s:
        user = s.scalar(select(User).where(User.username == username))
    if user is None:
        raise NotFound(f"no user named {username!r}")
    return user


def list_users(*, db: Database) -> list[User]:
    with db.read() as s:
        return list(s.scalars(select(User).order_by(User.id)))


def set_disabled(*, db: Database, username: str, disabled: bool) -> User:
    """Disable (or re-enable) a user; disabling revokes every session and token at once."""
    with db.write() as s:
        user = s.scalar(select(User).where(User.username == username))
        if user is None:
            raise NotFound(f"no user named {username!r}")
        user.disabled = disabled
    if disabled:
        security.revoke_user_credentials(db, user.id)
    return user
