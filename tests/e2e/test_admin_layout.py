"""The admin pages a team lead reads during a study, in a real headless Chromium against a
real uvicorn, at 1280×800 and on a phone (390×844): no page is wider than the screen (the
progress chart scales, tables scroll in their own box), the export form's default format
downloads on a text collection (LETOR disabled for want of features, the grades link not
offered before any graded task is finished), the plan preview's strategies are chosen without
going back, and the analysis lists the study's queries only."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from app.kernel.db import Database
from app.kernel.models import Task
from tests.e2e.web_support import LiveServer, add_user, init_db, launch_chromium, require_browser

ASSESSORS = ("ann", "ben")
QUERIES = 6
STUDY = ("101", "102", "103")  # the first plan's queries; the others stay unplanned
DOCS = 10
WORDS = ("river", "bank", "money", "loan", "water", "fish", "boat", "rate", "flood", "bridge")
VIEWPORTS = ({"width": 1280, "height": 800}, {"width": 390, "height": 844})
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
FITS = "document.scrollingElement.scrollWidth <= window.innerWidth"
#: The elements that stick out on the right (to name them when a page is too wide).
WIDEST = """() => [...document.querySelectorAll('body *')]
  .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
  .filter(e => !e.closest('.table-wrap, pre, details:not([open])'))
  .slice(0, 8)
  .map(e => `${e.tagName.toLowerCase()}#${e.id}.${e.className}: `
    + `${Math.round(e.getBoundingClientRect().right)}`)"""


def _call(server: LiveServer, method: str, path: str, token: str, body: Any = None) -> Any:
    data = body if isinstance(body, bytes) else json.dumps(body).encode() if body else None
    kind = "application/x-ndjson" if isinstance(body, bytes) else "application/json"
    req = urllib.request.Request(
        server.url + path,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": kind},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def _token(server: LiveServer, user: str, password: str) -> str:
    data = urllib.parse.urlencode({"username": user, "password": password}).encode()
    with urllib.request.urlopen(server.url + "/api/v1/auth/token", data=data, timeout=10) as r:
        return str(json.loads(r.read())["access_token"])


def _rows() -> bytes:
    """A text collection (no features): QUERIES queries of DOCS documents, with a long query
    text and a long document title (what used to stretch the page)."""
    rows = []
    for q in range(1, QUERIES + 1):
        for d in range(DOCS):
            rows.append(
                {
                    "query_id": str(100 + q),
                    "query": f"{WORDS[q]} {WORDS[(q + 3) % DOCS]} " + "and more words " * 8,
                    "doc_id": f"d{d}",
                    "title": f"Document {d} about {WORDS[d]}",
                    "text": " ".join(WORDS[(d + i) % DOCS] for i in range(12)),
                }
            )
    return "\n".join(json.dumps(r) for r in rows).encode()


def _judge(server: LiveServer, token: str, task_id: int) -> int:
    """Answer a task to its end (document number decides); the number of judgments."""
    body = _call(server, "GET", f"/api/v1/tasks/{task_id}/next", token)
    count = 0
    while not body["done"]:
        pair = body["pair"]
        left, right = pair["left"]["doc_id"], pair["right"]["doc_id"]
        outcome = "left" if int(left[1:]) > int(right[1:]) else "right"
        answer = {"seq": body["seq"], "left": left, "right": right, "outcome": outcome}
        body = _call(server, "POST", f"/api/v1/tasks/{task_id}/judgments", token, answer)
        count += 1
    return count


def _fits(page: Any, what: str) -> None:
    width = page.evaluate("document.scrollingElement.scrollWidth")
    inner = page.evaluate("window.innerWidth")
    assert page.evaluate(FITS), (
        f"{what}: the page is {width} px wide in a {inner} px viewport: {page.evaluate(WIDEST)}"
    )


@pytest.mark.browser
def test_admin_pages_fit_and_say_what_is_so(tmp_path: Path) -> None:
    executable = require_browser()
    from playwright.sync_api import expect, sync_playwright

    db_path = tmp_path / "layout-e2e.db"
    db = init_db(db_path)
    add_user(db, "lead", "lead password 1", role="admin")
    for name in ASSESSORS:
        add_user(db, name, f"{name} password 1")
    db.dispose()
    server = LiveServer(db_path).start()
    try:
        admin = _token(server, "lead", "lead password 1")
        cid = _call(server, "POST", "/api/v1/collections", admin, {"name": "layout study"})["id"]
        _call(server, "POST", f"/api/v1/collections/{cid}/import", admin, _rows())
        plan = {
            "collection_id": cid,
            "assessors": list(ASSESSORS),
            "query_ids": list(STUDY),
            "shifts": [0],
            "k": 3,
            "name": "first",
        }
        created = _call(server, "POST", "/api/v1/admin/plans", admin, plan)["task_ids"]
        prog = _call(server, "GET", f"/api/v1/admin/collections/{cid}/progress", admin)
        topk = next(t for t in prog["tasks"] if t["method"] == "topk")
        who = _token(server, topk["assessor"], f"{topk['assessor']} password 1")
        assert _judge(server, who, topk["id"]) > 0  # one finished top-k task, no graded one
        with sync_playwright() as pw:
            browser = launch_chromium(pw, executable)
            context = browser.new_context(accept_downloads=True, viewport=VIEWPORTS[0])
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(server.url + "/login?next=/admin")
            page.fill("input[name=username]", "lead")
            page.fill("input[name=password]", "lead password 1")
            page.click("button[type=submit]")
            page.wait_for_url("**/admin")
            collection = f"{server.url}/admin/collections/{cid}"
            page.goto(collection)

            # The export form: qrels by default, LETOR disabled (no features), the grades
            # link not offered before a graded task is finished; the default downloads.
            assert page.eval_on_selector("#x-format", "s => s.value") == "qrels"
            assert page.eval_on_selector("#x-format option[value=letor]", "o => o.disabled")
            labels = page.eval_on_selector_all("#x-format option", "os => os.map(o => o.text)")
            assert max(len(text) for text in labels) <= 40, labels
            assert page.locator("a[data-format=grades-qrels]").count() == 0
            expect(page.locator("span[data-format=grades-qrels]")).to_contain_text(
                "no finished graded tasks yet"
            )
            with page.expect_download() as info:
                page.click("#export-form button[type=submit]")
            lines = Path(info.value.path()).read_text().splitlines()
            assert len(lines) == DOCS and {line.split()[0] for line in lines} == {topk["query_id"]}

            # The plan preview: every strategy side by side, another one chosen in place.
            page.fill("#query_ids", "104,105")
            page.select_option("#pool_mode", "bm25")
            page.fill("#pool_n", "8")
            page.select_option("#prior", "bm25")
            page.fill("#shifts", "0")
            page.fill("#k", "3")
            page.click("text=Preview plan")
            expect(page.locator("h1")).to_contain_text("Plan preview")
            expect(page.locator("#plan-pool")).to_contain_text("Pool: top 8 by BM25")
            rows = page.locator("#strategy-table tbody tr")
            expect(rows).to_have_count(4)
            expect(page.locator("#strategy-table tr.row-chosen")).to_have_attribute(
                "data-strategy", "heap"
            )
            preview_url = page.url
            page.click("#strategy-table tr[data-strategy=insertion] button")
            expect(page.locator("#strategy-table tr.row-chosen")).to_have_attribute(
                "data-strategy", "insertion"
            )
            expect(page.locator("#plan-cost")).to_contain_text("T1 strategy insertion")
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            for viewport, suffix in zip(VIEWPORTS, ("", "-phone"), strict=True):
                page.set_viewport_size(viewport)
                _fits(page, f"plan preview at {viewport['width']} px")
                shot = ARTIFACTS / f"admin-plan-strategies{suffix}.png"
                page.screenshot(path=str(shot), full_page=True)
            page.set_viewport_size(VIEWPORTS[0])
            page.click("text=Create 4 tasks")
            expect(page.locator(".flash-success")).to_contain_text("Created 4 tasks")
            assert page.url.split("?")[0].rstrip("/") != preview_url

            # The collection page and the analysis on both screens.
            analysis = f"{collection}/analysis"
            for viewport in VIEWPORTS:
                page.set_viewport_size(viewport)
                page.goto(collection)
                page.wait_for_selector("#progress svg")
                _fits(page, f"collection page at {viewport['width']} px")
                box = page.locator("#progress svg").bounding_box()
                assert box is not None and box["x"] + box["width"] <= viewport["width"]
                if viewport is VIEWPORTS[1]:
                    shot = ARTIFACTS / "admin-collection-study-phone.png"
                    page.screenshot(path=str(shot), full_page=True)
                page.goto(analysis + "/calibration")
                _fits(page, f"calibration report at {viewport['width']} px")
                page.goto(analysis)
                _fits(page, f"analysis at {viewport['width']} px")
            # "By query" counts the study's queries (five of six have tasks), once each.
            expect(page.locator("#per-query + details summary")).to_contain_text(
                "By query (5, the study's)"
            )
            # No graded pair is judged by two assessors: one line says so, no "undefined".
            expect(page.locator("#chi2-note")).to_have_count(1)
            assert "undefined" not in page.inner_text("main")
            assert errors == []
            browser.close()
    finally:
        server.stop()
    check = Database.from_url(f"sqlite:///{db_path}")
    with check.read() as s:
        tasks = [t for t in s.scalars(select(Task)) if t.id not in set(created)]
    check.dispose()
    assert len(tasks) == 4
    assert {t.options["strategy"] for t in tasks if t.method == "topk"} == {"insertion"}
