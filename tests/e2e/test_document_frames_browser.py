"""Documents framed by URL, in a real headless Chromium against a real uvicorn: the judging
page and a second opinion show both documents (their text visible inside the frames, their
own inline styles applied), without one Content Security Policy violation anywhere (the
page's ``securitypolicyviolation`` events and every console error), keyboard judging and
scrolling work through the preloaded frames, and pause hides the frames.

Skips with a reason when Playwright or Chromium is missing, unless
HEAPJUDGE_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.auth.tokens import Identity
from tests.app.web.test_document_frames import routed_second_opinion
from tests.e2e.web_support import PASSWORD, add_user, open_task, seed_task, shown_pair, wait_next

pytestmark = pytest.mark.browser

#: Every document has a line of its own words, an inline style and enough text to scroll.
DOCS = [
    {
        "doc_id": f"f{i}",
        "title": f"Framed {i}",
        "html": f'<p class="own" style="color:#a00">words of document f{i}</p>'
        + "<p>solar panels on a flat roof, filler text to scroll through.</p>" * 120,
    }
    for i in range(8)
]

#: Collects the page's CSP violations (any frame's are reported to the page's console too).
WATCH = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__csp.push(e.violatedDirective + ' ' + e.blockedURI);
});
"""


def watch(page: Any) -> list[str]:
    """Console errors (a CSP violation is one, in any frame) and uncaught exceptions."""
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
    page.add_init_script(WATCH)
    return problems


def frame_text(page: Any, slot: str) -> str:
    return str(
        page.frame_locator(f"article[data-slot={slot}] iframe").locator("p.own").inner_text()
    )


def frame_of(page: Any, slot: str) -> Any:
    return page.locator(f"article[data-slot={slot}] iframe").element_handle().content_frame()


def assert_both_shown(page: Any) -> None:
    left, right = shown_pair(page)
    assert frame_text(page, "left") == f"words of document {left}"
    assert frame_text(page, "right") == f"words of document {right}"
    own = page.frame_locator("article[data-slot=left] iframe").locator("p.own")
    assert own.evaluate("p => getComputedStyle(p).color") == "rgb(170, 0, 0)"
    for slot in ("left", "right"):
        assert page.locator(f"article[data-slot={slot}] iframe").is_visible()
        src = str(page.get_attribute(f"article[data-slot={slot}] iframe", "src"))
        assert "/document?doc=" in src
        assert page.get_attribute(f"article[data-slot={slot}] iframe", "srcdoc") is None


def test_judging_page_shows_framed_documents_without_a_violation(
    env: dict[str, Any], ctx: Any
) -> None:
    task = seed_task(env["db"], assessor_id=env["user_id"], docs=DOCS, k=3, seed=5)
    page = ctx.new_page()
    problems = watch(page)
    open_task(page, env, task.task_id)
    page.wait_for_load_state("load")
    assert_both_shown(page)
    # Keyboard scrolling navigates the frame within its own document (nothing reloads).
    left = frame_of(page, "left")
    page.keyboard.press("Shift+ArrowDown")
    left.wait_for_function("() => scrollY > 0")
    assert frame_text(page, "left").startswith("words of document")
    # Keyboard judging: the next pairs come from the preloaded frames, shown in full.
    for _ in range(4):
        seq = int(page.get_attribute("#judge-main", "data-seq"))
        page.wait_for_function(
            "() => document.getElementById('judge-main').getAttribute('aria-busy') !== 'true'"
        )
        page.wait_for_timeout(300)  # the lookahead preloads the next documents
        page.keyboard.press("ArrowLeft")
        wait_next(page, seq)
        assert_both_shown(page)
    # Pause hides the documents (not only covers them); resuming shows them again.
    page.keyboard.press("p")
    page.wait_for_selector("#pause-overlay:not([hidden])")
    for slot in ("left", "right"):
        assert not page.locator(f"article[data-slot={slot}] iframe").is_visible()
    assert (
        page.evaluate("() => getComputedStyle(document.querySelector('.docs')).visibility")
        == "hidden"
    )
    page.keyboard.press("p")
    page.wait_for_selector("#pause-overlay", state="hidden")
    assert_both_shown(page)
    # Highlighting off loads other renderings (other URLs), still without a violation.
    page.keyboard.press("h")
    page.wait_for_function(
        "() => [...document.querySelectorAll('article.doc:not([hidden]) iframe')]"
        ".every(f => f.getAttribute('src').includes('hl=0'))"
    )
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)
    assert_both_shown(page)
    assert page.evaluate("() => window.__csp") == []
    assert problems == []


def test_second_opinion_shows_its_two_documents_without_a_violation(
    env: dict[str, Any], ctx: Any
) -> None:
    zed = add_user(env["db"], "zed-frames", PASSWORD)
    _task, item, _docs = routed_second_opinion(
        env["db"], Identity(zed, "zed-frames", "assessor"), "ann"
    )
    page = ctx.new_page()
    problems = watch(page)
    page.goto(f"{env['server'].url}/second-opinions/{item}")
    page.wait_for_selector("#judge-main[data-seq]")
    page.wait_for_load_state("load")
    for slot in ("left", "right"):
        doc = str(page.get_attribute(f"article[data-slot={slot}] iframe", "src"))
        assert f"/second-opinions/{item}/document?doc=" in doc
        body = page.frame_locator(f"article[data-slot={slot}] iframe").locator("body")
        assert body.inner_text().strip() != ""
    assert page.evaluate("() => window.__csp") == []
    assert problems == []
