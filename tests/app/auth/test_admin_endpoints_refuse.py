"""Every admin endpoint refuses assessors (403) and anonymous callers (401)."""

from __future__ import annotations

import re

from tests.app.conftest import Api


def _admin_routes(api: Api) -> list[tuple[str, str]]:
    paths = api.client.app.openapi()["paths"]
    out = []
    for path, ops in paths.items():
        if path.startswith("/api/v1/admin/"):
            for method in ops:
                out.append((method.upper(), re.sub(r"\{[^}]+\}", "1", path)))
    return out


def test_admin_api_refuses_assessors(api: Api) -> None:
    api.add_user("snoop")
    routes = _admin_routes(api)
    # Every surface of the admin console is here (a new route cannot forget the guard).
    assert len(routes) >= 12
    for method, path in routes:
        r = api.client.request(method, path, headers=api.auth("snoop"), json={})
        assert r.status_code == 403, (method, path, r.status_code, r.text)
        anonymous = api.client.request(method, path, json={})
        assert anonymous.status_code == 401, (method, path, anonymous.status_code)


def test_disable_and_reset_password_revoke_access(api: Api) -> None:
    api.add_user("victim")
    assert api.get("victim", "/api/v1/users/me").status_code == 200
    r = api.post("admin", "/api/v1/admin/users/victim/disable")
    assert r.status_code == 200
    assert api.get("victim", "/api/v1/users/me").status_code == 401
    assert api.post("admin", "/api/v1/admin/users/victim/enable").status_code == 200
    # The old token died with the disable; log in again, then a password reset revokes it.
    token = api.client.post(
        "/api/v1/auth/token", data={"username": "victim", "password": "pw-victim-secret"}
    ).json()["access_token"]
    api.tokens["victim"] = token
    assert api.get("victim", "/api/v1/users/me").status_code == 200
    r = api.post("admin", "/api/v1/admin/users/victim/password", json={"password": "new-secret-1"})
    assert r.status_code == 200
    assert api.get("victim", "/api/v1/users/me").status_code == 401
    ok = api.client.post(
        "/api/v1/auth/token", data={"username": "victim", "password": "new-secret-1"}
    )
    assert ok.status_code == 200
    short = api.post("admin", "/api/v1/admin/users/victim/password", json={"password": "x"})
    assert short.status_code == 422


def test_rename_and_archive_collection(api: Api) -> None:
    r = api.post("admin", "/api/v1/collections", json={"name": "to-rename"})
    cid = r.json()["id"]
    r = api.client.patch(
        f"/api/v1/admin/collections/{cid}",
        headers=api.auth("admin"),
        json={"name": "renamed", "archived": True},
    )
    assert r.status_code == 200 and r.json()["archived"] is True
    got = api.get("admin", f"/api/v1/collections/{cid}").json()
    assert (got["name"], got["archived"]) == ("renamed", True)
    api.post("admin", "/api/v1/collections", json={"name": "taken"})
    clash = api.client.patch(
        f"/api/v1/admin/collections/{cid}", headers=api.auth("admin"), json={"name": "taken"}
    )
    assert clash.status_code == 409
