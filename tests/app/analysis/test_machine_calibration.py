"""The calibration report of a collection's machine judges from the stored judgments
(docs/machine-judges.md#the-calibration-report): REST JSON and SVG, the analysis page and
``heapjudge analysis calibration COLLECTION``; SQLite and Postgres.

The study: queries of 24 documents whose text holds the query's term ``tf`` times (``tf`` a
seeded permutation of 0..23, the truth), so the ``bm25`` machine is right on every pair; the
person answers by ``tf`` but flips a seeded 10% of the answers, so the machine's agreement
with people is not trivially 1. The oracle: the records rebuilt here from the pairs export
(source, sides, outcome), the tasks' stored scores (raw = σ(s_left − s_right)) and their
frozen calibration, the audits found by replaying each person's question from the log
prefix (not the service's one incremental replay), fed to the core's report_from_records.
"""

from __future__ import annotations

import json
import math
import random
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from app.analysis.calibration import AUDITS, judge_records, judge_report, replay_digest
from app.analysis.machine import machine_evidence
from app.auth import sessions
from app.cli import cli
from app.judging.loop import answer_of
from app.kernel.models import Judgment, MachineScore, Task, TaskMachine
from app.machine.judges import calibrator_from_json
from app.users import service as users
from labeling.machine.calibration_report import CalibrationRecord, report_from_records
from labeling.machine.judges import JudgeQuery
from labeling.machine.opinion import JudgeOpinion
from labeling.protocol.session import open_session
from tests.app.conftest import Api
from tests.app.machine_support import machine_collection, machine_task

N, K, QUERIES, FLIP = 24, 5, 6, 0.1
BM25 = "bm25/k1=1.2/b=0.75/scale=1"


def _collection(api: Api, name: str) -> tuple[int, dict[str, dict[str, int]]]:
    return machine_collection(api, name, queries=QUERIES, docs=N, seed=5, word="pear")


def _task(api: Api, cid: int, qid: str, machine: bool) -> int:
    return machine_task(api, cid, qid, "cal", K, "bm25" if machine else None, seed=7)


def _judge(api: Api, task_id: int, truth: dict[str, int], rng: random.Random) -> None:
    """The noisy person answers until done."""
    body = api.get("cal", f"/api/v1/tasks/{task_id}/next").json()
    while not body["done"]:
        left, right = body["pair"]["left"]["doc_id"], body["pair"]["right"]["doc_id"]
        right_answer = truth[left] > truth[right]
        if rng.random() < FLIP:
            right_answer = not right_answer
        outcome = "left" if right_answer else "right"
        answer = {"seq": body["seq"], "left": left, "right": right, "outcome": outcome}
        r = api.post("cal", f"/api/v1/tasks/{task_id}/judgments", json=answer)
        assert r.status_code == 200, r.text
        body = r.json()


@pytest.fixture(scope="module")
def study(api: Api) -> dict[str, Any]:
    api.add_user("cal")
    cid, truth = _collection(api, "calibrated")
    rng = random.Random(11)
    machine_tasks = []
    for q in range(QUERIES):
        qid = f"q{q}"
        task_id = _task(api, cid, qid, machine=True)
        _judge(api, task_id, truth[qid], rng)
        machine_tasks.append(task_id)
    people_only = _task(api, cid, "q0", machine=False)  # not the machine's: left out
    _judge(api, people_only, truth["q0"], rng)
    unstarted = _task(api, cid, "q1", machine=True)  # no answer yet: counted as a task only
    empty, _ = _collection(api, "no-machine")
    return {"cid": cid, "tasks": machine_tasks, "unstarted": unstarted, "empty": empty}


