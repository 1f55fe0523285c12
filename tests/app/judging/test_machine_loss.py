"""The loss the machine's answers may have cost, where the admin reads it: the progress report
(REST and the collection page), summed per query and collection, and the ``machine`` block of
``topk-jsonl`` (labeling.study.uncertainty computes it; here: that every place shows the
figures of the task's own log, and (0, 0) without a machine)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

from app.judging.loop import replay_task
from app.judging.repository import live_judgments
from app.kernel.models import Judgment, MachineAudit, Task
from labeling.study.uncertainty import estimate_loss, machine_log
from tests.app.conftest import Api
from tests.app.machine_support import judge_consistently, machine_collection, machine_task

K = 5


@pytest.fixture(scope="module")
def study(api: Api) -> dict[str, Any]:
    api.add_user("lena")
    cid, truth = machine_collection(api, "loss", queries=8, docs=24, seed=5)
    # From a cold start the machine answers nothing until people's answers bound its error
    # in each stratum (docs/machine-judges.md#the-rule): six earlier queries give that
    # evidence, with a max_loss so small that the machine answers none of their questions.
    for qid in ("q2", "q3", "q4", "q5", "q6", "q7"):
        warm = machine_task(api, cid, qid, "lena", K, max_loss=1e-9)
        judge_consistently(api, "lena", warm, truth[qid])
    with_machine = machine_task(api, cid, "q0", "lena", K)
    without = machine_task(api, cid, "q1", "lena", K, machine=None)
    judge_consistently(api, "lena", with_machine, truth["q0"])
    judge_consistently(api, "lena", without, truth["q1"])
    return {"cid": cid, "with": with_machine, "without": without}


def stored_audits(api: Api, cid: int) -> list[tuple[float, bool]]:
    """The study's audits as stored (machine_audit's tested rows of live judgments), as the
    estimate takes them: (stated P(right), the person agreed)."""
    with api.db.read() as s:
        rows = s.execute(
            select(MachineAudit.claimed, MachineAudit.wrong)
            .join(Judgment, Judgment.id == MachineAudit.judgment_id)
            .where(
                MachineAudit.collection_id == cid,
                MachineAudit.tested.is_(True),
                Judgment.undone.is_(False),
            )
            .order_by(MachineAudit.judgment_id)
        ).all()
    return [(1.0 - c, not w) for c, w in rows]


def expected(api: Api, task_id: int, *, audited: bool = True) -> dict[str, Any]:
    """The estimate recomputed from the stored log and (``audited``) the stored audits."""
    with api.db.read() as s:
        task = s.get(Task, task_id)
        assert task is not None
        rows = live_judgments(s, task_id)
        cid = task.collection_id
        log = machine_log(replay_task(task, rows))
        seed = task.seed
    audits = stored_audits(api, cid) if audited else None
    return estimate_loss(log, seed=seed, audits=audits).to_json()


def test_the_progress_report_shows_each_task_s_estimate_and_sums_them(
    api: Api, study: dict[str, Any]
) -> None:
    r = api.get("admin", f"/api/v1/admin/collections/{study['cid']}/progress")
    assert r.status_code == 200, r.text
    report = r.json()
    tasks = {t["id"]: t for t in report["tasks"]}
    mine = tasks[study["with"]]["machine"]
    assert mine == expected(api, study["with"])
    assert mine["machine_answers"] == tasks[study["with"]]["machine_answers"] > 0
    assert mine["interval"][0] <= mine["interval"][1]
    none = tasks[study["without"]]["machine"]
    assert (none["machine_answers"], none["estimated_loss"], none["interval"]) == (0, 0.0, [0, 0])
    totals = report["totals"]["machine"]
    assert totals["tasks"] == 1 and totals["machine_answers"] == mine["machine_answers"]
    assert totals["estimated_loss"] == pytest.approx(mine["estimated_loss"])
    assert totals["interval"] == pytest.approx(mine["interval"])
    by_query = {q["query_id"]: q["machine"] for q in report["by_query"]}
    assert by_query["q1"]["tasks"] == 0 and by_query["q1"]["interval"] == [0, 0]
    # The audited interval (the study's stored audits, none or some), which spans the stated
    # replays' too (docs/machine-judges.md#the-uncertainty-the-machine-leaves).
    stated = expected(api, study["with"], audited=False)
    assert mine["interval"][0] <= stated["interval"][0]
    assert mine["interval"][1] >= stated["interval"][1]
    # Asked again: the same figures (seeded by the task, kept per log version).
    again = api.get("admin", f"/api/v1/admin/collections/{study['cid']}/progress").json()
    assert {t["id"]: t["machine"] for t in again["tasks"]}[study["with"]] == mine


def test_the_collection_page_shows_the_loss(api: Api, study: dict[str, Any]) -> None:
    from app.tasks.progress import collection_progress
    from app.web.collections import timeline_chart
    from app.web.templates import strict_environment

    report = collection_progress(db=api.db, collection_id=study["cid"])
    html = (
        strict_environment()
        .get_template("collections/_progress.html")
        .render(progress=report, chart=timeline_chart(report["timeline"]), usage=None, alarms=[])
    )
    mine = expected(api, study["with"])
    assert 'data-testid="machine-loss"' in html
    assert html.count('data-testid="task-machine-loss"') == 8  # the study: 6 warm-up tasks, 2 more
    text = f'{mine["estimated_loss"]:.3f} <span class="muted">(90%: '
    text += f"{mine['interval'][0]:.3f}–{mine['interval'][1]:.3f})"
    assert html.count(text) == 2  # the summary line and the task's row


def test_topk_exports_carry_the_machine_block(api: Api, study: dict[str, Any]) -> None:
    r = api.get(
        "admin",
        f"/api/v1/collections/{study['cid']}/export",
        params={"format": "topk-jsonl", "source": "all"},
    )
    assert r.status_code == 200, r.text
    records = {x["task_id"]: x for x in map(json.loads, r.text.splitlines())}
    block = records[study["with"]]["machine"]
    assert block == expected(api, study["with"])
    assert block["machine_answers"] == records[study["with"]]["machine_answers"]
    assert records[study["without"]]["machine"]["interval"] == [0, 0]
    agg = api.get(
        "admin",
        f"/api/v1/collections/{study['cid']}/export",
        params={"format": "topk-jsonl", "source": "borda"},
    )
    assert agg.status_code == 200, agg.text
    blocks = {x["query_id"]: x["machine"] for x in map(json.loads, agg.text.splitlines())}
    assert blocks["q0"]["tasks"] == 1
    assert blocks["q0"]["estimated_loss"] == pytest.approx(block["estimated_loss"])


def test_an_open_task_s_estimate_is_reused_for_a_few_answers(
    api: Api, study: dict[str, Any]
) -> None:
    from types import SimpleNamespace

    from app.judging.uncertainty import task_machine_loss

    with api.db.read() as s:
        task = s.get(Task, study["with"])
        assert task is not None
        rows = live_judgments(s, task.id)
        fields = ("id", "created_at", "seed", "method", "doc_ids", "k", "options")
        open_task = SimpleNamespace(**{f: getattr(task, f) for f in fields}, status="active")
    full = task_machine_loss(api.db, open_task, rows)
    # Fewer than `stale` answers later (here: one answer back): the same estimate.
    assert task_machine_loss(api.db, open_task, rows[:-1], stale=10) is full
    # Exact (stale 0): the shorter log's own estimate, which differs from the full one's.
    shorter = task_machine_loss(api.db, open_task, rows[:-1])
    assert shorter is not full
    assert shorter == estimate_loss(machine_log(replay_task(open_task, rows[:-1])), seed=task.seed)


def test_the_cli_progress_prints_the_summed_loss(
    api: Api, study: dict[str, Any], database_url: str
) -> None:
    from typer.testing import CliRunner

    from app.cli import cli

    r = CliRunner().invoke(cli, ["admin", "progress", "loss", "--database-url", database_url])
    assert r.exit_code == 0, r.output
    mine = expected(api, study["with"])
    low, high = mine["interval"]
    assert (
        f"machine: {mine['machine_answers']} answers in 1 tasks, estimated κ-NDCG loss "
        f"{mine['estimated_loss']:.3f} (90%: {low:.3f}-{high:.3f}, summed)"
    ) in r.output


def test_the_estimate_takes_the_stored_audits(api: Api, study: dict[str, Any]) -> None:
    """Audits stored for the study (here: people's answers of the task marked as audits that
    contradicted claims of 0.3, as if the machine were worse than it said) change the
    progress report's estimate to the audited one of exactly those audits."""
    cid = study["cid"]
    url = f"/api/v1/admin/collections/{cid}/progress"
    before = {t["id"]: t["machine"] for t in api.get("admin", url).json()["tasks"]}
    with api.db.write() as s:
        rows = list(
            s.scalars(
                select(MachineAudit)
                .where(MachineAudit.task_id == study["with"], MachineAudit.tested.is_(False))
                .order_by(MachineAudit.judgment_id)
                .limit(6)
            )
        )
        assert len(rows) == 6
        for row in rows:
            row.tested, row.claimed, row.wrong = True, 0.3, True
    audits = stored_audits(api, cid)
    assert audits and sum(1 for p, right in audits if p == pytest.approx(0.7) and not right) >= 6
    after = {t["id"]: t["machine"] for t in api.get("admin", url).json()["tasks"]}
    assert after[study["with"]] == expected(api, study["with"])
    assert after[study["with"]] != before[study["with"]]
    # Audits wrong far more often than claimed: the audited loss is above the stated one.
    stated = expected(api, study["with"], audited=False)
    assert after[study["with"]]["estimated_loss"] > stated["estimated_loss"]
