"""A small study with a BM25 machine, over REST: a collection whose BM25 order is the truth
(every query's documents hold the query's term ``tf`` times, ``tf`` a seeded permutation, so
BM25 is monotone in ``tf`` and the ``bm25`` machine is right on every pair), top-k tasks with
``insertion+assist`` and the machine, and a consistent person answering by ``tf``."""

from __future__ import annotations

import random
import uuid
from typing import Any

from tests.app.admin_support import import_rows
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
    for start in range(0, len(rows), 200):  # within the test server's body limit
        import_rows(api, cid, rows[start : start + 200])
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
    max_loss: float | None = None,
) -> int:
    """A top-k task of ``STRATEGY`` with the ``machine`` (None: without one) and its
    ``max_loss`` (None: the default)."""
    options: dict[str, Any] = {"strategy": STRATEGY}
    if machine is not None:
        options["machine"] = {"source": machine}
        if max_loss is not None:
            options["machine"]["max_loss"] = max_loss
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


def text_collection(
    api: Api, name: str, queries: tuple[str, ...], docs: int, seed: int
) -> tuple[int, dict[str, dict[str, float]], dict[str, float]]:
    """A text collection for an LLM stand-in (tests/app/machine/llm_standin.py): every
    document's text is unique and has a utility, a seeded permutation of 0..docs-1 per query.
    Its id, the truth per query and document, and the stand-in's truth by document text (what
    prompts show)."""
    from labeling.retrieval.text import document_text

    r = api.post("admin", "/api/v1/collections", json={"name": name})
    assert r.status_code == 201, r.text
    cid = int(r.json()["id"])
    rng = random.Random(seed)
    rows, truth, by_text = [], {}, {}
    for qid in queries:
        truth[qid] = {}
        for i, u in enumerate(rng.sample(range(docs), docs)):
            doc = f"{qid}-d{i:02d}"
            title, body = f"title {doc}", f"passage {doc} about topic {qid} number {i}"
            truth[qid][doc] = float(u)
            by_text[document_text(title, body)] = float(u)
            rows.append(
                {"query_id": qid, "query": f"topic {qid}", "doc_id": doc, "title": title}
                | {"text": body}
            )
    for start in range(0, len(rows), 200):  # within the test server's body limit
        import_rows(api, cid, rows[start : start + 200])
    return cid, truth, by_text


def point_at_standin(mp: Any, api: Api, base_url: str, key: str, queue: str, **knobs: Any) -> None:
    """The service's settings pointing at a stand-in LLM server at ``base_url`` (a fresh model
    name, quick backoff, ``knobs`` on top), the API key ``key`` in the environment and the job
    queue in the SQLite file ``queue``; ``mp`` a pytest MonkeyPatch."""
    mp.setenv("HEAPJUDGE_LLM_API_KEY", key)
    settings = {
        # The queue is a setting like the others, read once (not from the environment).
        "queue_url": f"sqlite:///{queue}",
        "llm_base_url": base_url,
        "llm_model": f"standin-{uuid.uuid4().hex[:8]}",
        "llm_backoff_seconds": 0.01,
        "llm_concurrency": 2,
        **knobs,
    }
    for name, value in settings.items():
        mp.setattr(api.db.settings, name, value)


def training_run(
    api: Api, collection_id: int, status: str, model_json: dict[str, Any] | None
) -> int:
    """A ranknet training run stored as it is (``status``, its model), without training."""
    from app.kernel.models import TrainingRun, utcnow

    with api.db.write() as s:
        run = TrainingRun(
            collection_id=collection_id,
            model="ranknet",
            params={},
            status=status,
            model_json=model_json,
            options={},
            created_at=utcnow(),
        )
        s.add(run)
        s.flush()
        return int(run.id)
