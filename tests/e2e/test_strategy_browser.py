"""Non-default judging strategies in a real headless Chromium against a real uvicorn: a
``tournament`` task and an ``insertion`` task with a BM25 prior (resolved by the service when
the task is created) are judged to the end by keyboard, and each result equals the oracle's
top k and the labeling core's replay of the same config.

Skips with a reason when Playwright or Chromium is missing, unless
HEAPJUDGE_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

from __future__ import annotations

from typing import Any

import pytest

from labeling.protocol.session import open_session
from labeling.protocol.types import PairAnswer
from tests.e2e.web_support import (
    oracle_scores,
    relevance_docs,
    seed_task,
    wait_next,
)

pytestmark = pytest.mark.browser

N, K = 12, 4


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


def test_tournament_and_insertion_with_a_prior_by_keyboard(
    env: dict[str, Any],
    ctx: Any,
) -> None:
    from app.kernel.models import Query, Task
    from app.tasks import service as tasks
    from app.tasks.priors import PriorSource

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
    page = ctx.new_page()
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
