"""The machine visible when it fails (docs/machine-judges.md#when-the-machine-fails), against
the stand-in server on 127.0.0.1 (tests/app/llm_standin.py; no real model is reachable from
the tests): an ``llm`` task whose endpoint returns 500, times out or returns garbage on every
call is judged to the end by the person (nothing lost: the truth's top k), while its calls
are counted with the last error on the task's line of the progress API and page, a
``calls_failing`` alarm is raised on the task and shown on the collection and machine pages
and by ``heapjudge admin progress``; a judge that cannot be made where the worker runs (no
model) raises it instead of a traceback. The endpoint check (CLI, REST, the machine page's
button with its CSRF and role checks) reports the latency, the model and the error."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from app.cli import cli
from app.kernel.models import MachineFailureAlarm
from app.machine import health
from app.machine.llm import CallReport
from tests.app.conftest import Api
from tests.app.machine.llm_standin import StandInModel, StandInServer
from tests.app.machine.test_llm_end_to_end import create, judge, live_log, top
from tests.app.machine_support import point_at_standin, text_collection
from tests.app.web.support import hidden_csrf, login

KEY = f"sk-fail-{uuid.uuid4().hex}"
#: (stand-in command, its value, what the last error says)
FAILURES = {
    "500": ("500", None, "HTTP 500"),
    "timeout": ("slow", 3.0, "timed out"),
    "garbage": ("garbage", None, "the reply is not JSON"),
}


@pytest.fixture(scope="module")
def coll(api: Api) -> tuple[int, dict[str, dict[str, float]], dict[str, float]]:
    api.add_user("ana")
    return text_collection(api, f"failing-{uuid.uuid4().hex[:6]}", ("q1", "q2", "q3"), 8, 31)


@pytest.fixture(scope="module")
def server(
    api: Api,
    coll: tuple[int, dict[str, dict[str, float]], dict[str, float]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[StandInServer]:
    with (
        pytest.MonkeyPatch.context() as mp,
        StandInServer(StandInModel(coll[2], seed=5), api_key=KEY) as standin,
    ):
        queue = tmp_path_factory.mktemp("q") / "q.db"
        point_at_standin(
            mp, api, standin.base_url, KEY, str(queue),
            llm_retries=0, llm_timeout_seconds=0.4, llm_concurrency=16,
        )  # fmt: skip
        yield standin


def progress(api: Api, cid: int) -> dict[str, Any]:
    r = api.get("admin", f"/api/v1/admin/collections/{cid}/progress")
    assert r.status_code == 200, r.text
    return dict(r.json())


def page(api: Api, path: str) -> str:
    login(api.client, "admin", "pw-admin-secret")
    try:
        r = api.client.get(path)
        assert r.status_code == 200, r.text
        return r.text
    finally:
        api.client.cookies.clear()


@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_failing_endpoint_is_shown_and_people_finish(
    api: Api,
    coll: tuple[int, dict[str, dict[str, float]], dict[str, float]],
    server: StandInServer,
    failure: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cid, truth, _ = coll
    kind, value, says = FAILURES[failure]
    qid = {"500": "q1", "timeout": "q2", "garbage": "q3"}[failure]
    monkeypatch.setattr(api.db.settings, "llm_model", f"failing-{uuid.uuid4().hex[:6]}")
    before = server.requests
    server.script(kind, 100_000, value)
    try:
        task_id = create(api, cid, qid, f"fail-{failure}")
        judge(api, task_id, truth[qid])
    finally:
        server._script.clear()
    assert server.requests > before  # the machine was asked
    # people were asked everything, nothing is lost: the truth's top k
    rows = live_log(api, task_id)
    assert rows and all(j.source == "person" for j in rows)
    assert api.get("admin", f"/api/v1/tasks/{task_id}/result").json()["top"] == top(truth[qid])
    # the progress API: the task's calls, all failed, the last error; the alarm
    report = progress(api, cid)
    (entry,) = [t for t in report["tasks"] if t["id"] == task_id]
    calls = entry["machine_calls"]
    assert calls["calls"] > 0 and calls["failed"] == calls["calls"]
    assert says in calls["last_error"] and calls["last_error_at"]
    assert (calls["timed_out"] == calls["calls"]) == (failure == "timeout")
    (alarm,) = [a for a in report["machine_alarms"] if a["task_id"] == task_id]
    assert alarm["kind"] == health.CALLS_FAILING and says in alarm["evidence"]
    job = re.search(r"(\d+) of (\d+) machine calls gave no opinion", alarm["evidence"])
    assert job and job.group(1) == job.group(2) and int(job.group(1)) > 0
    # the collection's page (the task's line and the alarm) and the machine page
    fragment = page(api, f"/admin/collections/{cid}/progress-fragment")
    assert (
        'data-testid="machine-alarm"' in fragment
        and 'data-testid="task-machine-failures"' in fragment
    )
    assert says in fragment
    machine = page(api, "/admin/machine")
    assert f"task {task_id}" in machine and says in machine
    assert 'data-testid="machine-failures"' in machine
    # the usage API and the CLI's progress
    usage = api.get("admin", f"/api/v1/admin/collections/{cid}/machine/usage").json()
    (study,) = [u for u in usage["studies"] if u["plan"] == f"fail-{failure}"]
    assert says in study["last_error"] and study["failed"] + study["malformed"] > 0
    out = (
        CliRunner()
        .invoke(cli, ["admin", "progress", str(cid), "--database-url", api.db.url])
        .stdout
    )
    assert f"ALARM calls_failing: task {task_id}:" in out


def test_no_model_where_the_worker_runs_raises_the_alarm_not_a_traceback(
    api: Api,
    coll: tuple[int, dict[str, dict[str, float]], dict[str, float]],
    server: StandInServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The task is made where the model is set; the worker's settings have none (the judge
    configured only in the CLI's environment): the job records it and people finish."""
    cid, truth, _ = coll
    task_id = create(api, cid, "q1", "fail-unset")
    monkeypatch.setattr(api.db.settings, "llm_model", "")
    judge(api, task_id, truth["q1"])
    report = progress(api, cid)
    (entry,) = [t for t in report["tasks"] if t["id"] == task_id]
    assert "not configured" in entry["machine_calls"]["last_error"]
    assert any(a["task_id"] == task_id for a in report["machine_alarms"])


