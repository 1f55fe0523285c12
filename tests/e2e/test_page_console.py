"""Every page runs without a console error in a real headless Chromium: no Content Security
Policy violation (no inline style or script anywhere: the page CSP has style-src 'self' and
script-src 'self'), no uncaught exception from the ES modules of app/static/js, and the
module scripts really run (the judging loop answers, the plan form follows the ticks).

The judging pages frame judged HTML with inline styles from the documents' own URLs, under
their own policy (app/web/documents.py): they show, styled, without a violation too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from app.kernel.models import Task
from tests.e2e.web_support import (
    TIMEOUT_MS,
    LiveServer,
    add_user,
    init_db,
    launch_chromium,
    require_browser,
    seed_task,
    wait_next,
)

STYLED_DOCS = [
    {"doc_id": f"s{i}", "title": f"Styled {i}", "html": f'<p style="color:#a00">styled {i}</p>'}
    for i in range(4)
]
TEXT_DOCS = [
    {"doc_id": f"t{i}", "title": f"Text {i}", "text": f"solar panel text number {i} " * 40}
    for i in range(4)
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    executable = require_browser()
    tmp = tmp_path_factory.mktemp("page-console")
    db_path = tmp / "console.db"
    db = init_db(db_path)
    add_user(db, "chief", "chief password 1", role="admin")
    ann = add_user(db, "ann", "ann password 1")
    add_user(db, "bob", "bob password 1")
    topk = seed_task(db, assessor_id=ann, docs=STYLED_DOCS, k=2, collection="styled")
    graded = seed_task(db, assessor_id=ann, docs=TEXT_DOCS, method="graded", collection="text")
    with db.read() as s:
        cid = s.scalar(select(Task.collection_id).where(Task.id == topk.task_id))
    machine = _judged_machine_study(db)
    db.dispose()
    server = LiveServer(db_path).start()
    try:
        yield {
            "server": server,
            "executable": executable,
            "topk": topk.task_id,
            "graded": graded.task_id,
            "collection": cid,
            "machine_collection": machine,
        }
    finally:
        server.stop()


def _judged_machine_study(db: Any) -> int:
    """A collection whose one task has a bm25 machine, judged by ann through the service (the
    analysis page then draws the machine's reliability diagram inline)."""
    import json

    from app.collections import service as collections
    from app.judging import service as judging
    from app.tasks import service as tasks
    from app.users import service as users

    coll = collections.create_collection(db=db, name="machine")
    rows = [
        {"query_id": "m", "query": "solar", "doc_id": f"m{i:02d}", "text": "solar " * i + "roof"}
        for i in range(12)
    ]
    data = "\n".join(json.dumps(r) for r in rows).encode()
    collections.import_ndjson(db=db, collection_id=coll.id, data=data)
    options = {"strategy": "insertion+assist", "machine": {"source": "bm25"}}
    view = tasks.create_task(
        db=db,
        collection_id=coll.id,
        query_id="m",
        assessor="ann",
        method="topk",
        k=3,
        options=options,
    )
    user = users.get_user(db=db, username="ann")
    body = judging.next_question(db=db, user=user, task_id=view.id)
    while not body["done"]:
        left, right = body["pair"]["left"]["doc_id"], body["pair"]["right"]["doc_id"]
        data_ = {"seq": body["seq"], "left": left, "right": right, "outcome": "left"}
        body = judging.submit_judgment(db=db, user=user, task_id=view.id, data=data_)
    return int(coll.id)


def _watch(page: Any) -> list[str]:
    """Console errors (a CSP violation is one) and uncaught exceptions of the page."""
    problems: list[str] = []
    page.on(
        "console",
        lambda m: (
            problems.append(f"console {m.type}: {m.text}")
            if m.type == "error" or "Content Security Policy" in m.text
            else None
        ),
    )
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    return problems


def _login(page: Any, url: str, username: str) -> None:
    page.goto(url + "/login")
    page.fill("#username", username)
    page.fill("#password", f"{username} password 1")
    page.click("button[type=submit]")
    page.wait_for_load_state()


@pytest.mark.browser
def test_assessor_pages_have_no_console_errors(site: dict[str, Any]) -> None:
    from playwright.sync_api import sync_playwright

    url = site["server"].url
    with sync_playwright() as pw:
        browser = launch_chromium(pw, site["executable"])
        page = browser.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        problems = _watch(page)
        _login(page, url, "ann")
        page.wait_for_url(url + "/tasks")
        # Pairwise: one answer by key, the highlight toggle (frames rendered again), the tools.
        page.goto(f"{url}/tasks/{site['topk']}")
        page.wait_for_selector("#judge-main[data-seq]")
        styled = page.frame_locator("article[data-slot=left] iframe").locator("p")
        assert styled.evaluate("p => getComputedStyle(p).color") == "rgb(170, 0, 0)"
        page.keyboard.press("ArrowLeft")
        wait_next(page, 0)
        page.keyboard.press("h")
        page.wait_for_selector("#notice:not([hidden])")
        page.keyboard.press("a")
        page.wait_for_selector("#answers-list li")
        page.keyboard.press("Escape")
        # Graded: one answer, then undo.
        page.goto(f"{url}/tasks/{site['graded']}")
        page.wait_for_selector("#judge-main[data-seq='0']")
        page.keyboard.press("3")
        wait_next(page, 0)
        page.keyboard.press("u")
        page.wait_for_selector("#judge-main[data-seq='0']")
        page.goto(f"{url}/tasks")
        browser.close()
    assert problems == []


@pytest.mark.browser
def test_admin_pages_have_no_console_errors(site: dict[str, Any]) -> None:
    from playwright.sync_api import expect, sync_playwright

    url = site["server"].url
    cid = site["collection"]
    with sync_playwright() as pw:
        browser = launch_chromium(pw, site["executable"])
        page = browser.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        problems = _watch(page)
        _login(page, url, "chief")
        page.goto(url + "/admin")
        # The browser compiles the username pattern (with the v flag) once the field has a
        # value: an invalid pattern is a console error and no client-side check.
        page.fill("#new-user", "new.user-1")
        assert page.eval_on_selector("#new-user", "e => e.validity.valid") is True
        page.fill("#new-user", "new user!")
        assert page.eval_on_selector("#new-user", "e => e.validity.patternMismatch") is True
        assert page.eval_on_selector("#new-password", "e => e.minLength") == 12
        page.goto(f"{url}/admin/collections/{cid}")
        # The plan form shows the server's fit for the ticked count (plan_fits).
        ticked = page.locator('input[name="assessors"]:checked')
        boxes = page.locator('input[name="assessors"]')
        expect(page.locator("#plan-fit")).to_contain_text(f"{ticked.count()} assessors ticked")
        for i in range(boxes.count()):
            boxes.nth(i).uncheck()
        expect(page.locator("#plan-fit")).to_contain_text("0 assessors ticked")
        expect(page.locator("#plan-problem")).to_contain_text("at least two assessors")
        boxes.nth(0).check()
        boxes.nth(1).check()
        expect(page.locator("#plan-fit")).to_contain_text("2 assessors ticked")
        expect(page.locator("#shifts")).to_have_value("0")
        page.wait_for_selector("#progress[data-refreshed]", timeout=20_000)  # the refresh ran
        page.goto(f"{url}/admin/collections/{cid}/analysis/calibration")
        expect(page.get_by_test_id("calibration-empty")).to_contain_text("No machine answers yet")
        # The machine's reliability diagram, inline SVG with presentation attributes only, on
        # the report's own page, linked from the analysis page.
        page.goto(f"{url}/admin/collections/{site['machine_collection']}/analysis")
        page.get_by_test_id("calibration-link").click()
        diagram = page.locator('svg[aria-label^="Reliability diagram of bm25"]')
        expect(diagram).to_be_visible()
        assert diagram.locator("rect").count() >= 1
        browser.close()
    assert problems == []