def _audit_seqs(api: Api, task_id: int) -> set[int]:
    """Each person's question replayed from its log prefix with the task's machine."""
    with api.db.read() as s:
        task = s.get(Task, task_id)
        tm = s.get(TaskMachine, task_id)
        assert task is not None and tm is not None and tm.calibration is not None
        rows = list(
            s.scalars(
                select(Judgment)
                .where(Judgment.task_id == task_id, Judgment.undone.is_(False))
                .order_by(Judgment.seq)
            )
        )
        scores = {
            d: sc
            for d, sc in s.execute(
                select(MachineScore.doc_id, MachineScore.score).where(
                    MachineScore.task_id == task_id
                )
            )
        }
        entries = [answer_of(j) for j in rows]
        from app.machine.judges import StoredJudge, strata_from_json

        judge = StoredJudge(tm.judge, scores)
        machine = JudgeOpinion(
            judge,
            JudgeQuery(str(task.query_id), ""),
            calibrator_from_json(tm.calibration),
            stratum_evidence=strata_from_json(tm.calibration),
        )
        out = set()
        for j in rows:
            if j.source == "person":
                session = open_session(
                    "topk",
                    task.doc_ids,
                    k=task.k,
                    seed=task.seed,
                    options=task.options,
                    answers=entries[: j.seq],
                    machine=machine,
                )
                if session.pending_is_audit:
                    out.add(j.seq)
    return out


def _oracle(api: Api, study: dict[str, Any], bins: int) -> tuple[dict[str, Any], int, int]:
    """The report of the records rebuilt from the export, the scores and the calibrations;
    with the number of records and of audits among them."""
    r = api.get(
        "admin", f"/api/v1/collections/{study['cid']}/export", params={"format": "pairs-jsonl"}
    )
    assert r.status_code == 200, r.text
    lines = [json.loads(x) for x in r.text.splitlines()]
    records, audit_flags = [], []
    with api.db.read() as s:
        for task_id in study["tasks"]:
            tm = s.get(TaskMachine, task_id)
            assert tm is not None and tm.calibration is not None
            calibrator = calibrator_from_json(tm.calibration)
            scores = dict(
                s.execute(
                    select(MachineScore.doc_id, MachineScore.score).where(
                        MachineScore.task_id == task_id
                    )
                ).all()
            )
            audits = _audit_seqs(api, task_id)
            for x in lines:
                if x["task_id"] != task_id or x["source"] != "person":
                    continue
                if x["outcome"] not in ("left", "right"):
                    continue
                z = scores[x["left"]] - scores[x["right"]]
                raw = 1.0 / (1.0 + math.exp(-z))
                records.append(
                    CalibrationRecord(
                        answer=x["outcome"],
                        calibrated=float(calibrator.probability(raw)),
                        raw=raw,
                    )
                )
                audit_flags.append(x["seq"] in audits)
    report = report_from_records(records, n_bins=bins).to_dict()
    return report, len(records), sum(audit_flags)


