"""The collection page's export form in a real headless Chromium against a real uvicorn.

Before the form had its own route it posted to the REST endpoint: every download was an empty
file (the form's empty ``plan=`` filtered out every task, which also hid real errors such as a
LETOR export without features), and errors came back as a raw JSON page. Now a download has
the data, an error is shown on the page with the form keeping its values, and the LETOR formats
are not offered on a collection without features."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.kernel.models import Judgment, Query, Task
from labeling.protocol.session import open_session
from labeling.protocol.types import PairAnswer
from tests.app.exports.test_hostile_identifiers import answers_preferring_earlier
from tests.e2e.web_support import (
    LiveServer,
    add_user,
    init_db,
    launch_chromium,
    relevance_docs,
    require_browser,
    seed_task,
)


def _finish(db, task_id: int, doc_ids: list[str], k: int, seed: int) -> list[str]:
    """Store a complete log for the task (as the judging service would), mark it done, and
    return its expected qrels lines (κ-labels from the labeling core replaying the log)."""
    answers = answers_preferring_earlier("topk", doc_ids, seed, k=k)
    with db.write() as s:
        for seq, a in enumerate(answers):
            assert isinstance(a, PairAnswer)
            s.add(
                Judgment(
                    task_id=task_id,
                    seq=seq,
                    left_doc=a.left,
                    right_doc=a.right,
                    outcome=a.outcome,
                    active_ms=100,
                )
            )
        task = s.get(Task, task_id)
        assert task is not None
        task.status = "done"
        task.finished_at = datetime.now(UTC)
        qid = s.get(Query, task.query_id).external_id  # type: ignore[union-attr]
    result = open_session("topk", doc_ids, k=k, seed=seed, answers=answers).result()
    ordered = list(result.top) + sorted(result.rest)
    return [f"{qid} 0 {d} {result.kappa_labels[d]}" for d in ordered]


#: Selectors by field name and button text, which the old form had too: run against the old
#: page, this test fails on its first download (an empty file), not on a missing element.
DOWNLOAD = "button:text('Download')"


@pytest.mark.browser
def test_export_form_downloads_data_and_shows_errors_on_the_page(tmp_path: Path) -> None:
    executable = require_browser()
    from playwright.sync_api import expect, sync_playwright

    db_path = tmp_path / "export-e2e.db"
    db = init_db(db_path)
    add_user(db, "chief", "chief password 1", role="admin")
    judge = add_user(db, "ann", "ann password 1")
    # Documents without feature vectors: a LETOR export must say so (422), not be empty.
    task = seed_task(db, assessor_id=judge, docs=relevance_docs(6), k=2, seed=3)
    expected = _finish(db, task.task_id, task.doc_ids, k=2, seed=3)
    with db.read() as s:
        cid = s.get(Task, task.task_id).collection_id  # type: ignore[union-attr]
    db.dispose()
    assert len(expected) == 6 and expected[0].endswith(" 2")
    server = LiveServer(db_path).start()
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw, executable)
            context = browser.new_context(accept_downloads=True)
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(server.url + "/login?next=/admin")
            page.fill("input[name=username]", "chief")
            page.fill("input[name=password]", "chief password 1")
            page.click("button[type=submit]")
            page.wait_for_url("**/admin")
            page.goto(f"{server.url}/admin/collections/{cid}")

            # Bug 1: the form's download has the data (its plan field is empty).
            page.select_option("select[name=format]", "qrels")
            with page.expect_download() as info:
                page.click(DOWNLOAD)
            assert Path(info.value.path()).read_text().splitlines() == expected

            # LETOR without features is not offered on this text collection: the option is
            # disabled and says why (the REST export still answers 422 naming the documents).
            letor = page.locator("select[name=format] option[value=letor]")
            assert letor.is_disabled() and letor.inner_text() == "LETOR with features (no features)"

            # Bug 2: an unknown assessor is a message on the page, not a JSON body.
            page.select_option("select[name=format]", "topk-jsonl")
            page.fill("input[name=assessor]", "nobody")
            page.fill("input[name=plan]", "study:A1")
            page.click(DOWNLOAD)
            expect(page.locator("#export-error")).to_contain_text("no user named 'nobody'")
            assert "{" not in page.inner_text("#export-error")
            assert page.input_value("select[name=format]") == "topk-jsonl"
            assert page.input_value("input[name=assessor]") == "nobody"
            assert page.input_value("input[name=plan]") == "study:A1"
            assert page.locator("h1").inner_text().startswith("c")  # the collection page

            assert errors == []
            browser.close()
    finally:
        server.stop()
