"""Login: credentials checked with DB-backed throttling (docs/security.md).

Login throttling is DB-backed (``login_attempt``), so it holds across workers. Three limits
over the failures within ``login_window_seconds`` (:func:`_retry_after_in`): per
(username, ip), per ip across usernames (a password spray from one address), and per
username across ips, where each failure past a free allowance doubles a short delay instead
of locking the account, and a familiar ip (one the user logged in from lately) is exempt
from the last two, so nobody can keep a known user out by failing logins in their name.
An attempt is counted and recorded in one serialised transaction before its password is
checked, so concurrent guesses cannot slip past a limit.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from app.auth.passwords import hash_password, needs_rehash, verify_password
from app.kernel.db import Database
from app.kernel.models import LoginAttempt, User, utcnow
from labeling.identifiers import text_problem


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
        rehash = needs_rehash(user.password_hash)
        new_hash = hash_password(password) if rehash else None  # outside the transaction too
        with db.write() as s:
            s.execute(
                update(LoginAttempt).where(LoginAttempt.id == attempt_id).values(success=True)
            )
            if new_hash is not None:
                s.execute(update(User).where(User.id == user.id).values(password_hash=new_hash))
    return user if ok else None
