"""Passwords, API tokens, server-side web sessions, login throttling and CSRF checks
(``docs/security.md``).

- Passwords: pwdlib Argon2 (not passlib, which breaks with bcrypt >= 4.1). Unknown users are
  verified against a dummy hash so both paths cost the same (no user enumeration by timing).
- Password policy for new and changed passwords (:func:`password_problem`), after NIST SP
  800-63B: at least 12 characters, no composition rules, and a blocklist check: not the
  username, and not a password that zxcvbn (the maintained Python port of Dropbox's estimator,
  whose lists include 30,000 common passwords from breach corpora) expects to fall within
  10^8 guesses (common passwords, dictionary words, repeats, sequences, keyboard patterns).
- Tokens (API and session): an opaque ``secrets.token_urlsafe(32)`` goes to the client; the
  database stores only ``sha256(token)`` hex, so a database leak yields no usable credential.
- Web sessions are rows (revocable, unlike a signed cookie) with an idle expiry (measured from
  ``last_seen_at``, refreshed at most once a minute to keep writes rare) and an absolute expiry
  (``expires_at`` fixed at login). A new session is minted on every login (no fixation).
- Login throttling is DB-backed (``login_attempt``), so it holds across workers. Three limits
  over the failures within ``login_window_seconds`` (:func:`_retry_after_in`): per
  (username, ip), per ip across usernames (a password spray from one address), and per
  username across ips, where each failure past a free allowance doubles a short delay instead
  of locking the account, and a familiar ip (one the user logged in from lately) is exempt
  from the last two, so nobody can keep a known user out by failing logins in their name.
  An attempt is counted and recorded in one serialised transaction before its password is
  checked, so concurrent guesses cannot slip past a limit.
- CSRF for cookie-authenticated unsafe requests: ``Sec-Fetch-Site`` must be same-origin/none
  when present, else ``Origin`` must equal the public origin when present, and a per-session
  synchronizer token must match (compared with :func:`hmac.compare_digest`).

Every function that touches the database owns its transaction on the ``db`` it is given
(an :class:`app.db.Database`).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, NamedTuple

from pwdlib import PasswordHash
from pwdlib.hashers.argon2 import Argon2Hasher
from sqlalchemy import ColumnElement, Table, bindparam, delete, exists, func, or_, select, update
from sqlalchemy.orm import Session
from zxcvbn import zxcvbn
from zxcvbn.frequency_lists import FREQUENCY_LISTS

from app.db import Database
from app.errors import Unauthorized
from app.models import ApiToken, LoginAttempt, User, WebSession, utcnow
from app.prepared import Prepared
from labeling.identifiers import text_problem

SESSION_COOKIE = "heapjudge_session"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FORM_FIELD = "csrf_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})

#: How stale ``last_seen_at`` / ``last_used_at`` may get before a request refreshes it.
TOUCH_INTERVAL = timedelta(seconds=60)

#: Argon2id with the OWASP Password Storage Cheat Sheet's baseline (m = 19 MiB, t = 2, p = 1):
#: ~0.1 s per hash here, against ~0.5-1 s for pwdlib's heavier default on this 2-core machine,
#: where logins would otherwise queue behind each other. Old hashes with other parameters still
#: verify and are re-hashed on the next successful login.
_password_hash = PasswordHash((Argon2Hasher(time_cost=2, memory_cost=19456, parallelism=1),))


# --------------------------------------------------------------------------- passwords


def hash_password(password: str) -> str:
    """Argon2id hash of ``password``."""
    return _password_hash.hash(password)


def verify_password(password: str, password_hash: str | None) -> bool:
    """True when ``password`` matches. ``None`` (unknown user) verifies a dummy hash and
    returns False, so unknown and known users take the same time."""
    if password_hash is None:
        _password_hash.verify(password, _dummy_hash())
        return False
    try:
        return _password_hash.verify(password, password_hash)
    except Exception:  # a malformed stored hash is a failed login, never a 500
        return False


@lru_cache(maxsize=1)
def _dummy_hash() -> str:
    return _password_hash.hash(secrets.token_urlsafe(16))


#: Shortest new password, in characters after NFKC normalisation (NIST SP 800-63B asks for at
#: least 8 and recommends more; 12 leaves room for memorable passphrases).
MIN_PASSWORD_CHARS = 12
MAX_PASSWORD_CHARS = 1024
#: A new password must need at least this many guesses by zxcvbn's estimate (its score 3,
#: "safely unguessable: moderate protection from offline slow-hash scenario").
MIN_PASSWORD_GUESSES = 10**8
#: zxcvbn's own input limit; a longer password is judged by its first characters.
_ZXCVBN_MAX_CHARS = 72
#: Words that are context-specific to this service (NIST: "the name of the service").
SERVICE_WORDS = ("heapjudge", "judge", "relevance", "assessor")


@lru_cache(maxsize=1)
def common_passwords() -> frozenset[str]:
    """zxcvbn's list of common passwords (30,000, most frequent first in the package)."""
    return frozenset(FREQUENCY_LISTS["passwords"])


