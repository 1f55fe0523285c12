"""The ``llm`` machine judge end to end (docs/machine-judges.md#the-service): tasks created over
REST with ``insertion+assist`` and ``machine: {"source": "llm"}``, the opinion job
(``heapjudge.machine_opinions``) taken from the real huey queue (a SQLite file) and run in this
process after every person's answer, asking a stand-in OpenAI-compatible server on 127.0.0.1
(real uvicorn, tests/app/machine/llm_standin.py: no real model is reachable from the tests) through
:class:`app.machine.llm.LlmClient`; SQLite and Postgres.

The collection: every document's text is unique, and the stand-in's hidden truth gives each
text a utility (a seeded permutation); the person answers by the same truth, so the oracle
of every task is the truth's top k, and a stand-in without noise is always right.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from app.judging.jobs import (
    OPINIONS,
    OPINIONS_TASK,
    STALE_CLAIM_SECONDS,
    enqueue_opinions,
    flush_enqueues,
    opinions_claim,
    run_opinions_job,
)
from app.kernel.models import Judgment, PairOpinion, Task
from labeling.machine.llm_prompts import PAIRWISE_V2
from tests.app.conftest import Api
from tests.app.machine.llm_standin import StandInModel, StandInServer
from tests.app.machine.test_llm_client import every_text_in_the_database
from tests.app.machine_support import point_at_standin, text_collection

N, K = 24, 5
QUERIES = ("q1", "q2", "q3")
KEY = f"sk-wire-{uuid.uuid4().hex}"
STRATEGY = "insertion+assist"
#: The capped study's token budget: some twenty requests of the stand-in.
BUDGET = 1200


@pytest.fixture(scope="module")
def coll(api: Api) -> tuple[int, dict[str, dict[str, float]], dict[str, float]]:
    """The collection: its id, the truth per query and document, the stand-in's truth by
    document text (what the prompts show)."""
    api.add_user("ana")
    return text_collection(api, f"wired-{uuid.uuid4().hex[:6]}", QUERIES, N, seed=23)


@pytest.fixture(scope="module")
def server(
    api: Api,
    coll: tuple[int, dict[str, dict[str, float]], dict[str, float]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[StandInServer]:
    """The stand-in (checking the key), the service's settings pointing at it with quick
    retries, the key in the environment and the queue in a SQLite file."""
    with (
        pytest.MonkeyPatch.context() as mp,
        StandInServer(StandInModel(coll[2], seed=5), api_key=KEY) as standin,
    ):
        queue = tmp_path_factory.mktemp("q") / "q.db"
        point_at_standin(
            mp, api, standin.base_url, KEY, str(queue),
            llm_retries=3, llm_max_backoff_seconds=0.5, llm_timeout_seconds=10.0,
        )  # fmt: skip
        yield standin


def drain(api: Api) -> list[int]:
    """Run every waiting job of the queue in this process (as ``heapjudge worker`` would):
    the task ids of the opinion jobs run."""
    flush_enqueues()  # the judging loop enqueues on a background thread
    huey = OPINIONS.huey(api.db.settings)
    ran = []
    while (message := huey.dequeue()) is not None:
        assert message.name == OPINIONS_TASK
        ran.append(int(message.args[0]))
        run_opinions_job(api.db.settings, api.db, int(message.args[0]))
    return ran


def create(api: Api, cid: int, qid: str, plan: str) -> int:
    body = {
        "collection_id": cid,
        "query_id": qid,
        "assessor": "ana",
        "method": "topk",
        "k": K,
        "seed": 7,
        "plan": plan,
        # A generous stated loss: at (24, 5) each answer risks much, and the default (a fifth
        # of 0.01 per answer) lets a machine the first tasks calibrated answer few questions.
        "options": {"strategy": STRATEGY, "machine": {"source": "llm", "max_loss": 0.1}},
    }
    r = api.post("admin", "/api/v1/tasks", json=body)
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def judge(api: Api, task_id: int, truth: dict[str, float]) -> dict[str, Any]:
    """The consistent person answers the task until done, the queue drained after the
    creation and after every answer (at most one job per drain: one pending job per task).
    The person's answer count and the jobs run."""
    jobs = [drain(api)]
    body = api.get("ana", f"/api/v1/tasks/{task_id}/next").json()
    people = 0
    while not body["done"]:
        left, right = body["pair"]["left"]["doc_id"], body["pair"]["right"]["doc_id"]
        outcome = "left" if truth[left] > truth[right] else "right"
        payload = {"seq": body["seq"], "left": left, "right": right, "outcome": outcome}
        r = api.post("ana", f"/api/v1/tasks/{task_id}/judgments", json=payload)
        assert r.status_code == 200, r.text
        people += 1
        assert people < 200
        jobs.append(drain(api))
        body = r.json()
    assert all(ran in ([], [task_id]) for ran in jobs), jobs
    return {"people": people, "jobs": sum(len(ran) for ran in jobs)}


