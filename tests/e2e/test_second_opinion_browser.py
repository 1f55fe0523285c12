"""A second opinion answered in a real headless Chromium against a real uvicorn
(docs/assessor-guide.md#second-opinions): zed's ``tournament+robust`` task routes its repeats
to ann; zed's judging page says it waits for ann; ann finds the question under My tasks and
answers it on the pairwise page by keyboard; zed's log then holds ann's answer as that seq's
judgment, marked as hers, and zed's page has his next question.

Skips with a reason when Playwright or Chromium is missing, unless
HEAPJUDGE_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.auth.tokens import Identity
from tests.e2e.web_support import (
    PASSWORD,
    add_user,
    oracle_scores,
    relevance_docs,
    seed_task,
)

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"

pytestmark = pytest.mark.browser

N, K = 10, 3


def log_in(browser: Any, url: str, username: str) -> Any:
    """A fresh context logged in as ``username`` through the login form."""
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    context.set_default_timeout(90_000)
    page = context.new_page()
    page.goto(url + "/login")
    page.wait_for_function("document.activeElement?.id === 'username'")
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(url + "/tasks")
    return context


def test_second_assessor_answers_a_routed_question_by_keyboard(
    env: dict[str, Any],
    ctx: Any,
) -> None:
    from sqlalchemy import select

    from app.judging import service as judging
    from app.kernel.models import Judgment, SecondOpinion

    db = env["db"]
    url = env["server"].url
    zed_id = add_user(db, "zed", PASSWORD)
    zed = Identity(zed_id, "zed", "assessor")
    seeded = seed_task(
        db,
        assessor_id=zed_id,
        docs=relevance_docs(N),
        k=K,
        seed=3,
        options={"strategy": "tournament+robust", "second_assessor": ["ann"]},
        query_title="heat pumps in old houses",
    )
    scores = oracle_scores(seeded.doc_ids)
    tid = seeded.task_id
    # Zed answers (service layer, the oracle's answers) until his task waits for ann.
    body = judging.next_question(db=db, user=zed, task_id=tid)
    while "waiting" not in body:
        assert not body["done"]
        left, right = body["pair"]["left"]["doc_id"], body["pair"]["right"]["doc_id"]
        outcome = "left" if scores[left] > scores[right] else "right"
        data = {"seq": body["seq"], "left": left, "right": right, "outcome": outcome}
        body = judging.submit_judgment(db=db, user=zed, task_id=tid, data=data)
    seq = body["waiting"]["seq"]
    item_id = body["waiting"]["second_opinion_id"]

    # Zed's judging page: the waiting state, naming ann, with "Ask me instead".
    zed_ctx = log_in(env["browser"], url, "zed")
    zed_page = zed_ctx.new_page()
    zed_page.goto(f"{url}/tasks/{tid}")
    zed_page.wait_for_selector("#waiting")
    assert "waiting for a second opinion from ann" in zed_page.inner_text("#waiting-text").lower()
    assert zed_page.locator("#reclaim-button").count() == 1
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    zed_page.screenshot(path=str(ARTIFACTS / "second-opinion-waiting.png"))

    # Ann: My tasks lists the second opinion; she opens it and answers by keyboard.
    page = ctx.new_page()
    page.goto(f"{url}/tasks")
    item = page.locator(f"#second-opinions li[data-second-opinion-id='{item_id}']")
    assert item.count() == 1 and "for zed" in item.inner_text()
    page.screenshot(path=str(ARTIFACTS / "tasks-second-opinions.png"))
    page.locator("#second-opinions-start").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"{url}/second-opinions/{item_id}")
    page.wait_for_selector("#judge-main[data-seq]")
    assert int(page.get_attribute("#judge-main", "data-seq")) == seq
    assert "for zed" in page.inner_text("#second-opinion-note")
    # The assessor tools belong to one's own task: none on another task's question.
    assert page.locator(".tool-buttons").is_hidden() and page.locator("#undo-button").is_hidden()
    assert "my answers" not in page.inner_text("#keys-help")
    page.screenshot(path=str(ARTIFACTS / "second-opinion.png"))
    left = str(page.get_attribute("article[data-slot=left]", "data-doc-id"))
    right = str(page.get_attribute("article[data-slot=right]", "data-doc-id"))
    better_left = scores[left] > scores[right]
    page.keyboard.press("ArrowLeft" if better_left else "ArrowRight")
    # Nothing else is open: the page goes on to My tasks, without the second-opinion block.
    page.wait_for_url(f"{url}/tasks")
    assert page.locator("#second-opinions").count() == 0

    with db.read() as s:
        row = s.get(SecondOpinion, item_id)
        assert row.status == "answered" and (row.left_doc, row.right_doc) == (left, right)
        judgments = list(
            s.scalars(
                select(Judgment).where(
                    Judgment.task_id == tid, Judgment.seq == seq, Judgment.undone.is_(False)
                )
            )
        )
    assert len(judgments) == 1
    answer = judgments[0]
    assert answer.answered_by == env["user_id"] and row.judgment_id == answer.id
    assert (answer.left_doc, answer.right_doc) == (left, right)
    assert answer.outcome == ("left" if better_left else "right")
    assert answer.active_ms > 0  # the page's clock ran while ann read the pair

    # Zed's page shows his next question (or his task is done).
    zed_page.goto(f"{url}/tasks/{tid}")
    zed_page.wait_for_load_state()
    if not zed_page.url.endswith("/done"):
        zed_page.wait_for_selector("#judge-main[data-seq], #waiting")
        if zed_page.locator("#judge-main").count():
            assert int(zed_page.get_attribute("#judge-main", "data-seq")) == seq + 1
        else:
            assert int(zed_page.get_attribute("#waiting", "data-seq")) == seq + 1
    page.close()
    zed_ctx.close()
