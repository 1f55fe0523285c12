"""The assessor tools of the judging page in a real Chromium against a real uvicorn: the broken
document dialog, the comment box, "my answers" with undo back to a chosen answer, and the
guidelines panel (docs/assessor-guide.md#assessor-tools).

Every tool is driven at 1280x800 and at 390x844 and checked where it lands: in the judgment log
(the SQLite file the server writes), in ``GET /api/v1/tasks/{id}/answers`` and on the page. With
each panel open the answer bar must stay where it was, fully on screen (the panels float over
the documents). Screenshots of the panels go to ``artifacts/screenshots/``.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from app.collections import service as collections
from app.kernel.models import Task
from tests.e2e.test_assessor_day import in_viewport, new_page
from tests.e2e.web_support import (
    ARTIFACTS,
    all_judgments,
    live_judgments,
    open_task,
    relevance_docs,
    seed_task,
    shown_pair,
    shown_seq,
    wait_next,
)

pytestmark = pytest.mark.browser

SIZES = [pytest.param(1280, 800, id="1280x800"), pytest.param(390, 844, id="390x844")]


def collection_of(env: dict[str, Any], task_id: int) -> int:
    with env["db"].read() as s:
        return int(s.scalar(select(Task.collection_id).where(Task.id == task_id)))


def bar_box(page: Any) -> dict[str, float]:
    box = page.locator(".actions").bounding_box()
    assert box is not None
    return dict(box)


def assert_bar_unmoved(page: Any, before: dict[str, float], height: int) -> None:
    """The answer bar is where it was and fully on screen, and the page does not scroll."""
    assert bar_box(page) == before
    assert in_viewport(page, ".actions", height)
    assert page.evaluate("() => document.documentElement.scrollHeight") <= height


def answers_api(page: Any, task_id: int) -> list[dict[str, Any]]:
    """The review list as the page's own session reads it."""
    result = page.evaluate(
        """async (id) => { const r = await fetch('/api/v1/tasks/' + id + '/answers',
                               {credentials: 'same-origin'});
                           return {status: r.status, body: await r.json()}; }""",
        task_id,
    )
    assert result["status"] == 200
    return list(result["body"])


def shot(page: Any, name: str, width: int) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    suffix = "" if width > 800 else "-narrow"
    page.screenshot(path=str(ARTIFACTS / f"{name}{suffix}.png"))


# --------------------------------------------------------------------------- broken


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_broken_document_dialog_records_the_broken_outcome(
    env: dict[str, Any],
    width: int,
    height: int,
) -> None:
    task = seed_task(env["db"], assessor_id=env["user_id"], docs=relevance_docs(6), k=2, seed=3)
    context, page = new_page(env, width, height)
    try:
        open_task(page, env, task.task_id)
        before = bar_box(page)
        left, right = shown_pair(page)
        page.keyboard.press("b")
        page.wait_for_selector("#broken-panel:not([hidden])")
        # The dialog names both documents; focus is on the document choice (keyboard only).
        titles = page.locator("#broken-panel .broken-doc-title").all_inner_texts()
        assert titles == [task.titles[left], task.titles[right]]
        assert page.evaluate("() => document.activeElement.name") == "broken-side"
        assert_bar_unmoved(page, before, height)
        page.keyboard.press("ArrowDown")  # the other document: right (bottom)
        page.keyboard.press("Tab")  # to the reasons
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowDown")  # "Wrong language"
        page.keyboard.press("Tab")
        page.keyboard.type("it is in Finnish")
        shot(page, "t1-broken-dialog", width)
        assert all_judgments(env["db"], task.task_id) == []  # nothing sent before Enter
        page.keyboard.press("Enter")
        wait_next(page, 0)
        assert page.locator("#broken-panel").is_hidden()
        (row,) = live_judgments(env["db"], task.task_id)
        assert (row.seq, row.outcome, row.doc_id) == (0, "broken", right)
        assert row.reason == "Wrong language: it is in Finnish"
        (answer,) = answers_api(page, task.task_id)
        assert answer["kind"] == "broken" and answer["document"]["doc_id"] == right
        assert answer["reason"] == "Wrong language: it is in Finnish"
        # The broken document has left the protocol: it is not shown again.
        assert right not in shown_pair(page)
        assert "Marked as broken" in page.inner_text("#notice")
        assert_bar_unmoved(page, before, height)
    finally:
        context.close()


