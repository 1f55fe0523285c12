"""The *Resume the machine* button in Chromium (docs/admin-guide.md#the-machine-alarm): an
admin opens the collection page with an active audit alarm (stored as the audits store it),
presses the button and is back on the page with the message, the alarm resumed by them and
the button gone; no console error."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from app.kernel.models import MachineAlarm, Task
from tests.e2e.web_support import add_user, logged_in_page, relevance_docs, seed_task

BOSS = "resume browser boss 1"


def test_the_admin_resumes_the_machine_with_the_button(env: dict[str, Any]) -> None:
    db = env["db"]
    seeded = seed_task(db, assessor_id=env["user_id"], docs=relevance_docs(4, prefix="r"))
    add_user(db, "resume-boss", BOSS, role="admin")
    with db.write() as s:
        task = s.scalar(select(Task).where(Task.id == seeded.task_id))
        assert task is not None
        cid = task.collection_id
        alarm = MachineAlarm(
            collection_id=cid, judge="bm25/k1=1.2/b=0.75/scale=1", task_id=task.id, audits=7,
            agree=1, claimed_wrong=0.1, log_ratio=3.1, last_judgment_id=0,
        )  # fmt: skip
        s.add(alarm)
        s.flush()
        alarm_id = alarm.id
    problems: list[str] = []
    page = logged_in_page(env["browser"], env["server"].url, "resume-boss", BOSS, problems)
    try:
        page.goto(f"{env['server'].url}/admin/collections/{cid}")
        page.wait_for_selector("[data-testid=machine-alarm]")
        page.click("[data-testid=machine-resume]")
        page.wait_for_selector(f"text=Machine alarm {alarm_id} resumed")
        assert page.url.endswith(f"/admin/collections/{cid}")
        assert page.locator("[data-testid=machine-resume]").count() == 0
    finally:
        page.close()
    with db.read() as s:
        row = s.get(MachineAlarm, alarm_id)
        assert row is not None and row.resumed_at is not None and row.resumed_by == "resume-boss"
    assert problems == []
