"""Helpers for the admin tests: a small collection and a simulated assessor over REST."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from app.kernel.models import Document, Query
from tests.app.conftest import Api


def ndjson(rows: list[dict[str, Any]]) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode()


def make_collection(
    api: Api,
    name: str,
    *,
    queries: int = 3,
    docs: int = 8,
    features: bool = True,
    prefix: str = "d",
) -> tuple[int, dict[str, dict[str, float]]]:
    """A collection with ``queries`` queries of ``docs`` documents each, through the REST
    import. Returns its id and a latent relevance score per (query, doc) for the oracle."""
    r = api.post("admin", "/api/v1/collections", json={"name": name})
    assert r.status_code == 201, r.text
    cid = r.json()["id"]
    rows = []
    scores: dict[str, dict[str, float]] = {}
    for q in range(1, queries + 1):
        qid = str(100 + q)
        scores[qid] = {}
        for d in range(docs):
            doc = f"{prefix}{d}"
            # A permutation per query (5 is coprime with every docs count the tests use).
            score = float((d * 5 + q * 3) % docs)
            scores[qid][doc] = score
            row: dict[str, Any] = {
                "query_id": qid,
                "query": f"query {qid}",
                "doc_id": doc,
                "title": f"title {doc}",
                "text": f"text of {doc}",
            }
            if features:
                row["features"] = [score / docs, float(d), float(q)]
            rows.append(row)
    import_rows(api, cid, rows)
    return cid, scores


def import_rows(api: Api, cid: int, rows: list[dict[str, Any]]) -> None:
    """Import NDJSON ``rows`` into collection ``cid`` over REST (must succeed)."""
    r = api.post(
        "admin",
        f"/api/v1/collections/{cid}/import",
        content=ndjson(rows),
        headers={"Content-Type": "application/x-ndjson"},
    )
    assert r.status_code == 200, r.text


def judge_task(api: Api, user: str, task_id: int, scores: dict[str, float]) -> dict[str, Any]:
    """Answer a task with a consistent oracle (higher score = more relevant) until done."""
    body = api.get(user, f"/api/v1/tasks/{task_id}/next").json()
    steps = 0
    while not body["done"]:
        if body.get("pair"):
            left = body["pair"]["left"]["doc_id"]
            right = body["pair"]["right"]["doc_id"]
            outcome = "left" if scores[left] > scores[right] else "right"
            payload = {"seq": body["seq"], "left": left, "right": right, "outcome": outcome}
        else:
            doc = body["document"]["doc_id"]
            payload = {"seq": body["seq"], "doc_id": doc, "grade": min(4, int(scores[doc]) // 2)}
        payload["active_ms"] = 1000
        r = api.post(user, f"/api/v1/tasks/{task_id}/judgments", json=payload)
        assert r.status_code == 200, r.text
        body = r.json()
        steps += 1
        assert steps < 10_000
    return body


def oracle_top(scores: dict[str, float], k: int) -> list[str]:
    return sorted(scores, key=lambda d: -scores[d])[:k]


def stored_vectors(api: Api, cid: int) -> dict[str, dict[str, list[float]]]:
    """The feature vectors stored on a collection's documents: query id → document id → vector."""
    with api.db.read() as s:
        rows = s.execute(
            select(Query.external_id, Document.external_id, Document.features)
            .join(Query, Query.id == Document.query_id)
            .where(Document.collection_id == cid)
        ).all()
    out: dict[str, dict[str, list[float]]] = {}
    for qid, doc, vector in rows:
        out.setdefault(qid, {})[doc] = vector
    return out


def judged_plans(
    api: Api,
    cid: int,
    scores: dict[str, dict[str, float]],
    plans: dict[str, list[tuple[str, str]]],
    *,
    k: int,
    name: str,
    view: Any,
) -> dict[tuple[str, str, str], int]:
    """One CSV plan per method (``plans``: method → (assessor, query id) rows), each task
    judged to the end by ``judge_task`` on ``view(user, scores[query])``; the task ids by
    (assessor, query id, method)."""
    for method, plan in plans.items():
        body = {
            "collection_id": cid,
            "assessors": sorted({a for a, _ in plan}),
            "scheme": "csv",
            "csv": "assessor,query_id,method\n" + "".join(f"{a},{q},{method}\n" for a, q in plan),
            "k": k,
            "name": f"{name}-{method}",
        }
        r = api.post("admin", "/api/v1/admin/plans", json=body)
        assert r.status_code == 201, r.text
    tasks = api.get("admin", f"/api/v1/admin/collections/{cid}/progress").json()["tasks"]
    by_key = {(t["assessor"], t["query_id"], t["method"]): t["id"] for t in tasks}
    for method, plan in plans.items():
        for user, qid in plan:
            judge_task(api, user, by_key[user, qid, method], view(user, scores[qid]))
    return by_key