def live_log(api: Api, task_id: int) -> list[Judgment]:
    with api.db.read() as s:
        query = select(Judgment).where(Judgment.task_id == task_id, Judgment.undone.is_(False))
        return list(s.scalars(query.order_by(Judgment.seq)))


def opinions(api: Api, task_id: int) -> int:
    with api.db.read() as s:
        rows = s.scalars(select(PairOpinion.task_id).where(PairOpinion.task_id == task_id))
        return len(list(rows))


def top(truth: dict[str, float]) -> list[str]:
    return sorted(truth, key=lambda d: -truth[d])[:K]


def usage(api: Api, cid: int, plan: str) -> dict[str, Any]:
    r = api.get("admin", f"/api/v1/admin/collections/{cid}/machine/usage")
    assert r.status_code == 200, r.text
    (study,) = [u for u in r.json()["studies"] if u["plan"] == plan]
    return dict(study)


@pytest.fixture(scope="module")
def first(
    api: Api, coll: tuple[int, dict[str, dict[str, float]], dict[str, float]], server: Any
) -> dict[str, Any]:
    """The study's first task (query q1, plan ``wired-1``), judged to the end: its id, the
    person's answer count, the jobs run and the requests the stand-in received. Later tasks
    of the judge are calibrated by its people's answers."""
    before = server.requests
    task_id = create(api, coll[0], "q1", "wired-1")
    run = judge(api, task_id, coll[1]["q1"])
    return {"task_id": task_id, **run, "requests": server.requests - before}


def test_an_llm_task_gets_machine_answers_through_the_study(
    api: Api,
    coll: tuple[int, dict[str, dict[str, float]], dict[str, float]],
    first: dict[str, Any],
) -> None:
    cid, truth, _ = coll
    task_id, run = first["task_id"], first
    rows = live_log(api, task_id)
    machine = [j for j in rows if j.source == "machine"]
    version = f"llm/{api.db.settings.llm_model}/{PAIRWISE_V2.key}/{PAIRWISE_V2.hash}"
    assert machine and all(
        (j.machine_version or "").startswith(f"{version}+calibration/")
        and j.prompt_hash == PAIRWISE_V2.hash
        and (j.probability or 0) >= 0.5
        for j in machine
    )
    assert all(j.prompt_hash is None for j in rows if j.source == "person")
    assert run["people"] + len(machine) == len(rows)
    # Re-enqueued as the task went on (the first job looked ahead 8 of the person's questions).
    assert run["jobs"] > 1
    r = api.get("admin", f"/api/v1/tasks/{task_id}/result")
    assert r.status_code == 200 and r.json()["top"] == top(truth["q1"])
    spent = usage(api, cid, "wired-1")
    assert spent["requests"] == first["requests"] > 0
    assert spent["tokens"] > 0 and spent["failed"] == spent["refused"] == spent["malformed"] == 0
    assert spent["remaining"] == spent["budget"] - spent["tokens"]


