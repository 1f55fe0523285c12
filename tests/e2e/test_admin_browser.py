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
    return {"topics": topics, "documents": docs, "qrels": qrels}


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
            page.click("text=Import >> nth=-1")
            expect(page.locator(".flash-success")).to_contain_text("Imported 32 rows")
            # Plan: the paper's rotation for 4 assessors x 4 queries, single assignment.
            page.fill("#shifts", "0")
            page.fill("#k", "3")
            page.click("text=Preview plan")
            expect(page.locator("h1")).to_contain_text("Plan preview")
            expect(page.locator("text=All constraints hold")).to_be_visible()
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "admin-plan-preview.png"), full_page=True)
            page.click("text=Create 8 tasks")
            expect(page.locator(".flash-success")).to_contain_text("Created 8 tasks")
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
            # Download an export from the page.
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
