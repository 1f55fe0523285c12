"""Identifiers in Unicode NFC through real HTTP requests (docs/security.md#text-hygiene): the
two spellings of ``é`` are one document, an id cannot start with a combining mark, and a
judgment may name a shown document in either spelling. SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from tests.app.conftest import Api
from tests.app.judging.support import make_task, ndjson

NFC = "caf\u00e9"  # é as one code point
NFD = "cafe\u0301"  # e + COMBINING ACUTE ACCENT


@pytest.fixture(scope="module")
def assessor(api: Api) -> str:
    api.add_user("nfc")
    return "nfc"


def _collection(api: Api, name: str) -> int:
    r = api.post("admin", "/api/v1/collections", json={"name": name})
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def test_ndjson_both_spellings_under_one_query_are_one_document(api: Api) -> None:
    cid = _collection(api, "nfc import")
    row = {"query_id": "n1", "query": "coffee", "title": "Café", "text": "a café"}
    rows = [{**row, "doc_id": NFC}, {**row, "doc_id": NFD}, {**row, "doc_id": "other"}]
    r = api.post("admin", f"/api/v1/collections/{cid}/import", content=ndjson(rows))
    assert r.status_code == 200, r.text
    queries = api.get("admin", f"/api/v1/collections/{cid}/queries").json()
    assert [(q["query_id"], q["documents"]) for q in queries] == [("n1", 2)]
    # A different content under the other spelling is a conflicting duplicate, with its line.
    clash = [{**row, "doc_id": NFC}, {**row, "doc_id": NFD, "text": "another text"}]
    r = api.post("admin", f"/api/v1/collections/{cid}/import", content=ndjson(clash))
    assert r.status_code == 422, r.text
    assert [item["line"] for item in r.json()["detail"]] == [2, 2]


def test_ndjson_id_starting_with_a_combining_mark_is_refused_with_its_line(api: Api) -> None:
    cid = _collection(api, "nfc refused")
    rows = [
        {"query_id": "m1", "query": "q", "doc_id": "fine"},
        {"query_id": "m1", "query": "q", "doc_id": "\u0301"},
        {"query_id": "\u0301x", "query": "q", "doc_id": "fine"},
    ]
    r = api.post("admin", f"/api/v1/collections/{cid}/import", content=ndjson(rows))
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert [item["line"] for item in detail] == [2, 3]
    assert detail[0]["msg"].startswith("doc_id starts with the combining mark U+0301")
    assert detail[1]["msg"].startswith("query_id starts with the combining mark U+0301")
    assert all("\u0301" not in item["msg"] for item in detail)
    assert api.get("admin", f"/api/v1/collections/{cid}/queries").json() == []


def _judge_all(api: Api, tid: int, spell: dict[str, str]) -> set[str]:
    """Answer every question of ``tid``, naming each shown document as ``spell`` says."""
    shown: set[str] = set()
    for _ in range(20):
        q: dict[str, Any] = api.get("nfc", f"/api/v1/tasks/{tid}/next").json()
        if q["done"]:
            return shown
        left, right = q["pair"]["left"]["doc_id"], q["pair"]["right"]["doc_id"]
        shown |= {left, right}
        body = {"seq": q["seq"], "left": spell.get(left, left), "right": spell.get(right, right)}
        r = api.post("nfc", f"/api/v1/tasks/{tid}/judgments", json={**body, "outcome": "left"})
        assert r.status_code == 200, r.text
    raise AssertionError("the task did not finish")


def test_a_judgment_may_name_a_shown_document_in_its_nfd_spelling(api: Api, assessor: str) -> None:
    cid = _collection(api, "nfc judging")
    rows = [{"query_id": "j1", "query": "q", "doc_id": d} for d in (NFC, "x1", "x2")]
    assert api.post("admin", f"/api/v1/collections/{cid}/import", content=ndjson(rows))
    tid = make_task(api, cid, "j1", assessor, k=1)
    assert NFC in _judge_all(api, tid, {NFC: NFD})
    answers = api.get("nfc", f"/api/v1/tasks/{tid}/answers").json()
    stored = {a[side]["doc_id"] for a in answers for side in ("left", "right")}
    assert NFC in stored and NFD not in stored


def test_identifiers_stored_decomposed_before_the_rule_stay_judgeable(
    api: Api, assessor: str
) -> None:
    """No migration: an id stored in NFD keeps that spelling, and either spelling judges it."""
    from sqlalchemy import update

    from app.kernel.models import Document

    cid = _collection(api, "nfc legacy")
    rows = [{"query_id": "l1", "query": "q", "doc_id": d} for d in (NFC, "y1", "y2")]
    assert api.post("admin", f"/api/v1/collections/{cid}/import", content=ndjson(rows))
    with api.db.write() as s:
        s.execute(
            update(Document)
            .where(Document.collection_id == cid, Document.external_id == NFC)
            .values(external_id=NFD)
        )
    tid = make_task(api, cid, "l1", assessor, k=1)
    assert NFD in _judge_all(api, tid, {NFD: NFC})


def test_a_task_may_name_its_query_in_the_nfd_spelling(api: Api, assessor: str) -> None:
    cid = _collection(api, "nfc tasks")
    rows = [{"query_id": NFD, "query": "q", "doc_id": d} for d in ("t1", "t2")]
    assert api.post("admin", f"/api/v1/collections/{cid}/import", content=ndjson(rows))
    queries = api.get("admin", f"/api/v1/collections/{cid}/queries").json()
    assert [q["query_id"] for q in queries] == [NFC]
    tid = make_task(api, cid, NFD, assessor, k=1)
    assert api.get("admin", f"/api/v1/tasks/{tid}").json()["query_id"] == NFC
