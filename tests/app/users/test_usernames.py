"""Usernames: unique whatever their case, stored in NFC, and the migration that adds the rule
to a database (docs/security.md#usernames), on SQLite and Postgres."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.util import CommandError
from sqlalchemy import text

from app.kernel.db import make_engine
from app.kernel.errors import Conflict, Invalid
from app.users import service as users
from tests.app.conftest import BACKENDS, Api, fresh_database


def test_bob_and_BOB_cannot_both_exist(api: Api) -> None:
    users.create_user(db=api.db, username="bob", password="bob's long passphrase")
    with pytest.raises(Conflict, match="whatever their case"):
        users.create_user(db=api.db, username="BOB", password="BOB's long passphrase")
    r = api.post(
        "admin", "/api/v1/users", json={"username": "Bob", "password": "another passphrase 9"}
    )
    assert r.status_code == 409, r.text
    # The account keeps its spelling; the other spellings find nothing.
    assert users.get_user(db=api.db, username="bob").username == "bob"
    form = {"username": "bob", "password": "bob's long passphrase"}
    assert api.client.post("/api/v1/auth/token", data=form).status_code == 200
    form["username"] = "BOB"
    assert api.client.post("/api/v1/auth/token", data=form).status_code == 401


def test_usernames_are_normalised_to_nfc_before_the_rule(api: Api) -> None:
    # "é" decomposed is still not an ASCII username: refused like the composed one.
    for name in ("jose\u0301", "jos\u00e9"):
        with pytest.raises(Invalid, match="invalid username"):
            users.create_user(db=api.db, username=name, password="long enough passphrase")


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_migration_names_every_clash_and_changes_nothing(backend: str, tmp_path: Path) -> None:
    import migrations

    with fresh_database(backend, tmp_path) as url:
        migrations.upgrade(url, "0019_second_opinions")
        engine = make_engine(url, pool_size=1, max_overflow=0)
        try:
            with engine.begin() as conn:
                for name in ("bob", "BOB", "ann", "Ann", "aNN", "carl"):
                    conn.execute(
                        text(
                            'INSERT INTO "user" (username, password_hash, role, disabled, '
                            "created_at) VALUES (:n, 'x', 'assessor', false, CURRENT_TIMESTAMP)"
                        ),
                        {"n": name},
                    )
            with pytest.raises(CommandError) as caught:
                migrations.upgrade(url)
            message = str(caught.value)
            assert "'Ann' and 'aNN' and 'ann'; 'BOB' and 'bob'" in message
            assert "carl" not in message
            assert migrations.current(url) == "0019_second_opinions"
            with engine.begin() as conn:
                conn.execute(text("UPDATE \"user\" SET username = 'bob-2' WHERE username = 'BOB'"))
                conn.execute(text("DELETE FROM \"user\" WHERE username IN ('Ann', 'aNN')"))
            migrations.upgrade(url, "0020_username_case")
            assert migrations.current(url) == "0020_username_case"
            with pytest.raises(Exception, match=r"(?i)unique|duplicate"), engine.begin() as conn:
                conn.execute(
                    text(
                        'INSERT INTO "user" (username, password_hash, role, disabled, '
                        "created_at) VALUES ('CARL', 'x', 'assessor', false, CURRENT_TIMESTAMP)"
                    )
                )
            migrations.downgrade(url, "0019_second_opinions")
            migrations.upgrade(url)
        finally:
            engine.dispose()
