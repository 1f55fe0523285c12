"""Helpers of the REST tests of every concept: NDJSON records of a query's documents, a
collection imported through the API, a task created through it, the body of a pair answer,
and an oracle's answer to a question."""

from __future__ import annotations

import json
from typing import Any

from tests.app.conftest import Api


def ndjson(records: list[dict[str, Any]]) -> bytes:
    return ("\n".join(json.dumps(r) for r in records) + "\n").encode()


def pool(qid: str, n: int, *, query: str | None = None, prefix: str = "d") -> list[dict[str, Any]]:
    return [
        {
            "query_id": qid,
            "query": query or f"query {qid}",
            "doc_id": f"{prefix}{i:03d}",
            "title": f"Document {prefix}{i}",
            "text": f"text of {prefix}{i}",
            "grade": i % 5,
        }
        for i in range(n)
    ]


def make_collection(api: Api, name: str, records: list[dict[str, Any]]) -> int:
    r = api.post("admin", "/api/v1/collections", json={"name": name, "description": "t"})
    assert r.status_code == 201, r.text
    cid = r.json()["id"]
    r = api.post(
        "admin",
        f"/api/v1/collections/{cid}/import",
        content=ndjson(records),
        headers={"Content-Type": "application/x-ndjson"},
    )
    assert r.status_code == 200, r.text
    return cid


def make_task(api: Api, cid: int, qid: str, who: str, method: str = "topk", **kw: Any) -> int:
    body = {"collection_id": cid, "query_id": qid, "assessor": who, "method": method, **kw}
    r = api.post("admin", "/api/v1/tasks", json=body)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def pair_body(q: dict[str, Any], outcome: str, active_ms: int = 50) -> dict[str, Any]:
    return {
        "seq": q["seq"],
        "left": q["pair"]["left"]["doc_id"],
        "right": q["pair"]["right"]["doc_id"],
        "outcome": outcome,
        "active_ms": active_ms,
    }


def oracle_outcome(q: dict[str, Any], rank: dict[str, int]) -> str:
    left, right = q["pair"]["left"]["doc_id"], q["pair"]["right"]["doc_id"]
    return "left" if rank[left] < rank[right] else "right"
