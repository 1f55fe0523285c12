"""Accounts: the password policy, the last active admin and login throttling, on every path
(REST, web pages, CLI) and on SQLite and PostgreSQL (docs/security.md)."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from app.auth import passwords, sessions, throttling
from app.cli import cli
from app.kernel.errors import Conflict, Invalid
from app.kernel.models import utcnow
from app.users import service as users
from tests.app.conftest import Api

# --------------------------------------------------------------------------- password policy


def _flash(response: Any) -> str:
    """The one-time message a web form post left in its flash cookie."""
    import base64
    import json

    from app.web.templates import FLASH_COOKIE

    value = response.cookies[FLASH_COOKIE].strip('"')
    return json.loads(base64.urlsafe_b64decode(value.split(".")[0]))["m"]


def _web_admin(api: Api) -> tuple[dict[str, str], str]:
    admin = users.get_user(db=api.db, username="admin")
    cookie, csrf = sessions.create_web_session(api.db, admin)
    return {"Cookie": f"{sessions.SESSION_COOKIE}={cookie}", "Sec-Fetch-Site": "same-origin"}, csrf


WEAK = [
    ("password", "too short"),
    ("12345678", "too short"),
    (" " * 8, "too short"),
    (" " * 12, "too easy to guess"),
    ("passwordpassword", "too easy to guess"),
    ("123456789012", "too easy to guess"),
    ("qwertyuiopasdf", "too easy to guess"),
    ("1qaz2wsx3edc", "one of the most common passwords"),
    ("Password1234", "one of the most common passwords"),
]


@pytest.mark.parametrize(("password", "why"), WEAK)
def test_rest_refuses_weak_new_passwords(api: Api, password: str, why: str) -> None:
    body = {"username": "weakling", "password": password, "role": "assessor"}
    r = api.post("admin", "/api/v1/users", json=body)
    assert r.status_code == 422 and why in r.json()["detail"], r.text
    assert "weakling" not in {u["username"] for u in api.get("admin", "/api/v1/users").json()}


def test_password_may_not_be_the_username(api: Api) -> None:
    for name, password in [
        ("sameasname12", "sameasname12"),
        ("Camel.Case.Name", "camel.case.name"),
    ]:
        r = api.post("admin", "/api/v1/users", json={"username": name, "password": password})
        assert r.status_code == 422 and "must not be the username" in r.json()["detail"]
    r = api.post("admin", "/api/v1/users", json={"username": "mona", "password": "mona" * 4})
    assert r.status_code == 422 and "too easy to guess" in r.json()["detail"]


def test_strong_passwords_pass_without_composition_rules(api: Api) -> None:
    """Length and unguessability, no 'one digit, one capital' rules: lower-case words pass."""
    for i, password in enumerate(["correct horse battery staple", "zwölf äpfel im korb"]):
        body = {"username": f"strong{i}", "password": password}
        assert api.post("admin", "/api/v1/users", json=body).status_code == 201
        r = api.client.post("/api/v1/auth/token", data=body)
        assert r.status_code == 200


def test_policy_applies_to_password_resets(api: Api) -> None:
    api.add_user("resetme")
    url = "/api/v1/admin/users/resetme/password"
    for password, why in [
        ("short", "too short"),
        ("resetme", "too short"),
        ("abcabcabcabc", "too easy"),
    ]:
        r = api.post("admin", url, json={"password": password})
        assert r.status_code == 422 and why in r.json()["detail"], r.text
    r = api.client.post(
        "/api/v1/auth/token", data={"username": "resetme", "password": "pw-resetme-secret"}
    )
    assert r.status_code == 200  # unchanged
    assert api.post("admin", url, json={"password": "a much better passphrase"}).status_code == 200


def test_policy_on_the_web_form_and_the_cli(api: Api, tmp_path: Path) -> None:
    headers, csrf = _web_admin(api)
    form = {"csrf_token": csrf, "username": "webweak", "password": "letmein123", "role": "assessor"}
    # A refused user comes back on the admin page with the reason, the name kept, and the
    # password field empty (a password is never echoed into a page).
    r = api.client.post("/admin/users", data=form, headers=headers, follow_redirects=False)
    assert r.status_code == 422 and "too short" in r.text
    assert 'value="webweak"' in r.text and "letmein123" not in r.text
    form["password"] = "iloveyou12345"
    r = api.client.post("/admin/users", data=form, headers=headers, follow_redirects=False)
    assert r.status_code == 422 and "too easy to guess" in r.text
    assert "webweak" not in {u.username for u in users.list_users(db=api.db)}
    r = api.client.post(
        "/admin/users/admin/password",
        data={"csrf_token": csrf, "password": "admin"},
        headers=headers,
        follow_redirects=False,
    )
    assert "too short" in _flash(r)

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    runner = CliRunner()
    weak = runner.invoke(
        cli, ["create-user", "clie", "--password-stdin", "--database-url", url], input="clie\n"
    )
    assert weak.exit_code == 1 and "too short" in weak.output
    ok = runner.invoke(
        cli,
        ["create-user", "clie", "--password-stdin", "--database-url", url],
        input="a fine cli passphrase\n",
    )
    assert ok.exit_code == 0, ok.output
    reset = runner.invoke(
        cli,
        ["admin", "reset-password", "clie", "--password-stdin", "--database-url", url],
        input="qwertyqwertyqwerty\n",
    )
    assert reset.exit_code == 1 and "too easy to guess" in reset.output


def test_demo_logins_bypass_the_policy_only_in_demo(tmp_path: Path) -> None:
    from app.demo import DEMO_LOGINS, ensure_demo
    from app.kernel.db import Database
    from app.kernel.models import Base

    db = Database.from_url(f"sqlite:///{tmp_path / 'demo.db'}")
    Base.metadata.create_all(db.engine)
    try:
        assert ensure_demo(db=db)
        for name, password, _role in DEMO_LOGINS:
            assert passwords.password_problem(password, username=name) is not None
            assert throttling.authenticate(db, name, password, ip="127.0.0.1") is not None
        with pytest.raises(Invalid, match="too short"):
            users.create_user(db=db, username="copycat", password="demo-admin")
    finally:
        db.dispose()


# --------------------------------------------------------------------------- the last admin


def _admins(api: Api) -> list[str]:
    return [u.username for u in users.list_users(db=api.db) if u.role == "admin" and not u.disabled]


def test_rest_admin_cannot_disable_itself(api: Api) -> None:
    r = api.post("admin", "/api/v1/admin/users/admin/disable")
    assert r.status_code == 409 and "your own account" in r.json()["detail"]
    assert "admin" in _admins(api)
    assert api.get("admin", "/api/v1/users/me").status_code == 200


def test_web_admin_cannot_disable_itself(api: Api) -> None:
    headers, csrf = _web_admin(api)
    r = api.client.post(
        "/admin/users/admin/disable",
        data={"csrf_token": csrf},
        headers=headers,
        follow_redirects=False,
    )
    assert r.status_code == 303 and "cannot disable" in _flash(r)
    assert "admin" in _admins(api)


def _only_active_admins(api: Api, names: list[str]) -> None:
    """Make exactly ``names`` the active admins (others forced off, as an operator could)."""
    for user in users.list_users(db=api.db):
        if user.role == "admin":
            off = user.username not in names
            users.set_disabled(db=api.db, username=user.username, disabled=off, force=True)


def _restore_admin(api: Api) -> None:
    """Re-enable "admin" and log in again (disabling revoked its token)."""
    users.set_disabled(db=api.db, username="admin", disabled=False)
    form = {"username": "admin", "password": "pw-admin-secret"}
    r = api.client.post("/api/v1/auth/token", data=form)
    assert r.status_code == 200, r.text
    api.tokens["admin"] = r.json()["access_token"]


def test_service_keeps_the_last_active_admin(api: Api) -> None:
    """Only the service can be asked to disable the last admin without being that admin (a
    second admin who is then disabled first, or an operator): it refuses unless forced."""
    api.add_user("second", role="admin")
    _only_active_admins(api, ["admin"])
    assert _admins(api) == ["admin"]
    with pytest.raises(Conflict, match="last active admin"):
        users.set_disabled(db=api.db, username="admin", disabled=True)
    with pytest.raises(Conflict, match="last active admin"):
        users.set_disabled(db=api.db, username="admin", disabled=True, actor="second")
    assert _admins(api) == ["admin"]
    users.set_disabled(db=api.db, username="second", disabled=False)  # re-enabling is fine
    assert sorted(_admins(api)) == ["admin", "second"]


def test_two_admins_disabling_each_other_at_once_leave_one(api: Api) -> None:
    """Each request alone is fine (the other admin is still active); together they would
    leave none. The guard locks the admins' rows, so exactly one succeeds."""
    for name in ("duel1", "duel2"):
        api.add_user(name, role="admin")
    _only_active_admins(api, ["duel1", "duel2"])
    assert sorted(_admins(api)) == ["duel1", "duel2"]

    def disable(pair: tuple[str, str]) -> str:
        actor, target = pair
        try:
            users.set_disabled(db=api.db, username=target, disabled=True, actor=actor)
        except Conflict:
            return "refused"
        return "done"

    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(disable, [("duel1", "duel2"), ("duel2", "duel1")]))
    assert sorted(outcomes) == ["done", "refused"]
    assert len(_admins(api)) == 1
    _restore_admin(api)


