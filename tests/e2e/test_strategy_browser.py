"""Non-default judging strategies in a real headless Chromium against a real uvicorn: a
``tournament`` task and an ``insertion`` task with a BM25 prior (resolved by the service when
the task is created) are judged to the end by keyboard, and each result equals the oracle's
top k and the labeling core's replay of the same config.

Skips with a reason when Playwright or Chromium is missing, unless
HEAPJUDGE_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from labeling.session import open_session
from labeling.types import PairAnswer
from tests.e2e.web_support import (
    LiveServer,
    add_user,
    init_db,
    launch_chromium,
    oracle_scores,
    relevance_docs,
    require_browser,
    seed_task,
)

pytestmark = pytest.mark.browser

PASSWORD = "assessor password 1"
#: Generous waits: CI shares two cores between many jobs (no timing is asserted anywhere).
TIMEOUT_MS = 90_000
N, K = 12, 4


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    executable = require_browser()
    from playwright.sync_api import sync_playwright

    tmp = tmp_path_factory.mktemp("strategy-e2e")
    db_path = tmp / "e2e.db"
    db = init_db(db_path)
    user_id = add_user(db, "ann", PASSWORD)
    server = LiveServer(db_path).start(timeout=120)
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw, executable)
            ctx = browser.new_context()
            ctx.set_default_timeout(TIMEOUT_MS)
            page = ctx.new_page()
            page.goto(server.url + "/login")
            page.wait_for_function("document.activeElement?.id === 'username'")
            page.keyboard.type("ann")
            page.keyboard.press("Tab")
            page.keyboard.type(PASSWORD)
            page.keyboard.press("Enter")
            page.wait_for_url(server.url + "/tasks")
            yield {"db": db, "user_id": user_id, "server": server, "ctx": ctx}
            browser.close()
    finally:
        server.stop()
        db.dispose()


def wait_next(page: Any, seq: int) -> None:
    """Wait until the page shows a question other than ``seq``, or has gone to the done page
    (the navigation may destroy the page's context while we look)."""
    from playwright.sync_api import Error as PlaywrightError

    try:
        page.wait_for_function(
            """(s) => { const m = document.getElementById('judge-main');
                        return !m || m.dataset.seq !== String(s) || m.dataset.done === 'true'; }""",
            arg=seq,
        )
        done = page.evaluate(
            "() => { const m = document.getElementById('judge-main');"
            " return !m || m.dataset.done === 'true'; }"
        )
    except PlaywrightError:
        done = True
    if done:
        page.wait_for_url("**/done")
        page.wait_for_load_state()


def judge_by_keyboard(page: Any, url: str, scores: dict[str, float]) -> list[tuple[str, str]]:
    """Open the task and answer every question with the oracle's key (arrows and 1/2 in
    turn) until the done page; returns the pairs as shown."""
    page.goto(url)
    page.wait_for_selector("#judge-main[data-seq]")
    shown: list[tuple[str, str]] = []
    while not page.url.endswith("/done"):
        seq = int(page.get_attribute("#judge-main", "data-seq"))
        assert seq == len(shown)
        left = str(page.get_attribute("article[data-slot=left]", "data-doc-id"))
        right = str(page.get_attribute("article[data-slot=right]", "data-doc-id"))
        shown.append((left, right))
        better_left = scores[left] > scores[right]
        if seq % 2 == 0:
            page.keyboard.press("ArrowLeft" if better_left else "ArrowRight")
        else:
            page.keyboard.press("1" if better_left else "2")
        wait_next(page, seq)
    page.wait_for_selector("#topk-list")
    return shown


def core_replay(task: Any, scores: dict[str, float], shown: list[tuple[str, str]]) -> Any:
    """The labeling core on the stored config, answered by the same oracle: it must pose the
    pairs the page showed, in order."""
    s = open_session("topk", task.doc_ids, k=task.k, seed=task.seed, options=task.options)
    for left, right in shown:
        q = s.pending
        assert q is not None and (q.left, q.right) == (left, right)
        s.submit(PairAnswer(left, right, "left" if scores[left] > scores[right] else "right"))
    assert s.done
    return s.result()


def test_tournament_and_insertion_with_a_prior_by_keyboard(env: dict[str, Any]) -> None:
    from app.models import Query, Task
    from app.services import tasks
    from app.services.priors import PriorSource

    db = env["db"]
    seeded = seed_task(
        db,
        assessor_id=env["user_id"],
        docs=relevance_docs(N),
        k=K,
        seed=11,
        options={"strategy": "tournament"},
    )
    scores = oracle_scores(seeded.doc_ids)
    truth = sorted(seeded.doc_ids, key=lambda d: -scores[d])[:K]
    with db.read() as s:
        query = s.get(Query, seeded.query_id)
        collection_id, query_id = query.collection_id, query.external_id
    insertion = tasks.create_task(
        db=db,
        collection_id=collection_id,
        query_id=query_id,
        assessor="ann",
        method="topk",
        k=K,
        seed=5,
        options={"strategy": "insertion"},
        prior=PriorSource("bm25"),
    )
    assert insertion.options["prior"] == "bm25"
    assert sorted(insertion.options["initial_order"]) == sorted(seeded.doc_ids)
    page = env["ctx"].new_page()
    for task_id in (seeded.task_id, insertion.id):
        shown = judge_by_keyboard(page, f"{env['server'].url}/tasks/{task_id}", scores)
        with db.read() as s:
            task = s.get(Task, task_id)
            assert task.status == "done"
        expected = core_replay(task, scores, shown)
        assert list(expected.top) == truth
        # The done page lists the oracle's top k, best first.
        items = page.locator("#topk-list li")
        assert [items.nth(i).get_attribute("data-doc-id") for i in range(items.count())] == truth
        assert page.locator("#stat-judgments").inner_text() == str(len(shown))
    page.close()