def test_an_answer_clears_the_alarm(api: Api, coll: Any, server: StandInServer) -> None:
    cid, _truth, _ = coll
    task_id = create(api, cid, "q2", f"fail-clear-{uuid.uuid4().hex[:4]}")
    failing = CallReport(sent=4, failed=4, last_error="HTTP 503")
    assert health.record_task_calls(api.db, task_id, failing) is True
    assert health.record_task_calls(api.db, task_id, failing) is True  # still one alarm
    with api.db.read() as s:
        mine = [a for a in s.query(MachineFailureAlarm).filter_by(task_id=task_id)]
    assert len(mine) == 1 and mine[0].cleared_at is None
    assert health.record_task_calls(api.db, task_id, CallReport(sent=2, answered=2)) is False
    assert not [a for a in health.open_alarms(api.db, cid) if a["task_id"] == task_id]
    entry = next(t for t in progress(api, cid)["tasks"] if t["id"] == task_id)
    assert entry["machine_calls"]["calls"] == 10 and entry["machine_calls"]["failed"] == 8


# ------------------------------------------------------------------------------ the check
def check_cli(api: Api, base_url: str, *, timeout: float = 2.0) -> Any:
    env = {
        "HEAPJUDGE_LLM_BASE_URL": base_url,
        "HEAPJUDGE_LLM_MODEL": "standin-check",
        "HEAPJUDGE_LLM_TIMEOUT_SECONDS": str(timeout),
        "HEAPJUDGE_LLM_API_KEY": KEY,
    }
    return CliRunner().invoke(cli, ["admin", "machine", "check"], env=env)


def test_the_check_command_reports_latency_model_and_errors(api: Api, server: Any) -> None:
    fine = check_cli(api, server.base_url)
    assert fine.exit_code == 0, fine.output
    assert "machine check: ok" in fine.stdout and "model standin-check" in fine.stdout
    assert "latency " in fine.stdout and " ms" in fine.stdout
    assert "answered by standin-check" in fine.stdout
    for name, (kind, value, says) in FAILURES.items():
        server.script(kind, 1, value)
        result = check_cli(api, server.base_url, timeout=0.4)
        assert result.exit_code == 1, (name, result.output)
        assert "machine check: FAILED" in result.stdout and says in result.stdout, result.stdout
    down = check_cli(api, "http://127.0.0.1:9/v1")  # nothing listens on the discard port
    assert down.exit_code == 1 and "no reply" in down.stdout
    as_json = CliRunner().invoke(
        cli,
        ["admin", "machine", "check", "--json"],
        env={"HEAPJUDGE_LLM_BASE_URL": server.base_url, "HEAPJUDGE_LLM_MODEL": ""},
    )
    report = json.loads(as_json.stdout)
    assert as_json.exit_code == 1 and report["ok"] is False and "not configured" in report["error"]
    assert KEY not in fine.stdout + as_json.stdout


def test_the_check_over_rest_is_admin_only(api: Api, server: Any) -> None:
    api.add_user(f"pat-{uuid.uuid4().hex[:4]}")
    r = api.post("admin", "/api/v1/admin/machine/check")
    assert r.status_code == 200 and r.json()["ok"] is True and r.json()["answer"] in ("A", "B")
    server.script("500", 1)
    failed = api.post("admin", "/api/v1/admin/machine/check").json()
    assert failed["ok"] is False and failed["error"] == "HTTP 500" and failed["status"] == 500
    assert api.post("ana", "/api/v1/admin/machine/check").status_code == 403


def test_the_machine_page_button_checks_the_endpoint(api: Api, server: Any) -> None:
    login(api.client, "admin", "pw-admin-secret")
    try:
        shown = api.client.get("/admin/machine")
        assert 'data-testid="machine-check-button"' in shown.text
        token = hidden_csrf(shown.text)
        server.script("slow", 1, 3.0)
        r = api.client.post("/admin/machine/check", data={"csrf_token": token})
        assert r.status_code == 200 and 'data-testid="machine-check-error"' in r.text
        assert "timed out" in r.text
        r = api.client.post("/admin/machine/check", data={"csrf_token": token})
        assert 'data-testid="machine-check-state">ok<' in r.text and " ms<" in r.text
        forged = api.client.post("/admin/machine/check", data={"csrf_token": "forged"})
        assert forged.status_code == 403
    finally:
        api.client.cookies.clear()
    login(api.client, "ana", "pw-ana-secret")
    try:
        token = hidden_csrf(api.client.get("/tasks").text)
        refused = api.client.post("/admin/machine/check", data={"csrf_token": token})
        assert refused.status_code == 403
    finally:
        api.client.cookies.clear()
