"""Admin pages in a real headless Chromium against a real uvicorn: create a collection, import
files, preview and create a plan, watch progress move (without reloading) while a simulated
assessor judges over REST, and download an export. Screenshots go to artifacts/screenshots."""

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

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
ASSESSORS = ("amy", "bill", "cy", "dee")


def _files(tmp: Path) -> dict[str, Path]:
    topics = tmp / "topics.txt"
    topics.write_text(
        "".join(f"<top>\n<num> {q}\n<title> query number {q}\n</top>\n" for q in range(1, 5))
    )
    docs = tmp / "docs.jsonl"
    docs.write_text(
        "".join(
            json.dumps({"doc_id": f"d{i}", "title": f"Doc {i}", "text": f"text {i}"}) + "\n"
            for i in range(8)
        )
    )
    qrels = tmp / "qrels.txt"
    qrels.write_text(
        "".join(f"{q} 0 d{i} {(i * 3 + q) % 5}\n" for q in range(1, 5) for i in range(8))
    )
    run = tmp / "run.txt"
    # Per query, d0..d7 scored so that the run's top 6 leaves out d0 and d1.
    run.write_text(
        "".join(f"{q} Q0 d{i} {8 - i} {i / 10:.1f} sys\n" for q in range(1, 5) for i in range(8))
    )
    return {"topics": topics, "documents": docs, "qrels": qrels, "run": run}


def _api(server: LiveServer, method: str, path: str, token: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        server.url + path,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def _token(server: LiveServer, user: str, password: str) -> str:
    data = urllib.parse.urlencode({"username": user, "password": password}).encode()
    with urllib.request.urlopen(server.url + "/api/v1/auth/token", data=data, timeout=10) as r:
        return json.loads(r.read())["access_token"]


def _judge_some(server: LiveServer, token: str, task_id: int, steps: int) -> int:
    done = 0
    body = _api(server, "GET", f"/api/v1/tasks/{task_id}/next", token)
    while not body["done"] and done < steps:
        if body.get("pair"):
            left, right = body["pair"]["left"]["doc_id"], body["pair"]["right"]["doc_id"]
            outcome = "left" if int(left[1:]) > int(right[1:]) else "right"
            answer = {"seq": body["seq"], "left": left, "right": right, "outcome": outcome}
        else:
            answer = {"seq": body["seq"], "doc_id": body["document"]["doc_id"], "grade": 2}
        body = _api(server, "POST", f"/api/v1/tasks/{task_id}/judgments", token, answer)
        done += 1
    return done


@pytest.mark.browser
def test_admin_console_in_browser(tmp_path: Path) -> None:
    executable = require_browser()
    from playwright.sync_api import expect, sync_playwright

    db_path = tmp_path / "admin-e2e.db"
    db = init_db(db_path)
    add_user(db, "chief", "chief password 1", role="admin")
    for name in ASSESSORS:
        add_user(db, name, f"{name} password 1")
    db.dispose()
    files = _files(tmp_path)
    server = LiveServer(db_path).start()
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw, executable)
            context = browser.new_context(
                accept_downloads=True, viewport={"width": 1280, "height": 900}
            )
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(server.url + "/login?next=/admin")
            page.fill("input[name=username]", "chief")
            page.fill("input[name=password]", "chief password 1")
            page.click("button[type=submit]")
            page.wait_for_url("**/admin")
            # Create a collection.
            page.fill("#new-name", "browser study")
            page.click("text=Create collection")
            page.wait_for_url("**/admin/collections/*")
            cid = int(page.url.rstrip("/").split("/")[-1])
            # Import TREC topics + JSONL documents + qrels.
            page.select_option("#kind", "trec")
            page.set_input_files("#f-topics", str(files["topics"]))
            page.set_input_files("#f-documents", str(files["documents"]))
            page.set_input_files("#f-qrels", str(files["qrels"]))
            page.click("button:text-is('Import')")
            expect(page.locator(".flash-success")).to_contain_text(
                "Imported 32 query–document pairs"
            )
            # Plan: the paper's rotation for 4 assessors x 4 queries, single assignment.
            # Pool: the top 6 of an uploaded TREC run per query.
            page.fill("#shifts", "0")
            page.fill("#k", "3")
            page.select_option("#pool_mode", "run")
            page.set_input_files("#pool_run", str(files["run"]))
            page.fill("#pool_run_depth", "6")
            page.click("text=Preview plan")
            expect(page.locator("h1")).to_contain_text("Plan preview")
            expect(page.locator("text=All constraints hold")).to_be_visible()
            expect(page.locator("text=top 6 of the uploaded run")).to_be_visible()
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "admin-plan-preview.png"), full_page=True)
            page.click("text=Create 8 tasks")
            expect(page.locator(".flash-success")).to_contain_text("Created 8 tasks")
            # The run went from the preview page to the created tasks intact (hidden field).
            check = Database.from_url(f"sqlite:///{db_path}")
            with check.read() as s:
                pools = {tuple(t.doc_ids) for t in s.scalars(select(Task))}
            check.dispose()
            assert pools == {("d7", "d6", "d5", "d4", "d3", "d2")}
            total = page.locator("[data-testid=judgments-total]")
            expect(total).to_have_text("0")
            # A simulated assessor judges over REST; the page refreshes its numbers by itself.
            admin_token = _token(server, "chief", "chief password 1")
            prog = _api(server, "GET", f"/api/v1/admin/collections/{cid}/progress", admin_token)
            task = next(t for t in prog["tasks"] if t["method"] == "topk")
            token = _token(server, task["assessor"], f"{task['assessor']} password 1")
            made = _judge_some(server, token, task["id"], 5)
            assert made == 5
            expect(total).to_have_text("5", timeout=15_000)
            page.screenshot(path=str(ARTIFACTS / "admin-collection.png"), full_page=True)
            # Download an export from the page. The export section says what exists when the
            # page loads (the pairs CSV link appears once there are judgments): reload it.
            page.reload()
            with page.expect_download() as info:
                page.click("text=pairs CSV")
            download = info.value
            content = Path(download.path()).read_text()
            assert content.splitlines()[0].startswith("query_id,assessor,task_id,seq")
            assert len(content.splitlines()) == 1 + 5
            page.goto(server.url + "/admin")
            page.screenshot(path=str(ARTIFACTS / "admin-home.png"), full_page=True)
            assert errors == []
            # An assessor gets the 403 page.
            other = browser.new_context().new_page()
            other.goto(server.url + "/login?next=/admin")
            other.fill("input[name=username]", "amy")
            other.fill("input[name=password]", "amy password 1")
            other.click("button[type=submit]")
            resp = other.goto(server.url + "/admin")
            assert resp is not None and resp.status == 403
            browser.close()
    finally:
        server.stop()