def password_problem(password: str, *, username: str = "") -> str | None:
    """Why ``password`` may not be set as a new password, or None (the policy of
    ``docs/security.md#password-policy``, after NIST SP 800-63B section 3.1.1.2):

    1. clean text (no NUL, no lone surrogate), 12 to 1024 characters after NFKC normalisation;
    2. not the username (ignoring case and surrounding spaces);
    3. not a common password (zxcvbn's list, ignoring case), and not guessable within
       :data:`MIN_PASSWORD_GUESSES` by zxcvbn's estimator, which knows the username and the
       service's name as well (repeats, sequences, keyboard walks, dictionary words and l33t
       variants of these)."""
    problem = text_problem(password)
    if problem is not None:
        return f"the password {problem}"
    normalised = unicodedata.normalize("NFKC", password)
    if len(normalised) < MIN_PASSWORD_CHARS:
        return f"the password is too short: use at least {MIN_PASSWORD_CHARS} characters"
    if len(normalised) > MAX_PASSWORD_CHARS:
        return f"the password is too long: at most {MAX_PASSWORD_CHARS} characters"
    folded = normalised.strip().casefold()
    if username and folded == username.strip().casefold():
        return "the password must not be the username"
    if folded in common_passwords():
        return "the password is one of the most common passwords; choose another"
    estimate = zxcvbn(
        normalised[:_ZXCVBN_MAX_CHARS],
        user_inputs=[w for w in (username, *SERVICE_WORDS) if w],
        max_length=_ZXCVBN_MAX_CHARS,
    )
    if estimate["guesses"] < MIN_PASSWORD_GUESSES:
        warning = estimate["feedback"].get("warning") or "it follows a common pattern"
        return (
            "the password is too easy to guess (" + warning.rstrip(".") + "); a few unrelated "
            "words make a strong, memorable password"
        )
    return None


