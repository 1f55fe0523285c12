"""API tokens: minting, their SQL, and who a request's bearer token is (docs/security.md).

An opaque ``secrets.token_urlsafe(32)`` goes to the client; the database stores only
``sha256(token)`` hex, so a database leak yields no usable credential. (Web session tokens
are minted the same way: :mod:`app.auth.sessions`.)

Every function that touches the database owns its transaction on the ``db`` it is given
(an :class:`app.kernel.db.Database`), unless it is given a cursor.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Table, bindparam, exists, or_, select, update

from app.kernel.caches import Slot
from app.kernel.db import Database
from app.kernel.errors import Unauthorized
from app.kernel.models import ApiToken, User, utcnow
from app.kernel.prepared import Prepared

#: How stale ``last_seen_at`` / ``last_used_at`` may get before a request refreshes it.
TOUCH_INTERVAL = timedelta(seconds=60)


def hash_token(raw: str) -> str:
    """sha256 hex of a raw token (what the database stores)."""
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def new_token() -> tuple[str, str]:
    """A fresh opaque token: ``(raw, sha256_hex)``."""
    raw = secrets.token_urlsafe(32)
    return raw, hash_token(raw)


def tokens_match(expected: str | None, given: str | None) -> bool:
    """Constant-time comparison; False when either side is missing."""
    if not expected or not given:
        return False
    return hmac.compare_digest(expected.encode("utf-8"), given.encode("utf-8"))


def create_api_token(db: Database, user_id: int, *, name: str = "", days: int | None = None) -> str:
    """Store a new API token for ``user_id`` and return the raw token (shown once)."""
    raw, digest = new_token()
    lifetime = days if days is not None else db.settings.api_token_days
    with db.write() as s:
        s.add(
            ApiToken(
                user_id=user_id,
                token_hash=digest,
                name=name,
                expires_at=utcnow() + timedelta(days=lifetime),
            )
        )
    return raw


_TOKENS, _USERS = ApiToken.__table__, User.__table__
# Declarative classes type __table__ as a FromClause; these are Tables, as update() needs.
assert isinstance(_TOKENS, Table) and isinstance(_USERS, Table)
_TOKEN_USER = (  # Core, not ORM: this runs on every API request
    select(
        _TOKENS.c.id.label("token_id"),
        _TOKENS.c.expires_at,
        _TOKENS.c.last_used_at,
        _USERS.c.id,
        _USERS.c.username,
        _USERS.c.password_hash,
        _USERS.c.role,
        _USERS.c.disabled,
        _USERS.c.created_at,
    )
    .join(_USERS, _USERS.c.id == _TOKENS.c.user_id)
    .where(_TOKENS.c.token_hash == bindparam("digest"))
)


_TOUCH_TOKEN = (
    update(_TOKENS)
    .where(_TOKENS.c.id == bindparam("token_id"))
    .values(last_used_at=bindparam("now"))
)


def token_acts_for(user_id: ColumnElement[Any]) -> ColumnElement[bool]:
    """SQL: the token whose hash is bound as ``digest`` is usable at the time bound as ``now``
    (:func:`_token_usable`: known, unexpired, its user enabled) and belongs to ``user_id``.

    For a statement that must act only for a token's user without waiting for the lookup's
    result (the judging loop's one-round-trip submit: ``app.judging.repository``)."""
    return exists().where(
        _TOKENS.c.token_hash == bindparam("digest"),
        _TOKENS.c.user_id == user_id,
        _USERS.c.id == _TOKENS.c.user_id,
        _USERS.c.disabled.is_(False),
        or_(_TOKENS.c.expires_at.is_(None), _TOKENS.c.expires_at > bindparam("now")),
    )


#: :func:`_token_row`'s refresh of ``last_used_at`` as one statement, for a request that sends
#: it before the lookup's result is known: the token bound as ``digest``, if usable at ``now``
#: and last used before ``touch_before`` (``now`` - :data:`TOUCH_INTERVAL`). (Also a CTE of
#: the judging loop's one-round-trip submit.)
TOUCH_DUE_TOKEN = (
    update(_TOKENS)
    .where(
        _TOKENS.c.token_hash == bindparam("digest"),
        or_(
            _TOKENS.c.last_used_at.is_(None),
            _TOKENS.c.last_used_at < bindparam("touch_before", type_=_TOKENS.c.last_used_at.type),
        ),
        or_(_TOKENS.c.expires_at.is_(None), _TOKENS.c.expires_at > bindparam("now")),
        exists().where(_USERS.c.id == _TOKENS.c.user_id, _USERS.c.disabled.is_(False)),
    )
    .values(last_used_at=bindparam("now"))
)


def _prepared_token_statements(db: Database) -> tuple[Prepared, Prepared]:
    dialect = db.engine.dialect
    return Prepared(_TOKEN_USER, dialect), Prepared(_TOUCH_TOKEN, dialect)


#: The token lookup and touch, prepared for every database.
_TOKEN_STATEMENTS: Slot[tuple[Prepared, Prepared]] = Slot(
    "token statements", _prepared_token_statements
)


def _token_usable(row: Any, now: datetime) -> bool:
    """Whether a looked-up token row (None: unknown) is usable at ``now``: unexpired, its user
    enabled. (:func:`token_acts_for` is the same rule in SQL.)"""
    return not (
        row is None or row.disabled or (row.expires_at is not None and row.expires_at <= now)
    )


def _token_row(db: Database, cursor: Any, raw: str, *, writable: bool) -> Any:
    """The token's row joined with its user, if the token is known and unexpired and the user
    enabled (None otherwise), read on the DB-API ``cursor``. ``last_used_at`` is refreshed (at
    most once per :data:`TOUCH_INTERVAL`) on ``cursor`` if it is in a write transaction
    (``writable``), otherwise in a write transaction of its own."""
    lookup, touch = _TOKEN_STATEMENTS.of(db)
    now = utcnow()
    row = lookup.one_or_none(cursor, {"digest": hash_token(raw)})
    if not _token_usable(row, now):
        return None
    if row.last_used_at is None or now - row.last_used_at > TOUCH_INTERVAL:
        values = {"token_id": row.token_id, "now": now}
        if writable:
            touch.execute(cursor, values)
        else:
            with db.raw_write() as w:
                touch.execute(w, values)
    return row


def resolve_api_token(db: Database, raw: str) -> User | None:
    """The active user owning the bearer token ``raw``, or None (unknown/expired/disabled).

    Runs on every API request: one prepared statement in a raw read transaction; the User
    returned is a plain (transient) instance built from that row."""
    # Deliberately not cached: a disabled user or a revoked token is refused on the very next
    # request.
    with db.raw_read() as cursor:
        row = _token_row(db, cursor, raw, writable=False)
    if row is None:
        return None
    return User(
        id=row.id,
        username=row.username,
        password_hash=row.password_hash,
        role=row.role,
        disabled=row.disabled,
        created_at=row.created_at,
    )


def bearer_token(authorization: str) -> str | None:
    """The token of an ``Authorization`` header value ``Bearer <token>`` (scheme in any case),
    or None for another scheme or an empty token."""
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


class Identity(NamedTuple):
    """Who a checked bearer token belongs to: what authorisation needs (the judging loop
    builds no ORM ``User`` per request)."""

    id: int
    username: str
    role: str


@dataclass(frozen=True, slots=True)
class BearerToken:
    """A bearer token not looked up yet: the judging loop checks it inside the transaction
    that does the work (one transaction per request instead of two; the check is
    :func:`resolve_api_token`'s, on every request)."""

    raw: str

    @property
    def digest(self) -> str:
        """The token's hash, as stored."""
        return hash_token(self.raw)

    def identity_on(self, db: Database, cursor: Any, *, writable: bool) -> Identity:
        """The token's user, read on the DB-API ``cursor`` (401 for an unknown, expired or
        revoked token or a disabled user). ``writable``: the cursor's transaction writes."""
        row = _token_row(db, cursor, self.raw, writable=writable)
        if row is None:
            raise Unauthorized("invalid or expired token")
        return Identity(row.id, row.username, row.role)


#: Who makes a request of the judging loop: a user already authenticated (cookie), or a
#: bearer token to check in the request's own transaction.
Caller = User | BearerToken


def caller_identity(db: Database, cursor: Any, caller: Caller, *, writable: bool) -> Identity:
    """The :class:`Identity` behind ``caller`` (a bearer token is checked on ``cursor``)."""
    if isinstance(caller, BearerToken):
        return caller.identity_on(db, cursor, writable=writable)
    return Identity(caller.id, caller.username, caller.role)
