"""People against the machine: the analysis's κ is Cohen's κ (scikit-learn's
``cohen_kappa_score``, the oracle) over the pairs an independent reader rebuilds from the
``pairs-jsonl`` export, labelled ``left``/``right`` as the pair was shown
(docs/analysis.md#people-against-the-machine).

The collection's BM25 order is the truth (tests/app/machine_support.py), so the ``bm25``
machine's opinion of a pair is known without the service: the document with more of the
query's term. People answer by the truth but flip a seeded share of their answers, so the
agreement is not 1 and κ is informative."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from sklearn.metrics import cohen_kappa_score

from tests.app.conftest import Api
from tests.app.machine_support import machine_collection, machine_task

N, K, QUERIES = 16, 4, 12  # enough queries for the machine to earn answers per stratum
#: How often each person flips an answer: rarely in the machine's tasks (so that its study
#: calibration trusts it and it answers pairs), often in the others.
FLIP = {"kai": 0.1, "lea": 0.3, "max": 0.3}


def noisy_person(api: Api, who: str, task_id: int, truth: dict[str, int], rng: Any) -> None:
    body = api.get(who, f"/api/v1/tasks/{task_id}/next").json()
    for _ in range(1000):
        if body["done"]:
            return
        left, right = body["pair"]["left"]["doc_id"], body["pair"]["right"]["doc_id"]
        right_answer = truth[left] > truth[right]
        says_left = right_answer if rng.random() >= FLIP[who] else not right_answer
        answer = {"seq": body["seq"], "left": left, "right": right}
        answer["outcome"] = "left" if says_left else "right"
        r = api.post(who, f"/api/v1/tasks/{task_id}/judgments", json=answer)
        assert r.status_code == 200, r.text
        body = r.json()
    raise AssertionError("the task did not finish")


@pytest.fixture(scope="module")
def study(api: Api) -> tuple[int, dict[str, dict[str, int]]]:
    api.add_user("kai")
    api.add_user("lea")
    api.add_user("max")
    cid, truth = machine_collection(api, "kappa", queries=QUERIES, docs=N, seed=5)
    rng = random.Random(7)
    for q in truth:
        noisy_person(api, "kai", machine_task(api, cid, q, "kai", K), truth[q], rng)
        for who in ("lea", "max"):
            noisy_person(api, who, machine_task(api, cid, q, who, K, None), truth[q], rng)
    return cid, truth


def exported(api: Api, cid: int) -> list[dict[str, Any]]:
    r = api.get("admin", f"/api/v1/collections/{cid}/export", params={"format": "pairs-jsonl"})
    assert r.status_code == 200, r.text
    return [json.loads(x) for x in r.text.splitlines()]


def block(api: Api, cid: int) -> dict[str, Any]:
    report = api.get("admin", f"/api/v1/collections/{cid}/analysis").json()
    (only,) = report["machine_agreement"]
    return dict(only)


def test_opinion_kappa_is_cohen_s_over_the_exported_pairs(
    api: Api, study: tuple[int, dict[str, dict[str, int]]]
) -> None:
    cid, truth = study
    rows = exported(api, cid)
    tasks = api.get("admin", "/api/v1/tasks", params={"collection_id": cid}).json()
    machine_tasks = {t["id"] for t in tasks if t["options"].get("machine")}
    people, machine = [], []
    for x in rows:
        if x["source"] != "person" or x["task_id"] not in machine_tasks:
            continue
        if x["outcome"] not in ("left", "right"):
            continue
        t = truth[x["query_id"]]
        people.append(x["outcome"])
        machine.append("left" if t[x["left"]] > t[x["right"]] else "right")
    got = block(api, cid)["opinion_vs_people"]
    assert got["no_opinion"] == 0
    assert got["pairs"] == len(people) > 20
    assert got["agree"] == sum(a == b for a, b in zip(people, machine, strict=True))
    assert 0 < got["agreement"] < 1
    assert got["kappa"] == pytest.approx(cohen_kappa_score(machine, people), abs=1e-12)


def test_answer_kappa_is_cohen_s_over_the_exported_pairs(
    api: Api, study: tuple[int, dict[str, dict[str, int]]]
) -> None:
    cid, _ = study
    rows = exported(api, cid)
    machine_rows = [
        x for x in rows if x["source"] == "machine" and x["outcome"] in ("left", "right")
    ]
    people_rows = [x for x in rows if x["source"] == "person" and x["outcome"] in ("left", "right")]
    said, heard = [], []
    for m in machine_rows:
        pair = {m["left"], m["right"]}
        for p in people_rows:
            if p["task_id"] == m["task_id"] or p["query_id"] != m["query_id"]:
                continue
            if {p["left"], p["right"]} != pair:
                continue
            # Both labelled as the machine's pair was shown: did its left document win?
            winner = p["left"] if p["outcome"] == "left" else p["right"]
            said.append(m["outcome"])
            heard.append("left" if winner == m["left"] else "right")
    got = block(api, cid)["answers_vs_people"]
    assert got["pairs"] == len(said) > 5
    assert got["agree"] == sum(a == b for a, b in zip(said, heard, strict=True))
    assert got["kappa"] == pytest.approx(cohen_kappa_score(said, heard), abs=1e-12)
