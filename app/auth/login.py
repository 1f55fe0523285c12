"""Use case: exchange a username and password for an API bearer token."""

from __future__ import annotations

from app.auth import throttling, tokens
from app.kernel.db import Database
from app.kernel.errors import TooManyRequests, Unauthorized


def issue_token(*, db: Database, username: str, password: str, ip: str = "") -> tuple[str, int]:
    """Authenticate (throttled, constant-cost) and mint a token: ``(raw_token, expires_in_s)``.

    One generic 401 for unknown user, wrong password or disabled account; 429 while throttled.
    """
    try:
        user = throttling.authenticate(db, username, password, ip=ip)
    except throttling.LoginThrottled as exc:
        raise TooManyRequests(str(exc), extra={"retry_after": exc.retry_after}) from exc
    if user is None:
        raise Unauthorized("incorrect username or password")
    days = db.settings.api_token_days
    raw = tokens.create_api_token(db, user.id, name="password-login", days=days)
    return raw, days * 86400
