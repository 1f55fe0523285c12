"""The judging page's layout in a real headless Chromium at 1280x800 and 390x844: a notice
covers neither the query nor the progress bar (bounding boxes), a long query collapses to one
line by its toggle (keyboard) or Q and stays so for that task after a reload, and a long
document title cut by its card is reachable in full without a mouse (Tab, or T).

Skips with a reason when Playwright or Chromium is missing, unless
HEAPJUDGE_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.web_support import TIMEOUT_MS, open_task, relevance_docs, seed_task

pytestmark = pytest.mark.browser

SIZES = [(1280, 800), (390, 844)]
LONG_QUERY = " ".join(
    ["what has the solar panel industry done about flat roofs among them now"] * 8
)
LONG_TITLE = (
    "A very long document title that goes on about solar panels on flat roofs, ballast, "
    "drainage, membranes, wind uplift and the warranties of every part of the installation"
)


def new_page(env: dict[str, Any], width: int, height: int) -> tuple[Any, Any]:
    context = env["browser"].new_context(
        storage_state=env["state"], viewport={"width": width, "height": height}
    )
    context.set_default_timeout(TIMEOUT_MS)
    return context, context.new_page()


def box(page: Any, selector: str) -> dict[str, float]:
    found = page.locator(selector).bounding_box()
    assert found is not None, selector
    return dict(found)


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    """Whether two boxes share any area (touching edges do not count)."""
    return (
        a["x"] < b["x"] + b["width"] - 0.5
        and b["x"] < a["x"] + a["width"] - 0.5
        and a["y"] < b["y"] + b["height"] - 0.5
        and b["y"] < a["y"] + a["height"] - 0.5
    )


def long_task(env: dict[str, Any]) -> Any:
    docs = relevance_docs(6)
    docs[0]["title"] = LONG_TITLE
    docs[1]["title"] = LONG_TITLE + " (part two)"
    return seed_task(
        env["db"],
        assessor_id=env["user_id"],
        docs=docs,
        k=2,
        seed=1,
        query_title=LONG_QUERY,
        query_description="Find documents about installing solar panels on a flat roof. " * 3,
    )


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_notices_cover_neither_the_query_nor_the_progress_bar(
    env: dict[str, Any], width: int, height: int
) -> None:
    task = long_task(env)
    context, page = new_page(env, width, height)
    try:
        open_task(page, env, task.task_id)
        covered = ["#query-title", ".query-bar", "#progress-track", "#progress-text", ".actions"]
        page.keyboard.press("u")  # "Nothing to undo yet."
        page.wait_for_selector("#notice:not([hidden])")
        notice = box(page, "#notice")
        for selector in covered:
            assert not overlap(notice, box(page, selector)), (selector, notice)
        # A long notice (a broken document's full title) runs over the documents, not up.
        page.evaluate(
            "(t) => { document.getElementById('notice-text').textContent = t; }",
            "Marked as broken: “" + LONG_TITLE + "” will not be asked again.",
        )
        notice = box(page, "#notice")
        for selector in covered[:-1]:
            assert not overlap(notice, box(page, selector)), (selector, notice)
        assert notice["x"] >= 0 and notice["x"] + notice["width"] <= width
        # Collapsed, the query still is not covered.
        page.keyboard.press("q")
        page.wait_for_selector(".query-bar.collapsed")
        notice = box(page, "#notice")
        assert not overlap(notice, box(page, "#query-title"))
        assert not overlap(notice, box(page, "#progress-track"))
    finally:
        context.close()


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_a_long_query_collapses_to_one_line_and_stays_so(
    env: dict[str, Any], width: int, height: int
) -> None:
    task = long_task(env)
    other = long_task(env)
    context, page = new_page(env, width, height)
    try:
        open_task(page, env, task.task_id)
        full = box(page, ".query-bar")["height"]
        line = page.evaluate(
            "() => parseFloat(getComputedStyle(document.getElementById('query-title')).lineHeight)"
        )
        assert full > 3 * line  # the long query takes several lines
        toggle = page.locator("#query-toggle")
        assert toggle.get_attribute("aria-expanded") == "true"
        # By keyboard: Tab to the toggle, Enter.
        for _ in range(30):
            if page.evaluate("() => document.activeElement?.id") == "query-toggle":
                break
            page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement?.id") == "query-toggle"
        page.keyboard.press("Enter")
        page.wait_for_selector(".query-bar.collapsed")
        assert toggle.get_attribute("aria-expanded") == "false"
        title = box(page, "#query-title")
        assert title["height"] <= line + 2  # one line
        assert (
            page.evaluate(
                "() => { const h = document.getElementById('query-title');"
                " return h.scrollWidth > h.clientWidth && getComputedStyle(h).textOverflow; }"
            )
            == "ellipsis"
        )
        assert box(page, ".query-bar")["height"] < full / 3
        assert page.locator("#query-description").is_hidden()
        # Remembered for this task after a reload, not for another task.
        open_task(page, env, task.task_id)
        assert page.locator(".query-bar.collapsed").count() == 1
        assert page.get_attribute("#query-toggle", "aria-expanded") == "false"
        open_task(page, env, other.task_id)
        assert page.locator(".query-bar.collapsed").count() == 0
        # Q expands it again (and that is remembered too).
        open_task(page, env, task.task_id)
        page.keyboard.press("q")
        page.wait_for_selector(".query-bar:not(.collapsed)")
        assert box(page, ".query-bar")["height"] == pytest.approx(full, abs=2)
        open_task(page, env, task.task_id)
        assert page.locator(".query-bar.collapsed").count() == 0
    finally:
        context.close()


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_a_long_document_title_is_reachable_without_a_mouse(
    env: dict[str, Any], width: int, height: int
) -> None:
    task = long_task(env)
    context, page = new_page(env, width, height)
    try:
        open_task(page, env, task.task_id)
        titles = page.locator("article.doc:not([hidden]) .doc-title")
        cut = "(h) => h.scrollWidth > h.clientWidth + 1"
        long_one = next(
            i for i in range(titles.count()) if titles.nth(i).inner_text().startswith(LONG_TITLE)
        )
        target = titles.nth(long_one)
        assert target.evaluate(cut)  # cut by the card's width
        # Tab reaches the title; focused, it is shown in full.
        for _ in range(40):
            if target.evaluate("(h) => h === document.activeElement"):
                break
            page.keyboard.press("Tab")
        assert target.evaluate("(h) => h === document.activeElement")
        assert not target.evaluate(cut)
        full = target.bounding_box()
        assert full is not None and full["width"] <= width
        # Keys still work from there (the title is not a trap): T shows every title in full.
        page.keyboard.press("Escape")
        page.keyboard.press("t")
        page.wait_for_selector(".docs.titles-full")
        for i in range(titles.count()):
            assert not titles.nth(i).evaluate(cut)
        page.keyboard.press("t")
        page.wait_for_selector(".docs:not(.titles-full)")
        # Hidden (preloaded) cards are out of the Tab order.
        page.keyboard.press("ArrowLeft")
        page.wait_for_function("() => document.getElementById('judge-main').dataset.seq !== '0'")
        assert page.evaluate(
            "() => [...document.querySelectorAll('article.doc[hidden]')].every(a => a.inert)"
        )
    finally:
        context.close()
