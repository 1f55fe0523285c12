"""The machine's gold set (docs/machine-judges.md#the-gold-set), SQLite and Postgres: the admin
marks pairs with their right answer over REST and the CLI (all or none; bad input names the
pair and stores nothing; an assessor is refused); a task whose machine starts afterwards
freezes the judge's raw opinion on every gold pair with its calibration (the oracle: the
stored BM25 scores through the service's σ), its opinion counts them as evidence, and a cold
start machine the gold set vouches for answers where, on the same documents without it, it
answers less; a task frozen before keeps what it froze."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

from sqlalchemy import select
from typer.testing import CliRunner

from app.cli import cli
from app.kernel.models import Judgment, MachineScore, TaskMachine
from app.machine.judges import ROUNDING, score_preference
from tests.app.conftest import Api
from tests.app.machine_support import judge_consistently, machine_collection, machine_task

N, K = 12, 4
GOLD_QUERIES = [f"q{i}" for i in range(1, 7)]


def _gold(api: Api, cid: int, pairs: list[dict[str, str]], who: str = "admin") -> Any:
    return api.post(who, f"/api/v1/admin/collections/{cid}/machine/gold", json={"pairs": pairs})


def _listed(api: Api, cid: int) -> list[dict[str, Any]]:
    r = api.get("admin", f"/api/v1/admin/collections/{cid}/machine/gold")
    assert r.status_code == 200, r.text
    return list(r.json()["gold"])


def test_marking_gold_pairs_all_or_none(api: Api, database_url: str, tmp_path: Path) -> None:
    api.add_user("gina")
    cid, _ = machine_collection(api, "gold-marks", queries=2, docs=5)
    good = {"query_id": "q0", "better": "q0-d00", "worse": "q0-d01"}
    r = _gold(api, cid, [good])
    assert r.status_code == 201, r.text
    (stored,) = r.json()["gold"]
    assert (stored["query_id"], stored["better"], stored["worse"]) == ("q0", "q0-d00", "q0-d01")
    assert stored["created_by"] == "admin"
    before = _listed(api, cid)
    assert before == [stored]
    fine = {"query_id": "q1", "better": "q1-d02", "worse": "q1-d03"}
    bad = [
        ({"query_id": "q9", "better": "q0-d00", "worse": "q0-d02"}, 422, "no query 'q9'"),
        ({"query_id": "q0", "better": "q1-d00", "worse": "q0-d02"}, 422, "not in query 'q0'"),
        ({"query_id": "q0", "better": "q0-d02", "worse": "q0-d02"}, 422, "the same document"),
        ({"query_id": "q0", "better": "q0-d01", "worse": "q0-d00"}, 409, "gold already"),
    ]
    for pair, status, text in bad:
        r = _gold(api, cid, [fine, pair])
        assert r.status_code == status and text in r.text and "pairs[1]" in r.text, r.text
        assert _listed(api, cid) == before  # all or none: the fine pair was not stored
    r = _gold(api, cid, [fine, {**fine, "better": fine["worse"], "worse": fine["better"]}])
    assert r.status_code == 422 and "the same pair as pairs[0]" in r.text
    assert _gold(api, cid, []).status_code == 422
    assert _gold(api, cid, [fine], who="gina").status_code == 403
    assert api.get("gina", f"/api/v1/admin/collections/{cid}/machine/gold").status_code == 403
    assert _gold(api, 999999, [fine]).status_code == 404
    assert _listed(api, cid) == before
    # Unmark: the pair named, then 404.
    url = f"/api/v1/admin/collections/{cid}/machine/gold/{stored['id']}"
    assert api.client.delete(url, headers=api.auth("gina")).status_code == 403
    r = api.client.delete(url, headers=api.auth("admin"))
    assert r.status_code == 200 and r.json() == {"collection_id": cid, "deleted": stored["id"]}
    assert api.client.delete(url, headers=api.auth("admin")).status_code == 404
    assert _listed(api, cid) == []
    if database_url.startswith("sqlite"):
        csv = tmp_path / "gold.csv"
        csv.write_text("query_id,better,worse\nq0,q0-d03,q0-d04\nq1,q1-d00,q1-d01\n")
        out = CliRunner().invoke(
            cli, ["admin", "machine-gold", "gold-marks", "--add", str(csv), "--by", "cli-ann",
                  "--database-url", database_url],
        )  # fmt: skip
        assert out.exit_code == 0, out.output
        assert "2 gold pairs marked" in out.output and "query q0: q0-d03 > q0-d04" in out.output
        again = CliRunner().invoke(
            cli, ["admin", "machine-gold", "gold-marks", "--add", str(csv),
                  "--database-url", database_url],
        )  # fmt: skip
        assert again.exit_code == 1 and "gold already" in again.output
        listed = _listed(api, cid)
        assert [(g["better"], g["created_by"]) for g in listed] == [
            ("q0-d03", "cli-ann"),
            ("q1-d00", "cli-ann"),
        ]


def _machine_answers(api: Api, task_id: int) -> int:
    with api.db.read() as s:
        rows = s.scalars(
            select(Judgment.id).where(
                Judgment.task_id == task_id,
                Judgment.source == "machine",
                Judgment.undone.is_(False),
            )
        )
        return len(list(rows))


def _calibration(api: Api, task_id: int) -> dict[str, Any] | None:
    with api.db.read() as s:
        return s.scalar(select(TaskMachine.calibration).where(TaskMachine.task_id == task_id))


def _study(api: Api, name: str, gold: bool) -> dict[str, Any]:
    """A collection with tasks (scores stored, never judged) on the gold queries, a task on
    q7 opened before any gold is marked, the gold set when ``gold``, then a task on q0 judged
    by a consistent person."""
    cid, truth = machine_collection(api, name, queries=8, docs=N)
    scored = {q: machine_task(api, cid, q, "gold-person", K) for q in GOLD_QUERIES}
    early = machine_task(api, cid, "q7", "gold-person", K)
    assert api.get("gold-person", f"/api/v1/tasks/{early}/next").status_code == 200
    pairs = []
    if gold:
        for q in GOLD_QUERIES:
            for a, b in itertools.combinations(sorted(truth[q]), 2):
                better, worse = (a, b) if truth[q][a] > truth[q][b] else (b, a)
                pairs.append({"query_id": q, "better": better, "worse": worse})
        r = _gold(api, cid, pairs)
        assert r.status_code == 201, r.text
    task = machine_task(api, cid, "q0", "gold-person", K)
    judge_consistently(api, "gold-person", task, truth["q0"])
    return {"cid": cid, "scored": scored, "early": early, "task": task, "pairs": pairs}


def test_gold_pairs_are_the_machine_s_evidence(api: Api) -> None:
    api.add_user("gold-person")
    helped = _study(api, "gold-evidence", gold=True)
    alone = _study(api, "gold-none", gold=False)
    # The oracle: each gold pair's raw P(better first) from its query's task's stored scores.
    with api.db.read() as s:
        scores = {
            (t, d): v
            for t, d, v in s.execute(
                select(MachineScore.task_id, MachineScore.doc_id, MachineScore.score)
            )
        }
    expected = sorted(
        [
            round(
                score_preference(
                    scores[(helped["scored"][g["query_id"]], g["better"])],
                    scores[(helped["scored"][g["query_id"]], g["worse"])],
                ),
                ROUNDING,
            ),
            1,
        ]
        for g in helped["pairs"]
    )
    frozen = _calibration(api, helped["task"])
    assert frozen is not None and frozen["gold"] == expected
    assert len(expected) == len(GOLD_QUERIES) * math.comb(N, 2)
    # The machine is right on every pair here (BM25 is monotone in the truth), so no gold
    # answer contradicts it.
    assert all(p > 0.5 for p, _ in expected)
    # Without gold, and for the task frozen before it was marked: no gold evidence.
    assert "gold" not in (_calibration(api, alone["task"]) or {})
    assert "gold" not in (_calibration(api, helped["early"]) or {})
    # The gold set vouches for the machine from the first question: it answers more.
    with_gold, without = _machine_answers(api, helped["task"]), _machine_answers(api, alone["task"])
    assert with_gold > without and with_gold > 0
