"""The LLM judge's client (app.machine.llm) against a stand-in OpenAI-compatible server on
127.0.0.1 (tests/app/machine/llm_standin.py; no real model is reachable from the tests), over a real
SQLite file and a real Postgres: retries with backoff, timeouts and malformed replies as no
opinion, the token budget, the response cache, the API key kept out of everything, position
bias cancelled by asking both orders, and the same top-k as the simulation for the same
answers."""

from __future__ import annotations

import logging
import math
import random
import uuid
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import numpy as np
import pytest
from sqlalchemy import inspect, text

from app.kernel.db import Database
from app.kernel.settings import Settings
from app.machine.llm import LlmClient, retry_wait
from app.machine.repository import Study
from labeling.machine.judges import JudgeQuery, LlmJudge
from labeling.machine.llm_prompts import PAIRWISE_V1, parse_pairwise
from labeling.machine.opinion import JudgeOpinion
from labeling.strategies.registry import resolve_strategy
from labeling.study.simulation import Assessor, drive
from tests.app.machine.llm_standin import StandInModel, StandInServer, tokens

N_DOCS = 60
DOC_IDS = [f"d{i:03d}" for i in range(N_DOCS)]
#: Each document's text (what the prompts show) and its hidden utility (by text).
TEXTS = {d: f"Passage {d} on the heat transfer of body {i % 7}." for i, d in enumerate(DOC_IDS)}
UTILITY = {
    TEXTS[d]: float(u)
    for d, u in zip(DOC_IDS, random.Random(4).sample(range(N_DOCS), N_DOCS), strict=True)
}
QUERY = JudgeQuery("q1", "heat transfer")


def new_study(collection_id: int) -> Study:
    """A fresh study (its own counters) of the collection."""
    return Study(collection_id, f"plan-{uuid.uuid4().hex[:8]}")


def make_client(
    db: Database, server: StandInServer, study: Study, *, model: str | None = None, **llm: Any
) -> LlmClient:
    """A client of the stand-in; fast backoff, a fresh model name (so a fresh cache)."""
    knobs: dict[str, Any] = {
        "llm_retries": 3,
        "llm_backoff_seconds": 0.01,
        "llm_max_backoff_seconds": 1.0,
        "llm_timeout_seconds": 5.0,
        "llm_concurrency": 4,
        **llm,
    }
    settings = Settings(database_url=db.url, dev=True, llm_base_url=server.base_url, **knobs)
    return LlmClient(db, study, settings=settings, model=model or f"standin-{uuid.uuid4().hex[:8]}")


def prompt(a: str, b: str) -> list[dict[str, str]]:
    return PAIRWISE_V1.render(QUERY.text, TEXTS[a], TEXTS[b])


def waits(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage().split(" in ")[1] for r in caplog.records if "; retry " in r.getMessage()]


# ------------------------------------------------------------------------------ retries
def test_retry_wait_reads_retry_after_and_doubles_otherwise() -> None:
    assert retry_wait(0, None, 0.5, 60) == 0.5
    assert retry_wait(3, None, 0.5, 60) == 4.0
    assert retry_wait(10, None, 0.5, 60) == 60  # capped
    assert retry_wait(0, "7", 0.5, 60) == 7.0
    assert retry_wait(0, "120", 0.5, 60) == 60
    assert retry_wait(1, "soon", 0.5, 60) == 1.0  # unreadable: the backoff
    past = format_datetime(datetime.now(UTC) - timedelta(hours=1), usegmt=True)
    assert retry_wait(0, past, 0.5, 60) == 0.0
    future = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= retry_wait(0, future, 0.5, 60) <= 30