def test_cli_refuses_the_last_admin_unless_forced(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    runner = CliRunner()

    def run(*args: str, stdin: str | None = None) -> Any:
        return runner.invoke(cli, [*args, "--database-url", url], input=stdin)

    made = run("create-user", "boss", "--role", "admin", "--password-stdin", stdin="the boss key\n")
    assert made.exit_code == 0, made.output
    refused = run("admin", "disable", "boss")
    assert refused.exit_code == 1 and "last active admin" in refused.output
    assert run("admin", "disable", "boss", "--force").exit_code == 0
    assert run("admin", "disable", "boss", "--enable").exit_code == 0


# --------------------------------------------------------------------------- throttling


def _fail(api: Api, username: str, ip: str, now: Any) -> None:
    assert throttling.authenticate(api.db, username, "not the password", ip=ip, now=now) is None


def test_one_ip_cannot_spray_many_usernames(api: Api) -> None:
    """Per-ip limit across usernames: the first ``login_ip_max_failures`` failures pass
    (each username only once, far below the per-pair limit), then the ip is refused for any
    username, while another ip is unaffected and a user who logged in from the sprayed ip
    before still gets in."""
    settings = api.settings
    api.add_user("regular")  # logs in from 203.0.113.7 first: a familiar ip for this user
    assert throttling.authenticate(api.db, "regular", "pw-regular-secret", ip="203.0.113.7")
    now = utcnow()
    for i in range(settings.login_ip_max_failures):
        _fail(api, f"sprayed{i}", "203.0.113.7", now)
    with pytest.raises(throttling.LoginThrottled) as throttled:
        throttling.authenticate(api.db, "sprayed-next", "x", ip="203.0.113.7", now=now)
    assert 1 <= throttled.value.retry_after <= settings.login_window_seconds + 1
    _fail(api, "sprayed-next", "203.0.113.8", now)  # another ip: still checked (and wrong)
    user = throttling.authenticate(
        api.db, "regular", "pw-regular-secret", ip="203.0.113.7", now=now
    )
    assert user is not None and user.username == "regular"
    later = now + timedelta(seconds=settings.login_window_seconds + 1)
    _fail(api, "sprayed-next", "203.0.113.7", later)  # the window moved on


def test_per_user_delay_grows_and_never_locks_the_owner_out(api: Api) -> None:
    """Failures for one username from many ips: past the free allowance each attempt from an
    unfamiliar ip waits 1, 2, 4, ... seconds (capped) after the latest failure; the owner,
    from an ip they used before, is not delayed, and from a new ip gets in after the delay."""
    settings = api.settings
    api.add_user("target")
    assert throttling.authenticate(api.db, "target", "pw-target-secret", ip="192.0.2.1")
    now = utcnow()
    free = settings.login_user_free_failures
    for i in range(free):  # one failure per attacker ip: no per-pair or per-ip limit
        _fail(api, "target", f"198.51.100.{i}", now)
    waits = []
    for i in range(7):
        with pytest.raises(throttling.LoginThrottled) as throttled:
            throttling.authenticate(api.db, "target", "x", ip=f"198.51.100.{100 + i}", now=now)
        waits.append(throttled.value.retry_after)
        now += timedelta(seconds=throttled.value.retry_after)
        _fail(api, "target", f"198.51.100.{100 + i}", now)
    # The delay doubles per failure (+1 s of rounding up) and stops at the cap.
    assert waits == [min(2**k, settings.login_user_max_delay_seconds) + 1 for k in range(7)]
    # The owner from their familiar ip: no delay at all.
    assert throttling.authenticate(api.db, "target", "pw-target-secret", ip="192.0.2.1", now=now)
    # A success resets the count: the owner from a new ip is not delayed either.
    user = throttling.authenticate(api.db, "target", "pw-target-secret", ip="192.0.2.99", now=now)
    assert user is not None


def test_rest_and_web_logins_answer_429_with_retry_after(api: Api) -> None:
    """The throttle is visible on both login paths (the TestClient's ip is "testclient")."""
    for _ in range(api.settings.login_max_failures):
        r = api.client.post("/api/v1/auth/token", data={"username": "ghost", "password": "x"})
        assert r.status_code == 401
    r = api.client.post("/api/v1/auth/token", data={"username": "ghost", "password": "x"})
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    assert isinstance(r.json()["detail"], str)
    page = api.client.get("/login")
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert token is not None
    r = api.client.post(
        "/login",
        data={"username": "ghost", "password": "x", "csrf_token": token.group(1)},
        headers={"Sec-Fetch-Site": "same-origin"},
        follow_redirects=False,
    )
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