# --------------------------------------------------------------------------- tokens


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
    result (the judging loop's one-round-trip submit: ``app.repositories.judgments``)."""
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
    cached: tuple[Prepared, Prepared] | None = db.caches.get(__name__)
    if cached is None:
        dialect = db.engine.dialect
        cached = db.caches.setdefault(
            __name__, (Prepared(_TOKEN_USER, dialect), Prepared(_TOUCH_TOKEN, dialect))
        )
    return cached


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
    lookup, touch = _prepared_token_statements(db)
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


# --------------------------------------------------------------------------- web sessions


@dataclass(frozen=True, slots=True)
class ResolvedSession:
    """A live web session: its user (detached ORM row) and the session's CSRF token."""

    user: User
    csrf_token: str
    session_id: int
    expires_at: datetime


def create_web_session(
    db: Database, user: User | int, *, now: datetime | None = None
) -> tuple[str, str]:
    """Start a new browser session for ``user``: returns ``(raw_cookie_token, csrf_token)``."""
    now = now or utcnow()
    user_id = user if isinstance(user, int) else user.id
    raw, digest = new_token()
    csrf = secrets.token_urlsafe(32)
    with db.write() as s:
        s.add(
            WebSession(
                token_hash=digest,
                csrf_token=csrf,
                user_id=user_id,
                created_at=now,
                last_seen_at=now,
                expires_at=now + timedelta(seconds=db.settings.session_absolute_seconds),
            )
        )
    return raw, csrf


def resolve_web_session(
    db: Database, raw_token: str | None, *, now: datetime | None = None
) -> ResolvedSession | None:
    """The live session for a cookie value, or None (unknown, idle/absolute-expired, disabled
    user). Expired rows are deleted; ``last_seen_at`` is refreshed at most once a minute."""
    if not raw_token:
        return None
    now = now or utcnow()
    digest = hash_token(raw_token)
    with db.read() as s:
        row = s.execute(
            select(WebSession, User)
            .join(User, User.id == WebSession.user_id)
            .where(WebSession.token_hash == digest)
        ).first()
    if row is None:
        return None
    ws, user = row
    idle = timedelta(seconds=db.settings.session_idle_seconds)
    if user.disabled or ws.expires_at <= now or now - ws.last_seen_at > idle:
        with db.write() as s:
            s.execute(delete(WebSession).where(WebSession.id == ws.id))
        return None
    if now - ws.last_seen_at > TOUCH_INTERVAL:
        with db.write() as s:
            s.execute(update(WebSession).where(WebSession.id == ws.id).values(last_seen_at=now))
    return ResolvedSession(
        user=user, csrf_token=ws.csrf_token, session_id=ws.id, expires_at=ws.expires_at
    )


def delete_web_session(db: Database, raw_token: str | None) -> None:
    """Log out: delete the session row (the old cookie is useless afterwards)."""
    if not raw_token:
        return
    with db.write() as s:
        s.execute(delete(WebSession).where(WebSession.token_hash == hash_token(raw_token)))


def revoke_user_credentials(db: Database, user_id: int) -> None:
    """Delete every web session and API token of a user (deactivation, password change)."""
    with db.write() as s:
        s.execute(delete(WebSession).where(WebSession.user_id == user_id))
        s.execute(delete(ApiToken).where(ApiToken.user_id == user_id))


# --------------------------------------------------------------------------- login


class LoginThrottled(Exception):
    """Too many failed logins (see :func:`_retry_after_in`); retry after ``retry_after``
    seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"too many failed login attempts; retry in {retry_after} s")
        self.retry_after = retry_after


def _seconds_until(free_at: datetime, now: datetime) -> int:
    return max(0, int((free_at - now).total_seconds()) + 1) if free_at > now else 0


def _window_wait(
    s: Session, where: list[Any], since: datetime, limit: int, now: datetime, window: timedelta
) -> int:
    """Seconds until fewer than ``limit`` of the failures matching ``where`` (after ``since``)
    are inside the window: the oldest of the last ``limit`` must leave it first."""
    failures = list(
        s.scalars(
            select(LoginAttempt.at)
            .where(*where, LoginAttempt.success.is_(False), LoginAttempt.at > since)
            .order_by(LoginAttempt.at.desc())
            .limit(limit)
        )
    )
    if len(failures) < limit:
        return 0
    return max(1, _seconds_until(failures[-1] + window, now))


def _last_success(s: Session, *where: Any) -> datetime | None:
    return s.scalar(select(func.max(LoginAttempt.at)).where(*where, LoginAttempt.success))


def _retry_after_in(s: Session, username: str, ip: str, now: datetime, settings: Any) -> int:
    """Seconds before another login attempt for ``username`` from ``ip`` is allowed (0 = now),
    read in ``s``. Failures count within ``login_window_seconds``; the longest wait of:

    1. (username, ip): ``login_max_failures`` failures since the pair's last success lock
       the pair until the oldest of them leaves the window (it affects this ip only);
    2. ip: ``login_ip_max_failures`` failures from the ip, for any usernames, lock the ip
       (one address trying many accounts);
    3. username: past ``login_user_free_failures`` failures since the user's last success,
       from any ips, each attempt waits ``2**(failures - free)`` seconds (at most
       ``login_user_max_delay_seconds``) after the latest failure: a distributed guesser gets
       a few guesses a minute, never a lock-out of the account.

    A *familiar* ip, one the user logged in from within ``login_known_ip_days``, is exempt
    from 2 and 3, so an attacker elsewhere cannot keep the user out, and a spray from a
    shared address does not stop the users who work there."""
    window = timedelta(seconds=settings.login_window_seconds)
    window_start = now - window
    pair = [LoginAttempt.username == username, LoginAttempt.ip == ip]
    pair_success = _last_success(s, *pair)
    since = max(window_start, pair_success) if pair_success else window_start
    wait = _window_wait(s, pair, since, settings.login_max_failures, now, window)
    familiar = pair_success is not None and pair_success > now - timedelta(
        days=settings.login_known_ip_days
    )
    if familiar:
        return wait
    ip_wait = _window_wait(
        s, [LoginAttempt.ip == ip], window_start, settings.login_ip_max_failures, now, window
    )
    user_success = _last_success(s, LoginAttempt.username == username)
    since = max(window_start, user_success) if user_success else window_start
    free = settings.login_user_free_failures
    cap = settings.login_user_max_delay_seconds
    recent = list(
        s.scalars(
            select(LoginAttempt.at)
            .where(
                LoginAttempt.username == username,
                LoginAttempt.success.is_(False),
                LoginAttempt.at > since,
            )
            .order_by(LoginAttempt.at.desc())
            # Enough to know when the delay reaches its cap (2**k >= cap).
            .limit(free + cap.bit_length() + 1)
        )
    )
    user_wait = 0
    if len(recent) >= free:
        delay = min(2 ** (len(recent) - free), cap)
        user_wait = _seconds_until(recent[0] + timedelta(seconds=delay), now)
    return max(wait, ip_wait, user_wait)


def login_retry_after(db: Database, username: str, ip: str, *, now: datetime | None = None) -> int:
    """Seconds the caller must wait before another login attempt (0 = allowed)."""
    with db.read() as s:
        return _retry_after_in(s, username, ip, now or utcnow(), db.settings)


def authenticate(
    db: Database, username: str, password: str, *, ip: str = "", now: datetime | None = None
) -> User | None:
    """Check credentials with throttling; record the attempt. Returns the user or None (one
    generic failure for unknown user, wrong password or disabled account). Raises
    :class:`LoginThrottled` while locked out (the password is then not even checked).

    The throttle check and the record of the attempt are one step: the attempt is written as
    a failure, in the write transaction that checked the count, BEFORE the password is
    verified, and turned into a success afterwards if it was one. So parallel attempts each
    count at once and no burst of concurrent guesses gets past a limit. The transactions are
    serialised by SQLite's single writer, and on Postgres by transaction-level advisory locks
    on the username and on the ip (always taken in that order, so two attempts never wait for
    each other in a cycle)."""
    now = now or utcnow()
    username = username.strip()[:64]
    ip = (ip or "")[:64]
    if text_problem(username) is not None:  # cannot name a user (nor be stored or hashed)
        verify_password(password, None)
        return None
    with db.write() as s:
        if not db.is_sqlite:
            for scope in (f"user\n{username}", f"ip\n{ip}"):
                key = int.from_bytes(hashlib.sha256(scope.encode()).digest()[:8], "big")
                s.execute(select(func.pg_advisory_xact_lock(key - 2**63)))
        wait = _retry_after_in(s, username, ip, now, db.settings)
        if wait:
            raise LoginThrottled(wait)
        attempt = LoginAttempt(username=username, ip=ip, at=now, success=False)
        s.add(attempt)
        s.flush()
        attempt_id = attempt.id
        user = s.scalar(select(User).where(User.username == username))
    # Argon2 runs outside any transaction so it never holds the SQLite write lock.
    ok = verify_password(password, user.password_hash if user else None)
    ok = ok and user is not None and not user.disabled
    if ok and user is not None:
        rehash = _password_hash.current_hasher.check_needs_rehash(user.password_hash)
        new_hash = hash_password(password) if rehash else None  # outside the transaction too
        with db.write() as s:
            s.execute(
                update(LoginAttempt).where(LoginAttempt.id == attempt_id).values(success=True)
            )
            if new_hash is not None:
                s.execute(update(User).where(User.id == user.id).values(password_hash=new_hash))
    return user if ok else None


# --------------------------------------------------------------------------- CSRF


def origin_allowed(headers: Mapping[str, str], public_origin: str) -> bool:
    """Fetch-metadata / Origin check for unsafe cookie requests (docs/security.md#csrf):
    ``Sec-Fetch-Site`` in {same-origin, none} when present, else ``Origin`` equal to the
    public origin when present; requests with neither (non-browser clients) pass here and are
    still held to the synchronizer token."""
    site = headers.get("sec-fetch-site")
    if site is not None:
        return site in ("same-origin", "none")
    origin = headers.get("origin")
    if origin is not None:
        return origin.rstrip("/") == public_origin.rstrip("/")
    return True
