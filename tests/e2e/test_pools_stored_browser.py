"""A pool from stored runs in a real headless Chromium: on the runs page, "Pool these runs"
with the two stored runs ticked, MaxMean with a budget; the pool's page lists the same
documents, runs and ranks as the pool from the same files (tests/e2e/test_pools_browser.py);
none ticked comes back with the error; no console error (CSP) on either page."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.collections.uploads import UploadedFile
from app.kernel.models import CampaignPool
from app.runs import service as runs
from tests.e2e.test_pools_browser import pool_study
from tests.e2e.web_support import (
    LiveServer,
    launch_chromium,
    logged_in_page,
    require_browser,
)


@pytest.mark.browser
def test_pool_these_runs_in_chromium(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    executable = require_browser()
    db, cid, q = pool_study(tmp_path)
    files = {
        "A": f"{q} Q0 t0 1 3 A\n{q} Q0 t1 2 2 A\n{q} Q0 t2 3 1 A\n".encode(),
        "B": f"{q} Q0 t3 1 3 B\n{q} Q0 t0 2 2 B\n".encode(),
    }
    stored = [UploadedFile(name, content) for name, content in files.items()]
    runs.upload_runs(db=db, collection_id=cid, files=stored)
    server = LiveServer(tmp_path / "pools.db").start()
    problems: list[str] = []
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw, executable)
            page = logged_in_page(browser, server.url, "chief", "chief password 1", problems)
            page.goto(f"{server.url}/admin/collections/{cid}/runs")
            form = "#pool-runs-form"
            for name in files:
                page.uncheck(f"{form} input[name=stored_runs][value={name}]")
            page.click(f"{form} button[type=submit]")
            page.wait_for_selector("#pool-runs-errors")
            assert "tick at least one stored run" in page.inner_text("#pool-runs-errors")
            for name in files:
                page.check(f"{form} input[name=stored_runs][value={name}]")
            page.select_option("#pool-runs-method", "maxmean")
            page.fill("#pool-runs-budget", "3")
            page.click(f"{form} button[type=submit]")
            page.wait_for_selector("#pool-documents")
            flash = page.inner_text("body")
            rows = [
                [c.strip() for c in r.split("\t")]
                for r in page.inner_text("#pool-documents tbody").splitlines()
            ]
            browser.close()
    finally:
        server.stop()
    assert "built from 2 stored runs: 4 documents pooled, 3 picked" in flash
    # The rows of the pool from the same files (tests/e2e/test_pools_browser.py).
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
