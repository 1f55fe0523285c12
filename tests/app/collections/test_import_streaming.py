"""The NDJSON import in bounded batches (docs/performance.md#imports): batches of three lines
here, so every rule crosses batch boundaries. A conflict with a stored document in a late
batch rolls back the batches already inserted; identical duplicate lines in different
batches are inserted once; a source that can be read only once (a generator of lines) is
copied to disk by the first pass and read again from there."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, select

from app.collections import ndjson as ndjson_module
from app.collections import service as collections
from app.kernel.errors import Invalid
from app.kernel.models import Document, Query
from tests.app.conftest import Api
from tests.app.judging.support import ndjson, pool


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ndjson_module, "BATCH_LINES", 3)


def _new(api: Api, name: str) -> int:
    return collections.create_collection(db=api.db, name=name).id


def _counts(api: Api, cid: int) -> tuple[int, int]:
    with api.db.read() as s:
        docs = s.scalar(select(func.count()).where(Document.collection_id == cid))
        queries = s.scalar(select(func.count()).where(Query.collection_id == cid))
    return int(docs or 0), int(queries or 0)


def test_a_late_conflict_with_a_stored_document_stores_nothing(api: Api) -> None:
    cid = _new(api, "stream-conflict")
    collections.import_ndjson(db=api.db, collection_id=cid, data=ndjson(pool("q1", 2)))
    assert _counts(api, cid) == (2, 1)
    later = [*pool("q2", 9, prefix="e"), {**pool("q1", 2)[1], "text": "changed"}]  # line 10
    with pytest.raises(Invalid) as info:
        collections.import_ndjson(db=api.db, collection_id=cid, data=ndjson(later))
    # the pair's content and the document's text both disagree with what is stored
    assert [item["line"] for item in info.value.detail] == [10, 10]
    assert "already exists with different content" in info.value.detail[0]["msg"]
    assert _counts(api, cid) == (2, 1)  # the three batches of q2 before it: rolled back


def test_duplicates_across_batches_are_stored_once(api: Api) -> None:
    cid = _new(api, "stream-duplicates")
    rows = pool("q1", 4)
    rows = rows + rows[:2] + pool("q2", 2, prefix="e") + rows[3:]  # repeats in later batches
    report = collections.import_ndjson(db=api.db, collection_id=cid, data=ndjson(rows))
    assert (report.lines, report.documents_created, report.documents_unchanged) == (9, 6, 0)
    assert report.queries_created == 2
    again = collections.import_ndjson(db=api.db, collection_id=cid, data=ndjson(rows))
    assert (again.documents_created, again.documents_unchanged, again.queries_created) == (
        0,
        9,
        0,
    )
    assert _counts(api, cid) == (6, 2)


def test_file_errors_in_any_batch_are_all_reported(api: Api) -> None:
    cid = _new(api, "stream-errors")
    rows: list[Any] = pool("q1", 7)
    rows[1] = {**rows[1], "grade": 9}
    rows[5] = {**rows[5], "query": "another title"}
    data = ndjson(rows) + b"{not json\n"
    with pytest.raises(Invalid) as info:
        collections.import_ndjson(db=api.db, collection_id=cid, data=data)
    assert [item["line"] for item in info.value.detail] == [2, 6, 8]
    assert _counts(api, cid) == (0, 0)


def test_a_generator_source_is_read_twice_from_a_copy(api: Api) -> None:
    cid = _new(api, "stream-generator")
    consumed = []

    def lines() -> Iterator[bytes]:
        consumed.append(True)
        yield from io.BytesIO(ndjson(pool("q1", 5)))

    report = collections.import_ndjson(db=api.db, collection_id=cid, data=lines())
    assert report.documents_created == 5 and consumed == [True]
    with api.db.read() as s:
        texts = sorted(s.scalars(select(Document.text).where(Document.collection_id == cid)))
    assert texts == [f"text of d{i}" for i in range(5)]
