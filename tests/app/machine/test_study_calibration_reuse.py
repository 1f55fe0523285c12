"""A task's start reuses the study calibration its process last computed for the collection
and judge while the log has grown by less than a tenth of what it learned from
(``app.machine.service.CALIBRATION_REFRESH``), and computes it afresh once the log has grown
more (docs/machine-judges.md#the-service). What each task froze is what its replays use."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from app.kernel.models import Judgment, TaskMachine
from app.machine.service import CALIBRATION_REFRESH
from tests.app.conftest import Api
from tests.app.machine_support import judge_consistently, machine_collection, machine_task

K = 4


def _frozen(api: Api, task_id: int) -> dict[str, Any] | None:
    with api.db.read() as s:
        row = s.get(TaskMachine, task_id)
        assert row is not None
        return row.calibration


def _latest(api: Api) -> int:
    with api.db.read() as s:
        return int(s.scalar(select(func.max(Judgment.id))) or 0)


def test_a_start_reuses_the_study_calibration_until_the_log_grows(api: Api) -> None:
    api.add_user("ann")
    cid, truth = machine_collection(api, "calibration-reuse", queries=5, docs=16, seed=5)
    # Two finished tasks give the study its answers.
    for qid in ("q0", "q1"):
        judge_consistently(api, "ann", machine_task(api, cid, qid, "ann", K), truth[qid])
    # The first start computes the calibration from them.
    first = machine_task(api, cid, "q2", "ann", K)
    body = api.get("ann", f"/api/v1/tasks/{first}/next").json()
    frozen = _frozen(api, first)
    assert frozen is not None and frozen["answers"] > 0
    learned = frozen["answers"]
    threshold = max(1, int(learned * CALIBRATION_REFRESH))
    at = _latest(api)
    # One more person's answer: the log grows by fewer judgments than the threshold ...
    left, right = body["pair"]["left"]["doc_id"], body["pair"]["right"]["doc_id"]
    outcome = "left" if truth["q2"][left] > truth["q2"][right] else "right"
    answer = {"seq": body["seq"], "left": left, "right": right, "outcome": outcome}
    assert api.post("ann", f"/api/v1/tasks/{first}/judgments", json=answer).status_code == 200
    assert 0 < _latest(api) - at < threshold, (at, _latest(api), threshold)
    # ... so the next start freezes the same calibration (a fresh one would count that answer).
    second = machine_task(api, cid, "q3", "ann", K)
    api.get("ann", f"/api/v1/tasks/{second}/next")
    reused = _frozen(api, second)
    assert reused is not None
    # The evidence per stratum is read afresh (a count per stratum, cheap): it has the new
    # answer (when the machine had a side on its question), the calibration does not.
    strata, first_strata = reused.pop("strata"), dict(frozen).pop("strata")
    assert reused == {k: v for k, v in frozen.items() if k != "strata"}
    assert 0 <= sum(strata["answers"]) - sum(first_strata["answers"]) <= 1
    # Once the log has grown by the threshold, a start learns from the new answers.
    judge_consistently(api, "ann", first, truth["q2"])
    assert _latest(api) - at >= threshold
    third = machine_task(api, cid, "q4", "ann", K)
    api.get("ann", f"/api/v1/tasks/{third}/next")
    later = _frozen(api, third)
    assert later is not None and later["answers"] > learned