def _close(a: Any, b: Any) -> None:
    """Equal dicts, floats to 1e-9 (the logistic here is exp, the service's tanh)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            _close(a[key], b[key])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _close(x, y)
    elif isinstance(a, float):
        assert b == pytest.approx(a, abs=1e-9)
    else:
        assert a == b


@pytest.mark.parametrize("bins", [10, 4])
def test_the_report_equals_the_core_on_records_rebuilt_from_the_export(
    api: Api, study: dict[str, Any], bins: int
) -> None:
    r = api.get(
        "admin", f"/api/v1/collections/{study['cid']}/analysis/calibration", params={"bins": bins}
    )
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["bins"] == bins and data["collection"]["name"] == "calibrated"
    (j,) = data["judges"]
    assert (j["judge"], j["source"], j["tasks"]) == (BM25, "bm25", QUERIES + 1)
    expected, count, audits = _oracle(api, study, bins)
    _close(expected, j["report"])
    # Every person's answer on a pair the machine opined on, in the machine's tasks only.
    with api.db.read() as s:
        people = s.scalar(
            select(func.count(Judgment.id)).where(
                Judgment.task_id.in_(study["tasks"]),
                Judgment.source == "person",
                Judgment.undone.is_(False),
                Judgment.outcome.in_(("left", "right")),
            )
        )
    assert j["report"]["records"] == count == people > 0
    assert len(j["report"]["calibrated"]["bins"]) == bins
    # Audits and the questions the machine was unsure of split the records.
    assert j["audits"]["records"] == audits > 0
    assert j["hard"]["records"] == count - audits
    # The person flips a tenth of the answers: the machine, always right, agrees on about 9/10.
    assert 0.8 < j["report"]["calibrated"]["accuracy"] < 0.97


def test_one_judge_by_source_and_unknown_ones(api: Api, study: dict[str, Any]) -> None:
    path = f"/api/v1/collections/{study['cid']}/analysis/calibration"
    whole = api.get("admin", path).json()
    assert api.get("admin", path, params={"judge": "bm25"}).json() == whole
    assert api.get("admin", path, params={"judge": BM25}).json() == whole
    r = api.get("admin", path, params={"judge": "llm"})
    assert r.status_code == 404 and "judge" in r.text and BM25 in r.text
    assert api.get("admin", path, params={"bins": 0}).status_code == 422
    assert api.get("admin", "/api/v1/collections/99999/analysis/calibration").status_code == 404


def test_the_svg_is_the_diagram_of_the_report(api: Api, study: dict[str, Any]) -> None:
    path = f"/api/v1/collections/{study['cid']}/analysis/calibration"
    report = api.get("admin", path, params={"bins": 5}).json()["judges"][0]["report"]
    r = api.get("admin", path + ".svg", params={"bins": 5})
    assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml")
    root = ET.fromstring(r.text)
    rects = root.findall(".//{http://www.w3.org/2000/svg}rect")
    answered = [b for b in report["calibrated"]["bins"] if b["count"]]
    assert len(rects) == len(answered) > 0
    counts = [
        g.findall("{http://www.w3.org/2000/svg}text")[0].text
        for g in root.iter("{http://www.w3.org/2000/svg}g")
    ]
    assert counts == [str(b["count"]) for b in answered]
    assert "style=" not in r.text


def test_empty_collection_and_assessors(api: Api, study: dict[str, Any]) -> None:
    path = f"/api/v1/collections/{study['empty']}/analysis/calibration"
    r = api.get("admin", path)
    assert r.status_code == 200 and r.json()["judges"] == []
    assert api.get("admin", path + ".svg").status_code == 404
    for p in (path, path + ".svg", f"/api/v1/collections/{study['cid']}/analysis/calibration"):
        assert api.get("cal", p).status_code == 403


def _page(api: Api, cid: int, page: str = "analysis/calibration") -> str:
    api.client.cookies.clear()
    user = users.get_user(db=api.db, username="admin")
    raw, _csrf = sessions.create_web_session(api.db, user)
    api.client.cookies.set(sessions.SESSION_COOKIE, raw)
    try:
        r = api.client.get(f"/admin/collections/{cid}/{page}", follow_redirects=False)
    finally:
        api.client.cookies.clear()
    assert r.status_code == 200, r.text
    return str(r.text)


def test_the_page_shows_the_table_the_figures_and_the_svg(api: Api, study: dict[str, Any]) -> None:
    data = api.get("admin", f"/api/v1/collections/{study['cid']}/analysis/calibration").json()
    cal = data["judges"][0]["report"]["calibrated"]
    html = _page(api, study["cid"])
    assert f'<svg role="img" aria-label="Reliability diagram of {BM25}"' in html
    assert f"accuracy <strong>{cal['accuracy']:.3f}</strong> · ECE {cal['ece']:.3f}" in html
    assert f"Brier {cal['brier']:.3f} · Cohen's κ with people {cal['kappa']:.3f}" in html
    for b in cal["bins"]:
        if b["count"]:
            assert (
                f'<td class="num">{b["count"]}</td><td class="num">{b["mean_confidence"]:.3f}</td>'
                in html
            )
    assert "style=" not in html.split('id="calibration"')[1]
    assert "No machine answers yet" in _page(api, study["empty"])
    # The analysis page links to the report and does not build it (it never waits for it).
    analysis = _page(api, study["cid"], "analysis")
    link = f'href="/admin/collections/{study["cid"]}/analysis/calibration"'
    assert link in analysis and "Reliability diagram" not in analysis


def test_the_cli_prints_the_same_figures(
    api: Api, study: dict[str, Any], database_url: str, tmp_path: Path
) -> None:
    rest = api.get("admin", f"/api/v1/collections/{study['cid']}/analysis/calibration").json()
    runner = CliRunner()
    base = ["analysis", "calibration", "calibrated", "--database-url", database_url]
    svg = tmp_path / "r.svg"
    result = runner.invoke(cli, [*base, "--json", "--judge", "bm25", "--svg", str(svg)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == rest
    assert svg.read_text().startswith("<svg")
    text = runner.invoke(cli, base)
    assert text.exit_code == 0, text.output
    cal = rest["judges"][0]["report"]["calibrated"]
    assert (
        f"calibrated: {cal['count']} answers, accuracy {cal['accuracy']:.3f}, "
        f"ECE {cal['ece']:.3f}, Brier {cal['brier']:.3f}, Cohen's kappa {cal['kappa']:.3f}"
    ) in text.output
    empty = runner.invoke(
        cli, ["analysis", "calibration", "no-machine", "--database-url", database_url]
    )
    assert empty.exit_code == 0 and "no machine answers yet" in empty.output
    both = runner.invoke(cli, [*base, "--file", str(svg)])
    assert both.exit_code == 2


def _fresh(api: Api, cid: int) -> list[dict[str, Any]]:
    """The report's judges with every task replayed (no cache)."""
    return [judge_report(g, 10) for g in judge_records(machine_evidence(cid, db=api.db))]


