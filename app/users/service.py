"""Use cases: users (create, look up, list, enable/disable).

Two rules hold on every path (REST, web pages, CLI):

- new passwords follow the password policy (:func:`app.auth.passwords.password_problem`,
  ``docs/security.md#password-policy``); the demo's fixed accounts alone are created without
  it;
- the service keeps at least one active admin: the last one cannot be disabled (the CLI may
  override this with ``--force``, for an operator who means it), and an admin acting through
  the API or the web pages cannot disable their own account
  (``docs/security.md#the-last-admin``).
"""

from __future__ import annotations

import unicodedata

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.auth import passwords, sessions
from app.kernel.db import Database
from app.kernel.errors import Conflict, Invalid, NotFound
from app.kernel.models import ROLES, User
from labeling.identifiers import USERNAME_RE, USERNAME_RULE, text_problem


def check_new_password(password: str, *, username: str) -> None:
    """Invalid (422) unless ``password`` satisfies the password policy for ``username``."""
    problem = passwords.password_problem(password, username=username)
    if problem is not None:
        raise Invalid(problem)


def create_user(
    *,
    db: Database,
    username: str,
    password: str,
    role: str = "assessor",
    enforce_password_policy: bool = True,
) -> User:
    """Create a user with an Argon2 password hash. 422 on a bad name/password/role, 409 if the
    username is taken (decided by the unique constraint, not a pre-check).

    Usernames are stored in NFC and are unique whatever their case (``bob`` and ``BOB``
    cannot both exist: a unique index on ``lower(username)``); an account keeps the
    spelling it was created with, and is found by that spelling only
    (docs/security.md#usernames).

    ``enforce_password_policy=False`` is for the demo's fixed, published logins only."""
    username = unicodedata.normalize("NFC", username or "")
    if not USERNAME_RE.fullmatch(username):
        shown = repr(username) if text_problem(username or "") is None else "given"
        raise Invalid(f"invalid username {shown}: {USERNAME_RULE}")
    if role not in ROLES:
        raise Invalid(f"invalid role {role!r}; expected one of {', '.join(ROLES)}")
    if enforce_password_policy:
        check_new_password(password, username=username)
    user = User(username=username, password_hash=passwords.hash_password(password), role=role)
    try:
        with db.write() as s:
            s.add(user)
            s.flush()
    except IntegrityError as exc:
        raise Conflict(
            f"username {username!r} is already taken (usernames are unique whatever their case)"
        ) from exc
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


def ensure_another_active_admin(s: Session, user: User) -> None:
    """Conflict (409) if ``user`` is the last active admin, read in the write transaction ``s``
    that is about to disable, demote or delete them.

    The active admins' rows are locked (``FOR UPDATE``; SQLite's single writer serialises
    anyway), so two admins disabling each other at the same moment cannot both succeed: the
    second transaction waits and then sees the first one's change."""
    if user.role != "admin" or user.disabled:
        return
    active = s.scalars(
        select(User.id)
        .where(User.role == "admin", User.disabled.is_(False))
        .order_by(User.id)
        .with_for_update()
    ).all()
    if not any(uid != user.id for uid in active):
        raise Conflict(
            f"{user.username!r} is the last active admin; make another admin first "
            "(the service must keep one)"
        )


def set_disabled(
    *,
    db: Database,
    username: str,
    disabled: bool,
    actor: str | None = None,
    force: bool = False,
) -> User:
    """Disable (or re-enable) a user; disabling revokes every session and token at once.

    ``actor``: the admin making the request (API, web), who may not disable their own account
    (409). The last active admin cannot be disabled (409) unless ``force`` (the CLI's
    ``--force``)."""
    if disabled and actor is not None and actor == username:
        raise Conflict("you cannot disable your own account; another admin can")
    with db.write() as s:
        user = s.scalar(select(User).where(User.username == username))
        if user is None:
            raise NotFound(f"no user named {username!r}")
        if disabled and not force:
            ensure_another_active_admin(s, user)
        user.disabled = disabled
    if disabled:
        sessions.revoke_user_credentials(db, user.id)
    return user
