"""The LLM client's bounds (app.machine.llm, app.machine.llm_http) against the stand-in
server on 127.0.0.1 (tests/app/llm_standin.py; no real model is reachable from the tests):
a total deadline per request (a reply dripped byte by byte is cut there), a reply size limit
(a longer reply is malformed and not cached), tokens never charged below characters / 4, no
credential of the endpoint's URL in any log line, and the collection's LLM grades on a budget
of their own."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest
from sqlalchemy import func, select

from app.kernel.db import Database
from app.kernel.models import LlmResponse
from app.kernel.settings import Settings
from app.machine.llm import LlmClient, cache_key, estimated_tokens
from app.machine.llm_http import masked_url
from app.machine.repository import Study
from labeling.machine.llm_prompts import PAIRWISE_V2
from tests.app.machine.llm_standin import StandInModel, StandInServer

TEXTS = {f"d{i}": f"Passage {i} about the tides of sea number {i}." for i in range(20)}
MODEL = StandInModel({t: float(i) for i, t in enumerate(TEXTS.values())}, seed=1)


def client_of(db: Database, base_url: str, study: Study, **llm: Any) -> LlmClient:
    knobs: dict[str, Any] = {
        "llm_retries": 0,
        "llm_backoff_seconds": 0.01,
        "llm_timeout_seconds": 5.0,
        "llm_concurrency": 2,
        **llm,
    }
    settings = Settings(database_url=db.url, dev=True, llm_base_url=base_url, **knobs)
    return LlmClient(db, study, settings=settings, model=f"standin-{uuid.uuid4().hex[:8]}")


def study(collection_id: int) -> Study:
    return Study(collection_id, f"plan-{uuid.uuid4().hex[:8]}")


def prompt(a: str, b: str) -> list[dict[str, str]]:
    return PAIRWISE_V2.render("tides", TEXTS[a], TEXTS[b])


def test_a_dripped_reply_is_cut_at_the_deadline(db: Database, collection_id: int) -> None:
    """One byte every 0.05 s: each read is quick, so a per-read timeout of 0.5 s never trips
    and the ~400-byte reply would arrive after ~20 s; the total deadline of 0.5 s cuts it,
    with most of the reply never sent."""
    with StandInServer(MODEL) as server:
        client = client_of(db, server.base_url, study(collection_id), llm_timeout_seconds=0.5)
        server.script("drip", 1, value=0.05)
        messages = prompt("d1", "d2")
        assert client.ask([messages]) == [None]
        counts = client.usage().counts
        assert (counts.failed, counts.timeouts, counts.requests) == (1, 1, 0)
        assert client.report.timed_out == 1 and "timed out" in (client.report.last_error or "")
        # far from all of it was sent: the client left at its deadline
        assert 0 < server.dripped < 100
        # the next prompt is answered as usual (the connection was not reused broken)
        assert client.ask([messages]) == [MODEL.answer(messages)]
        client.close()


def test_an_oversized_reply_is_malformed_and_not_cached(db: Database, collection_id: int) -> None:
    with StandInServer(MODEL) as server:
        client = client_of(db, server.base_url, study(collection_id), llm_max_reply_bytes=4096)
        server.script("huge", 1, value=5_000_000)
        messages = prompt("d3", "d4")
        assert client.ask([messages]) == [None]
        counts = client.usage().counts
        assert (counts.malformed, counts.requests, counts.failed) == (1, 1, 0)
        key = cache_key(client.model, PAIRWISE_V2, messages, client.params)
        with db.read() as s:
            stored = s.scalar(select(func.count()).where(LlmResponse.cache_key == key))
            longest = s.scalar(select(func.max(func.length(LlmResponse.reply))))
        assert stored == 0 and (longest or 0) <= 4096
        # not cached: asked again, it is sent again and answered
        assert client.ask([messages]) == [MODEL.answer(messages)]
        assert server.requests == 2
        client.close()


def test_a_reply_that_is_not_json_is_malformed(db: Database, collection_id: int) -> None:
    with StandInServer(MODEL) as server:
        client = client_of(db, server.base_url, study(collection_id))
        server.script("garbage", 1)
        assert client.ask([prompt("d5", "d6")]) == [None]
        assert client.usage().counts.malformed == 1
        assert client.report.malformed == 1 and client.report.answered == 0
        assert client.report.last_error == "the reply is not JSON"
        client.close()


@pytest.mark.parametrize("reported", [0, -50])
def test_zero_or_negative_usage_is_charged_the_characters(
    db: Database, collection_id: int, reported: int
) -> None:
    with StandInServer(MODEL) as server:
        client = client_of(db, server.base_url, study(collection_id))
        server.script("usage", 1, value=reported)
        messages = prompt("d7", "d8")
        reply = client.ask([messages])[0]
        assert reply is not None
        counts = client.usage().counts
        chars = sum(len(m["content"]) for m in messages)
        assert counts.prompt_tokens == estimated_tokens(chars) > 0
        assert counts.completion_tokens == estimated_tokens(len(reply)) == 1
        client.close()


def test_zero_usage_cannot_run_past_the_budget(db: Database, collection_id: int) -> None:
    """An endpoint that reports 0 tokens used to be free: the budget never bound. Charged the
    characters, a budget of one prompt's estimate stops the machine after one request."""
    one = estimated_tokens(sum(len(m["content"]) for m in prompt("d0", "d1"))) + 1
    with StandInServer(MODEL) as server:
        client = client_of(
            db, server.base_url, study(collection_id), llm_token_budget=one, llm_concurrency=1
        )
        server.script("usage", 10, value=0)
        replies = client.ask([prompt(f"d{i}", f"d{i + 1}") for i in range(0, 10, 2)])
        assert server.requests == 1 and replies[1:] == [None] * 4
        assert client.usage().counts.refused == 4
        client.close()