def test_broken_document_of_a_graded_task_needs_a_reason_for_other(
    env: dict[str, Any],
) -> None:
    docs = relevance_docs(3, prefix="gb")
    task = seed_task(env["db"], assessor_id=env["user_id"], docs=docs, method="graded", seed=2)
    context, page = new_page(env, 390, 844)
    try:
        open_task(page, env, task.task_id)
        doc = page.get_attribute("article[data-slot=single]", "data-doc-id")
        page.click("#broken-button")
        page.check("input[name=broken-reason][value=Other]")
        page.click("#broken-form button[type=submit]")
        # "Other" without details is refused on the page; nothing is sent.
        page.wait_for_selector("#broken-error:not([hidden])")
        assert all_judgments(env["db"], task.task_id) == []
        page.fill("#broken-detail", "only a cookie banner")
        page.click("#broken-form button[type=submit]")
        wait_next(page, 0)
        (row,) = live_judgments(env["db"], task.task_id)
        assert (row.outcome, row.doc_id, row.grade) == ("broken", doc, None)
        assert row.reason == "only a cookie banner"
        assert page.get_attribute("article[data-slot=single]", "data-doc-id") != doc
        # A grade with a comment, then my answers: newest first, with the grade's name.
        page.keyboard.press("c")
        page.keyboard.type("borderline")
        page.keyboard.press("Escape")
        page.keyboard.press("4")
        wait_next(page, 1)
        rows = live_judgments(env["db"], task.task_id)
        assert [(r.grade, r.comment) for r in rows] == [(None, None), (3, "borderline")]
        page.keyboard.press("a")
        page.wait_for_selector("#answers-list li")
        texts = page.locator("#answers-list > li").all_inner_texts()
        assert "Excellent" in texts[0] and "borderline" in texts[0]
        assert "Broken" in texts[1] and "only a cookie banner" in texts[1]
        assert in_viewport(page, ".actions", 844)
        shot(page, "t2-my-answers", 390)
    finally:
        context.close()


# --------------------------------------------------------------------------- comment


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_comment_is_stored_with_the_next_judgment_only(
    env: dict[str, Any],
    width: int,
    height: int,
) -> None:
    task = seed_task(env["db"], assessor_id=env["user_id"], docs=relevance_docs(6), k=2, seed=4)
    context, page = new_page(env, width, height)
    try:
        open_task(page, env, task.task_id)
        before = bar_box(page)
        page.keyboard.press("c")
        page.wait_for_selector("#comment-panel:not([hidden])")
        assert page.evaluate("() => document.activeElement.id") == "comment-text"
        # Keys typed into the box are text, not answers or tools.
        page.keyboard.type("Both about ballast; left cites the code.\nSecond line: u b a")
        assert_bar_unmoved(page, before, height)
        shot(page, "t1-comment", width)
        assert page.locator("#comment-panel:not([hidden])").count() == 1
        assert all_judgments(env["db"], task.task_id) == []
        page.keyboard.press("Escape")  # closes, keeps the text
        assert page.locator("#comment-panel").is_hidden()
        assert page.get_attribute("#comment-button", "aria-pressed") == "true"
        page.keyboard.press("ArrowLeft")
        wait_next(page, 0)
        page.wait_for_function(
            "() => document.getElementById('comment-button').getAttribute('aria-pressed')"
            " === 'false'"
        )
        page.keyboard.press("ArrowRight")
        wait_next(page, 1)
        rows = live_judgments(env["db"], task.task_id)
        assert [r.outcome for r in rows] == ["left", "right"]
        assert rows[0].comment == "Both about ballast; left cites the code.\nSecond line: u b a"
        assert rows[1].comment is None
        assert [a["comment"] for a in answers_api(page, task.task_id)] == [rows[0].comment, None]
    finally:
        context.close()