def test_429_and_500_are_retried_with_backoff_then_answered(
    db: Database, collection_id: int, caplog: pytest.LogCaptureFixture
) -> None:
    model = StandInModel(UTILITY, seed=1)
    study = new_study(collection_id)
    caplog.set_level(logging.INFO, logger="heapjudge.machine.llm")
    with StandInServer(model) as server, make_client(db, server, study) as client:
        server.script("429", 2)
        server.script("500", 1)
        messages = prompt("d001", "d002")
        assert client.ask([messages]) == [model.answer(messages)]
        assert server.requests == 4
        assert waits(caplog) == ["0.01 s", "0.02 s", "0.04 s"]  # 0.01·2^attempt
        caplog.clear()
        server.script("429", 1, value="0.03")  # Retry-After wins over the backoff
        messages = prompt("d003", "d004")
        assert client.ask([messages]) == [model.answer(messages)]
        assert waits(caplog) == ["0.03 s"]
        usage = client.usage().counts
    assert (usage.requests, usage.failed, usage.malformed) == (2, 0, 0)
    assert usage.prompt_tokens == tokens(prompt("d001", "d002")) + tokens(messages)
    assert usage.completion_tokens == 2


def test_a_timeout_is_no_opinion_after_the_retries(db: Database, collection_id: int) -> None:
    model = StandInModel(UTILITY, seed=1)
    study = new_study(collection_id)
    with StandInServer(model) as server:
        client = make_client(db, server, study, llm_timeout_seconds=0.2, llm_retries=2)
        server.script("slow", 3, value=1.0)
        messages = prompt("d005", "d006")
        assert client.ask([messages]) == [None]
        assert server.requests == 3  # the first try and two retries
        counts = client.usage().counts
        assert (counts.failed, counts.requests, counts.tokens) == (1, 0, 0)
        # a failure is not cached: asked again, the prompt is sent and answered
        assert client.ask([messages]) == [model.answer(messages)]
        assert server.requests == 4
        client.close()


def test_the_stand_in_takes_commands_over_http(db: Database, collection_id: int) -> None:
    import httpx

    model = StandInModel(UTILITY, seed=1)
    with (
        StandInServer(model) as server,
        make_client(db, server, new_study(collection_id)) as client,
    ):
        root = server.base_url.removesuffix("/v1")
        r = httpx.post(f"{root}/_standin/script", json={"kind": "500", "times": 2})
        assert r.json() == {"scripted": 2}
        messages = prompt("d030", "d031")
        assert client.ask([messages]) == [model.answer(messages)]
        assert httpx.get(f"{root}/_standin/stats").json() == {"requests": 3}


def test_other_client_errors_are_not_retried(db: Database, collection_id: int) -> None:
    with StandInServer(StandInModel(UTILITY), api_key="right") as server:
        client = make_client(db, server, new_study(collection_id), llm_api_key_env="HJ_UNSET_KEY")
        assert client.ask([prompt("d001", "d009")]) == [None]  # 401: no retry
        assert server.requests == 1 and client.usage().counts.failed == 1
        client.close()


def test_malformed_replies_are_counted_and_no_opinion(db: Database, collection_id: int) -> None:
    model = StandInModel(UTILITY, seed=2)
    study = new_study(collection_id)
    with StandInServer(model) as server, make_client(db, server, study) as client:
        server.script("malformed", 1, value="Both passages are equally good.")
        server.script("no_content", 1)
        judge = LlmJudge(client.ask, TEXTS, model=client.model)
        p = judge.prefer(QUERY, [("d010", "d011")])
        assert math.isnan(p[0]) and judge.malformed == 2
        counts = client.usage().counts
        assert (counts.malformed, counts.requests, counts.failed) == (2, 2, 0)
        good = judge.prefer(QUERY, [("d012", "d013")])
        assert good[0] in (0.0, 0.25, 0.5, 0.75, 1.0)
        assert client.usage().counts.malformed == 2


