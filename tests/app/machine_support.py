"""A small study with a BM25 machine, over REST: a collection whose BM25 order is the truth
(every query's documents hold the query's term ``tf`` times, ``tf`` a seeded permutation, so
BM25 is monotone in ``tf`` and the ``bm25`` machine is right on every pair), top-k tasks with
``insertion+assist`` and the machine, and a consistent person answering by ``tf``."""

from __future__ import annotations

import random
from typing import Any

from tests.app.admin_support import ndjson
from tests.app.conftest import Api

STRATEGY = "insertion+assist"


def machine_collection(
    api: Api,
    name: str,
    *,
    queries: int,
    docs: int,
    seed: int = 3,
    word: str = "apple",
    features: bool = False,
) -> tuple[int, dict[str, dict[str, int]]]:
    """The collection's id and the truth (``tf``) per query and document; query q's term is
    ``<word><q>``; ``features``: each document also carries the vector ``[tf / docs, i % 3]``
    (a model trained on it can learn the truth)."""
    r = api.post("admin", "/api/v1/collections", json={"name": name})
    assert r.status_code == 201, r.text
    cid = int(r.json()["id"])
    rng = random.Random(seed)
    rows, truth = [], {}
    for q in range(queries):
        qid = f"q{q}"
        tfs = list(range(docs))
        rng.shuffle(tfs)
        truth[qid] = {}
        for i, tf in enumerate(tfs):
            doc = f"{qid}-d{i:02d}"
            truth[qid][doc] = tf
            words = [f"{word}{q}"] * tf + ["filler"] * (docs - tf)
            row: dict[str, Any] = {
                "query_id": qid,
                "query": f"{word}{q}",
                "doc_id": doc,
                "title": f"title {i}",
                "text": " ".join(words),
            }
            if features:
                row["features"] = [tf / docs, float(i % 3)]
            rows.append(row)
    r = api.post(
        "admin",
        f"/api/v1/collections/{cid}/import",
        content=ndjson(rows),
        headers={"Content-Type": "application/x-ndjson"},
    )
    assert r.status_code == 200, r.text
    return cid, truth


def machine_task(
    api: Api,
    cid: int,
    qid: str,
    assessor: str,
    k: int,
    machine: str | None = "bm25",
    *,
    seed: int = 11,
) -> int:
    """A top-k task of ``STRATEGY`` with the ``machine`` (None: without one)."""
    options: dict[str, Any] = {"strategy": STRATEGY}
    if machine is not None:
        options["machine"] = {"source": machine}
    body = {
        "collection_id": cid,
        "query_id": qid,
        "assessor": assessor,
        "method": "topk",
        "k": k,
        "seed": seed,
        "options": options,
    }
    r = api.post("admin", "/api/v1/tasks", json=body)
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def judge_consistently(api: Api, assessor: str, task_id: int, truth: dict[str, int]) -> int:
    """Answer the task by ``truth`` (more is better) until done; the person's answers."""
    body = api.get(assessor, f"/api/v1/tasks/{task_id}/next").json()
    count = 0
    while not body["done"]:
        left, right = body["pair"]["left"]["doc_id"], body["pair"]["right"]["doc_id"]
        outcome = "left" if truth[left] > truth[right] else "right"
        answer = {"seq": body["seq"], "left": left, "right": right, "outcome": outcome}
        r = api.post(assessor, f"/api/v1/tasks/{task_id}/judgments", json=answer)
        assert r.status_code == 200, r.text
        body = r.json()
        count += 1
        assert count < 1000
    return count