# --------------------------------------------------------------------------- my answers


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_my_answers_and_undo_back_to_here(
    env: dict[str, Any],
    width: int,
    height: int,
) -> None:
    task = seed_task(env["db"], assessor_id=env["user_id"], docs=relevance_docs(8), k=3, seed=6)
    context, page = new_page(env, width, height)
    try:
        open_task(page, env, task.task_id)
        before = bar_box(page)
        shown: list[tuple[str, str]] = []
        for seq, key in enumerate(["ArrowLeft", "ArrowRight", "ArrowLeft", "ArrowRight"]):
            shown.append(shown_pair(page))
            page.keyboard.press(key)
            wait_next(page, seq)
        page.keyboard.press("a")
        page.wait_for_selector("#answers-list li")
        items = page.locator("#answers-list > li")
        assert [items.nth(i).get_attribute("data-seq") for i in range(4)] == ["3", "2", "1", "0"]
        # Each row names the pair as it was shown.
        row1 = items.nth(2).inner_text()
        assert task.titles[shown[1][0]] in row1 and task.titles[shown[1][1]] in row1
        assert_bar_unmoved(page, before, height)
        shot(page, "t1-my-answers", width)
        # Answer keys are held while the panel is open: nothing is answered.
        page.keyboard.press("ArrowLeft")
        assert len(live_judgments(env["db"], task.task_id)) == 4
        # "Undo back to here" on answer #2 (seq 1) asks first; Cancel changes nothing.
        items.nth(2).locator("[data-tool=undo-to]").click()
        page.wait_for_selector(".answer-confirm")
        assert "and the 2 after it" in page.inner_text(".answer-confirm")
        page.click("[data-tool=undo-cancel]")
        assert page.locator(".answer-confirm").count() == 0
        assert len(live_judgments(env["db"], task.task_id)) == 4
        # Again, and confirm from the keyboard (focus is on "Yes").
        items.nth(2).locator("[data-tool=undo-to]").focus()
        page.keyboard.press("Enter")
        page.wait_for_selector(".answer-confirm")
        shot(page, "t1-undo-confirm", width)
        assert page.evaluate("() => document.activeElement.dataset.tool") == "undo-confirm"
        page.keyboard.press("Enter")
        wait_next(page, 4)
        assert shown_seq(page) == 1
        assert shown_pair(page) == shown[1]  # answer #2's question is asked again
        assert page.locator("#answers-panel").is_hidden()
        page.wait_for_function(
            "() => document.getElementById('notice-text').textContent.startsWith('Undone')"
        )
        assert [r.seq for r in live_judgments(env["db"], task.task_id)] == [0]
        assert [(r.seq, r.undone) for r in all_judgments(env["db"], task.task_id)] == [
            (0, False),
            (1, True),
            (2, True),
            (3, True),
        ]
        assert [a["seq"] for a in answers_api(page, task.task_id)] == [0]
        # The panel lists what is live now.
        page.keyboard.press("a")
        page.wait_for_selector("#answers-list li")
        assert page.locator("#answers-list > li").count() == 1
        page.keyboard.press("a")  # the key closes it again
        assert page.locator("#answers-panel").is_hidden()
        assert_bar_unmoved(page, before, height)
    finally:
        context.close()


# --------------------------------------------------------------------------- guidelines

GUIDELINES = """# Judging solar roofs

**Relevant** means the document helps *install* panels on a flat roof.

<script>document.body.dataset.pwned = 'script'</script>
<img src=x onerror="document.body.dataset.pwned = 'img'">

- [the code](javascript:document.body.dataset.pwned='link')
- [the manual](https://example.org/manual)
"""


