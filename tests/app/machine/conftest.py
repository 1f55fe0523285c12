"""Fixtures shared by the machine's tests: a database of the module's backend and a
collection in it (what the LLM client's counters and cache hang off)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from app.kernel.db import Database
from app.kernel.models import Collection


@pytest.fixture(scope="module")
def db(database_url: str) -> Iterator[Database]:
    database = Database.from_url(database_url)
    yield database
    database.dispose()


@pytest.fixture(scope="module")
def collection_id(db: Database) -> int:
    with db.write() as s:
        row = Collection(name=f"machine-{uuid.uuid4().hex[:8]}")
        s.add(row)
        s.flush()
        return row.id
