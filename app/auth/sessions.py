"""Server-side web sessions and CSRF checks (docs/security.md).

- Web sessions are rows (revocable, unlike a signed cookie) with an idle expiry (measured from
  ``last_seen_at``, refreshed at most once a minute to keep writes rare) and an absolute expiry
  (``expires_at`` fixed at login). A new session is minted on every login (no fixation).
- CSRF for cookie-authenticated unsafe requests: ``Sec-Fetch-Site`` must be same-origin/none
  when present, else ``Origin`` must equal the public origin when present, and a per-session
  synchronizer token must match (compared with :func:`hmac.compare_digest`).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select, update

from app.auth.tokens import TOUCH_INTERVAL, hash_token, new_token
from app.kernel.db import Database
from app.kernel.models import ApiToken, User, WebSession, utcnow

SESSION_COOKIE = "heapjudge_session"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FORM_FIELD = "csrf_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


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
