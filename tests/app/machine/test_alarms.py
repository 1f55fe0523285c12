"""Audits that act, through the service (docs/machine-judges.md#audits-that-act), SQLite and
Postgres: a BM25 machine the study's first queries trusted (it was right there) meets a person
who now ranks the other way; the audits contradict it, the sequential test raises the alarm
within the stated number of audited answers, the machine stops answering on the collection
(its later tasks get no machine answer and people finish them), ``GET .../machine/alarms``,
the progress page and ``heapjudge admin progress`` show the evidence, an assessor cannot read
it, and the admin resumes the machine (REST), once."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select
from starlette.testclient import TestClient
from typer.testing import CliRunner

from app.cli import cli
from app.kernel.models import Judgment, MachineAudit
from labeling.machine.trust import audits_to_alarm
from tests.app.conftest import Api
from tests.app.machine_support import machine_collection
from tests.app.web.support import login

# k = 10: at small k every answer risks more than the tolerance's share of max_loss allows
# without much evidence, and the study trusts the machine in too few strata to be audited.
N, K, QUERIES = 24, 10, 40
WARM = 20
BOSS = "alarm boss password 1"


@pytest.fixture(scope="module")
def coll(api: Api) -> tuple[int, dict[str, dict[str, int]]]:
    api.add_user("ada")
    return machine_collection(api, "alarms", queries=QUERIES, docs=N)


def create(api: Api, cid: int, qid: str) -> int:
    body = {
        "collection_id": cid,
        "query_id": qid,
        "assessor": "ada",
        "method": "topk",
        "k": K,
        "seed": 5,
        "options": {"strategy": "insertion+assist", "machine": {"source": "bm25"}},
    }
    r = api.post("admin", "/api/v1/tasks", json=body)
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def judge(api: Api, task_id: int, truth: dict[str, int], reverse: bool) -> None:
    body = api.get("ada", f"/api/v1/tasks/{task_id}/next").json()
    while not body["done"]:
        left, right = body["pair"]["left"]["doc_id"], body["pair"]["right"]["doc_id"]
        left_better = (truth[left] > truth[right]) != reverse
        data = {"seq": body["seq"], "left": left, "right": right}
        r = api.post(
            "ada",
            f"/api/v1/tasks/{task_id}/judgments",
            json={**data, "outcome": "left" if left_better else "right"},
        )
        assert r.status_code == 200, r.text
        body = r.json()


def machine_answers(api: Api, task_id: int) -> int:
    with api.db.read() as s:
        rows = s.scalars(
            select(Judgment).where(
                Judgment.task_id == task_id,
                Judgment.undone.is_(False),
                Judgment.source == "machine",
            )
        )
        return len(list(rows))


def test_a_machine_gone_wrong_raises_the_alarm_and_people_carry_on(
    api: Api, coll: tuple[int, dict[str, dict[str, int]]], database_url: str
) -> None:
    cid, truth = coll
    for q in range(WARM):  # the machine is right: the study trusts it
        judge(api, create(api, cid, f"q{q}"), truth[f"q{q}"], reverse=False)
    assert api.get("admin", f"/api/v1/admin/collections/{cid}/machine/alarms").json() == {
        "collection_id": cid,
        "active": False,
        "alarms": [],
    }
    raised_at = None
    for q in range(WARM, QUERIES):  # the person now ranks the other way
        task = create(api, cid, f"q{q}")
        judge(api, task, truth[f"q{q}"], reverse=True)
        found = api.get("admin", f"/api/v1/admin/collections/{cid}/machine/alarms").json()
        if found["active"] and raised_at is None:
            raised_at = q
        elif raised_at is not None:
            assert machine_answers(api, task) == 0  # stopped: people answered everything
    assert raised_at is not None and raised_at < QUERIES - 1
    alarm = found["alarms"][0]
    with api.db.read() as s:
        rows = list(s.scalars(select(MachineAudit).order_by(MachineAudit.judgment_id)))
    # Every person's answer on a question the machine had a side on is its stratum's
    # evidence; the tested ones are the audits.
    audits = [a for a in rows if a.tested]
    assert all(a.stratum is not None for a in rows) and len(rows) > len(audits) > 0
    assert all(a.claimed == 1.0 for a in rows if not a.tested)
    contradicted = [a for a in audits if a.wrong]
    assert alarm["active"] and alarm["judge"] == "bm25/k1=1.2/b=0.75/scale=1"
    assert alarm["audits"] <= 30
    # Every audit of the reversed person contradicted the machine, after the agreeing ones:
    # the alarm came within the stated number of contradicting audits.
    limit = audits_to_alarm(max(a.claimed for a in contradicted))
    assert alarm["audits"] - alarm["agree"] <= limit
    assert alarm["agreement"] == pytest.approx(alarm["agree"] / alarm["audits"])
    assert 0 < alarm["claimed_wrong"] < 0.5 and alarm["log_ratio"] >= 2.9957
    # The assessor cannot read it; the page and the CLI show it.
    assert api.get("ada", f"/api/v1/admin/collections/{cid}/machine/alarms").status_code == 403
    api.add_user("alarm-boss", role="admin", password=BOSS)
    client = TestClient(api.client.app)
    login(client, "alarm-boss", BOSS)
    page = client.get(f"/admin/collections/{cid}/progress-fragment")
    assert page.status_code == 200
    assert 'data-testid="machine-alarm"' in page.text and "worse than it claims" in page.text
    assert f"{alarm['agree']} of {alarm['audits']} audited answers" in page.text
    if database_url.startswith("sqlite"):
        out = CliRunner().invoke(
            cli, ["admin", "progress", "alarms", "--database-url", database_url]
        )
        assert out.exit_code == 0, out.output
        assert f"MACHINE ALARM {alarm['id']}" in out.output
        assert f"on {alarm['agree']} of {alarm['audits']} audited answers" in out.output
    # Resume: once; then the machine may answer again (a fresh test).
    url = f"/api/v1/admin/collections/{cid}/machine/alarms/{alarm['id']}/resume"
    r = api.post("admin", url)
    assert r.status_code == 200, r.text
    assert r.json()["active"] is False and r.json()["resumed_by"] == "admin"
    assert api.post("admin", url).status_code == 409
    missing = f"/api/v1/admin/collections/{cid}/machine/alarms/999999/resume"
    assert api.post("admin", missing).status_code == 404
    assert (
        api.get("admin", f"/api/v1/admin/collections/{cid}/machine/alarms").json()["active"]
        is False
    )
    again = create(api, cid, "q0")
    judge(api, again, truth["q0"], reverse=False)
    assert (
        api.get("admin", f"/api/v1/admin/collections/{cid}/machine/alarms").json()["active"]
        is False
    )


def test_bad_alarm_input_changes_nothing(api: Api, coll: Any) -> None:
    cid, _ = coll
    assert api.get("admin", "/api/v1/admin/collections/999999/machine/alarms").status_code == 404
    before = api.get("admin", f"/api/v1/admin/collections/{cid}/machine/alarms").json()
    r = api.post("admin", f"/api/v1/admin/collections/{cid}/machine/alarms/0/resume")
    assert r.status_code == 404 and "no machine alarm 0" in r.json()["detail"]
    r = api.post("admin", f"/api/v1/admin/collections/{cid}/machine/alarms/x/resume")
    assert r.status_code == 422
    assert api.get("admin", f"/api/v1/admin/collections/{cid}/machine/alarms").json() == before