def test_tokens_are_estimated_when_the_endpoint_reports_none(
    db: Database, collection_id: int
) -> None:
    model = StandInModel(UTILITY, seed=2)
    with (
        StandInServer(model) as server,
        make_client(db, server, new_study(collection_id)) as client,
    ):
        server.script("no_usage", 1)
        messages = prompt("d014", "d015")
        assert client.ask([messages]) == [model.answer(messages)]
        chars = sum(len(m["content"]) for m in messages)
        counts = client.usage().counts
        assert (counts.prompt_tokens, counts.completion_tokens) == (-(-chars // 4), 1)


# ------------------------------------------------------------------------------ budget, cache
def test_the_budget_stops_answers_and_records_usage(db: Database, collection_id: int) -> None:
    model = StandInModel(UTILITY, seed=3)
    study = new_study(collection_id)
    pairs = [(DOC_IDS[i], DOC_IDS[i + 1]) for i in range(0, 18, 2)]
    prompts = [prompt(a, b) for a, b in pairs]
    per_prompt = {tokens(m) + 1 for m in prompts}
    assert len(per_prompt) == 1  # the texts have the same length: each request costs the same
    cost = per_prompt.pop()
    with StandInServer(model) as server:
        client = make_client(db, server, study, llm_concurrency=1, llm_token_budget=2 * cost)
        replies = client.ask(prompts[:6])
        assert replies[:2] == [model.answer(m) for m in prompts[:2]]
        assert replies[2:] == [None] * 4
        usage = client.usage()
        assert (usage.counts.requests, usage.counts.refused, usage.tokens) == (2, 4, 2 * cost)
        assert usage.remaining == 0 and server.requests == 2
        # past the budget nothing is sent; cached replies cost nothing and are still given
        assert client.ask(prompts[6:]) == [None] * 3
        assert client.ask(prompts[:2]) == replies[:2]
        assert server.requests == 2
        counts = client.usage().counts
        assert (counts.refused, counts.cached, counts.tokens) == (7, 2, 2 * cost)
        judge = LlmJudge(client.ask, TEXTS, model=client.model)
        assert np.isnan(judge.prefer(QUERY, pairs[4:])).all()  # people carry on
        client.close()


def test_asking_again_sends_nothing(db: Database, collection_id: int) -> None:
    model = StandInModel(UTILITY, bias=0.2, error=0.1, seed=4)
    rng = random.Random(5)
    pairs = [tuple(rng.sample(DOC_IDS, 2)) for _ in range(20)]
    with StandInServer(model) as server:
        first = make_client(db, server, new_study(collection_id), model="standin-cache")
        p1 = LlmJudge(first.ask, TEXTS, model=first.model).prefer(QUERY, pairs)
        sent = server.requests
        assert sent == len({(a, b) for a, b in pairs} | {(b, a) for a, b in pairs})
        again = make_client(db, server, new_study(collection_id), model="standin-cache")
        p2 = LlmJudge(again.ask, TEXTS, model=again.model).prefer(QUERY, pairs)
        assert server.requests == sent  # 0 requests the second time
        assert np.array_equal(p1, p2, equal_nan=True)
        counts = again.usage().counts
        assert (counts.requests, counts.cached, counts.tokens) == (0, 2 * len(pairs), 0)
        # another model is another cache
        other = make_client(db, server, new_study(collection_id), model="standin-other")
        other.ask([prompt(*pairs[0])])
        assert server.requests == sent + 1
        for c in (first, again, other):
            c.close()


# ------------------------------------------------------------------------------ the API key
def every_text_in_the_database(db: Database) -> str:
    parts = []
    with db.read() as s:
        for table in inspect(s.get_bind()).get_table_names():
            for row in s.execute(text(f'SELECT * FROM "{table}"')):
                parts.append(repr(tuple(row)))
    return "\n".join(parts)


def test_the_api_key_appears_nowhere(
    api: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The key is sent (the stand-in checks it) and appears in no table, no log line at DEBUG
    (httpx's and httpcore's included), no page, export or API answer, and not in the client's
    repr or usage."""
    from tests.app.admin_support import make_collection
    from tests.app.web.support import login

    key = f"sk-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("HEAPJUDGE_LLM_API_KEY", key)
    caplog.set_level(logging.DEBUG)
    cid, _ = make_collection(api, f"keyed-{uuid.uuid4().hex[:6]}", queries=1, docs=4)
    model = StandInModel(UTILITY, seed=6)
    with StandInServer(model, api_key=key) as server:
        client = make_client(api.db, server, Study(cid, None))
        server.script("500", 1)
        replies = client.ask([prompt("d020", "d021"), prompt("d021", "d020")])
        assert all(r is not None for r in replies)
        assert set(server.authorizations) == {f"Bearer {key}"}
        shown = [repr(client), str(client.usage().to_dict())]
        client.close()
    assert caplog.records and key not in caplog.text
    assert key not in every_text_in_the_database(api.db)
    pages = [
        api.get("admin", f"/api/v1/collections/{cid}/export?format={f}").text
        for f in ("qrels", "topk-jsonl", "pairs")
    ]
    pages.append(api.get("admin", "/openapi.json").text)
    login(api.client, "admin", "pw-admin-secret")
    pages += [api.client.get(p).text for p in ("/admin", f"/admin/collections/{cid}")]
    api.client.cookies.clear()
    assert all(key not in page for page in [*pages, *shown])


# ------------------------------------------------------------------------------ position bias
def test_both_orders_cancel_the_stand_ins_position_bias(db: Database, collection_id: int) -> None:
    """The stand-in names the first-shown passage 70% of the time, else the truth. Over
    N = 1,000 pairs of distinct documents, each listed in an order drawn by a fair coin
    independently of the truth, LlmJudge asks both orders through the client and combines
    them. Without position bias, whether a decided combined answer (P ≠ 1/2) favours the
    first-listed document is a fair coin, so its share among the n decided answers is within
    3·√(1/(4n)) of 1/2 (binomial, three standard errors); and since the bias never names the
    worse passage in both orders, every decided answer is right. Control: the single-order
    replies name the first shown passage 0.7 + 0.3·1/2 = 0.85 of the time (within 3 standard
    errors of 2N Bernoulli(0.85) draws)."""
    model = StandInModel(UTILITY, bias=0.7, error=0.0, seed=7)
    rng = random.Random(8)
    pairs = [tuple(rng.sample(DOC_IDS, 2)) for _ in range(1000)]
    with StandInServer(model) as server:
        client = make_client(db, server, new_study(collection_id), llm_concurrency=8)
        p = LlmJudge(client.ask, TEXTS, model=client.model).prefer(QUERY, pairs)
        single = client.ask([prompt(x, y) for a, b in pairs for x, y in ((a, b), (b, a))])
        client.close()
    decided = p != 0.5
    n = int(decided.sum())
    share = float((p[decided] > 0.5).mean())
    assert n > 200 and abs(share - 0.5) <= 3 * math.sqrt(0.25 / n), (share, n)
    right = [
        (p[i] > 0.5) == (UTILITY[TEXTS[a]] > UTILITY[TEXTS[b]])
        for i, (a, b) in enumerate(pairs)
        if decided[i]
    ]
    assert all(right)
    first = np.mean([parse_pairwise(r) == "A" for r in single])
    assert abs(first - 0.85) <= 3 * math.sqrt(0.85 * 0.15 / len(single)), first


# ------------------------------------------------------------------------------ the simulation
@pytest.mark.parametrize("strategy", ["insertion+assist", "tournament+assist"])
def test_the_same_top_k_as_the_simulation_for_the_same_answers(
    db: Database, collection_id: int, strategy: str
) -> None:
    """drive() with a +assist strategy and a JudgeOpinion over LlmJudge through the client
    and the stand-in gives the same top-k, the same human and machine answer counts and the
    same machine probabilities as drive() with an in-process judge that returns the same
    answers (the stand-in's model called directly)."""
    docs = DOC_IDS[:30]
    model = StandInModel(UTILITY, bias=0.2, error=0.1, seed=9)
    person = Assessor({d: UTILITY[TEXTS[d]] for d in docs}, seed=0)
    order = random.Random(10).sample(docs, len(docs))
    cls = resolve_strategy(strategy)
    with StandInServer(model) as server:
        client = make_client(db, server, new_study(collection_id))
        over_http = JudgeOpinion(LlmJudge(client.ask, TEXTS, model="standin"), QUERY)
        top, rest, humans, machines, _ = drive(cls, order, 10, person, machine=over_http, seed=3)
        client.close()
    local = JudgeOpinion(LlmJudge(model.ask, TEXTS, model="standin"), QUERY)
    expected = drive(cls, order, 10, person, machine=local, seed=3)
    assert (top, rest, humans, machines) == expected[:4]
    assert machines > 0 and over_http.raw == local.raw
