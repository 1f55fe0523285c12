"""A pool from runs in a real headless Chromium: on the collection page, choose two run files,
MaxMean with a budget, build; the pool's page lists each document's runs and ranks; a bad file
comes back with its line; no console error (CSP) on either page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from app.kernel.models import CampaignPool, Task
from tests.e2e.web_support import (
    LiveServer,
    add_user,
    init_db,
    launch_chromium,
    logged_in_page,
    require_browser,
    seed_task,
)

DOCS = [{"doc_id": f"t{i}", "title": f"Text {i}", "text": f"text number {i}"} for i in range(5)]


def pool_study(tmp_path: Path) -> tuple[Any, int, str]:
    """A database with an admin ``chief``, an assessor ``ann`` and a graded task on a
    collection of five documents: ``(db, collection id, query id)``."""
    db = init_db(tmp_path / "pools.db")
    add_user(db, "chief", "chief password 1", role="admin")
    ann = add_user(db, "ann", "ann password 1")
    task = seed_task(db, assessor_id=ann, docs=DOCS, method="graded", collection="runs")
    with db.read() as s:
        cid = s.scalar(select(Task.collection_id).where(Task.id == task.task_id))
    return db, int(cid), f"q{cid}"


@pytest.mark.browser
def test_pool_from_runs_in_chromium(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    executable = require_browser()
    db, cid, q = pool_study(tmp_path)
    (tmp_path / "A.run").write_text(f"{q} Q0 t0 1 3 A\n{q} Q0 t1 2 2 A\n{q} Q0 t2 3 1 A\n")
    (tmp_path / "B.run").write_text(f"{q} Q0 t3 1 3 B\n{q} Q0 t0 2 2 B\n")
    (tmp_path / "bad.run").write_text(f"{q} Q0 t0 1 3 X\n{q} Q0 t1 x 2 X\n")
    server = LiveServer(tmp_path / "pools.db").start()
    problems: list[str] = []
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw, executable)
            page = logged_in_page(browser, server.url, "chief", "chief password 1", problems)
            page.goto(f"{server.url}/admin/collections/{cid}")
            page.set_input_files("#pool-runs", [str(tmp_path / "A.run"), str(tmp_path / "bad.run")])
            page.click("#pools-form button[type=submit]")
            page.wait_for_selector("#pools-errors")
            assert "bad.run, line 2: rank 'x' is not an integer" in page.inner_text("#pools-errors")
            page.set_input_files("#pool-runs", [str(tmp_path / "A.run"), str(tmp_path / "B.run")])
            page.select_option("#pool-method", "maxmean")
            page.fill("#pool-budget", "3")
            page.click("#pools-form button[type=submit]")
            page.wait_for_selector("#pool-documents")
            rows = [
                [c.strip() for c in r.split("\t")]
                for r in page.inner_text("#pool-documents tbody").splitlines()
            ]
            browser.close()
    finally:
        server.stop()
    # Fused: t0 = 1/61 + 1/62, t3 = 1/61, t1 = 1/62, t2 = 1/63. MaxMean without judgments:
    # A (tie, run order) t0 → A at 1/3; B at 1/2 → t3; B's prefix t3 then t0 (judged) →
    # B at 1/4; A at 1/3 → t1.
    assert rows == [
        [q, "t0", "1", "1", "0.03252", "A (1), B (2)"],
        [q, "t3", "2", "2", "0.01639", "B (1)"],
        [q, "t1", "3", "3", "0.01613", "A (2)"],
        [q, "t2", "4", "—", "0.01587", "A (3)"],
    ]
    # The refused form's page comes with status 422, which Chromium logs as a failed load.
    assert [p for p in problems if "status of 422" not in p] == []
    with db.read() as s:
        assert s.scalar(select(func.count()).select_from(CampaignPool)) == 1
    db.dispose()