def _guidelines_state(page: Any) -> dict[str, Any]:
    return dict(
        page.evaluate(
            """() => { const b = document.getElementById('guidelines-body');
                 return {html: b.innerHTML, scripts: b.querySelectorAll('script,img').length,
                         strong: [...b.querySelectorAll('strong')].map(s => s.textContent),
                         hrefs: [...b.querySelectorAll('a')].map(a => a.getAttribute('href')),
                         pwned: document.body.dataset.pwned || null}; }"""
        )
    )


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_guidelines_open_on_the_first_visit_only_and_are_sanitised(
    env: dict[str, Any],
    width: int,
    height: int,
) -> None:
    task = seed_task(env["db"], assessor_id=env["user_id"], docs=relevance_docs(6), k=2, seed=5)
    coll = collection_of(env, task.task_id)
    collections.set_guidelines(db=env["db"], collection_id=coll, markdown=GUIDELINES)
    context, page = new_page(env, width, height)
    try:
        open_task(page, env, task.task_id)
        page.wait_for_selector("#guidelines-panel:not([hidden])")  # opened by itself
        state = _guidelines_state(page)
        assert state["strong"] == ["Relevant"]
        assert state["scripts"] == 0 and state["pwned"] is None
        assert "&lt;script&gt;" in state["html"]  # shown as text
        assert state["hrefs"] == ["https://example.org/manual"]  # no javascript: link
        link = page.locator("#guidelines-body a")
        assert link.get_attribute("target") == "_blank"  # never leaves the task
        assert link.get_attribute("rel") == "noopener noreferrer"
        # Focus stayed on the judging area: the answer keys still work with the panel open.
        bar = bar_box(page)
        assert in_viewport(page, ".actions", height)
        shot(page, "t1-guidelines", width)
        page.keyboard.press("ArrowLeft")
        wait_next(page, 0)
        assert len(live_judgments(env["db"], task.task_id)) == 1
        assert page.locator("#guidelines-panel:not([hidden])").count() == 1
        page.keyboard.press("g")
        assert page.locator("#guidelines-panel").is_hidden()
        assert bar_box(page) == bar  # opening and closing moved nothing
        # Second visit (reload, and another task of the same collection): closed.
        open_task(page, env, task.task_id)
        page.wait_for_load_state("load")
        assert page.locator("#guidelines-panel").is_hidden()
        other = seed_task(
            env["db"], assessor_id=env["user_id"], docs=relevance_docs(4), k=1, seed=5
        )
        with env["db"].write() as s:  # the same collection as the first task
            s.get(Task, other.task_id).collection_id = coll
        open_task(page, env, other.task_id)
        page.wait_for_load_state("load")
        assert page.locator("#guidelines-panel").is_hidden()
        # G (or ?) opens them at will, with focus in the text; Esc closes.
        page.keyboard.press("?")
        page.wait_for_selector("#guidelines-panel:not([hidden])")
        assert page.evaluate("() => document.activeElement.id") == "guidelines-body"
        assert in_viewport(page, ".actions", height)
        page.keyboard.press("Escape")
        assert page.locator("#guidelines-panel").is_hidden()
        assert page.evaluate("() => document.activeElement.id") == "judge-main"
        # Changed guidelines open once more.
        collections.set_guidelines(
            db=env["db"], collection_id=coll, markdown=GUIDELINES + "\nNew: PDFs count.\n"
        )
        open_task(page, env, task.task_id)
        page.wait_for_selector("#guidelines-panel:not([hidden])")
        assert "New: PDFs count." in page.inner_text("#guidelines-body")
        assert _guidelines_state(page)["pwned"] is None
    finally:
        context.close()


def test_no_guidelines_no_automatic_panel(env: dict[str, Any]) -> None:
    task = seed_task(env["db"], assessor_id=env["user_id"], docs=relevance_docs(4), k=1, seed=1)
    context, page = new_page(env, 1280, 800)
    try:
        open_task(page, env, task.task_id)
        page.wait_for_load_state("load")
        assert page.locator("#guidelines-panel").is_hidden()
        page.keyboard.press("g")
        page.wait_for_selector("#guidelines-panel:not([hidden])")
        assert "No guidelines" in page.inner_text("#guidelines-body")
    finally:
        context.close()


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_admin_edits_guidelines_with_a_sanitised_preview(
    env: dict[str, Any],
    width: int,
    height: int,
) -> None:
    from tests.e2e.web_support import add_user

    task = seed_task(env["db"], assessor_id=env["user_id"], docs=relevance_docs(3), k=1, seed=1)
    coll = collection_of(env, task.task_id)
    boss = f"boss{width}"
    add_user(env["db"], boss, "boss password 1", role="admin")
    context = env["browser"].new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        page.goto(f"{env['server'].url}/login?next=/admin/collections/{coll}")
        page.fill("#username", boss)
        page.fill("#password", "boss password 1")
        page.click("button[type=submit]")
        page.wait_for_selector("#guidelines-form")
        page.fill("#g-markdown", GUIDELINES)
        page.click("#guidelines-form button[value=preview]")
        page.wait_for_selector("#guidelines-preview strong")
        preview = page.locator("#guidelines-preview")
        assert "Preview (not saved yet)" in page.inner_text("#guidelines-preview-title")
        assert preview.locator("strong").all_inner_texts() == ["Relevant"]
        assert preview.locator("script, img").count() == 0
        assert "<script>" in preview.inner_text()  # shown as text
        assert page.evaluate("() => document.body.dataset.pwned || null") is None
        assert page.input_value("#g-markdown") == GUIDELINES  # the text is kept
        assert (
            collections.get_guidelines(db=env["db"], collection_id=coll, viewer=None).markdown == ""
        )
        preview.scroll_into_view_if_needed()
        page.screenshot(
            path=str(ARTIFACTS / f"admin-guidelines-preview{'' if width > 800 else '-phone'}.png")
        )
        page.click("#guidelines-form button[value=save]")
        page.wait_for_selector(".flash")
        assert "Guidelines saved." in page.inner_text(".flashes")
        saved = collections.get_guidelines(db=env["db"], collection_id=coll, viewer=None).markdown
        assert saved == GUIDELINES
    finally:
        context.close()