def test_a_second_identical_study_sends_no_request(
    api: Api,
    coll: tuple[int, dict[str, dict[str, float]], dict[str, float]],
    server: Any,
    first: dict[str, Any],
) -> None:
    """The same query, seed and judge in another plan (another study, its own counters): the
    same pairs are asked (a right judge and a right person answer alike), all from the cache."""
    cid, truth, _ = coll
    before = server.requests
    task_id = create(api, cid, "q1", "wired-2")
    run = judge(api, task_id, truth["q1"])
    assert server.requests == before
    spent = usage(api, cid, "wired-2")
    assert spent["requests"] == spent["tokens"] == 0 and spent["cached"] > 0
    machine = [j for j in live_log(api, task_id) if j.source == "machine"]
    assert machine and run["jobs"] >= 1
    assert api.get("admin", f"/api/v1/tasks/{task_id}/result").json()["top"] == top(truth["q1"])


def test_the_budget_stops_the_machine_and_people_finish(
    api: Api,
    coll: tuple[int, dict[str, dict[str, float]], dict[str, float]],
    server: Any,
    first: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new study on a query not asked before (no cache), the judge calibrated by the first
    tasks (so it answers from the start), a budget of some twenty requests: the machine
    answers while the budget lasts, at most the pairs those requests opined on; then every
    prompt is refused and the person answers every other question; the task is done with
    the truth's top k."""
    cid, truth, _ = coll
    monkeypatch.setattr(api.db.settings, "llm_token_budget", BUDGET)
    before = server.requests
    task_id = create(api, cid, "q2", "wired-capped")
    run = judge(api, task_id, truth["q2"])
    spent = usage(api, cid, "wired-capped")
    sent = server.requests - before
    assert spent["requests"] == sent and spent["refused"] > 0
    # Each request costs the words of its prompt plus 1 (the stand-in's count), over 30 here:
    # the budget stops sending after a few, at most `llm_concurrency` past it.
    assert spent["tokens"] >= BUDGET and sent <= BUDGET // 30 + 1 + 2
    rows = live_log(api, task_id)
    machine = [j for j in rows if j.source == "machine"]
    assert 0 < len(machine) <= opinions(api, task_id) <= sent
    # Once the budget was spent, people answered everything: the last ten answers are theirs.
    assert run["people"] == len(rows) - len(machine)
    assert all(j.source == "person" for j in rows[-10:])
    assert api.get("admin", f"/api/v1/tasks/{task_id}/result").json()["top"] == top(truth["q2"])
    with api.db.read() as s:
        task = s.get(Task, task_id)
        assert task is not None and task.status == "done"


def test_429_and_500_are_retried_and_counted(
    api: Api,
    coll: tuple[int, dict[str, dict[str, float]], dict[str, float]],
    server: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The stand-in answers 429 twice and 500 twice before answering: every prompt is still
    answered (no failure), the usage counts the answered requests, and the four refused
    attempts are the difference between what the stand-in received and that count."""
    cid, truth, _ = coll
    monkeypatch.setattr(api.db.settings, "llm_model", f"retried-{uuid.uuid4().hex[:6]}")
    caplog.set_level(logging.INFO, logger="heapjudge.machine.llm")
    before = server.requests
    server.script("429", 2, 0)
    server.script("500", 2)
    task_id = create(api, cid, "q3", "wired-retried")
    judge(api, task_id, truth["q3"])
    spent = usage(api, cid, "wired-retried")
    assert spent["failed"] == 0 and spent["requests"] > 0
    assert server.requests - before == spent["requests"] + 4
    retried = [r.getMessage() for r in caplog.records if "; retry " in r.getMessage()]
    assert sum("HTTP 429" in m for m in retried) == 2 and sum("HTTP 500" in m for m in retried) == 2
    assert api.get("admin", f"/api/v1/tasks/{task_id}/result").json()["top"] == top(truth["q3"])


def test_the_usage_is_admin_only_and_on_the_progress_page(
    api: Api, coll: tuple[int, dict[str, dict[str, float]], dict[str, float]], first: Any
) -> None:
    from tests.app.web.support import login

    cid, _, _ = coll
    assert api.get("ana", f"/api/v1/admin/collections/{cid}/machine/usage").status_code == 403
    assert api.get("admin", "/api/v1/admin/collections/999999/machine/usage").status_code == 404
    spent = usage(api, cid, "wired-1")
    login(api.client, "admin", "pw-admin-secret")
    page = api.client.get(f"/admin/collections/{cid}/progress-fragment").text
    api.client.cookies.clear()
    assert 'data-testid="llm-usage"' in page and "wired-1" in page
    row = page.split("<td>wired-1</td>", 1)[1].split("</tr>", 1)[0]
    cells = [c.split("</td>", 1)[0] for c in row.split('<td class="num">')[1:]]
    names = (
        "requests",
        "cached",
        "tokens",
        "malformed",
        "failed",
        "refused",
        "remaining",
        "timeouts",
    )
    assert cells == [str(spent[n]) for n in names]


def test_the_api_key_appears_nowhere(
    api: Api,
    coll: tuple[int, dict[str, dict[str, float]], dict[str, float]],
    server: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A task judged with the machine (a fresh model: real requests, one retried) while the
    log is at DEBUG: the stand-in received the key on every request, and it is in no table,
    no log line, no page (the task page, the admin pages), no export and no API answer."""
    from tests.app.web.support import login

    cid, truth, _ = coll
    monkeypatch.setattr(api.db.settings, "llm_model", f"keyed-{uuid.uuid4().hex[:6]}")
    caplog.set_level(logging.DEBUG)
    # Two earlier queries give the machine's bound its evidence (from a cold start it earns
    # its answers from people's: docs/machine-judges.md#the-rule).
    for qid in ("q1", "q3"):
        judge(api, create(api, cid, qid, "wired-keyed"), truth[qid])
    seen = len(server.authorizations)
    server.script("500", 1)
    task_id = create(api, cid, "q2", "wired-keyed")
    judge(api, task_id, truth["q2"])
    assert len(server.authorizations) > seen
    assert set(server.authorizations[seen:]) == {f"Bearer {KEY}"}
    assert any(j.source == "machine" for j in live_log(api, task_id))
    assert caplog.records and KEY not in caplog.text
    assert KEY not in every_text_in_the_database(api.db)
    shown = [
        api.get("admin", f"/api/v1/collections/{cid}/export?format={f}").text
        for f in ("qrels", "topk-jsonl", "pairs-jsonl", "pairs-csv")
    ]
    shown += [
        api.get("admin", f"/api/v1/admin/collections/{cid}/machine/usage").text,
        api.get("admin", f"/api/v1/admin/collections/{cid}/progress").text,
        api.get("admin", f"/api/v1/tasks/{task_id}/result").text,
        api.get("admin", "/openapi.json").text,
    ]
    login(api.client, "ana", "pw-ana-secret")
    shown.append(api.client.get(f"/tasks/{task_id}").text)
    api.client.cookies.clear()
    login(api.client, "admin", "pw-admin-secret")
    for page in (
        "/admin",
        f"/admin/collections/{cid}",
        f"/admin/collections/{cid}/progress-fragment",
    ):
        r = api.client.get(page)
        assert r.status_code == 200, page
        shown.append(r.text)
    api.client.cookies.clear()
    assert all(KEY not in text for text in shown)


def test_at_most_one_pending_opinions_job_per_task(
    api: Api, coll: tuple[int, dict[str, dict[str, float]], dict[str, float]], server: Any
) -> None:
    """Asking again while a task's job waits enqueues nothing; the job takes its claim back
    when it starts, so the next ask enqueues again; a claim older than the stale limit (its
    message lost) is replaced."""
    settings = api.db.settings
    huey = OPINIONS.huey(settings)
    drain(api)
    task_id = create(api, coll[0], "q3", "wired-claims")  # the creation enqueues one job
    assert enqueue_opinions(settings, task_id) is False
    assert enqueue_opinions(settings, task_id) is False
    assert [m.args for m in huey.pending()] == [(task_id,)]
    assert drain(api) == [task_id]
    assert enqueue_opinions(settings, task_id) is True
    assert enqueue_opinions(settings, task_id) is False
    huey.get(opinions_claim(task_id))  # the message stays, the claim is old:
    huey.put_if_empty(opinions_claim(task_id), time.time() - STALE_CLAIM_SECONDS - 1)
    assert enqueue_opinions(settings, task_id) is True
    assert drain(api) == [task_id, task_id]