def test_url_credentials_reach_no_log_line(
    db: Database, collection_id: int, caplog: pytest.LogCaptureFixture
) -> None:
    password, token = f"pw{uuid.uuid4().hex}", f"tk{uuid.uuid4().hex}"
    caplog.set_level(logging.DEBUG)
    with StandInServer(MODEL) as server:
        url = server.base_url.replace("//", f"//user:{password}@") + f"?api_key={token}"
        client = client_of(db, url, study(collection_id), llm_retries=1)
        server.script("500", 1)
        messages = prompt("d9", "d10")
        assert client.ask([messages]) == [MODEL.answer(messages)]
        shown = repr(client)
        client.close()
    lines = [r for r in caplog.records if r.name == "httpx"]
    assert lines, "httpx logged its request lines"
    assert password not in caplog.text and token not in caplog.text and password not in shown
    assert any("api_key=***" in r.getMessage() for r in lines)


def test_masked_url_drops_user_info_and_masks_the_query() -> None:
    assert masked_url("https://u:p@h.example:8443/v1?key=s&x=&y=2#f") == (
        "https://h.example:8443/v1?key=***&x=***&y=***"
    )
    assert masked_url("http://[::1]:8001/v1") == "http://[::1]:8001/v1"


def test_grades_spend_their_own_budget(db: Database, collection_id: int) -> None:
    """One grading run that spends its whole budget leaves the tasks' opinions (the
    collection's tasks without a plan: the same collection, the same plan key before) able
    to answer, and the other way round."""
    with StandInServer(MODEL) as server:
        knobs = {"llm_grade_token_budget": 1, "llm_token_budget": 10_000, "llm_concurrency": 1}
        grades = client_of(db, server.base_url, Study(collection_id, None, "grades"), **knobs)
        assert grades.budget == 1
        spent = grades.ask([prompt("d11", "d12"), prompt("d12", "d11")])
        assert spent[0] is not None and spent[1] is None  # the grades' budget is spent
        opinions = client_of(db, server.base_url, Study(collection_id, None), **knobs)
        assert opinions.budget == 10_000
        messages = prompt("d13", "d14")
        assert opinions.ask([messages]) == [MODEL.answer(messages)]
        assert grades.usage().counts.refused == 1 and opinions.usage().counts.refused == 0
        assert opinions.usage().counts.tokens > 0
        for c in (grades, opinions):
            c.close()
