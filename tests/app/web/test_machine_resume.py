"""The progress section's *Resume the machine* button (docs/admin-guide.md#the-machine-alarm):
an active audit alarm of the collection shows a CSRF-checked form; an admin's post resumes the
machine as the REST endpoint does (once: again, or an unknown alarm, is an error message and
changes nothing); a forged token or an assessor's session is refused and changes nothing.
The alarm row is stored directly (how the audits raise it: tests/app/machine/test_alarms.py)."""

from __future__ import annotations

import re

from sqlalchemy import select
from starlette.testclient import TestClient

from app.kernel.models import MachineAlarm
from tests.app.admin_support import make_collection
from tests.app.conftest import Api
from tests.app.web.test_admin_pages import login
from tests.app.web.test_pages import hidden_csrf

BOSS = "resume boss password 1"
ANNA = "resume anna password 1"


def _alarm(api: Api, cid: int) -> int:
    with api.db.write() as s:
        row = MachineAlarm(
            collection_id=cid,
            judge="bm25/k1=1.2/b=0.75/scale=1",
            task_id=None,
            audits=9,
            agree=1,
            claimed_wrong=0.12,
            log_ratio=3.2,
            last_judgment_id=0,
        )
        s.add(row)
        s.flush()
        return int(row.id)


def _state(api: Api, alarm_id: int) -> tuple[object, object]:
    with api.db.read() as s:
        row = s.scalars(select(MachineAlarm).where(MachineAlarm.id == alarm_id)).one()
        return row.resumed_at, row.resumed_by


def test_the_resume_button_resumes_the_machine_once(api: Api) -> None:
    cid, _ = make_collection(api, "resume-button", queries=1, docs=4)
    alarm_id = _alarm(api, cid)
    api.add_user("resume-boss", role="admin", password=BOSS)
    api.add_user("resume-anna", password=ANNA)
    action = f"/admin/collections/{cid}/machine/alarms/{alarm_id}/resume"

    anna = TestClient(api.client.app)
    login(anna, "resume-anna", ANNA)
    token = hidden_csrf(anna.get("/tasks").text)
    refused = anna.post(action, data={"csrf_token": token}, follow_redirects=False)
    assert refused.status_code == 403
    assert _state(api, alarm_id) == (None, None)

    boss = TestClient(api.client.app)
    login(boss, "resume-boss", BOSS)
    fragment = boss.get(f"/admin/collections/{cid}/progress-fragment")
    assert 'data-testid="machine-alarm"' in fragment.text
    form = re.search(r'<form method="post" action="([^"]+)"[^>]*machine-resume-form', fragment.text)
    assert form is not None and form.group(1) == action
    assert 'data-testid="machine-resume"' in fragment.text
    token = hidden_csrf(fragment.text)
    forged = boss.post(action, data={"csrf_token": "forged"}, follow_redirects=False)
    assert forged.status_code == 403
    missing = boss.post(action, data={}, follow_redirects=False)
    assert missing.status_code == 403
    assert _state(api, alarm_id) == (None, None)

    done = boss.post(action, data={"csrf_token": token}, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == f"/admin/collections/{cid}"
    resumed_at, by = _state(api, alarm_id)
    assert resumed_at is not None and by == "resume-boss"
    page = boss.get(f"/admin/collections/{cid}")
    assert f"Machine alarm {alarm_id} resumed" in page.text
    assert 'data-testid="machine-resume"' not in page.text  # no active alarm any more
    rest = api.get("admin", f"/api/v1/admin/collections/{cid}/machine/alarms").json()
    assert rest["active"] is False and rest["alarms"][0]["resumed_by"] == "resume-boss"

    # Again: resumed already (the REST's 409), an error message, nothing changed.
    again = boss.post(action, data={"csrf_token": token})
    assert "The machine was not resumed" in again.text and "resumed already" in again.text
    assert _state(api, alarm_id) == (resumed_at, by)
    # An alarm of another collection, or none: the REST's 404.
    other = boss.post(
        f"/admin/collections/{cid + 1000}/machine/alarms/{alarm_id}/resume",
        data={"csrf_token": token},
    )
    assert f"no machine alarm {alarm_id} on collection {cid + 1000}" in other.text
    assert _state(api, alarm_id) == (resumed_at, by)