def test_the_cached_report_is_the_full_replays_and_follows_every_new_judgment(
    api: Api, study: dict[str, Any]
) -> None:
    """The report keeps each task's records and audits under a digest of what its replay
    reads: after every answer (and an undo) the REST report equals the full replay's, the
    task's cache entry is the one of its current live log (a new one for every new answer),
    and at the end the report equals the independent oracle's."""
    cid, truth = _collection(api, "cached")
    task_id = _task(api, cid, "q2", machine=True)
    path = f"/api/v1/collections/{cid}/analysis/calibration"
    rng = random.Random(3)
    body = api.get("cal", f"/api/v1/tasks/{task_id}/next").json()
    digests = []
    answered = 0
    while not body["done"]:
        left, right = body["pair"]["left"]["doc_id"], body["pair"]["right"]["doc_id"]
        better = (truth["q2"][left] > truth["q2"][right]) != (rng.random() < FLIP)
        answer = {"seq": body["seq"], "left": left, "right": right}
        answer["outcome"] = "left" if better else "right"
        r = api.post("cal", f"/api/v1/tasks/{task_id}/judgments", json=answer)
        assert r.status_code == 200, r.text
        body = r.json()
        answered += 1
        if answered == 6:  # an undo, then the same question again
            r = api.post("cal", f"/api/v1/tasks/{task_id}/undo")
            assert r.status_code == 200, r.text
            body = r.json()
        report = api.get("admin", path).json()
        assert report["judges"] == _fresh(api, cid)
        (m,) = machine_evidence(cid, db=api.db).tasks
        rows = machine_evidence(cid, db=api.db).live_logs[task_id]
        entry = AUDITS.of(api.db).get(task_id)
        assert entry is not None and entry[0] == replay_digest(m, rows)
        if answered == 6:  # the live log is the one before the undone answer again
            assert entry[0] == digests[-1]
        else:  # a new live log: a new digest
            assert entry[0] not in digests
        digests.append(entry[0])
    (j,) = api.get("admin", path).json()["judges"]
    expected, count, audits = _oracle(api, {"cid": cid, "tasks": [task_id]}, 10)
    # Records without the frozen calibrations need the database to read them.
    with pytest.raises(ValueError, match="calibrations"):
        judge_records(machine_evidence(cid, db=api.db, calibrations=False))
    _close(expected, j["report"])
    assert j["report"]["records"] == count > 0 and j["audits"]["records"] == audits