@pytest.mark.browser
def test_not_relevant_button_names_the_challenger_side(tmp_path: Path) -> None:
    """The pairwise page's "not relevant" button and its key help say which side is Step 2's
    new document ("Left/Right is not relevant"; Top/Bottom when stacked on a narrow screen),
    from the ``challenger`` field of ``/next``, and the generic text when there is none. The
    expected side comes from the labeling core replaying the stored log, not from the UI."""
    executable = require_browser()
    from playwright.sync_api import sync_playwright

    from labeling.protocol.session import open_session
    from labeling.protocol.types import PairAnswer
    from tests.e2e.web_support import (
        live_judgments,
        on_done_page,
        relevance_docs,
        seed_task,
        shown_pair,
        wait_next,
    )

    db_path = tmp_path / "nr-e2e.db"
    db = init_db(db_path)
    user_id = add_user(db, "nina", "nina password 1")
    opts = {"not_relevant": True}
    task = seed_task(db, assessor_id=user_id, docs=relevance_docs(7), k=2, seed=4, options=opts)
    server = LiveServer(db_path).start()
    seen: dict[str, int] = {"left": 0, "right": 0, "none": 0}
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw, executable)
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.set_default_timeout(90_000)
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(server.url + "/login?next=/tasks")
            page.fill("input[name=username]", "nina")
            page.fill("input[name=password]", "nina password 1")
            page.click("button[type=submit]")
            page.wait_for_url("**/tasks")
            page.goto(f"{server.url}/tasks/{task.task_id}")
            page.wait_for_selector("#judge-main[data-seq]")
            narrow_checked = False
            while not on_done_page(page):
                log = live_judgments(db, task.task_id)
                reference = open_session(
                    "topk",
                    task.doc_ids,
                    k=2,
                    seed=4,
                    options=opts,
                    answers=[
                        PairAnswer(str(r.left_doc), str(r.right_doc), r.outcome)  # type: ignore[arg-type]
                        for r in log
                    ],
                )
                left, right = shown_pair(page)
                challenger = reference.pending_challenger
                side = "left" if challenger == left else "right" if challenger == right else None
                expected = f"{side.title()} is not relevant" if side else None
                expected = expected or "New document is not relevant"
                assert page.inner_text("#nr-label") == expected
                assert page.inner_text("#nr-key-label") == expected
                seen[side or "none"] += 1
                if side and not narrow_checked:
                    # Stacked documents on a narrow screen: Top / Bottom.
                    page.set_viewport_size({"width": 400, "height": 800})
                    stacked = {"left": "Top", "right": "Bottom"}[side]
                    assert page.inner_text("#nr-label") == f"{stacked} is not relevant"
                    page.set_viewport_size({"width": 1280, "height": 900})
                    narrow_checked = True
                page.keyboard.press("ArrowLeft")
                wait_next(page, len(log))
            assert errors == []
            browser.close()
    finally:
        server.stop()
        db.dispose()
    # Both sides and the generic text (heap building has no challenger) all occurred.
    assert seen["left"] > 0 and seen["right"] > 0 and seen["none"] > 0, seen
