"""Fixtures of the browser tests: one server (subprocess, temporary SQLite file) and one
logged-in browser per test module (``env``), and a fresh browser context per test (``ctx``).
Skip with a reason when Playwright or Chromium is missing, unless HEAPJUDGE_REQUIRE_BROWSER=1
(CI), where that is a failure."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.web_support import (
    PASSWORD,
    TIMEOUT_MS,
    LiveServer,
    add_user,
    init_db,
    launch_chromium,
    require_browser,
)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    executable = require_browser()
    from playwright.sync_api import sync_playwright

    tmp = tmp_path_factory.mktemp("web-e2e")
    db_path = tmp / "e2e.db"
    db = init_db(db_path)
    user_id = add_user(db, "ann", PASSWORD)
    server = LiveServer(db_path).start(timeout=120)
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw, executable)
            # Log in once through the form (keyboard only) and reuse the cookie.
            ctx = browser.new_context()
            ctx.set_default_timeout(TIMEOUT_MS)
            page = ctx.new_page()
            page.goto(server.url + "/login")
            # The username field has autofocus; wait for it so that no keystroke is lost on a
            # slow machine.
            page.wait_for_function("document.activeElement?.id === 'username'")
            page.keyboard.type("ann")
            page.keyboard.press("Tab")
            page.keyboard.type(PASSWORD)
            page.keyboard.press("Enter")
            page.wait_for_url(server.url + "/tasks")
            state = ctx.storage_state()
            ctx.close()
            yield {
                "db": db,
                "user_id": user_id,
                "server": server,
                "browser": browser,
                "state": state,
            }
            browser.close()
    finally:
        server.stop()
        db.dispose()


@pytest.fixture()
def ctx(env: dict[str, Any]) -> Iterator[Any]:
    context = env["browser"].new_context(
        storage_state=env["state"], viewport={"width": 1366, "height": 900}
    )
    context.set_default_timeout(TIMEOUT_MS)
    yield context
    context.close()
